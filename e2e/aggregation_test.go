package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/aagen-dev/aagen/runtime/etcd"
)

// TestAggregation deploys the example's generated manifests to a real kube-apiserver,
// runs the generated server locally with the Deployment's arguments, points the Service at
// it, and uses the API through kube-apiserver's aggregator with client-go and kubectl.
func TestAggregation(t *testing.T) {
	skipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	// The example, generated and built like a user would.
	dir := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata/example"), dir, nil)
	run(t, dir, aagen(t), "generate", "./pkg/apis/...")
	serverBin := filepath.Join(dir, "marina-apiserver")
	run(t, dir, "go", "build", "-o", serverBin, "./cmd/marina-apiserver")

	// etcd and the control plane.
	e, err := etcd.Start(ctx, etcd.Config{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	cp := startControlPlane(t, e.ClientURL())
	kube := kubernetes.NewForConfigOrDie(cp.admin)
	dyn := dynamic.NewForConfigOrDie(cp.admin)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery()))

	// Every object of the manifests passes a server-side dry run (namespaced objects need
	// their namespace, so Namespaces go first), then is applied, with a test-only overlay:
	// the Service points at the local process.
	objs := loadKustomization(t, filepath.Join(dir, "config/deploy"))
	port := freePort(t)
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			applyObject(t, ctx, dyn, mapper, o, false)
		}
	}
	for _, o := range objs {
		applyObject(t, ctx, dyn, mapper, o, true)
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "Service":
			if o.GetName() == "marina-apiserver" {
				o = externalNameService(o, port)
			}
		case "APIService":
			_ = unstructured.SetNestedField(o.Object, int64(port), "spec", "service", "port")
		}
		applyObject(t, ctx, dyn, mapper, o, false)
	}

	// The server runs with the Deployment's arguments, its ServiceAccount's token and the
	// generated serving certificate (kube-apiserver checks it against the caBundle).
	args := deploymentArgs(t, objs)
	tok, err := kube.CoreV1().ServiceAccounts("marina-apiserver").CreateToken(ctx, "marina-apiserver",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	saKubeconfig := filepath.Join(t.TempDir(), "sa.kubeconfig")
	writeKubeconfig(t, saKubeconfig, cp.host, cp.pki.path("ca.crt"), "", "", tok.Status.Token)
	certs := filepath.Join(dir, "config/deploy/certs")
	args = replaceArgs(args, map[string]string{
		"--secure-port":          strconv.Itoa(port),
		"--tls-cert-file":        filepath.Join(certs, "tls.crt"),
		"--tls-private-key-file": filepath.Join(certs, "tls.key"),
		"--etcd-servers":         e.ClientURL(),
	})
	args = append(args, "--bind-address=127.0.0.1", "--authentication-kubeconfig="+saKubeconfig,
		"--authorization-kubeconfig="+saKubeconfig, "--kubeconfig="+saKubeconfig)
	startProcess(t, "marina-apiserver", serverBin, args...)

	apiservices := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		as, err := dyn.Resource(apiservices).Get(ctx, "v1alpha1.marina.example.com", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(as.Object, "status", "conditions")
		for _, c := range conds {
			m := c.(map[string]any)
			if m["type"] == "Available" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		as, _ := dyn.Resource(apiservices).Get(ctx, "v1alpha1.marina.example.com", metav1.GetOptions{})
		t.Fatalf("APIService never became Available: %v\n%v", err, as)
	}

	t.Run("discovery", func(t *testing.T) {
		list, err := kube.Discovery().ServerResourcesForGroupVersion("marina.example.com/v1alpha1")
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, r := range list.APIResources {
			names[r.Name] = true
		}
		if !names["boats"] || !names["docks"] || !names["boats/status"] {
			t.Errorf("discovery through kube-apiserver: %v", names)
		}
		if out, err := kubectl(t, cp.kubeconfig, "", "api-resources", "--api-group=marina.example.com"); err != nil ||
			!strings.Contains(out, "boats") || !strings.Contains(out, "docks") {
			t.Errorf("kubectl api-resources: %v\n%s", err, out)
		}
	})

	boats := schema.GroupVersionResource{Group: "marina.example.com", Version: "v1alpha1", Resource: "boats"}
	ns := "harbour"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("crud watch apply", func(t *testing.T) {
		bc := dyn.Resource(boats).Namespace(ns)
		w, err := bc.Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if _, err := bc.Create(ctx, boat("aurora", map[string]any{"rig": "sloop"}, 12), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Added {
				t.Errorf("watch: %s", ev.Type)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no watch event through the aggregator")
		}
		if got, err := bc.Get(ctx, "aurora", metav1.GetOptions{}); err != nil || got.GetName() != "aurora" {
			t.Fatalf("get through the aggregator: %v", err)
		}
		list, err := bc.List(ctx, metav1.ListOptions{LabelSelector: "rig=sloop"})
		if err != nil || len(list.Items) != 1 {
			t.Fatalf("list: %v %d", err, len(list.Items))
		}
		applyBody := []byte(`{"apiVersion":"marina.example.com/v1alpha1","kind":"Boat","metadata":{"name":"aurora"},"spec":{"dock":"east","lengthMeters":12}}`)
		got, err := bc.Patch(ctx, "aurora", types.ApplyPatchType, applyBody, metav1.PatchOptions{FieldManager: "e2e-apply", Force: ptrTo(true)})
		if err != nil {
			t.Fatalf("server-side apply: %v", err)
		}
		if dock, _, _ := unstructured.NestedString(got.Object, "spec", "dock"); dock != "east" {
			t.Fatalf("server-side apply: dock=%q", dock)
		}
		if out, err := kubectl(t, cp.kubeconfig, "", "get", "boats", "-n", ns); err != nil || !strings.Contains(out, "aurora") {
			t.Errorf("kubectl get boats: %v\n%s", err, out)
		}
		if err := bc.Delete(ctx, "aurora", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := bc.Get(ctx, "aurora", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get after delete: %v", err)
		}
	})

	t.Run("rbac through delegated authorization", func(t *testing.T) {
		for user, role := range map[string]string{"alice": "edit", "victor": "view"} {
			rb := &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}},
			}
			if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// kube-controller-manager aggregates the API's ClusterRoles into edit and view.
		for _, role := range []string{"edit", "view"} {
			if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				cr, err := kube.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				for _, r := range cr.Rules {
					for _, g := range r.APIGroups {
						if g == "marina.example.com" {
							return true, nil
						}
					}
				}
				return false, nil
			}); err != nil {
				t.Fatalf("ClusterRole %s never aggregated the marina rules: %v", role, err)
			}
		}
		as := func(user string) dynamic.ResourceInterface {
			return dynamic.NewForConfigOrDie(cp.pki.user(t, cp.admin, user)).Resource(boats).Namespace(ns)
		}
		if _, err := as("nobody").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("user without binding: want 403, got %v", err)
		}
		if _, err := as("alice").Create(ctx, boat("borealis", nil, 9), metav1.CreateOptions{}); err != nil {
			t.Errorf("edit user create: %v", err)
		}
		if _, err := as("victor").Get(ctx, "borealis", metav1.GetOptions{}); err != nil {
			t.Errorf("view user get: %v", err)
		}
		if _, err := as("victor").Create(ctx, boat("cygnus", nil, 9), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("view user create: want 403, got %v", err)
		}
		if err := as("victor").Delete(ctx, "borealis", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("view user delete: want 403, got %v", err)
		}
	})
}

