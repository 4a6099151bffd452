package registry

import (
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

var objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()

// schemaInput returns the unstructured form of obj that its schema is validated against.
// It is DefaultUnstructuredConverter's form, except that metadata holds only name and
// generateName: the structural schema has metadata as a plain object, as a CRD's has
// (metadata is validated as every object's is, not by the schema), and of metadata CEL
// rules see name and generateName only, as a CRD's rules do. The rest of metadata
// (managed fields, labels, annotations, owner references, timestamps) is not converted:
// it was most of the conversion's cost (managed fields go through their own JSON).
// Objects that are already unstructured, or whose metadata is not a metav1.ObjectMeta
// under "metadata", are converted whole.
func schemaInput(obj runtime.Object) (map[string]any, error) {
	if _, ok := obj.(runtime.Unstructured); ok {
		return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	}
	i, ok := objectMetaField(v.Elem().Type())
	if !ok {
		return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	}
	om := v.Elem().Field(i).Addr().Interface().(*metav1.ObjectMeta)
	// A shallow copy with empty metadata: nothing of obj is written.
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	cp.Elem().Field(i).Set(reflect.Zero(objectMetaType))
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cp.Interface())
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if om.Name != "" {
		m["name"] = om.Name
	}
	if om.GenerateName != "" {
		m["generateName"] = om.GenerateName
	}
	u["metadata"] = m
	return u, nil
}

// objectMetaField returns the index of t's metav1.ObjectMeta field that JSON names
// "metadata", as in every Kubernetes kind.
func objectMetaField(t reflect.Type) (int, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type != objectMetaType || !f.IsExported() {
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == "metadata" {
			return i, true
		}
	}
	return 0, false
}
