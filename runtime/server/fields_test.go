package server

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type labelledStorage struct{ labels []string }

func (s labelledStorage) New() runtime.Object   { return &metav1.PartialObjectMetadata{} }
func (s labelledStorage) Destroy()              {}
func (s labelledStorage) FieldLabels() []string { return s.labels }

func TestRegisterFieldLabels(t *testing.T) {
	gv := schema.GroupVersion{Group: "shop.example.com", Version: "v1"}
	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(gv, &metav1.PartialObjectMetadata{})
	gvk := gv.WithKind("PartialObjectMetadata")

	// Without a registration only metadata fields are accepted.
	if _, _, err := scheme.ConvertFieldLabel(gvk, "spec.color", "red"); err == nil {
		t.Fatal("spec.color accepted before registration")
	}
	if err := registerFieldLabels(scheme, gv, labelledStorage{[]string{"metadata.name", "metadata.namespace", "spec.color"}}); err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{"metadata.name", "metadata.namespace", "spec.color"} {
		if l, v, err := scheme.ConvertFieldLabel(gvk, label, "x"); err != nil || l != label || v != "x" {
			t.Errorf("%s: %q %q %v", label, l, v, err)
		}
	}
	_, _, err := scheme.ConvertFieldLabel(gvk, "spec.size", "1")
	if err == nil || !strings.Contains(err.Error(), "field label not supported: spec.size") ||
		!strings.Contains(err.Error(), "metadata.name, metadata.namespace, spec.color") {
		t.Errorf("unknown label: %v", err)
	}
}
