package codegen

import (
	"strings"
	"testing"
)

const openAPISrc = `package openapi

import (
	v1 "example.com/shop/pkg/apis/shop/v1"
	common "k8s.io/kube-openapi/pkg/common"
	spec "k8s.io/kube-openapi/pkg/validation/spec"
)

func GetOpenAPIDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	return map[string]common.OpenAPIDefinition{
		v1.WidgetSpec{}.OpenAPIModelName(): schema_pkg_apis_shop_v1_WidgetSpec(ref),
	}
}

func schema_pkg_apis_shop_v1_WidgetSpec(ref common.ReferenceCallback) common.OpenAPIDefinition {
	return common.OpenAPIDefinition{
		Schema: spec.Schema{
			SchemaProps: spec.SchemaProps{
				Type: []string{"object"},
				Properties: map[string]spec.Schema{
					"color": {
						SchemaProps: spec.SchemaProps{
							Type:   []string{"string"},
							Format: "",
						},
					},
					"size": {
						SchemaProps: spec.SchemaProps{
							Type:   []string{"integer"},
							Format: "int32",
						},
					},
				},
			},
		},
	}
}
`

func TestPatchOpenAPISource(t *testing.T) {
	out, err := patchOpenAPISource([]byte(openAPISrc), map[string]map[string]FieldValidation{
		"example.com/shop/pkg/apis/shop/v1.WidgetSpec": {
			"color": {JSONName: "color", Enum: []any{"red", "blue"}, Format: "hexcolor"},
			"size":  {JSONName: "size", Enum: []any{int64(1), int64(2)}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Format: \"hexcolor\",\n\t\t\t\t\t\t\tEnum:   []interface{}{\"red\", \"blue\"},",
		"Format: \"int32\",\n\t\t\t\t\t\t\tEnum:   []interface{}{1, 2},",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// An enum openapi-gen wrote from +enum constants of another module's type (prometheus-
	// operator's imagePullPolicy, a corev1.PullPolicy with +kubebuilder:validation:Enum="";...)
	// is replaced by the field's, as controller-gen's CRD has it.
	withEnum := strings.Replace(openAPISrc, "Format: \"\",\n", "Format: \"\",\n\t\t\t\t\t\t\tEnum:   []interface{}{\"Always\", \"Never\"},\n", 1)
	out, err = patchOpenAPISource([]byte(withEnum), map[string]map[string]FieldValidation{
		"example.com/shop/pkg/apis/shop/v1.WidgetSpec": {"color": {JSONName: "color", Enum: []any{"", "Always", "Never"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := `Enum:   []interface{}{"", "Always", "Never"},`; !strings.Contains(string(out), want) || strings.Count(string(out), "Enum:") != 1 {
		t.Errorf("want the one enum %s in:\n%s", want, out)
	}
	// That enum is the field's +kubebuilder:validation:Enum: checked, so not documented.
	if want := "func DocumentedEnums() map[string][]string {\n\treturn nil\n}\n"; !strings.HasSuffix(string(out), want) {
		t.Errorf("want the checked enum left out of DocumentedEnums (%q):\n%s", want, out)
	}
	// openapi-gen's enum of a +enum type that no +kubebuilder:validation:Enum repeats, and
	// the enum codegen writes for a documented one (+k8s:enum, which openapi-gen does not
	// read), are documentation: listed under the definition's key as GetOpenAPIDefinitions
	// writes it, so that the server does not check them.
	for name, byType := range map[string]map[string]map[string]FieldValidation{
		"openapi-gen's": nil,
		"codegen's":     {"example.com/shop/pkg/apis/shop/v1.WidgetSpec": {"size": {JSONName: "size", Enum: []any{int64(1)}, DocumentedEnum: true}}},
	} {
		out, err = patchOpenAPISource([]byte(withEnum), byType)
		if err != nil {
			t.Fatal(err)
		}
		want := "\t\tv1.WidgetSpec{}.OpenAPIModelName(): {\"color\"},\n"
		if byType != nil {
			want = "\t\tv1.WidgetSpec{}.OpenAPIModelName(): {\"color\", \"size\"},\n"
		}
		if !strings.Contains(string(out), "func DocumentedEnums() map[string][]string {\n\treturn map[string][]string{\n"+want+"\t}\n}\n") {
			t.Errorf("%s: want DocumentedEnums with %q:\n%s", name, want, out)
		}
	}
	out, err = patchOpenAPISource([]byte(openAPISrc), map[string]map[string]FieldValidation{
		"example.com/shop/pkg/apis/shop/v1.WidgetSpec": {"size": {JSONName: "size", PreserveUnknownFields: true, EmbeddedResource: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "VendorExtensible: spec.VendorExtensible{\n\t\t\t\t\t\t\tExtensions: spec.Extensions{\n" +
		"\t\t\t\t\t\t\t\t\"x-kubernetes-embedded-resource\":       true,\n" +
		"\t\t\t\t\t\t\t\t\"x-kubernetes-preserve-unknown-fields\": true,"; !strings.Contains(string(out), want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
	// A free-form RawExtension field is published as an inline object, as controller-gen
	// writes it (the field manager then tracks its members, as a CRD's).
	withRaw := strings.Replace(openAPISrc, "\tcommon \"k8s.io/kube-openapi/pkg/common\"\n", "\tcommon \"k8s.io/kube-openapi/pkg/common\"\n\truntime \"k8s.io/apimachinery/pkg/runtime\"\n", 1)
	withRaw = strings.Replace(withRaw, "\"size\": {\n\t\t\t\t\t\tSchemaProps: spec.SchemaProps{\n\t\t\t\t\t\t\tType:   []string{\"integer\"},\n\t\t\t\t\t\t\tFormat: \"int32\",\n",
		"\"size\": {\n\t\t\t\t\t\tSchemaProps: spec.SchemaProps{\n\t\t\t\t\t\t\tDescription: \"any JSON object\",\n\t\t\t\t\t\t\tRef: ref(runtime.RawExtension{}.OpenAPIModelName()),\n", 1)
	if !strings.Contains(withRaw, "RawExtension") {
		t.Fatal("the RawExtension source was not made")
	}
	out, err = patchOpenAPISource([]byte(withRaw), map[string]map[string]FieldValidation{
		"example.com/shop/pkg/apis/shop/v1.WidgetSpec": {"size": {JSONName: "size", PreserveUnknownFields: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "Ref:") || !strings.Contains(string(out), "Description: \"any JSON object\",\n\t\t\t\t\t\t\tType:        []string{\"object\"},") {
		t.Errorf("a free-form RawExtension field: want an inline object, not a Ref:\n%s", out)
	}
	if _, err := patchOpenAPISource([]byte(openAPISrc), map[string]map[string]FieldValidation{
		"example.com/shop/pkg/apis/shop/v1.WidgetSpec": {"weight": {JSONName: "weight", Format: "byte"}},
	}); err == nil || !strings.Contains(err.Error(), "has no property weight") {
		t.Errorf("unknown property: %v", err)
	}
}

// TestWithOmitEmpty: openapi-gen sees a defaulted field with omitempty (it refuses any
// default but the zero value on a field without it), and nothing else of the tag changes.
func TestWithOmitEmpty(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`json:"size"`, `json:"size,omitempty"`},
		{`json:"size,omitempty"`, `json:"size,omitempty"`},
		{`json:"size,string"`, `json:"size,string,omitempty"`},
		{`json:"size" protobuf:"varint,1,opt,name=size"`, `json:"size,omitempty" protobuf:"varint,1,opt,name=size"`},
		{`protobuf:"bytes,2" json:"name"`, `protobuf:"bytes,2" json:"name,omitempty"`},
		{`json:"-"`, `json:"-"`},
		{`xjson:"a"`, `xjson:"a"`},
		{``, ``},
	} {
		if got := withOmitEmpty(c.in); got != c.want {
			t.Errorf("withOmitEmpty(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestPatchOpenAPISourceItems: the enum and format of a list's items (a list of a named type
// with them, Gateway API's []HTTPMethodWithWildcard) go into the items' schema.
func TestPatchOpenAPISourceItems(t *testing.T) {
	src := strings.Replace(openAPISrc, `"size": {`, `"methods": {
						SchemaProps: spec.SchemaProps{
							Type: []string{"array"},
							Items: &spec.SchemaOrArray{
								Schema: &spec.Schema{
									SchemaProps: spec.SchemaProps{
										Default: "",
										Type:    []string{"string"},
										Format:  "",
									},
								},
							},
						},
					},
					"size": {`, 1)
	out, err := patchOpenAPISource([]byte(src), map[string]map[string]FieldValidation{
		"example.com/shop/pkg/apis/shop/v1.WidgetSpec": {
			"methods": {JSONName: "methods", ItemsEnum: []any{"GET", "*"}, ItemsFormat: "byte"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "Format:  \"byte\",\n\t\t\t\t\t\t\t\t\t\tEnum:    []interface{}{\"GET\", \"*\"},"
	if !strings.Contains(string(out), want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}
