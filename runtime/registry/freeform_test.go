package registry

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// giftDefs has a spec with a RawExtension property marked as an embedded resource (the
// extensions next to its $ref, as codegen writes them) and an apiextensions JSON one.
func giftDefs(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
	return map[string]openapicommon.OpenAPIDefinition{
		"com.example.v1.Gift": {Schema: spec.Schema{SchemaProps: spec.SchemaProps{
			Type: []string{"object"},
			Properties: map[string]spec.Schema{
				"apiVersion": {SchemaProps: spec.SchemaProps{Type: []string{"string"}}},
				"kind":       {SchemaProps: spec.SchemaProps{Type: []string{"string"}}},
				"metadata":   {SchemaProps: spec.SchemaProps{Ref: ref(defObjectMeta)}},
				"spec": {SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: map[string]spec.Schema{
					"wrapped": {
						SchemaProps: spec.SchemaProps{Ref: ref(defRawExtension)},
						VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{
							"x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}},
					},
					"any": {SchemaProps: spec.SchemaProps{Ref: ref(defJSON)}},
				}}},
			},
		}}},
	}
}

func TestEmbeddedResources(t *testing.T) {
	v, err := newSchemaValidator(&Schema{Definitions: giftDefs, Name: "com.example.v1.Gift"})
	if err != nil {
		t.Fatal(err)
	}
	if !v.embedded {
		t.Fatal("the schema's embedded resource was not found")
	}
	gift := func(s map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Gift", "metadata": map[string]any{"name": "g"}, "spec": s}}
	}
	check := func(name string, obj *unstructured.Unstructured, want ...string) {
		t.Helper()
		var errs []string
		for _, e := range v.validate(context.Background(), obj, nil) {
			errs = append(errs, e.Error())
		}
		if messages(errs) != messages(want) {
			t.Errorf("%s:\n%s\nwant:\n%s", name, messages(errs), messages(want))
		}
	}
	check("embedded object", gift(map[string]any{"wrapped": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}, "data": map[string]any{"a": "b"}}}))
	check("any JSON value", gift(map[string]any{"any": []any{int64(1), "two", map[string]any{"three": true}}}))
	check("no apiVersion and kind", gift(map[string]any{"wrapped": map[string]any{"data": map[string]any{}}}),
		"spec.wrapped.apiVersion: Required value", "spec.wrapped.kind: Required value")
	check("bad metadata name", gift(map[string]any{"wrapped": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a/b"}}}),
		`spec.wrapped.metadata.name: Invalid value: "a/b": may not contain '/'`)

	// The embedded object's metadata is pruned to ObjectMeta's fields; its other fields stay.
	obj := gift(map[string]any{"wrapped": map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "x", "bogus": "y"}, "data": map[string]any{"a": "b"}, "extra": true}})
	v.coerceEmbedded(obj)
	wrapped, _, _ := unstructured.NestedMap(obj.Object, "spec", "wrapped")
	if md, _ := wrapped["metadata"].(map[string]any); md["bogus"] != nil || md["name"] != "x" || wrapped["extra"] != true {
		t.Errorf("coerced embedded object: %v; want metadata.bogus dropped, the rest kept", wrapped)
	}
}