// loadKustomization reads the resources a kustomization.yaml lists, in order.
func loadKustomization(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, r := range k.Resources {
		f, err := os.ReadFile(filepath.Join(dir, r))
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(f), 4096)
		for {
			var obj map[string]any
			if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", r, err)
			}
			if len(obj) == 0 {
				continue
			}
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
	if len(out) == 0 {
		t.Fatal("no objects in the manifests")
	}
	return out
}

// applyObject server-side applies o (as a dry run when dryRun).
func applyObject(t *testing.T, ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, o *unstructured.Unstructured, dryRun bool) {
	t.Helper()
	gvk := o.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("%s %s: %v", gvk, o.GetName(), err)
	}
	var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = dyn.Resource(mapping.Resource).Namespace(o.GetNamespace())
	}
	opts := metav1.ApplyOptions{FieldManager: "aagen-e2e", Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := ri.Apply(ctx, o.GetName(), o, opts); err != nil {
		t.Fatalf("apply (dry run %v) %s %s/%s: %v", dryRun, gvk.Kind, o.GetNamespace(), o.GetName(), err)
	}
}

// externalNameService is the test-only overlay of the server's Service: an ExternalName
// for localhost on the local process's port.
func externalNameService(svc *unstructured.Unstructured, port int) *unstructured.Unstructured {
	out := svc.DeepCopy()
	_ = unstructured.SetNestedField(out.Object, map[string]any{
		"type":         "ExternalName",
		"externalName": "localhost",
		"ports":        []any{map[string]any{"name": "https", "port": int64(port)}},
	}, "spec")
	return out
}

// deploymentArgs returns the server container's args from the manifests.
func deploymentArgs(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			m := c.(map[string]any)
			var args []string
			for _, a := range m["args"].([]any) {
				args = append(args, a.(string))
			}
			return args
		}
	}
	t.Fatal("no Deployment in the manifests")
	return nil
}

// replaceArgs sets --flag=value for each flag in set, keeping the others.
func replaceArgs(args []string, set map[string]string) []string {
	var out []string
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if _, ok := set[name]; ok {
			continue
		}
		out = append(out, a)
	}
	for k, v := range set {
		out = append(out, fmt.Sprintf("%s=%s", k, v))
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }
