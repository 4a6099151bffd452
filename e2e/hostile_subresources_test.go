package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/aagen-dev/aagen/e2e/cluster"
	"github.com/aagen-dev/aagen/runtime/etcd"
)

// TestHostileSubresources sends what a hostile or careless client sends to Boat's
// imperative subresources (issue #29), through kube-apiserver's aggregator as
// TestAggregation serves them: lost updates through the view berth (a stale
// resourceVersion or another uid), action input that breaks the published schema, and
// every patch type on the view. Where a custom resource has the same shape (/scale and
// /status of a CRD installed on the same kube-apiserver) the generated server must answer
// what kube-apiserver answers for it.
func TestHostileSubresources(t *testing.T) {
	skipShort(t)
	runsToolsAlone(t)
	dir, serverBin := buildExample(t)
	e, err := etcd.Start(context.Background(), etcd.Config{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	cp := cluster.StartControlPlane(t, e.ClientURL())
	// The deadline starts once the control plane is up: on a cold cache, building
	// kube-apiserver and kube-controller-manager takes many minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cluster.Deploy(t, ctx, cp, dir, serverBin, e.ClientURL())
	kube := kubernetes.NewForConfigOrDie(cp.Admin)
	dyn := dynamic.NewForConfigOrDie(cp.Admin)

	ns := "reef"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cluster.InstallCRD(t, ctx, cp.Admin, skiffCRD())
	skiffs := schema.GroupVersionResource{Group: "hostile.example.com", Version: "v1", Resource: "skiffs"}
	fleets := schema.GroupVersionResource{Group: "marina.example.com", Version: "v1alpha1", Resource: "fleets"}

	client, err := rest.HTTPClientFor(cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	// send sends a request with a JSON (or YAML) body and returns the status code and body.
	send := func(t *testing.T, method, path, contentType, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, cp.Admin.Host+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	boatsPath := "/apis/marina.example.com/v1alpha1/namespaces/" + ns + "/boats"
	fleetsPath := "/apis/marina.example.com/v1alpha1/namespaces/" + ns + "/fleets"
	skiffsPath := "/apis/hostile.example.com/v1/namespaces/" + ns + "/skiffs"
	// meta reads metadata.resourceVersion and metadata.uid of a JSON object.
	meta := func(t *testing.T, body string) (rv, uid string) {
		t.Helper()
		var o struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
				UID             string `json:"uid"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(body), &o); err != nil || o.Metadata.ResourceVersion == "" {
			t.Fatalf("no resourceVersion in %s (%v)", body, err)
		}
		return o.Metadata.ResourceVersion, o.Metadata.UID
	}
	create := func(t *testing.T, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) {
		t.Helper()
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	const otherUID = "00000000-0000-0000-0000-000000000029"

	// Two writers read the same resourceVersion; the second one's write is a 409, as a
	// CRD's /scale answers (and aagen's own /scale), not a lost update.
	t.Run("stale resourceVersion and another uid on the view are conflicts", func(t *testing.T) {
		create(t, boats, boat("gannet", nil, 9))
		create(t, fleets, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "marina.example.com/v1alpha1", "kind": "Fleet",
			"metadata": map[string]any{"name": "gannets"}, "spec": map[string]any{"replicas": int64(1)},
		}})
		create(t, skiffs, skiff("gannets"))

		type target struct{ name, path, put, patch string }
		targets := []target{
			{"boats/berth", boatsPath + "/gannet/berth",
				`{"apiVersion":"marina.example.com/v1alpha1","kind":"BoatBerth","metadata":{"name":"gannet"%s},"dock":"west","berth":%d}`,
				`{"metadata":{"resourceVersion":%q},"berth":7}`},
			{"fleets/scale (aagen)", fleetsPath + "/gannets/scale",
				`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"gannets"%s},"spec":{"replicas":%d}}`,
				`{"metadata":{"resourceVersion":%q},"spec":{"replicas":7}}`},
			{"skiffs/scale (CRD)", skiffsPath + "/gannets/scale",
				`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"gannets"%s},"spec":{"replicas":%d}}`,
				`{"metadata":{"resourceVersion":%q},"spec":{"replicas":7}}`},
		}
		answers := map[string]string{}
		for _, tg := range targets {
			code, body := send(t, http.MethodGet, tg.path, "", "")
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d %s", tg.name, code, body)
			}
			rv, _ := meta(t, body)
			withRV := `,"resourceVersion":"` + rv + `"`
			first, body1 := send(t, http.MethodPut, tg.path, "application/json", fmt.Sprintf(tg.put, withRV, 3))
			second, body2 := send(t, http.MethodPut, tg.path, "application/json", fmt.Sprintf(tg.put, withRV, 4))
			uid, body3 := send(t, http.MethodPut, tg.path, "application/json", fmt.Sprintf(tg.put, `,"uid":"`+otherUID+`"`, 5))
			patch, body4 := send(t, http.MethodPatch, tg.path, "application/merge-patch+json", fmt.Sprintf(tg.patch, rv))
			answers[tg.name] = fmt.Sprintf("first PUT %d, second PUT with the same resourceVersion %d, PUT with another uid %d, merge patch with the stale resourceVersion %d",
				first, second, uid, patch)
			t.Logf("%s: %s\n%s\n%s\n%s\n%s", tg.name, answers[tg.name], body1, body2, body3, body4)
		}
		want := answers["skiffs/scale (CRD)"]
		if want != "first PUT 200, second PUT with the same resourceVersion 409, PUT with another uid 409, merge patch with the stale resourceVersion 409" {
			t.Fatalf("the oracle: kube-apiserver answered for a CRD's /scale: %s", want)
		}
		for _, name := range []string{"boats/berth", "fleets/scale (aagen)"} {
			if answers[name] != want {
				t.Errorf("%s: %s\nwant (as for a CRD's /scale) %s", name, answers[name], want)
			}
		}
		// Only the first write landed.
		code, body := send(t, http.MethodGet, boatsPath+"/gannet/berth", "", "")
		if code != http.StatusOK || !strings.Contains(body, `"berth":3`) {
			t.Errorf("the berth after the writes: %d %s; want berth 3, the first write's", code, body)
		}
	})

	// DepartureRequest's destination has MaxLength=63, published in /openapi/v3: a
	// longer one is a 422 with the field's path, as a CRD's schema answers, and the hook
	// never runs (the boat stays).
	t.Run("action input is validated against its published schema", func(t *testing.T) {
		create(t, boats, boat("fulmar", nil, 7))
		long := strings.Repeat("x", 100)
		code, body := send(t, http.MethodPost, boatsPath+"/fulmar/depart", "application/json",
			`{"apiVersion":"marina.example.com/v1alpha1","kind":"DepartureRequest","destination":"`+long+`"}`)
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, `"reason":"Invalid"`) || !strings.Contains(body, `"field":"destination"`) ||
			!strings.Contains(body, "Too long") {
			t.Errorf("departure to a 100-character destination: %d %s\nwant 422 Invalid at destination (Too long)", code, body)
		}
		if code, body := send(t, http.MethodGet, boatsPath+"/fulmar", "", ""); code != http.StatusOK || strings.Contains(body, "Departed") || strings.Contains(body, long) {
			t.Errorf("the boat after the refused departure: %d %s", code, body)
		}
		code, body = send(t, http.MethodPost, boatsPath+"/fulmar/depart", "application/json",
			`{"apiVersion":"marina.example.com/v1alpha1","kind":"DepartureRequest","destination":"Lundy"}`)
		if code != http.StatusCreated || !strings.Contains(body, "bound for Lundy") {
			t.Errorf("a valid departure: %d %s", code, body)
		}
	})

	// Merge and JSON patches change the view; strategic merge patch is refused with 415,
	// as kube-apiserver refuses it on a CRD's /status; server-side apply of a view is
	// refused with 415 too (a view has no managed fields of its own: what it would own
	// lies in the object). Never a 500.
	t.Run("patch types on the view", func(t *testing.T) {
		create(t, boats, boat("shag", nil, 5))
		create(t, skiffs, skiff("shags"))
		cases := []struct {
			contentType, berth, skiffStatus string
			want                            int
		}{
			{"application/merge-patch+json", `{"dock":"south","berth":11}`, `{"status":{"replicas":2}}`, http.StatusOK},
			{"application/json-patch+json", `[{"op":"replace","path":"/berth","value":12}]`, `[{"op":"replace","path":"/status/replicas","value":3}]`, http.StatusOK},
			{"application/strategic-merge-patch+json", `{"berth":13}`, `{"status":{"replicas":4}}`, http.StatusUnsupportedMediaType},
		}
		for _, c := range cases {
			code, body := send(t, http.MethodPatch, boatsPath+"/shag/berth", c.contentType, c.berth)
			crdCode, crdBody := send(t, http.MethodPatch, skiffsPath+"/shags/status", c.contentType, c.skiffStatus)
			if crdCode != c.want {
				t.Fatalf("the oracle: %s on a CRD's /status: %d %s; want %d", c.contentType, crdCode, crdBody, c.want)
			}
			if code != crdCode {
				t.Errorf("%s on boats/berth: %d %s\nwant %d, as for a CRD's /status", c.contentType, code, body, crdCode)
			}
		}
		code, body := send(t, http.MethodGet, boatsPath+"/shag/berth", "", "")
		if code != http.StatusOK || !strings.Contains(body, `"dock":"south"`) || !strings.Contains(body, `"berth":12`) {
			t.Errorf("the berth after the patches: %d %s; want dock south, berth 12", code, body)
		}
		// A CRD's /status takes apply; a view refuses it (not a 500, nor a conflict).
		apply := "apiVersion: marina.example.com/v1alpha1\nkind: BoatBerth\nmetadata:\n  name: shag\ndock: east\nberth: 14\n"
		for _, force := range []string{"false", "true"} {
			code, body := send(t, http.MethodPatch, boatsPath+"/shag/berth?fieldManager=hostile&force="+force, "application/apply-patch+yaml", apply)
			if code != http.StatusUnsupportedMediaType {
				t.Errorf("apply (force=%s) on boats/berth: %d %s; want 415", force, code, body)
			}
		}
		// kubectl patch's default type is strategic merge: kubectl reports the 415 as it
		// does for a custom resource.
		out, err := kubectl(t, cp.Kubeconfig, "", "patch", "boat", "shag", "-n", ns, "--subresource=berth", "-p", `{"berth":15}`)
		if err == nil || !strings.Contains(out, "application/strategic-merge-patch+json is not supported") {
			t.Errorf("kubectl patch --subresource=berth (strategic): %v\n%s\nwant the 415's message", err, out)
		}
		crdOut, crdErr := kubectl(t, cp.Kubeconfig, "", "patch", "skiff", "shags", "-n", ns, "--subresource=status", "-p", `{"status":{"replicas":5}}`)
		if crdErr == nil || !strings.Contains(crdOut, "application/strategic-merge-patch+json is not supported") {
			t.Errorf("the oracle: kubectl patch --subresource=status (strategic) of a CRD: %v\n%s", crdErr, crdOut)
		}
		out, err = kubectl(t, cp.Kubeconfig, "", "patch", "boat", "shag", "-n", ns, "--subresource=berth", "--type=merge", "-p", `{"berth":16}`)
		if err != nil {
			t.Errorf("kubectl patch --subresource=berth --type=merge: %v\n%s", err, out)
		}
	})
}

// skiff is a Skiff, a custom resource with /status and /scale.
func skiff(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "hostile.example.com/v1", "kind": "Skiff",
		"metadata": map[string]any{"name": name}, "spec": map[string]any{"replicas": int64(1)},
	}}
}

// skiffCRD is the CRD of Skiff: spec.replicas and status.replicas, with the /status and
// /scale subresources, the oracle of the view's answers.
func skiffCRD() *apiextensionsv1.CustomResourceDefinition {
	replicas := apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int32", Minimum: ptrTo(0.0)}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "skiffs.hostile.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "hostile.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "skiffs", Singular: "skiff", Kind: "Skiff", ListKind: "SkiffList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec":   {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": replicas}},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": replicas}},
					},
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
					Scale:  &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
				},
			}},
		},
	}
}
