package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/aagen-dev/aagen/e2e/cluster"
	"github.com/aagen-dev/aagen/runtime/etcd"
)

// testVersionSchemasLikeCRD checks that each served version of kbexample's Visitor
// validates and defaults with its own markers — v1beta1 limits spec.nickname to 8 bytes
// and defaults spec.badge, v1 has a CEL rule on spec.nickname instead — by sending the
// same creates and updates to the generated server (cfg) and to a CRD with the same two
// versions, built from the generated server's own OpenAPI, on a real kube-apiserver, and
// comparing the answers: status code, message and causes, or the stored spec.
func testVersionSchemasLikeCRD(t *testing.T, ctx context.Context, cfg *rest.Config) {
	openAPI := map[string][]byte{}
	rc := discovery.NewDiscoveryClientForConfigOrDie(rest.CopyConfig(cfg)).RESTClient()
	var err error
	for _, v := range []string{"v1", "v1beta1"} {
		if openAPI[v], err = rc.Get().AbsPath("/openapi/v3/apis/" + webapp + "/" + v).DoRaw(ctx); err != nil {
			t.Fatalf("OpenAPI v3 of %s: %v", v, err)
		}
	}

	// Each version's OpenAPI publishes its own constraints.
	schemas := map[string]*apiextensionsv1.JSONSchemaProps{}
	for v, doc := range openAPI {
		s, err := cluster.CRDSchema(doc, "."+v+".Visitor")
		if err != nil {
			t.Fatal(err)
		}
		schemas[v] = s
	}
	nick := func(v string) apiextensionsv1.JSONSchemaProps {
		return schemas[v].Properties["spec"].Properties["nickname"]
	}
	badge := func(v string) apiextensionsv1.JSONSchemaProps {
		return schemas[v].Properties["spec"].Properties["badge"]
	}
	if n := nick("v1beta1"); n.MaxLength == nil || *n.MaxLength != 8 || len(n.XValidations) != 0 {
		t.Errorf("v1beta1 OpenAPI: spec.nickname has maxLength %v and rules %v; want 8 and none", n.MaxLength, n.XValidations)
	}
	if n := nick("v1"); n.MaxLength != nil || len(n.XValidations) != 1 || n.XValidations[0].Message != "nickname must be lower case" {
		t.Errorf("v1 OpenAPI: spec.nickname has maxLength %v and rules %v; want none and the lower-case rule", n.MaxLength, n.XValidations)
	}
	if b := badge("v1beta1"); b.Default == nil || string(b.Default.Raw) != `"visitor"` {
		t.Errorf("v1beta1 OpenAPI: spec.badge default %v; want \"visitor\"", b.Default)
	}
	if b := badge("v1"); b.Default != nil {
		t.Errorf("v1 OpenAPI: spec.badge default %s; want none", b.Default.Raw)
	}

	// The same API as a CRD on a real kube-apiserver.
	e, err := etcd.Start(ctx, etcd.Config{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	cp := cluster.StartControlPlane(t, e.ClientURL())
	// The control plane may have taken minutes to build; the writes get their own time.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := kubernetes.NewForConfigOrDie(cp.Admin).CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "guests"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	installVisitorCRD(t, ctx, cp.Admin, schemas)

	servers := map[string]dynamic.Interface{"aagen": dynamic.NewForConfigOrDie(cfg), "crd": dynamic.NewForConfigOrDie(cp.Admin)}
	visitor := func(v, name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": webapp + "/" + v, "kind": "Visitor",
			"metadata": map[string]any{"name": name, "namespace": "guests"},
			"spec":     spec,
		}}
	}
	cases := []struct {
		name, version string
		// base, when set, is created through v1 first; spec is then written as an update.
		base map[string]any
		spec map[string]any
	}{
		{name: "long-nick-v1beta1", version: "v1beta1", spec: map[string]any{"guestbook": "lobby", "nickname": "bartholomew"}},
		{name: "long-nick-v1", version: "v1", spec: map[string]any{"guestbook": "lobby", "nickname": "bartholomew"}},
		{name: "upper-nick-v1", version: "v1", spec: map[string]any{"guestbook": "lobby", "nickname": "Bart"}},
		{name: "upper-nick-v1beta1", version: "v1beta1", spec: map[string]any{"guestbook": "lobby", "nickname": "Bart"}},
		{name: "both-v1beta1", version: "v1beta1", spec: map[string]any{"guestbook": "lobby", "nickname": "Bartholomew"}},
		{name: "default-v1beta1", version: "v1beta1", spec: map[string]any{"guestbook": "lobby"}},
		{name: "default-v1", version: "v1", spec: map[string]any{"guestbook": "lobby"}},
		{name: "upd-long-v1beta1", version: "v1beta1", base: map[string]any{"guestbook": "lobby"}, spec: map[string]any{"guestbook": "lobby", "nickname": "bartholomew"}},
		{name: "upd-long-v1", version: "v1", base: map[string]any{"guestbook": "lobby"}, spec: map[string]any{"guestbook": "lobby", "nickname": "bartholomew"}},
		{name: "upd-upper-v1", version: "v1", base: map[string]any{"guestbook": "lobby"}, spec: map[string]any{"guestbook": "lobby", "nickname": "Bart"}},
		{name: "upd-upper-v1beta1", version: "v1beta1", base: map[string]any{"guestbook": "lobby"}, spec: map[string]any{"guestbook": "lobby", "nickname": "Bart"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			answers := map[string]string{}
			for name, dyn := range servers {
				var obj *unstructured.Unstructured
				var err error
				if c.base == nil {
					obj, err = dyn.Resource(visitors(c.version)).Namespace("guests").Create(ctx, visitor(c.version, c.name, c.spec), metav1.CreateOptions{})
				} else {
					if _, err := dyn.Resource(visitors("v1")).Namespace("guests").Create(ctx, visitor("v1", c.name, c.base), metav1.CreateOptions{}); err != nil {
						t.Fatalf("%s: creating the base object: %v", name, err)
					}
					cur, getErr := dyn.Resource(visitors(c.version)).Namespace("guests").Get(ctx, c.name, metav1.GetOptions{})
					if getErr != nil {
						t.Fatalf("%s: %v", name, getErr)
					}
					cur.Object["spec"] = runtime.DeepCopyJSONValue(c.spec)
					obj, err = dyn.Resource(visitors(c.version)).Namespace("guests").Update(ctx, cur, metav1.UpdateOptions{})
				}
				answers[name] = describeAnswer(obj, err)
			}
			if answers["aagen"] != answers["crd"] {
				t.Errorf("%s through %s:\naagen: %s\nCRD:   %s", c.name, c.version, answers["aagen"], answers["crd"])
			}
			t.Logf("%s through %s: %s", c.name, c.version, answers["aagen"])
		})
	}
}

