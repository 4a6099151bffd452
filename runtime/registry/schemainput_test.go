package registry

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// fullMetadata is what an object's metadata holds when a create is validated.
func fullMetadata(name, generateName string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, GenerateName: generateName, Namespace: "shop", UID: "6f0c1c1e-9a4f-4a57-9a8e-6b1f1d9b3a21",
		Generation: 1, CreationTimestamp: metav1.NewTime(time.Unix(1_700_000_000, 0)),
		Labels: map[string]string{"app": "shop"}, Annotations: map[string]string{"note": "x"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "example.com/v1",
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{".":{},"f:size":{}}}`)}}}}
}

func TestSchemaInputConvertsAllButMetadata(t *testing.T) {
	for _, c := range []struct {
		name, generateName string
		wantMeta           map[string]any
	}{
		{"w", "", map[string]any{"name": "w"}},
		{"", "w-", map[string]any{"generateName": "w-"}},
	} {
		obj := &schemaWidgetTyped{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"}, ObjectMeta: fullMetadata(c.name, c.generateName),
			Spec: schemaWidgetSpec{Size: 2, Color: "red", Count: intstr.FromString("3")}}
		before := obj.DeepCopyObject()
		got, err := schemaInput(obj)
		if err != nil {
			t.Fatal(err)
		}
		want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		want["metadata"] = c.wantMeta
		if !reflect.DeepEqual(got, want) {
			t.Errorf("schemaInput:\n%v\nwant:\n%v", got, want)
		}
		if !reflect.DeepEqual(obj, before) {
			t.Errorf("schemaInput changed the object: %v, was %v", obj, before)
		}
	}
}

// rootRuleDefs are defs with a CEL rule on the kind itself that reads metadata.name, as
// a CRD's root rules may.
func rootRuleDefs(rule string) openapicommon.GetOpenAPIDefinitions {
	return func(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
		d := defs("true")(ref)
		w := d["com.example.v1.Widget"]
		w.Schema.VendorExtensible = spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-validations": []any{map[string]any{"rule": rule, "message": "bad name"}}}}
		d["com.example.v1.Widget"] = w
		return d
	}
}

func TestSchemaInputKeepsNameForRootRules(t *testing.T) {
	v, err := newSchemaValidator(&Schema{Definitions: rootRuleDefs("self.metadata.name.startsWith('w') || self.metadata.generateName.startsWith('w')"), Name: "com.example.v1.Widget"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name, generateName string
		want               string
	}{
		{"widget", "", ""},
		{"", "w-", ""},
		{"gadget", "", "bad name"},
	} {
		obj := &schemaWidgetTyped{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"}, ObjectMeta: fullMetadata(c.name, c.generateName),
			Spec: schemaWidgetSpec{Size: 2}}
		got := v.validate(ctx, obj, nil).ToAggregate()
		switch {
		case c.want == "" && got != nil:
			t.Errorf("%q/%q: %v", c.name, c.generateName, got)
		case c.want != "" && (got == nil || !strings.Contains(got.Error(), c.want)):
			t.Errorf("%q/%q: got %v, want %q", c.name, c.generateName, got, c.want)
		}
	}
}
