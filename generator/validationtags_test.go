package generator

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/generator/model"
)

func TestValidationTags(t *testing.T) {
	one, zero := 1.0, int64(0)
	spec := &model.Type{
		Name:       model.GoType{Pkg: "example.com/shop/v1", Name: "WidgetSpec"},
		Validation: model.Validation{Rules: []model.Rule{{Rule: "self.a <= self.b"}, {Rule: "self.a == oldSelf.a", Message: "immutable", Reason: "FieldValueForbidden", FieldPath: ".a"}}},
		Underlying: &model.TypeExpr{Kind: model.ExprStruct, Fields: []*model.Field{{
			GoName: "A", JSONName: "a", FieldValidation: model.FieldValidation{Default: `"x"`, Required: new(bool),
				Validation: model.Validation{Minimum: &one, ExclusiveMinimum: true, MinLength: &zero, Pattern: `^a"b$`, Enum: []any{"x", "y"}, Format: "email"}},
		}, {GoName: "B", JSONName: "b"}}},
	}
	got := typeTags(spec)
	if len(got.Fields) != 1 {
		t.Fatalf("got %+v: the field without markers is listed", got)
	}
	wantType := []string{
		`+k8s:validation:cel[0]:rule="self.a <= self.b"`,
		`+k8s:validation:cel[0]:message="failed rule: self.a <= self.b"`,
		`+k8s:validation:cel[1]:rule="self.a == oldSelf.a"`,
		`+k8s:validation:cel[1]:message="immutable"`,
		`+k8s:validation:cel[1]:reason="FieldValueForbidden"`,
		`+k8s:validation:cel[1]:fieldPath=".a"`,
	}
	if !slices.Equal(got.Tags, wantType) {
		t.Errorf("type tags:\n%q\nwant\n%q", got.Tags, wantType)
	}
	f := got.Fields[0]
	wantField := []string{
		`+k8s:validation:minimum=1`, `+k8s:validation:exclusiveMinimum=true`, `+k8s:validation:minLength=0`,
		`+k8s:validation:pattern="^a\"b$"`, `+default="x"`, `+optional`,
	}
	if !slices.Equal(f.Tags, wantField) || f.Format != "email" || len(f.Enum) != 2 {
		t.Errorf("field: %q %q %v\nwant %q", f.Tags, f.Format, f.Enum, wantField)
	}
}

// TestItemsValidationTags: +kubebuilder:validation:items:* become kube-openapi's
// +k8s:validation:items: tags.
func TestItemsValidationTags(t *testing.T) {
	eight := int64(8)
	spec := &model.Type{
		Name: model.GoType{Pkg: "example.com/shop/v1", Name: "WidgetSpec"},
		Underlying: &model.TypeExpr{Kind: model.ExprStruct, Fields: []*model.Field{
			{GoName: "Tags", JSONName: "tags", FieldValidation: model.FieldValidation{Items: &model.Validation{MaxLength: &eight, Pattern: "^[a-z]+$"}}},
		}},
	}
	got := typeTags(spec).Fields[0].Tags
	want := []string{`+k8s:validation:items:maxLength=8`, `+k8s:validation:items:pattern="^[a-z]+$"`}
	if !slices.Equal(got, want) {
		t.Errorf("tags %q, want %q", got, want)
	}
}

// TestEverySchemaFieldReachesOpenAPI: every field of markers.Schema (model.Validation) on a
// field has a path to the published schema, as a tag openapi-gen reads or as a value
// codegen writes into the definitions itself (enum, format). A new schema keyword that is
// forgotten in the rendering fails here instead of silently never reaching OpenAPI.
func TestEverySchemaFieldReachesOpenAPI(t *testing.T) {
	st := reflect.TypeOf(model.Validation{})
	for i := range st.NumField() {
		sf := st.Field(i)
		var v model.Validation
		fv := reflect.ValueOf(&v).Elem().Field(i)
		switch sf.Type.String() {
		case "*float64":
			fv.Set(reflect.ValueOf(ptr(1.5)))
		case "*int64":
			fv.Set(reflect.ValueOf(ptr(int64(3))))
		case "bool":
			fv.SetBool(true)
		case "string":
			fv.SetString("x")
		case "[]interface {}":
			fv.Set(reflect.ValueOf([]any{"a"}))
		case "[]markers.Rule":
			fv.Set(reflect.ValueOf([]model.Rule{{Rule: "self > 0"}}))
		default:
			t.Fatalf("markers.Schema.%s has type %s, which this test cannot fill: teach it, and the rendering", sf.Name, sf.Type)
		}
		typ := &model.Type{
			Name:       model.GoType{Pkg: "example.com/shop/v1", Name: "WidgetSpec"},
			Underlying: &model.TypeExpr{Kind: model.ExprStruct, Fields: []*model.Field{{GoName: "A", JSONName: "a", FieldValidation: model.FieldValidation{Validation: v}}}},
		}
		got := typeTags(typ)
		if len(got.Fields) != 1 {
			t.Errorf("%s: the field is not rendered at all", sf.Name)
			continue
		}
		f := got.Fields[0]
		key := strings.ToLower(sf.Name)
		found := len(f.Enum) > 0 && sf.Name == "Enum" || f.Format != "" && sf.Name == "Format"
		for _, tag := range f.Tags {
			name, _, _ := strings.Cut(strings.TrimPrefix(tag, "+k8s:validation:"), "=")
			if strings.ToLower(name) == key || sf.Name == "Rules" && strings.HasPrefix(name, "cel[0]:rule") {
				found = true
			}
		}
		if !found {
			t.Errorf("markers.Schema.%s has no path to OpenAPI: tags %q, enum %v, format %q", sf.Name, f.Tags, f.Enum, f.Format)
		}
	}
}

func ptr[T any](v T) *T { return &v }
