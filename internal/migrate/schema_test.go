package migrate

import (
	"encoding/json"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestCompareSchemas compares a CRD's schema with a server's /openapi/v3 document whose
// kind reaches its fields through references (plain and wrapped in allOf): a type that
// differs, a field on one side only (reported once, at the top of what is missing), an
// object one side leaves undescribed (reported once, not field by field), and
// int-or-string; equal fields are not reported, nor apiVersion, kind and metadata.
func TestCompareSchemas(t *testing.T) {
	var crd apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal([]byte(`{"type":"object","properties":{
		"apiVersion":{"type":"string"},"kind":{"type":"string"},"metadata":{"type":"object"},
		"spec":{"type":"object","properties":{
			"replicas":{"type":"integer"},
			"name":{"type":"string"},
			"legacy":{"type":"object","properties":{"a":{"type":"string"}}},
			"template":{"type":"object"},
			"port":{"x-kubernetes-int-or-string":true},
			"ports":{"type":"array","items":{"type":"object","properties":{"port":{"type":"integer"}}}},
			"tags":{"type":"object","additionalProperties":{"type":"string"}}}},
		"status":{"type":"object","properties":{"ready":{"type":"boolean"}}}}}`), &crd); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(`{"components":{"schemas":{
		"io.example.v1.Widget":{"type":"object","x-kubernetes-group-version-kind":[{"group":"shop.example.com","version":"v1","kind":"Widget"}],
			"properties":{"apiVersion":{"type":"string"},"kind":{"type":"string"},
				"metadata":{"allOf":[{"$ref":"#/components/schemas/meta.ObjectMeta"}],"default":{}},
				"spec":{"allOf":[{"$ref":"#/components/schemas/io.example.v1.WidgetSpec"}],"default":{}},
				"status":{"$ref":"#/components/schemas/io.example.v1.WidgetStatus"}}},
		"io.example.v1.WidgetSpec":{"type":"object","properties":{
			"replicas":{"type":"string"},
			"name":{"type":"string"},
			"template":{"$ref":"#/components/schemas/io.example.v1.Template"},
			"port":{"$ref":"#/components/schemas/intstr.IntOrString"},
			"ports":{"type":"array","items":{"allOf":[{"$ref":"#/components/schemas/io.example.v1.Port"}]}},
			"tags":{"type":"object","additionalProperties":{"type":"string","default":""}}}},
		"io.example.v1.Template":{"type":"object","properties":{"metadata":{"$ref":"#/components/schemas/meta.ObjectMeta"},"image":{"type":"string"}}},
		"io.example.v1.Port":{"type":"object","properties":{"port":{"type":"integer"},"protocol":{"type":"string"}}},
		"io.example.v1.WidgetStatus":{"type":"object","properties":{"ready":{"type":"boolean"}}},
		"intstr.IntOrString":{"type":"string","format":"int-or-string","x-kubernetes-int-or-string":true},
		"meta.ObjectMeta":{"type":"object","properties":{"name":{"type":"string"}}}}}}`), &doc); err != nil {
		t.Fatal(err)
	}
	diffs, err := compareSchemas("v1", &crd, doc, schema.GroupVersionKind{Group: "shop.example.com", Version: "v1", Kind: "Widget"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range diffs {
		got = append(got, d.String())
	}
	want := []string{
		"spec.legacy: only in the CRD (object)",
		"spec.ports[*].protocol: only in the generated server (string)",
		"spec.replicas: integer in the CRD, string in the generated server",
		"spec.template: object (fields not described) in the CRD, object in the generated server",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("differences:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := compareSchemas("v1", &crd, doc, schema.GroupVersionKind{Group: "shop.example.com", Version: "v1", Kind: "Gadget"}); err == nil ||
		!strings.Contains(err.Error(), "no schema of shop.example.com/v1, Kind=Gadget") {
		t.Errorf("a kind the document lacks: %v", err)
	}
}
