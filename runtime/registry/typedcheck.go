package registry

import (
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A typedCheck answers, for a typed object, whether it certainly satisfies every
// constraint of its structural schema that a CRD's schema validator checks: OpenAPI value
// validation (required, minimum and maximum, lengths, pattern, enum, item and property
// counts) and the uniqueness of +listType=set items and +listType=map keys. It reads the
// Go value directly, with no conversion to unstructured and no allocation.
//
// true means the CRD's validator, given the object as the registry hands it over
// (dropUnset, dropAbsent), would report nothing, so the registry does not run it. false
// means "not certain", never "invalid": the object then goes the CRD's way, which finds
// the errors and gives each its CRD message and field path. So a typedCheck needs no
// messages of its own and cannot change what a client is told; it must only never say
// true where the CRD's validator would refuse. It says false wherever the registry's
// reading of the object might drop a value (a required field holding its zero value, a
// required struct holding nothing but zero values and defaults) and wherever a
// constraint is one it does not evaluate itself (string formats, multipleOf, allOf,
// anyOf, oneOf, not, enums of non-strings, constrained int-or-string and free-form
// values, sets of non-scalars): there the CRD's validator decides.
//
// TestTypedCheckNeverAcceptsWhatTheCRDRefuses fuzzes that promise against
// k8s.io/apiextensions-apiserver's validator; the conformance corpus (e2e) sends every
// constraint's boundary values through it.
type typedCheck func(v reflect.Value) bool

// typedCheckFor compiles the check of values of Go type t against s. It returns nil when
// nothing of s can fail for a value of t: the caller skips the value.
//
// With zeroStructsDropped, an optional struct (omitempty) holding its zero value, and a
// top-level status holding its zero value, are not checked: the registry drops them
// (dropUnset), which holds unless the request's absences name fields under them
// (dropAbsent then puts their parents back). t is the kind's struct type.
func typedCheckFor(s *structuralschema.Structural, t reflect.Type, zeroStructsDropped bool) typedCheck {
	if s == nil {
		return nil
	}
	c := &checkCompiler{zeroStructsDropped: zeroStructsDropped}
	if t.Kind() == reflect.Struct && s.Type == "object" {
		if vv := valueValidation(s); vv == nil || structConstraintsOnly(vv) {
			return c.structCheck(s, t, true)
		}
	}
	return c.compile(s, t)
}

// checkCompiler compiles the typedCheck of one Go type. The structural schema is a finite
// tree (a recursive type's stops at its repetition), so compiling follows it to its leaves.
type checkCompiler struct {
	zeroStructsDropped bool
}

// uncertain is the check of a value whose constraints a typedCheck does not evaluate.
func uncertain(reflect.Value) bool { return false }

var (
	timeType      = reflect.TypeFor[metav1.Time]()
	microTimeType = reflect.TypeFor[metav1.MicroTime]()
)

// compile compiles the check of values of type t against s; nil when nothing can fail.
func (c *checkCompiler) compile(s *structuralschema.Structural, t reflect.Type) typedCheck {
	vv := valueValidation(s)
	if t.Kind() == reflect.Pointer {
		elem := c.compile(s, t.Elem())
		if elem == nil {
			return nil
		}
		// A nil pointer is null or left out: pruned, or absent (its parent's required
		// check sees it).
		return func(v reflect.Value) bool { return v.IsNil() || elem(v.Elem()) }
	}
	if s.XEmbeddedResource || (vv != nil && (len(vv.AllOf) > 0 || len(vv.AnyOf) > 0 || len(vv.OneOf) > 0 || vv.Not != nil || vv.MultipleOf != nil || vv.UniqueItems)) {
		return uncertain
	}
	if ownJSON(t) || t.Kind() == reflect.Interface {
		// Values with a JSON form of their own (times, quantities, int-or-string, raw and
		// free-form JSON): the schema's own constraints are read on that form, which only
		// the CRD's way computes. A timestamp's date-time format always holds.
		if vv == nil || (t == timeType || t == microTimeType) && onlyFormat(vv, "date-time") {
			return nil
		}
		return uncertain
	}
	if s.XIntOrString || s.XPreserveUnknownFields && s.Type == "" {
		if vv == nil {
			return nil
		}
		return uncertain
	}
	switch t.Kind() {
	case reflect.String:
		if s.Type != "string" {
			return uncertain
		}
		return stringCheck(vv)
	case reflect.Bool:
		if s.Type != "boolean" {
			return uncertain
		}
		if vv != nil && len(vv.Enum) > 0 {
			return uncertain
		}
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if s.Type != "integer" {
			return uncertain
		}
		return intCheck(vv)
	case reflect.Float32, reflect.Float64:
		if s.Type != "number" {
			return uncertain
		}
		return floatCheck(vv)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			if s.Type != "string" || vv != nil && !onlyFormat(vv, "byte") {
				return uncertain
			}
			return nil // base64, always valid for format byte
		}
		if s.Type != "array" {
			return uncertain
		}
		return c.listCheck(s, t)
	case reflect.Map:
		if s.Type != "object" || t.Key().Kind() != reflect.String {
			return uncertain
		}
		return c.mapCheck(s, t)
	case reflect.Struct:
		if s.Type != "object" {
			return uncertain
		}
		return c.structCheck(s, t, false)
	}
	return uncertain
}

