package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

func gifts() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: webapp, Version: "v1", Resource: "gifts"}
}

// testFreeFormLikeCRD checks kbexample's Gift, whose spec has a runtime.RawExtension
// marked +kubebuilder:pruning:PreserveUnknownFields (card), one also marked
// +kubebuilder:validation:EmbeddedResource (wrapped) and a default in controller-tools'
// literal syntax (ribbon: {color: red, widthCm: 2}) and constraints on list items
// (tags: +kubebuilder:validation:items:MaxLength and Pattern). Its published OpenAPI carries
// x-kubernetes-preserve-unknown-fields and x-kubernetes-embedded-resource; and the same
// writes sent to the generated server (cfg) and to controller-gen's CRD of the same types on
// a real kube-apiserver (oracle) get the same answers: unknown fields kept inside card and wrapped,
// pruned elsewhere (and refused with fieldValidation=Strict), an embedded object without
// apiVersion and kind refused, its metadata validated and pruned.
func testFreeFormLikeCRD(t *testing.T, ctx context.Context, cfg *rest.Config, oracle *crdOracle) {
	rc := discovery.NewDiscoveryClientForConfigOrDie(rest.CopyConfig(cfg)).RESTClient()
	doc, err := rc.Get().AbsPath("/openapi/v3/apis/" + webapp + "/v1").DoRaw(ctx)
	if err != nil {
		t.Fatalf("OpenAPI v3 of v1: %v", err)
	}
	s, err := cluster.CRDSchema(doc, ".v1.Gift")
	if err != nil {
		t.Fatal(err)
	}
	spec := s.Properties["spec"]
	card, wrapped, ribbon := spec.Properties["card"], spec.Properties["wrapped"], spec.Properties["ribbon"]
	if !isTrue(card.XPreserveUnknownFields) || card.XEmbeddedResource || card.Type != "object" {
		t.Errorf("OpenAPI of spec.card: type %q, preserve-unknown-fields %v, embedded-resource %v; want object, true, false",
			card.Type, isTrue(card.XPreserveUnknownFields), card.XEmbeddedResource)
	}
	if !isTrue(wrapped.XPreserveUnknownFields) || !wrapped.XEmbeddedResource || wrapped.Type != "object" {
		t.Errorf("OpenAPI of spec.wrapped: type %q, preserve-unknown-fields %v, embedded-resource %v; want object, true, true",
			wrapped.Type, isTrue(wrapped.XPreserveUnknownFields), wrapped.XEmbeddedResource)
	}
	if tags := spec.Properties["tags"]; tags.Items == nil || tags.Items.Schema == nil || tags.Items.Schema.MaxLength == nil ||
		*tags.Items.Schema.MaxLength != 8 || tags.Items.Schema.Pattern != "^[a-z]+$" {
		t.Errorf("OpenAPI of spec.tags: items %+v; want maxLength 8 and pattern ^[a-z]+$", tags.Items)
	}
	if ribbon.Default == nil || string(ribbon.Default.Raw) != `{"color":"red","widthCm":2}` {
		t.Errorf("OpenAPI of spec.ribbon: default %v; want {\"color\":\"red\",\"widthCm\":2} from +kubebuilder:default={color: red, widthCm: 2}", ribbon.Default)
	}

	// controller-gen's CRD carries the same (the oracle's own check).
	cg := oracle.schema(t, "gifts", "v1").Properties["spec"]
	if c, w := cg.Properties["card"], cg.Properties["wrapped"]; !isTrue(c.XPreserveUnknownFields) || !isTrue(w.XPreserveUnknownFields) || !w.XEmbeddedResource {
		t.Errorf("controller-gen's CRD: spec.card preserve-unknown-fields %v, spec.wrapped %v and embedded-resource %v; want true, true, true",
			isTrue(c.XPreserveUnknownFields), isTrue(w.XPreserveUnknownFields), w.XEmbeddedResource)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	servers := map[string]dynamic.Interface{"aagen": dynamic.NewForConfigOrDie(cfg), "crd": dynamic.NewForConfigOrDie(oracle.admin)}
	embedded := func(extra map[string]any) map[string]any {
		o := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "recipe", "labels": map[string]any{"dish": "cake"}},
			"data": map[string]any{"cake": "chocolate"}}
		for k, v := range extra {
			o[k] = v
		}
		return o
	}
	cases := []struct {
		name   string
		strict bool
		spec   map[string]any
	}{
		{name: "kept", spec: map[string]any{"from": "ann", "card": map[string]any{"text": "Thanks!", "stickers": []any{"star", map[string]any{"shape": "heart", "size": int64(3)}}},
			"wrapped": embedded(nil)}},
		{name: "pruned", spec: map[string]any{"from": "bo", "bogus": "x", "ribbon": map[string]any{"color": "blue", "shiny": true}}},
		{name: "strict", strict: true, spec: map[string]any{"from": "bo", "bogus": "x"}},
		{name: "strict-free-form", strict: true, spec: map[string]any{"card": map[string]any{"anything": map[string]any{"goes": true}}}},
		{name: "card-not-object", spec: map[string]any{"card": "hello"}},
		{name: "wrapped-without-kind", spec: map[string]any{"wrapped": map[string]any{"metadata": map[string]any{"name": "x"}, "data": map[string]any{}}}},
		{name: "wrapped-bad-name", spec: map[string]any{"wrapped": embedded(map[string]any{"metadata": map[string]any{"name": "a/b"}})}},
		{name: "wrapped-bad-apiversion", spec: map[string]any{"wrapped": embedded(map[string]any{"apiVersion": "a/b/c"})}},
		{name: "tags", spec: map[string]any{"tags": []any{"red", "gold"}}},
		{name: "tags-invalid", spec: map[string]any{"tags": []any{"Shiny", "wonderful"}}},
		{name: "wrapped-metadata-pruned", spec: map[string]any{"wrapped": embedded(map[string]any{"metadata": map[string]any{"name": "recipe", "bogus": "x"}})}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			answers := map[string]string{}
			for name, dyn := range servers {
				obj := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": webapp + "/v1", "kind": "Gift",
					"metadata": map[string]any{"name": "gift-" + c.name, "namespace": "guests"},
					"spec":     runtime.DeepCopyJSONValue(c.spec),
				}}
				opts := metav1.CreateOptions{}
				if c.strict {
					opts.FieldValidation = metav1.FieldValidationStrict
				}
				got, err := dyn.Resource(gifts()).Namespace("guests").Create(ctx, obj, opts)
				answers[name] = describeAnswer(got, err)
			}
			if answers["aagen"] != answers["crd"] {
				t.Errorf("%s:\naagen: %s\nCRD:   %s", c.name, answers["aagen"], answers["crd"])
			}
			t.Logf("%s: %s", c.name, answers["aagen"])
		})
	}
}

func isTrue(b *bool) bool { return b != nil && *b }
