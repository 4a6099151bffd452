package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

var workers = schema.GroupVersionResource{Group: webapp, Version: "v1", Resource: "workers"}

// workerPodTemplate is a pod template using most of what a PodSpec holds: what the server
// stores must read back equal.
func workerPodTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"app": "guestbook-worker"},
			Annotations: map[string]string{"example.com/owner": "guestbook"},
		},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "migrate", Image: "registry.example.com/guestbook/migrate:1.0", Command: []string{"/migrate"}}},
			Containers: []corev1.Container{{
				Name:       "worker",
				Image:      "registry.example.com/guestbook/worker:1.0",
				Args:       []string{"--queue", "signatures"},
				WorkingDir: "/work",
				Ports:      []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
				Env: []corev1.EnvVar{
					{Name: "MODE", Value: "batch"},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
					{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "worker"}, Key: "token"}}},
				},
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "worker-env"}}}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/work"}},
				LivenessProbe: &corev1.Probe{
					ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("metrics")}},
					InitialDelaySeconds: 5, PeriodSeconds: 10,
				},
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				ImagePullPolicy: corev1.PullIfNotPresent,
			}},
			Volumes:            []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("1Gi"))}}}},
			RestartPolicy:      corev1.RestartPolicyAlways,
			ServiceAccountName: "worker",
			NodeSelector:       map[string]string{"kubernetes.io/os": "linux"},
			Tolerations:        []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "workers", Effect: corev1.TaintEffectNoSchedule}},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 100,
					PodAffinityTerm: corev1.PodAffinityTerm{
						LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guestbook-worker"}},
						TopologyKey:   "kubernetes.io/hostname",
					},
				}},
			}},
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			ImagePullSecrets:              []corev1.LocalObjectReference{{Name: "registry"}},
		},
	}
}