// onlyFormat reports whether vv holds nothing but the format f.
func onlyFormat(vv *structuralschema.ValueValidation, f string) bool {
	w := *vv
	if w.Format != f {
		return false
	}
	w.Format = ""
	return reflect.ValueOf(w).IsZero()
}

// stringCheck checks the length (in characters, as kube-openapi counts), pattern and enum
// of a string. A format is left to the CRD's validator.
func stringCheck(vv *structuralschema.ValueValidation) typedCheck {
	if vv == nil {
		return nil
	}
	if vv.Format != "" || vv.Maximum != nil || vv.Minimum != nil || vv.MaxItems != nil || vv.MinItems != nil || vv.MaxProperties != nil || vv.MinProperties != nil {
		return uncertain
	}
	var re *regexp.Regexp
	if vv.Pattern != "" {
		var err error
		if re, err = regexp.Compile(vv.Pattern); err != nil {
			return uncertain
		}
	}
	var enum []string
	for _, e := range vv.Enum {
		s, ok := e.Object.(string)
		if !ok {
			return uncertain
		}
		enum = append(enum, s)
	}
	maxLen, minLen := vv.MaxLength, vv.MinLength
	if re == nil && enum == nil && maxLen == nil && minLen == nil {
		return nil
	}
	return func(v reflect.Value) bool {
		str := v.String()
		if maxLen != nil || minLen != nil {
			n := int64(utf8.RuneCountInString(str))
			if maxLen != nil && n > *maxLen || minLen != nil && n < *minLen {
				return false
			}
		}
		if re != nil && !re.MatchString(str) {
			return false
		}
		return enum == nil || slices.Contains(enum, str)
	}
}

// intCheck checks the bounds of an integer, compared as int64 as kube-openapi compares
// them. Bounds that are not exact integers of a safe size are left to the CRD's validator.
func intCheck(vv *structuralschema.ValueValidation) typedCheck {
	if vv == nil {
		return nil
	}
	if len(vv.Enum) > 0 || vv.Pattern != "" || vv.MaxLength != nil || vv.MinLength != nil || vv.MaxItems != nil || vv.MinItems != nil || vv.MaxProperties != nil || vv.MinProperties != nil {
		return uncertain
	}
	limit := float64(1 << 53)
	if vv.Format == "int32" {
		limit = math.MaxInt32
	}
	exact := func(b *float64) bool { return b == nil || *b == math.Trunc(*b) && math.Abs(*b) <= limit }
	if !exact(vv.Maximum) || !exact(vv.Minimum) {
		return uncertain
	}
	if vv.Maximum == nil && vv.Minimum == nil {
		return nil
	}
	hasMax, hasMin := vv.Maximum != nil, vv.Minimum != nil
	var maxV, minV int64
	if hasMax {
		maxV = int64(*vv.Maximum)
	}
	if hasMin {
		minV = int64(*vv.Minimum)
	}
	exMax, exMin := vv.ExclusiveMaximum, vv.ExclusiveMinimum
	return func(v reflect.Value) bool {
		n := v.Int()
		if hasMax && (n > maxV || exMax && n == maxV) {
			return false
		}
		return !hasMin || n >= minV && !(exMin && n == minV)
	}
}

