package registry

import (
	"context"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/utils/ptr"
)

// defs is a small set of definitions in the shape openapi-gen writes: the kind refers to
// its spec, whose property carries value validations next to its $ref.
func defs(rule string) openapicommon.GetOpenAPIDefinitions {
	return func(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
		return map[string]openapicommon.OpenAPIDefinition{
			"com.example.v1.Widget": {Schema: spec.Schema{SchemaProps: spec.SchemaProps{
				Type: []string{"object"},
				Properties: map[string]spec.Schema{
					"apiVersion": {SchemaProps: spec.SchemaProps{Type: []string{"string"}}},
					"kind":       {SchemaProps: spec.SchemaProps{Type: []string{"string"}}},
					"metadata":   {SchemaProps: spec.SchemaProps{Ref: ref(defObjectMeta)}},
					"spec": {
						SchemaProps:      spec.SchemaProps{Ref: ref("com.example.v1.WidgetSpec")},
						VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-validations": []any{map[string]any{"rule": "self.size != 7", "message": "not seven"}}}},
					},
				},
			}}},
			"com.example.v1.WidgetSpec": {Schema: spec.Schema{
				SchemaProps: spec.SchemaProps{
					Type:     []string{"object"},
					Required: []string{"size"},
					Properties: map[string]spec.Schema{
						"size":  {SchemaProps: spec.SchemaProps{Type: []string{"integer"}, Format: "int32", Minimum: ptr.To[float64](1)}},
						"color": {SchemaProps: spec.SchemaProps{Type: []string{"string"}, Enum: []any{"red", "blue"}}},
						"count": {SchemaProps: spec.SchemaProps{Ref: ref(defIntOrString)}},
					},
				},
				VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-validations": []any{map[string]any{"rule": rule, "message": "rule failed"}}}},
			}},
		}
	}
}

func schemaWidget(spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}, "spec": spec,
	}}
}

func messages(errs []string) string { slices.Sort(errs); return strings.Join(errs, "\n") }

