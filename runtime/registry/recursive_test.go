package registry

import (
	"context"
	"testing"

	openapicommon "k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/utils/ptr"
)

// TestSchemaValidatorRecursive: a recursive definition (a Node whose children are Nodes, as
// apiextensions' JSONSchemaProps has properties of its own type, through a map and a list)
// gets a validator: the structural schema cannot repeat, so the first Node is checked against
// its schema and its repetitions keep any value (decoding into the Go type is their check).
func TestSchemaValidatorRecursive(t *testing.T) {
	defs := func(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
		return map[string]openapicommon.OpenAPIDefinition{
			"com.example.v1.Widget": {Schema: spec.Schema{SchemaProps: spec.SchemaProps{
				Type: []string{"object"},
				Properties: map[string]spec.Schema{
					"apiVersion": {SchemaProps: spec.SchemaProps{Type: []string{"string"}}},
					"kind":       {SchemaProps: spec.SchemaProps{Type: []string{"string"}}},
					"metadata":   {SchemaProps: spec.SchemaProps{Ref: ref(defObjectMeta)}},
					"spec":       {SchemaProps: spec.SchemaProps{Ref: ref("com.example.v1.Node")}},
				},
			}}},
			"com.example.v1.Node": {Schema: spec.Schema{SchemaProps: spec.SchemaProps{
				Type: []string{"object"},
				Properties: map[string]spec.Schema{
					"name": {SchemaProps: spec.SchemaProps{Type: []string{"string"}, MaxLength: ptr.To[int64](3)}},
					"children": {SchemaProps: spec.SchemaProps{Type: []string{"object"},
						AdditionalProperties: &spec.SchemaOrBool{Allows: true, Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref("com.example.v1.Node")}}}}},
					"list": {SchemaProps: spec.SchemaProps{Type: []string{"array"},
						Items: &spec.SchemaOrArray{Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref("com.example.v1.Node")}}}}},
				},
			}}},
		}
	}
	props, err := (&Schema{Definitions: defs, Name: "com.example.v1.Widget"}).JSONSchemaProps()
	if err != nil {
		t.Fatal(err)
	}
	node := props.Properties["spec"]
	child := node.Properties["children"].AdditionalProperties.Schema
	if child.XPreserveUnknownFields == nil || !*child.XPreserveUnknownFields || len(child.Properties) != 0 {
		t.Errorf("the repeated Node through a map: %+v, want an object that keeps unknown fields", child)
	}
	if item := node.Properties["list"].Items.Schema; item.XPreserveUnknownFields == nil || !*item.XPreserveUnknownFields {
		t.Errorf("the repeated Node through a list: %+v, want an object that keeps unknown fields", item)
	}
	v, err := newSchemaValidator(&Schema{Definitions: defs, Name: "com.example.v1.Widget"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	deep := map[string]any{"name": "abc", "children": map[string]any{"a": map[string]any{"name": "abcdef",
		"children": map[string]any{"b": map[string]any{"name": "x"}}}}, "list": []any{map[string]any{"name": "y"}}}
	if errs := v.validate(ctx, schemaWidget(deep), nil); len(errs) != 0 {
		t.Errorf("a nested object: %v", errs)
	}
	if errs := v.validate(ctx, schemaWidget(map[string]any{"name": "abcd"}), nil); len(errs) != 1 {
		t.Errorf("the first Node's name over its maxLength: %v, want one error", errs)
	}
}