// describeAnswer renders a write's answer for comparison: the status code, message and
// causes of an error, or the spec of the written object.
func describeAnswer(obj *unstructured.Unstructured, err error) string {
	if err != nil {
		st, ok := err.(apierrors.APIStatus)
		if !ok {
			return "error: " + err.Error()
		}
		s := st.Status()
		var causes []string
		if s.Details != nil {
			for _, c := range s.Details.Causes {
				causes = append(causes, fmt.Sprintf("%s %s: %s", c.Type, c.Field, c.Message))
			}
		}
		slices.Sort(causes)
		return fmt.Sprintf("%d %s %q causes=%q", s.Code, s.Reason, s.Message, causes)
	}
	spec, _ := json.Marshal(obj.Object["spec"])
	return "ok " + obj.GetAPIVersion() + " spec=" + string(spec)
}

// installVisitorCRD creates visitors.webapp.example.com with versions v1 (stored) and
// v1beta1 and the given schemas, and waits until both versions answer.
func installVisitorCRD(t *testing.T, ctx context.Context, admin *rest.Config, schemas map[string]*apiextensionsv1.JSONSchemaProps) {
	t.Helper()
	var versions []apiextensionsv1.CustomResourceDefinitionVersion
	for _, v := range []string{"v1", "v1beta1"} {
		versions = append(versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: v == "v1",
			Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schemas[v]},
			Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
		})
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "visitors." + webapp},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: webapp, Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "visitors", Singular: "visitor", Kind: "Visitor", ListKind: "VisitorList"},
			Versions: versions,
		},
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(admin)
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dyn.Resource(crds).Create(ctx, &unstructured.Unstructured{Object: u}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the CRD: %v", err)
	}
	for _, v := range []string{"v1", "v1beta1"} {
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := dyn.Resource(visitors(v)).Namespace("guests").List(ctx, metav1.ListOptions{})
			return err == nil, nil
		}); err != nil {
			t.Fatalf("the CRD's %s never answered: %v", v, err)
		}
	}
}