// testCoreTypes runs against kbexample's server (TestVersions starts it): its Worker kind
// holds a corev1.PodTemplateSpec, a corev1.ResourceRequirements, a *metav1.LabelSelector,
// an *intstr.IntOrString and a runtime.RawExtension in its spec, and a status whose
// parents list is required. dir is the generated project, kubeconfig the server's.
func testCoreTypes(t *testing.T, ctx context.Context, cfg *rest.Config, dir, kubeconfig string) {
	dyn := dynamic.NewForConfigOrDie(cfg)
	ns := "guests"
	template := workerPodTemplate()
	spec := map[string]any{
		"selector":       map[string]any{"matchLabels": map[string]any{"app": "guestbook-worker"}},
		"maxUnavailable": "25%",
		"resources":      map[string]any{"limits": map[string]any{"cpu": "2"}},
		"config":         map[string]any{"queue": "signatures", "batch": int64(10), "retry": map[string]any{"max": int64(3)}},
	}
	tmpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&template)
	if err != nil {
		t.Fatal(err)
	}
	spec["template"] = tmpl

	t.Run("a full pod template round-trips", func(t *testing.T) {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": webapp + "/v1", "kind": "Worker",
			"metadata": map[string]any{"name": "signatures"},
			"spec":     spec,
		}}
		// The status's required parents do not stop a create: nobody has written a status yet.
		if _, err := dyn.Resource(workers).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create: %v", err)
		}
		got, err := dyn.Resource(workers).Namespace(ns).Get(ctx, "signatures", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		gotTmpl, _, _ := unstructured.NestedMap(got.Object, "spec", "template")
		var back corev1.PodTemplateSpec
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(gotTmpl, &back); err != nil {
			t.Fatal(err)
		}
		if !apiequality.Semantic.DeepEqual(back, template) {
			want, _ := json.MarshalIndent(template, "", "  ")
			have, _ := json.MarshalIndent(back, "", "  ")
			t.Errorf("pod template read back differs:\nsent %s\nread %s", want, have)
		}
		for _, f := range []string{"selector", "maxUnavailable", "resources", "config"} {
			if !apiequality.Semantic.DeepEqual(got.Object["spec"].(map[string]any)[f], spec[f]) {
				t.Errorf("spec.%s read back as %#v, sent %#v", f, got.Object["spec"].(map[string]any)[f], spec[f])
			}
		}
		// A typed object reads back with its zero status ({"parents": null}), as k8s.io/api's do.
		if parents, _, _ := unstructured.NestedSlice(got.Object, "status", "parents"); len(parents) > 0 {
			t.Errorf("a created worker has status parents: %v", parents)
		}
	})

	t.Run("the status's required list once a status is written", func(t *testing.T) {
		got, err := dyn.Resource(workers).Namespace(ns).Get(ctx, "signatures", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		unstructured.SetNestedSlice(got.Object, []any{map[string]any{}}, "status", "parents")
		_, err = dyn.Resource(workers).Namespace(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{})
		if err == nil || !strings.Contains(err.Error(), "status.parents[0].name: Required value") {
			t.Errorf("a parent without its required name: got %v, want status.parents[0].name: Required value", err)
		}
		unstructured.SetNestedSlice(got.Object, []any{map[string]any{"name": "lobby"}}, "status", "parents")
		upd, err := dyn.Resource(workers).Namespace(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if parents, _, _ := unstructured.NestedSlice(upd.Object, "status", "parents"); len(parents) != 1 {
			t.Errorf("status.parents read back as %v", parents)
		}
	})

	t.Run("a field of a core type is validated with k8s.io/api's schema", func(t *testing.T) {
		bad := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": webapp + "/v1", "kind": "Worker",
			"metadata": map[string]any{"name": "bad-port"},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "w", "image": "x", "ports": []any{map[string]any{"containerPort": "http"}}}},
			}}},
		}}
		_, err := dyn.Resource(workers).Namespace(ns).Create(ctx, bad, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "containerPort") {
			t.Errorf("a string containerPort: got %v, want an error naming containerPort", err)
		}
	})

	t.Run("OpenAPI v2 and v3 define the core types with k8s.io/api's list-map keys", func(t *testing.T) {
		for _, path := range []string{"/openapi/v2", "/openapi/v3/apis/" + webapp + "/v1"} {
			code, body := httpGet(t, cfg, path)
			if code != 200 {
				t.Fatalf("GET %s: %d", path, code)
			}
			var doc struct {
				Definitions map[string]json.RawMessage `json:"definitions"`
				Components  struct {
					Schemas map[string]json.RawMessage `json:"schemas"`
				} `json:"components"`
			}
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			defs := doc.Definitions
			if defs == nil {
				defs = doc.Components.Schemas
			}
			podSpec := string(defs["io.k8s.api.core.v1.PodSpec"])
			if !strings.Contains(podSpec, `"x-kubernetes-list-map-keys":["name"]`) || !strings.Contains(podSpec, `"x-kubernetes-patch-merge-key":"name"`) {
				t.Errorf("%s: io.k8s.api.core.v1.PodSpec lacks the containers' list-map key: %.400s", path, podSpec)
			}
			for _, name := range []string{"io.k8s.api.core.v1.Container", "io.k8s.api.core.v1.ResourceRequirements", "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"} {
				if defs[name] == nil {
					t.Errorf("%s: no definition %s", path, name)
				}
			}
			// Only the types the kinds reach are defined, not all of k8s.io/api/core/v1.
			if defs["io.k8s.api.core.v1.Service"] != nil {
				t.Errorf("%s defines io.k8s.api.core.v1.Service, which no kind uses", path)
			}
		}
	})

	t.Run("kubectl explain", func(t *testing.T) {
		out, err := kubectl(t, kubeconfig, "", "explain", "workers.spec.template.spec.containers", "--api-version="+webapp+"/v1")
		if err != nil {
			t.Fatalf("kubectl explain: %v\n%s", err, out)
		}
		for _, want := range []string{"FIELD: containers <[]Container>", "List of containers belonging to the pod", "image\t<string>", "resources\t<ResourceRequirements>"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl explain lacks %q:\n%s", want, out)
			}
		}
	})

	// Two field managers each apply one container of the same list: PodSpec.containers is a
	// list map keyed by name (k8s.io/api's +listType=map, +listMapKey=name), so the second
	// apply adds its container instead of replacing the list or conflicting. The second
	// manager applies through the generated typed client and apply configurations built
	// with client-go's core ones, compiled in the generated project.
	t.Run("server-side apply merges containers by name", func(t *testing.T) {
		applied := map[string]any{
			"apiVersion": webapp + "/v1", "kind": "Worker",
			"metadata": map[string]any{"name": "pool", "namespace": ns},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "app", "image": "registry.example.com/app:1"}},
			}}},
		}
		body, err := json.Marshal(applied)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(workers).Namespace(ns).Patch(ctx, "pool", types.ApplyPatchType, body,
			metav1.PatchOptions{FieldManager: "manager-a"}); err != nil {
			t.Fatalf("apply by manager-a: %v", err)
		}
		writeApplyProgram(t, dir)
		out := run(t, dir, "go", "run", "./cmd/applysidecar", kubeconfig, ns, "pool")
		t.Log(out)

		got, err := dyn.Resource(workers).Namespace(ns).Get(ctx, "pool", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		containers, _, _ := unstructured.NestedSlice(got.Object, "spec", "template", "spec", "containers")
		var names []string
		for _, c := range containers {
			names = append(names, c.(map[string]any)["name"].(string))
		}
		if !slices.Equal(names, []string{"app", "sidecar"}) {
			t.Errorf("containers after two managers applied: %v, want [app sidecar]", names)
		}
		managers := map[string]bool{}
		for _, mf := range got.GetManagedFields() {
			managers[mf.Manager] = true
			if mf.Manager == "manager-b" && !strings.Contains(string(mf.FieldsV1.Raw), `k:{\"name\":\"sidecar\"}`) {
				t.Errorf("manager-b's fields do not key the container by name: %s", mf.FieldsV1.Raw)
			}
		}
		if !managers["manager-a"] || !managers["manager-b"] {
			t.Errorf("managed fields name %v, want manager-a and manager-b", managers)
		}
	})
}

// applySidecar is a program in the generated project that applies, as manager-b, a
// sidecar container through the generated clientset and apply configurations, whose pod
// template is client-go's own apply configuration type.
const applySidecar = `package main

import (
	"context"
	"fmt"
	"os"

	webappv1 "example.com/kbexample/pkg/generated/applyconfiguration/api/v1"
	"example.com/kbexample/pkg/generated/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Args[1])
	if err != nil {
		panic(err)
	}
	cs := versioned.NewForConfigOrDie(cfg)
	var tmpl *corev1ac.PodTemplateSpecApplyConfiguration = corev1ac.PodTemplateSpec().
		WithSpec(corev1ac.PodSpec().WithContainers(corev1ac.Container().WithName("sidecar").WithImage("registry.example.com/sidecar:1")))
	ns, name := os.Args[2], os.Args[3]
	w := webappv1.Worker(name, ns).WithSpec(webappv1.WorkerSpec().WithTemplate(tmpl))
	got, err := cs.WebappV1().Workers(ns).Apply(context.Background(), w, metav1.ApplyOptions{FieldManager: "manager-b"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(len(got.Spec.Template.Spec.Containers), "containers")
}
`

func writeApplyProgram(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, "cmd", "applysidecar")
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "main.go"), []byte(applySidecar), 0o644); err != nil {
		t.Fatal(err)
	}
}
