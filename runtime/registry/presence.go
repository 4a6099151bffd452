package registry

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"
)

// dropUnset removes from u, the unstructured form of the typed object obj, what the object
// holds only because a Go value cannot be absent, so that the schema sees the object as a
// CRD sees the JSON a client sent:
//
//   - as empty says (emptyStrings), the empty string in a required string field that is
//     not a pointer: it reads as unset, and a CRD-identical "Required value" is
//     reported (Go cannot tell "" sent from a field left out; as in k8s.io/api's own
//     validation, a required string is never empty). A field whose own constraints refuse
//     "" (minLength, enum, pattern) keeps it, so that the error names the constraint, as a
//     CRD's does for a "" sent. Numbers and booleans keep their zero value, which clients do
//     set (0 replicas, false): their absence is known only from the body;
//   - a struct field holding its zero value that is optional (omitempty), or the top-level
//     status: a parent that is absent has no required fields (a status nobody has written
//     yet, an optional struct left out). The other top-level fields (the spec) are always
//     present, as openapi-gen's "default: {}" makes them for a CRD.
//
// Types with their own JSON form (metav1.Time, resource.Quantity, IntOrString,
// RawExtension) are left as they are. Unstructured objects have nothing to drop.
func dropUnset(obj runtime.Object, u map[string]any, s *structuralschema.Structural, empty emptyStrings) {
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
		dropUnsetFields(v, u, s, true, true, empty)
	}
}

// emptyStrings says what an empty string in a required string field of a typed object
// stands for: Go cannot tell "" sent from a field left out.
type emptyStrings int

const (
	// emptyUnset: a field left out (the request's body was not read).
	emptyUnset emptyStrings = iota
	// emptySent: a value sent (the request's body was read: its absences say which fields
	// it left out, and dropAbsent removes those).
	emptySent
	// emptyStored: the stored object of a kind whose bodies are read: a "" in a struct
	// that is there (the object, a list element, a struct holding anything but zero
	// values and defaults) was sent, since a write that left it out was refused
	// ("Required value"); in a struct field of zero values and defaults, it is part of
	// an optional struct nobody wrote (which defaulting filled).
	emptyStored
)

// unset reports whether a "" in a required string field of a struct is unset; present
// says whether the struct is known to be there.
func (e emptyStrings) unset(present bool) bool {
	switch e {
	case emptySent:
		return false
	case emptyStored:
		return !present
	}
	return true
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

// present says whether the struct v is known to be there (the object, a list or map
// element, a pointer set) rather than possibly an optional struct nobody wrote.
func dropUnsetFields(v reflect.Value, u map[string]any, s *structuralschema.Structural, top, present bool, empty emptyStrings) {
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
				dropUnsetFields(fv, u, s, top, present, empty)
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		if top && name == "metadata" {
			continue // validated as every object's metadata is, not by the schema
		}
		val, inU := u[name]
		if !inU {
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
			if empty.unset(present) && fv.Len() == 0 && required(s, name) && !ownJSON(fv.Type()) && !rejectsEmpty(prop) {
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
				// A struct of zero values and defaults may be an optional one nobody wrote,
				// which decoding and defaulting filled.
				present := empty != emptyStored || !fv.IsZero() && !holdsOnlyDefaults(m, prop, nil)
				dropUnsetFields(fv, m, prop, false, present, empty)
			}
		case reflect.Pointer:
			if fv.IsNil() || fv.Elem().Kind() != reflect.Struct || ownJSON(fv.Elem().Type()) {
				continue
			}
			if m, ok := val.(map[string]any); ok {
				dropUnsetFields(fv.Elem(), m, prop, false, true, empty)
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
				dropUnsetElem(fv.Index(j), items[j], itemSchema, empty)
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
					dropUnsetElem(iter.Value(), ev, valueSchema, empty)
				}
			}
		}
	}
}