func TestSchemaValidator(t *testing.T) {
	v, err := newSchemaValidator(&Schema{Definitions: defs("!has(oldSelf.color) || self.color == oldSelf.color"), Name: "com.example.v1.Widget"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	check := func(name string, obj, old *unstructured.Unstructured, want ...string) {
		t.Helper()
		var errs []string
		var got = v.validate(ctx, obj, nil)
		if old != nil {
			got = v.validate(ctx, obj, old)
		}
		for _, e := range got {
			errs = append(errs, e.Error())
		}
		if messages(errs) != messages(want) {
			t.Errorf("%s:\n%s\nwant:\n%s", name, messages(errs), messages(want))
		}
	}
	check("valid", schemaWidget(map[string]any{"size": int64(2), "color": "red", "count": "3"}), nil)
	check("int-or-string", schemaWidget(map[string]any{"size": int64(2), "count": int64(3)}), nil)
	check("schema errors together", schemaWidget(map[string]any{"size": int64(0), "color": "green"}), nil,
		`spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1`,
		`spec.color: Unsupported value: "green": supported values: "red", "blue"`,
		`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`)
	check("required", schemaWidget(map[string]any{}), nil,
		`spec.size: Required value`,
		`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`)
	check("CEL rule next to a $ref", schemaWidget(map[string]any{"size": int64(7)}), nil, `spec: Invalid value: not seven`)
	check("transition rule", schemaWidget(map[string]any{"size": int64(2), "color": "blue"}), schemaWidget(map[string]any{"size": int64(2), "color": "red"}),
		`spec: Invalid value: rule failed`)
	// Ratcheting: an invalid value the update leaves alone is not an error.
	check("ratcheting", schemaWidget(map[string]any{"size": int64(0), "color": "red"}), schemaWidget(map[string]any{"size": int64(0), "color": "red"}))
}

func TestSchemaValidatorRuleDoesNotCompile(t *testing.T) {
	_, err := newSchemaValidator(&Schema{Definitions: defs("self.colour == 'red'"), Name: "com.example.v1.Widget"})
	if err == nil || !strings.Contains(err.Error(), `CEL rules of spec do not compile: rule "self.colour == 'red'"`) || !strings.Contains(err.Error(), "colour") {
		t.Fatalf("want a compile error naming the rule, got %v", err)
	}
}

func TestJSONSchemaPropsUnknownDefinition(t *testing.T) {
	if _, err := (&Schema{Definitions: defs("true"), Name: "com.example.v1.Nope"}).JSONSchemaProps(); err == nil || !strings.Contains(err.Error(), `no OpenAPI definition "com.example.v1.Nope"`) {
		t.Fatalf("got %v", err)
	}
}

// A body (an action's input, a view) is validated against its own definition, with paths
// relative to the body.
func TestNewBodyValidator(t *testing.T) {
	v, err := NewBodyValidator(&Schema{Definitions: defs("true"), Name: "com.example.v1.WidgetSpec"})
	if err != nil {
		t.Fatal(err)
	}
	errs := v(context.Background(), &unstructured.Unstructured{Object: map[string]any{"size": int64(0), "color": "red"}}, nil)
	if len(errs) != 1 || errs[0].Field != "size" {
		t.Errorf("errors %v; want one at size", errs)
	}
	if errs := v(context.Background(), &unstructured.Unstructured{Object: map[string]any{"size": int64(2)}}, nil); len(errs) != 0 {
		t.Errorf("a valid body: %v", errs)
	}
	if _, err := NewBodyValidator(&Schema{Definitions: defs("true"), Name: "com.example.v1.Missing"}); err == nil {
		t.Error("no error for a missing definition")
	}
}

// TestDocumentedEnums: an enum the generated DocumentedEnums lists (a +enum type's
// constants without +kubebuilder:validation:Enum) is published but not checked, whether on
// the property or on a list's items; the other enums of the same definition are checked.
func TestDocumentedEnums(t *testing.T) {
	base := defs("true")
	withShapes := func(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
		all := base(ref)
		s := all["com.example.v1.WidgetSpec"]
		s.Schema.Properties["shape"] = spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}, Enum: []any{"Round", "Square"}}}
		s.Schema.Properties["shapes"] = spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"array"}, Items: &spec.SchemaOrArray{Schema: &spec.Schema{
			SchemaProps: spec.SchemaProps{Type: []string{"string"}, Enum: []any{"Round", "Square"}}}}}}
		all["com.example.v1.WidgetSpec"] = s
		return all
	}
	documented := map[string][]string{"com.example.v1.WidgetSpec": {"shape", "shapes"}}
	// One map for every call, so that a validator changing the definitions would show.
	shared := withShapes(func(p string) spec.Ref { return spec.MustCreateRef("#/definitions/" + p) })
	sharedDefs := func(openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition { return shared }
	v, err := newSchemaValidator(&Schema{Definitions: sharedDefs, DocumentedEnums: documented, Name: "com.example.v1.Widget"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range v.validate(context.Background(), schemaWidget(map[string]any{"size": int64(2), "shape": "Oval", "shapes": []any{"Oval"}, "color": "green"}), nil) {
		got = append(got, e.Error())
	}
	if want := []string{`spec.color: Unsupported value: "green": supported values: "red", "blue"`,
		`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`}; messages(got) != messages(want) {
		t.Errorf("errors:\n%s\nwant only the checked enum's:\n%s", messages(got), messages(want))
	}
	// Without the list, the same enums are checked.
	strict, err := newSchemaValidator(&Schema{Definitions: withShapes, Name: "com.example.v1.Widget"})
	if err != nil {
		t.Fatal(err)
	}
	if errs := strict.validate(context.Background(), schemaWidget(map[string]any{"size": int64(2), "shape": "Oval", "shapes": []any{"Oval"}}), nil); len(errs) < 2 {
		t.Errorf("without DocumentedEnums: errors %v; want shape and shapes[0] refused", errs)
	}
	// The definitions themselves, which the server publishes, keep the enums.
	published := shared["com.example.v1.WidgetSpec"].Schema
	if len(published.Properties["shape"].Enum) != 2 || len(published.Properties["shapes"].Items.Schema.Enum) != 2 {
		t.Errorf("the published definition lost its enums: %+v", published.Properties)
	}
	// A body validator leaves them out too.
	body, err := NewBodyValidator(&Schema{Definitions: withShapes, DocumentedEnums: documented, Name: "com.example.v1.WidgetSpec"})
	if err != nil {
		t.Fatal(err)
	}
	if errs := body(context.Background(), &unstructured.Unstructured{Object: map[string]any{"size": int64(2), "shape": "Oval"}}, nil); len(errs) != 0 {
		t.Errorf("a body with a documented enum's other value: %v", errs)
	}
}

// TestSchemaValidatorStatus: a write through /status is checked as a CRD's status strategy
// checks it: the schema checks the status alone, so its messages name paths from the status
// down (kube-apiserver: "size in body", under the field path status.size), and the spec,
// which /status does not change, is not checked by the schema.
func TestSchemaValidatorStatus(t *testing.T) {
	withStatus := func(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
		d := defs("true")(ref)
		w := d["com.example.v1.Widget"]
		w.Schema.Properties["status"] = spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref("com.example.v1.WidgetSpec")}}
		d["com.example.v1.Widget"] = w
		return d
	}
	v, err := newSchemaValidator(&Schema{Definitions: withStatus, Name: "com.example.v1.Widget"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	widget := func(spec, status map[string]any) *unstructured.Unstructured {
		w := schemaWidget(spec)
		w.Object["status"] = status
		return w
	}
	errs := func(list field.ErrorList) string {
		var out []string
		for _, e := range list {
			out = append(out, e.Error())
		}
		return messages(out)
	}
	old := widget(map[string]any{"size": int64(0)}, map[string]any{"size": int64(2)})
	obj := widget(map[string]any{"size": int64(0)}, map[string]any{"size": int64(0), "color": "green"})
	if got, want := errs(v.validateStatus(ctx, obj, old)), messages([]string{
		`status.color: Unsupported value: "green": supported values: "red", "blue"`,
		`status.size: Invalid value: 0: size in body should be greater than or equal to 1`,
		`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
	}); got != want {
		t.Errorf("through /status:\n%s\nwant:\n%s", got, want)
	}
	if got := errs(v.validate(ctx, obj, old)); !strings.Contains(got, "status.size in body should be greater than or equal to 1") {
		t.Errorf("an update of the whole object names the path from the object down; got:\n%s", got)
	}
}
