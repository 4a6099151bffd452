package registry

import (
	"context"
	"encoding"
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/runtime"
)

// dropUnset removes from u, the unstructured form of the typed object obj, what the object
// holds only because a Go value cannot be absent, so that the schema sees the object as a
// CRD sees the JSON a client sent:
//
//   - the empty string in a required string field that is not a pointer: it reads as unset,
//     and a CRD-identical "Required value" is reported (Go cannot tell "" sent from a field
//     left out; as in k8s.io/api's own validation, a required string is never empty).
//     A field whose own constraints refuse "" (minLength, enum, pattern) keeps it, so that
//     the error names the constraint, as a CRD's does for a "" sent. Numbers and booleans keep their zero value, which clients do set (0 replicas,
//     false): make such a field a pointer for a missing one to be reported;
//   - a struct field holding its zero value that is optional (omitempty), or the top-level
//     status: a parent that is absent has no required fields (a status nobody has written
//     yet, an optional struct left out). The other top-level fields (the spec) are always
//     present, as openapi-gen's "default: {}" makes them for a CRD.
//
// Types with their own JSON form (metav1.Time, resource.Quantity, IntOrString,
// RawExtension) are left as they are. Unstructured objects have nothing to drop.
func dropUnset(obj runtime.Object, u map[string]any, s *structuralschema.Structural) {
	if _, ok := obj.(runtime.Unstructured); ok {
		return
	}
	v := reflect.ValueOf(obj)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Kind() == reflect.Struct {
		dropUnsetFields(v, u, s, true)
	}
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// ownJSON reports whether values of t marshal themselves.
func ownJSON(t reflect.Type) bool {
	return t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) ||
		t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)
}

func dropUnsetFields(v reflect.Value, u map[string]any, s *structuralschema.Structural, top bool) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		fv := v.Field(i)
		if f.Anonymous && name == "" {
			// An embedded struct's fields are the parent's (TypeMeta, inline structs).
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					continue
				}
				fv = fv.Elem()
			}
			if fv.Kind() == reflect.Struct && !ownJSON(fv.Type()) {
				dropUnsetFields(fv, u, s, top)
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		if top && name == "metadata" {
			continue // validated as every object's metadata is, not by the schema
		}
		val, present := u[name]
		if !present {
			continue
		}
		var prop *structuralschema.Structural
		if s != nil {
			if p, ok := s.Properties[name]; ok {
				prop = &p
			}
		}
		omitempty := slices.Contains(strings.Split(opts, ","), "omitempty")
		switch fv.Kind() {
		case reflect.String:
			if fv.Len() == 0 && required(s, name) && !ownJSON(fv.Type()) && !rejectsEmpty(prop) {
				delete(u, name)
			}
		case reflect.Struct:
			if ownJSON(fv.Type()) {
				continue
			}
			if fv.IsZero() && (top && name == "status" || !top && omitempty) {
				delete(u, name)
				continue
			}
			if m, ok := val.(map[string]any); ok {
				dropUnsetFields(fv, m, prop, false)
			}
		case reflect.Pointer:
			if fv.IsNil() || fv.Elem().Kind() != reflect.Struct || ownJSON(fv.Elem().Type()) {
				continue
			}
			if m, ok := val.(map[string]any); ok {
				dropUnsetFields(fv.Elem(), m, prop, false)
			}
		case reflect.Slice:
			items, ok := val.([]any)
			if !ok || len(items) != fv.Len() {
				continue
			}
			var itemSchema *structuralschema.Structural
			if prop != nil {
				itemSchema = prop.Items
			}
			for j := range items {
				dropUnsetElem(fv.Index(j), items[j], itemSchema)
			}
		case reflect.Map:
			m, ok := val.(map[string]any)
			if !ok || fv.Type().Key().Kind() != reflect.String {
				continue
			}
			var valueSchema *structuralschema.Structural
			if prop != nil && prop.AdditionalProperties != nil {
				valueSchema = prop.AdditionalProperties.Structural
			}
			iter := fv.MapRange()
			for iter.Next() {
				if ev, ok := m[iter.Key().String()]; ok {
					dropUnsetElem(iter.Value(), ev, valueSchema)
				}
			}
		}
	}
}

// dropUnsetElem applies dropUnset to one element of a list or map that is a struct.
func dropUnsetElem(ev reflect.Value, val any, s *structuralschema.Structural) {
	if ev.Kind() == reflect.Pointer {
		if ev.IsNil() {
			return
		}
		ev = ev.Elem()
	}
	if ev.Kind() != reflect.Struct || ownJSON(ev.Type()) {
		return
	}
	if m, ok := val.(map[string]any); ok {
		dropUnsetFields(ev, m, s, false)
	}
}

// required reports whether the schema lists name as a required property.
func required(s *structuralschema.Structural, name string) bool {
	return s != nil && s.ValueValidation != nil && slices.Contains(s.ValueValidation.Required, name)
}

// rejectsEmpty reports whether the schema's own constraints refuse the empty string.
func rejectsEmpty(s *structuralschema.Structural) bool {
	if s == nil || s.ValueValidation == nil {
		return false
	}
	vv := s.ValueValidation
	if vv.MinLength != nil && *vv.MinLength > 0 {
		return true
	}
	if len(vv.Enum) > 0 && !slices.ContainsFunc(vv.Enum, func(e structuralschema.JSON) bool { return e.Object == "" }) {
		return true
	}
	if vv.Pattern != "" {
		re, err := regexp.Compile(vv.Pattern)
		return err == nil && !re.MatchString("")
	}
	return false
}

// absentFieldsKey is the context key of the required fields a request's body left out.
type absentFieldsKey struct{}

// WithAbsentFields returns ctx carrying the JSON paths of the required fields the body of
// a create or update left out (BodyReport.Absent). Validation reports each of them as
// missing ("Required value", as a CRD does) where the typed object still holds only the
// zero value decoding gave it; a value set since (a default, a hook) stands.
func WithAbsentFields(ctx context.Context, paths [][]string) context.Context {
	if len(paths) == 0 {
		return ctx
	}
	return context.WithValue(ctx, absentFieldsKey{}, paths)
}

// dropAbsent removes from u the fields at the paths ctx carries (WithAbsentFields) that
// hold a zero value.
func dropAbsent(ctx context.Context, u map[string]any) {
	paths, _ := ctx.Value(absentFieldsKey{}).([][]string)
	for _, p := range paths {
		var parent any = u
		for _, step := range p[:len(p)-1] {
			parent = child(parent, step)
		}
		last := p[len(p)-1]
		if m, ok := parent.(map[string]any); ok && zeroJSON(m[last]) {
			delete(m, last)
		}
	}
}

// child returns the member name of an object, or the element at index name of a list.
func child(v any, name string) any {
	switch c := v.(type) {
	case map[string]any:
		return c[name]
	case []any:
		if i, err := strconv.Atoi(name); err == nil && i >= 0 && i < len(c) {
			return c[i]
		}
	}
	return nil
}

// zeroJSON reports whether v is what decoding leaves in a field the JSON did not have.
func zeroJSON(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case int64:
		return x == 0
	case float64:
		return x == 0
	case map[string]any:
		for _, e := range x {
			if !zeroJSON(e) {
				return false
			}
		}
		return true
	case []any:
		return len(x) == 0
	}
	return false
}