// dropUnsetElem applies dropUnset to one element of a list or map that is a struct.
func dropUnsetElem(ev reflect.Value, val any, s *structuralschema.Structural, empty emptyStrings) {
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
		dropUnsetFields(ev, m, s, false, true, empty)
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

// bodyReadKey is the context key that marks a create's or update's body as read.
type bodyReadKey struct{}

// WithBodyRead returns ctx marking that the body of a create or update was read for its
// absences (BodyReport.Read): the required fields it left out are those WithAbsentFields
// carries, so an empty string in another required field was sent, and is validated as
// a CRD validates "" (accepted unless a constraint refuses it).
func WithBodyRead(ctx context.Context) context.Context {
	return context.WithValue(ctx, bodyReadKey{}, true)
}

func bodyRead(ctx context.Context) bool {
	read, _ := ctx.Value(bodyReadKey{}).(bool)
	return read
}

// hasPatch reports whether ctx carries a patch's body (WithPatch).
func hasPatch(ctx context.Context) bool {
	_, ok := ctx.Value(patchKey{}).(patchBody)
	return ok
}

// absentObjectsKey is the context key of the optional objects a request's body left out.
type absentObjectsKey struct{}

// WithAbsentObjects returns ctx carrying the JSON paths of the optional objects with
// required properties that the body of a create or update left out
// (BodyReport.AbsentObjects). Validation treats each of them as absent, as a CRD does (it
// demands nothing of an object that is not there), when its required properties hold
// only the zero values (and defaults) decoding gave it; one a hook gave a required value
// stands.
func WithAbsentObjects(ctx context.Context, paths [][]string) context.Context {
	if len(paths) == 0 {
		return ctx
	}
	return context.WithValue(ctx, absentObjectsKey{}, paths)
}

// dropAbsent removes from u the fields at the paths fields (required fields a request
// left out) that hold a zero value or, for an object, nothing but zero values and the
// schema's defaults (a required struct left out, which decoding and defaulting filled;
// one a hook set a value in stands), creating their parents where u has none (an
// optional struct decoded to its zero value, which dropUnset removed, though the request
// sent it), and the objects at the paths objects (optional objects a request left out)
// whose required properties are all missing or zero.
func dropAbsent(u map[string]any, fields, objects [][]string, s *structuralschema.Structural) {
	for _, p := range fields {
		var parent any = u
		for _, step := range p[:len(p)-1] {
			next := child(parent, step)
			if m, ok := parent.(map[string]any); ok && next == nil {
				next = map[string]any{}
				m[step] = next
			}
			parent = next
		}
		last := p[len(p)-1]
		if m, ok := parent.(map[string]any); ok && (zeroJSON(m[last]) || holdsOnlyDefaults(m[last], schemaAt(s, p), nil)) {
			delete(m, last)
		}
	}
	for _, p := range objects {
		var parent any = u
		for _, step := range p[:len(p)-1] {
			parent = child(parent, step)
		}
		last := p[len(p)-1]
		m, ok := parent.(map[string]any)
		if !ok {
			continue
		}
		obj, ok := m[last].(map[string]any)
		ps := schemaAt(s, p)
		if !ok || ps == nil || ps.ValueValidation == nil {
			continue
		}
		if !slices.ContainsFunc(ps.ValueValidation.Required, func(name string) bool { return !zeroJSON(obj[name]) }) {
			delete(m, last)
		}
	}
}

// holdsOnlyDefaults reports whether v, an object of schema s, holds nothing but zero
// values and defaults (recursively): what decoding and defaulting put in an object the
// request left out. A member's default is its property's, or the member of the default
// its parent object has (def, nil for none).
func holdsOnlyDefaults(v any, s *structuralschema.Structural, def any) bool {
	m, ok := v.(map[string]any)
	if !ok || s == nil {
		return false
	}
	parentDefault, _ := def.(map[string]any)
	for name, e := range m {
		if zeroJSON(e) {
			continue
		}
		p, ok := s.Properties[name]
		if !ok {
			return false
		}
		own, inherited := p.Default.Object, parentDefault[name]
		if own != nil && jsonEqual(e, own) || inherited != nil && jsonEqual(e, inherited) ||
			holdsOnlyDefaults(e, &p, own) || inherited != nil && holdsOnlyDefaults(e, &p, inherited) {
			continue
		}
		return false
	}
	return true
}

// jsonEqual reports whether a and b encode to the same JSON (int64 and float64 numbers of
// the same value alike).
func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// contextAbsences returns the paths WithAbsentFields and WithAbsentObjects put in ctx.
func contextAbsences(ctx context.Context) (fields, objects [][]string) {
	fields, _ = ctx.Value(absentFieldsKey{}).([][]string)
	objects, _ = ctx.Value(absentObjectsKey{}).([][]string)
	return fields, objects
}

// schemaAt returns the schema of the value at path in an object of schema s.
func schemaAt(s *structuralschema.Structural, path []string) *structuralschema.Structural {
	for _, step := range path {
		if s == nil {
			return nil
		}
		if p, ok := s.Properties[step]; ok {
			s = &p
		} else if s.Items != nil {
			s = s.Items
		} else if s.AdditionalProperties != nil {
			s = s.AdditionalProperties.Structural
		} else {
			return nil
		}
	}
	return s
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

// patchKey is the context key of a patch request's body.
type patchKey struct{}

// patchBody is the body of a patch request and its media type.
type patchBody struct {
	mediaType string
	body      []byte
}

// Media types of patches: apimachinery's patch types.
const (
	mediaApplyPatch     = string(types.ApplyYAMLPatchType)
	mediaMergePatch     = string(types.MergePatchType)
	mediaJSONPatch      = string(types.JSONPatchType)
	mediaStrategicPatch = string(types.StrategicMergePatchType)
)

// WithPatch returns ctx carrying the body of a patch (mediaType one of the patch media
// types: JSON, merge, strategic merge or apply patch). Validation of the patched object
// then finds which required fields and optional objects are absent from the result of the
// patch, as a CRD's validation sees it (the patch applied to the old object's JSON, where
// what a patch removes or never set is absent), although the typed result holds zero
// values there.
func WithPatch(ctx context.Context, mediaType string, body []byte) context.Context {
	switch mediaType {
	case mediaApplyPatch, mediaMergePatch, mediaJSONPatch, mediaStrategicPatch:
		return context.WithValue(ctx, patchKey{}, patchBody{mediaType, body})
	}
	return ctx
}

// patchAbsences returns absences of the result of the patch ctx carries (WithPatch),
// computed on JSON as a CRD's patch is: the patch applied to old, the old object's
// unstructured form (dropUnset applied; nil for an apply that creates), where the optional
// objects missing a required property were absent (a present one could not have been
// stored without it). obj is the typed result and u its unstructured form. ok is false
// when ctx carries no patch. Only the top-level members the write sets (scope) are read.
func patchAbsences(ctx context.Context, s *structuralschema.Structural, scope writeScope, obj runtime.Object, u, old map[string]any) (fields, objects [][]string, ok bool) {
	p, ok := ctx.Value(patchKey{}).(patchBody)
	if !ok {
		return nil, nil, false
	}
	body := p.body
	if p.mediaType == mediaApplyPatch {
		var err error
		if body, err = yaml.YAMLToJSON(body); err != nil {
			return nil, nil, true
		}
	}
	var result []byte
	if old == nil {
		if p.mediaType != mediaApplyPatch {
			return nil, nil, true // only an apply creates
		}
		result = body
	} else {
		base := runtime.DeepCopyJSON(old)
		dropIncomplete(base, s, &scope)
		baseJSON, err := json.Marshal(base)
		if err != nil {
			return nil, nil, true
		}
		switch p.mediaType {
		case mediaMergePatch, mediaApplyPatch:
			result, err = jsonpatch.MergePatch(baseJSON, body)
		case mediaJSONPatch:
			var patch jsonpatch.Patch
			if patch, err = jsonpatch.DecodePatch(body); err == nil {
				result, err = patch.Apply(baseJSON)
			}
		case mediaStrategicPatch:
			result, err = strategicpatch.StrategicMergePatch(baseJSON, body, obj)
		}
		if err != nil {
			return nil, nil, true
		}
	}
	var r map[string]any
	if err := json.Unmarshal(result, &r); err != nil {
		return nil, nil, true
	}
	if p.mediaType == mediaApplyPatch && old != nil {
		// Server-side apply removes what the applier set before and leaves out now: what the
		// merge above kept but the typed result has only as a zero value was removed.
		dropRemoved(r, u, &scope)
	}
	fields, objects = absences(r, s, nil, &scope)
	return fields, objects, true
}

// dropIncomplete removes from u, an object of schema s, the optional objects that lack
// one of their required properties. At the top (scope not nil), only the members the
// write sets are looked at.
func dropIncomplete(u map[string]any, s *structuralschema.Structural, scope *writeScope) {
	if s == nil {
		return
	}
	for name, v := range u {
		if scope != nil && !scope.sets(name) {
			continue
		}
		p, ok := s.Properties[name]
		if !ok {
			continue
		}
		m, isMap := v.(map[string]any)
		if !isMap {
			continue
		}
		if optionalObject(s, name, &p) && slices.ContainsFunc(p.ValueValidation.Required, func(r string) bool { return m[r] == nil }) {
			delete(u, name)
			continue
		}
		dropIncomplete(m, &p, nil)
	}
}

// dropRemoved removes from r the members that are not zero in r but are zero or missing
// in u (recursing into objects both have), and gives r u's lists: server-side apply
// merges the elements of keyed lists, which the merge patch that made r does not, so
// r's lists are not the result's. At the top (scope not nil), only the members the write
// sets are looked at.
func dropRemoved(r, u map[string]any, scope *writeScope) {
	for name, rv := range r {
		if scope != nil && !scope.sets(name) {
			continue
		}
		uv := u[name]
		if zeroJSON(uv) && !zeroJSON(rv) {
			delete(r, name)
			continue
		}
		if _, ok := rv.([]any); ok {
			if ul, ok := uv.([]any); ok {
				r[name] = ul
			}
			continue
		}
		rm, ok1 := rv.(map[string]any)
		um, ok2 := uv.(map[string]any)
		if ok1 && ok2 {
			dropRemoved(rm, um, nil)
		}
	}
}