// floatCheck checks the bounds of a number.
func floatCheck(vv *structuralschema.ValueValidation) typedCheck {
	if vv == nil {
		return nil
	}
	if len(vv.Enum) > 0 || vv.Pattern != "" || vv.MaxLength != nil || vv.MinLength != nil || vv.MaxItems != nil || vv.MinItems != nil || vv.MaxProperties != nil || vv.MinProperties != nil {
		return uncertain
	}
	if vv.Maximum == nil && vv.Minimum == nil {
		return nil
	}
	return func(v reflect.Value) bool {
		f := v.Float()
		if m := vv.Maximum; m != nil && (f > *m || vv.ExclusiveMaximum && f == *m) {
			return false
		}
		if m := vv.Minimum; m != nil && (f < *m || vv.ExclusiveMinimum && f == *m) {
			return false
		}
		return !math.IsNaN(f) && !math.IsInf(f, 0)
	}
}

// listCheck checks the item count, each item, and the uniqueness of a set's items (of
// scalars) or of a map-list's keys (scalar fields of struct items, none of them empty).
func (c *checkCompiler) listCheck(s *structuralschema.Structural, t reflect.Type) typedCheck {
	vv := valueValidation(s)
	if vv != nil && (len(vv.Enum) > 0 || vv.Pattern != "" || vv.Format != "" || vv.MaxLength != nil || vv.MinLength != nil || vv.Maximum != nil || vv.Minimum != nil || vv.MaxProperties != nil || vv.MinProperties != nil) {
		return uncertain
	}
	var item typedCheck
	if s.Items != nil {
		item = c.compile(s.Items, t.Elem())
	}
	var maxItems, minItems *int64
	if vv != nil {
		maxItems, minItems = vv.MaxItems, vv.MinItems
	}
	var unique func(v reflect.Value) bool
	listType := ""
	if s.XListType != nil {
		listType = *s.XListType
	}
	switch listType {
	case "set":
		if !scalarKind(t.Elem().Kind()) || ownJSON(t.Elem()) {
			unique = func(v reflect.Value) bool { return v.Len() < 2 }
		} else {
			unique = uniqueScalars
		}
	case "map":
		keys, ok := listMapKeysOf(t.Elem(), s.XListMapKeys)
		if !ok {
			unique = func(v reflect.Value) bool { return v.Len() < 2 }
		} else {
			unique = keys.unique
		}
	}
	if item == nil && maxItems == nil && minItems == nil && unique == nil {
		return nil
	}
	return func(v reflect.Value) bool {
		n := int64(v.Len())
		if maxItems != nil && n > *maxItems || minItems != nil && n < *minItems {
			return false
		}
		if unique != nil && !unique(v) {
			return false
		}
		if item != nil {
			for i := range v.Len() {
				if !item(v.Index(i)) {
					return false
				}
			}
		}
		return true
	}
}

func scalarKind(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// uniqueScalars reports whether the list v of scalars has no item twice.
func uniqueScalars(v reflect.Value) bool {
	n := v.Len()
	if n < 2 {
		return true
	}
	if n <= 8 {
		for i := range n {
			for j := range i {
				if v.Index(i).Equal(v.Index(j)) {
					return false
				}
			}
		}
		return true
	}
	seen := make(map[any]bool, n)
	for i := range n {
		k := v.Index(i).Interface()
		if seen[k] {
			return false
		}
		seen[k] = true
	}
	return true
}

// mapListKeys are the key fields of the items of a +listType=map list.
type mapListKeys struct {
	ptr    bool
	fields [][]int
}

// listMapKeysOf resolves the key fields of items of type t: scalar fields of a struct.
func listMapKeysOf(t reflect.Type, names []string) (mapListKeys, bool) {
	out := mapListKeys{}
	if t.Kind() == reflect.Pointer {
		out.ptr, t = true, t.Elem()
	}
	if t.Kind() != reflect.Struct || len(names) == 0 {
		return out, false
	}
	fields := jsonFieldsOf(t)
	for _, name := range names {
		f, ok := fields[name]
		if !ok || len(f.index) != 1 || !scalarKind(f.typ.Kind()) || ownJSON(f.typ) {
			return out, false
		}
		out.fields = append(out.fields, f.index)
	}
	return out, true
}

// unique reports whether no two items of the list v have the same keys, and no item has
// a key holding its zero value (which the registry's reading may drop as unset).
func (k mapListKeys) unique(v reflect.Value) bool {
	n := v.Len()
	keyOf := func(i int) ([]any, bool) {
		e := v.Index(i)
		if k.ptr {
			if e.IsNil() {
				return nil, false
			}
			e = e.Elem()
		}
		out := make([]any, len(k.fields))
		for j, idx := range k.fields {
			f := e.Field(idx[0])
			if f.IsZero() {
				return nil, false
			}
			out[j] = f.Interface()
		}
		return out, true
	}
	keys := make([][]any, n)
	for i := range n {
		key, ok := keyOf(i)
		if !ok {
			return false
		}
		for j := range i {
			if slices.Equal(keys[j], key) {
				return false
			}
		}
		keys[i] = key
	}
	return true
}

// mapCheck checks the property count and each value of a map.
func (c *checkCompiler) mapCheck(s *structuralschema.Structural, t reflect.Type) typedCheck {
	vv := valueValidation(s)
	if vv != nil && (len(vv.Enum) > 0 || vv.Pattern != "" || vv.Format != "" || vv.MaxLength != nil || vv.MinLength != nil || vv.Maximum != nil || vv.Minimum != nil || vv.MaxItems != nil || vv.MinItems != nil || len(vv.Required) > 0) {
		return uncertain
	}
	if len(s.Properties) > 0 {
		return uncertain
	}
	var value typedCheck
	if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
		value = c.compile(s.AdditionalProperties.Structural, t.Elem())
	}
	var maxP, minP *int64
	if vv != nil {
		maxP, minP = vv.MaxProperties, vv.MinProperties
	}
	if value == nil && maxP == nil && minP == nil {
		return nil
	}
	return func(v reflect.Value) bool {
		n := int64(v.Len())
		if maxP != nil && n > *maxP || minP != nil && n < *minP {
			return false
		}
		if value != nil {
			iter := v.MapRange()
			for iter.Next() {
				if !value(iter.Value()) {
					return false
				}
			}
		}
		return true
	}
}

