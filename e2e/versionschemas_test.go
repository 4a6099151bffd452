package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// testVersionSchemasLikeCRD checks that each served version of kbexample's Visitor
// validates and defaults with its own markers — v1beta1 limits spec.nickname to 8 bytes
// and defaults spec.badge, v1 has a CEL rule on spec.nickname instead — by sending the
// same creates and updates to the generated server (cfg) and to controller-gen's CRD of
// the same types with the same two versions on a real kube-apiserver (oracle), and
// comparing the answers: status code, message and causes, or the stored spec. Both the
// generated server's OpenAPI and controller-gen's CRD must carry each version's markers
// (the oracle's own check: a marker it did not read would make the comparison moot).
func testVersionSchemasLikeCRD(t *testing.T, ctx context.Context, cfg *rest.Config, oracle *crdOracle) {
	rc := discovery.NewDiscoveryClientForConfigOrDie(rest.CopyConfig(cfg)).RESTClient()
	for _, v := range []string{"v1", "v1beta1"} {
		doc, err := rc.Get().AbsPath("/openapi/v3/apis/" + webapp + "/" + v).DoRaw(ctx)
		if err != nil {
			t.Fatalf("OpenAPI v3 of %s: %v", v, err)
		}
		published, err := cluster.CRDSchema(doc, "."+v+".Visitor")
		if err != nil {
			t.Fatal(err)
		}
		for source, s := range map[string]*apiextensionsv1.JSONSchemaProps{"the generated server's OpenAPI": published, "controller-gen's CRD": oracle.schema(t, "visitors", v)} {
			nick, badge := s.Properties["spec"].Properties["nickname"], s.Properties["spec"].Properties["badge"]
			switch v {
			case "v1beta1":
				if nick.MaxLength == nil || *nick.MaxLength != 8 || len(nick.XValidations) != 0 {
					t.Errorf("%s, v1beta1: spec.nickname has maxLength %v and rules %v; want 8 and none", source, nick.MaxLength, nick.XValidations)
				}
				if badge.Default == nil || string(badge.Default.Raw) != `"visitor"` {
					t.Errorf("%s, v1beta1: spec.badge default %v; want \"visitor\"", source, badge.Default)
				}
			case "v1":
				if nick.MaxLength != nil || len(nick.XValidations) != 1 || nick.XValidations[0].Message != "nickname must be lower case" {
					t.Errorf("%s, v1: spec.nickname has maxLength %v and rules %v; want none and the lower-case rule", source, nick.MaxLength, nick.XValidations)
				}
				if badge.Default != nil {
					t.Errorf("%s, v1: spec.badge default %s; want none", source, badge.Default.Raw)
				}
			}
		}
	}

	// The writes get their own time: the suite's context may be nearly spent.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	servers := map[string]dynamic.Interface{"aagen": dynamic.NewForConfigOrDie(cfg), "crd": dynamic.NewForConfigOrDie(oracle.admin)}
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
