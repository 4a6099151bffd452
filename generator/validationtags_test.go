package generator

import (
	"slices"
	"testing"

	"github.com/aagen-dev/aagen/generator/model"
)

func TestValidationTags(t *testing.T) {
	one, zero := 1.0, int64(0)
	v := &model.Version{Validations: []*model.TypeValidation{{
		Name:       "WidgetSpec",
		Validation: model.Validation{Rules: []model.Rule{{Rule: "self.a <= self.b"}, {Rule: "self.a == oldSelf.a", Message: "immutable", Reason: "FieldValueForbidden", FieldPath: ".a"}}},
		Fields: []model.FieldValidation{{
			GoName: "A", JSONName: "a", Default: `"x"`, Required: new(bool),
			Validation: model.Validation{Minimum: &one, ExclusiveMinimum: true, MinLength: &zero, Pattern: `^a"b$`, Enum: []any{"x", "y"}, Format: "email"},
		}},
	}}}
	got := validationTags(v)
	if !got.Defaults || len(got.Types) != 1 {
		t.Fatalf("got %+v", got)
	}
	wantType := []string{
		`+k8s:validation:cel[0]:rule="self.a <= self.b"`,
		`+k8s:validation:cel[0]:message="failed rule: self.a <= self.b"`,
		`+k8s:validation:cel[1]:rule="self.a == oldSelf.a"`,
		`+k8s:validation:cel[1]:message="immutable"`,
		`+k8s:validation:cel[1]:reason="FieldValueForbidden"`,
		`+k8s:validation:cel[1]:fieldPath=".a"`,
	}
	if !slices.Equal(got.Types[0].Tags, wantType) {
		t.Errorf("type tags:\n%q\nwant\n%q", got.Types[0].Tags, wantType)
	}
	f := got.Types[0].Fields[0]
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
	v := &model.Version{Validations: []*model.TypeValidation{{
		Name:   "WidgetSpec",
		Fields: []model.FieldValidation{{GoName: "Tags", JSONName: "tags", Items: &model.Validation{MaxLength: &eight, Pattern: "^[a-z]+$"}}},
	}}}
	got := validationTags(v).Types[0].Fields[0].Tags
	want := []string{`+k8s:validation:items:maxLength=8`, `+k8s:validation:items:pattern="^[a-z]+$"`}
	if !slices.Equal(got, want) {
		t.Errorf("tags %q, want %q", got, want)
	}
}