// jsonField is a field of a struct as JSON names it, with the index path to it through
// embedded structs.
type jsonField struct {
	index     []int
	typ       reflect.Type
	omitempty bool
}

// jsonFieldsOf returns the fields of struct type t by JSON name, those of embedded
// structs without a JSON name (TypeMeta, inline structs) included, as encoding/json and
// the unstructured converter name them.
func jsonFieldsOf(t reflect.Type) map[string]jsonField {
	out := map[string]jsonField{}
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() && !f.Anonymous {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			index := append(slices.Clip(prefix), i)
			if f.Anonymous && name == "" {
				ft := f.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct && !ownJSON(ft) {
					walk(ft, index)
				}
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if _, dup := out[name]; !dup {
				out[name] = jsonField{index: index, typ: f.Type, omitempty: slices.Contains(strings.Split(opts, ","), "omitempty")}
			}
		}
	}
	walk(t, nil)
	return out
}

// fieldOf returns the field at index of the struct v, and false when an embedded
// pointer on the way is nil.
func fieldOf(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

// propertyCheck is the compiled check of one property of a struct.
type propertyCheck struct {
	name     string
	index    []int
	required bool
	check    typedCheck
	// filled reports whether a value of the field certainly stands for a value sent, not
	// one decoding or defaulting put there (see filled).
	filled func(v reflect.Value) bool
	// omitempty is set when an empty value (converter's isEmpty) is left out of the
	// unstructured object, so none of the property's constraints applies to it.
	omitempty bool
	// zeroDropped is set when the field holding its zero value is dropped (see
	// typedCheckFor's zeroStructsDropped).
	zeroDropped bool
}

// structConstraintsOnly reports whether vv constrains nothing but an object's properties.
func structConstraintsOnly(vv *structuralschema.ValueValidation) bool {
	return len(vv.Enum) == 0 && vv.Pattern == "" && vv.Format == "" && vv.MaxLength == nil && vv.MinLength == nil &&
		vv.Maximum == nil && vv.Minimum == nil && vv.MaxItems == nil && vv.MinItems == nil
}

// emptyValue reports whether v is left out of its unstructured form under omitempty
// (k8s.io/apimachinery's converter: a struct never is).
func emptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.String, reflect.Map, reflect.Slice:
		return v.Len() == 0
	case reflect.Struct:
		return false
	}
	return v.IsZero()
}

// structCheck checks a struct's required properties, property counts and each property.
// top is set for the kind's own struct.
func (c *checkCompiler) structCheck(s *structuralschema.Structural, t reflect.Type, top bool) typedCheck {
	vv := valueValidation(s)
	if vv != nil && !structConstraintsOnly(vv) {
		return uncertain
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
		return uncertain // a struct with a schema of a map: the registry's reading decides
	}
	fields := jsonFieldsOf(t)
	var required []string
	var maxP, minP *int64
	if vv != nil {
		required, maxP, minP = vv.Required, vv.MaxProperties, vv.MinProperties
	}
	for _, name := range required {
		if _, ok := fields[name]; !ok {
			return uncertain // a required property the Go type cannot hold
		}
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	var props []propertyCheck
	for _, name := range names {
		f, ok := fields[name]
		if !ok {
			continue
		}
		p := s.Properties[name]
		pc := propertyCheck{name: name, index: f.index, required: slices.Contains(required, name), check: c.compile(&p, f.typ),
			omitempty: f.omitempty}
		if c.zeroStructsDropped && f.typ.Kind() == reflect.Struct && !ownJSON(f.typ) && (!top && f.omitempty || top && name == "status") {
			pc.zeroDropped = true
		}
		if pc.required || minP != nil {
			pc.filled = filledCheck(&p, f.typ, nonZeroDefault(s))
		}
		if pc.check != nil || pc.required || maxP != nil || minP != nil {
			props = append(props, pc)
		}
	}
	if len(props) == 0 {
		return nil
	}
	return func(v reflect.Value) bool {
		var filled, present int64
		for i := range props {
			p := &props[i]
			fv, ok := fieldOf(v, p.index)
			if !ok {
				if p.required {
					return false
				}
				continue
			}
			if p.filled != nil {
				if p.filled(fv) {
					filled++
				} else if p.required {
					return false
				}
			}
			if p.omitempty && emptyValue(fv) || p.zeroDropped && fv.IsZero() {
				continue // not in the object the schema sees
			}
			if maxP != nil && !nilValue(fv) {
				present++
			}
			if p.check != nil && !p.check(fv) {
				return false
			}
		}
		if maxP != nil && present > *maxP || minP != nil && filled < *minP {
			return false
		}
		return true
	}
}

// nilValue reports whether v is a nil pointer, slice, map or interface.
func nilValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// filledCheck compiles whether a value of type t at a property of schema s certainly
// stands for one a client sent, so a CRD sees it there: not nil, not empty, not a zero
// value, and for a struct, holding a value that no default (its properties', or the
// parent's, when parentDefault) can have put there. The registry reads the other values
// as possibly left out (dropUnset, dropAbsent).
func filledCheck(s *structuralschema.Structural, t reflect.Type, parentDefault bool) func(reflect.Value) bool {
	if parentDefault || nonZeroDefault(s) {
		return func(reflect.Value) bool { return false }
	}
	switch {
	case t.Kind() == reflect.Pointer:
		elem := filledCheck(s, t.Elem(), false)
		return func(v reflect.Value) bool { return !v.IsNil() && elem(v.Elem()) }
	case t.Kind() == reflect.Struct && !ownJSON(t):
		fields := jsonFieldsOf(t)
		type member struct {
			index  []int
			filled func(reflect.Value) bool
		}
		var members []member
		for name, p := range s.Properties {
			f, ok := fields[name]
			if !ok {
				continue
			}
			members = append(members, member{f.index, filledCheck(&p, f.typ, false)})
		}
		return func(v reflect.Value) bool {
			for _, m := range members {
				if fv, ok := fieldOf(v, m.index); ok && m.filled(fv) {
					return true
				}
			}
			return false
		}
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Map:
		return func(v reflect.Value) bool { return v.Len() > 0 }
	default:
		return func(v reflect.Value) bool { return !v.IsZero() }
	}
}

// nonZeroDefault reports whether s has a default other than a zero value (openapi-gen's
// {} for a struct is decoding's zero value, not the API's choice: see optionalObject).
func nonZeroDefault(s *structuralschema.Structural) bool {
	return s.Default.Object != nil && !zeroJSON(s.Default.Object)
}

// valueValidation returns the value validation of s, nil when it constrains nothing: an
// int-or-string node's anyOf of an integer and a string (what every int-or-string schema
// carries) is its type, not a constraint.
func valueValidation(s *structuralschema.Structural) *structuralschema.ValueValidation {
	if s.ValueValidation == nil {
		return nil
	}
	vv := *s.ValueValidation
	if s.XIntOrString && len(vv.AnyOf) == 2 && typeOnly(vv.AnyOf[0], "integer") && typeOnly(vv.AnyOf[1], "string") {
		vv.AnyOf = nil
	}
	if reflect.ValueOf(vv).IsZero() {
		return nil
	}
	return &vv
}

// typeOnly reports whether n says nothing but that its value is of type typ.
func typeOnly(n structuralschema.NestedValueValidation, typ string) bool {
	if n.ForbiddenGenerics.Type != typ {
		return false
	}
	n.ForbiddenGenerics.Type = ""
	return reflect.ValueOf(n).IsZero()
}
