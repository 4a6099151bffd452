package registry

import (
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// A typedCheck answers, for a typed object, whether it certainly satisfies every
// constraint of its structural schema that a CRD's schema validator checks: OpenAPI value
// validation (required, minimum and maximum, lengths, pattern, enum, item and property
// counts) and the uniqueness of +listType=set items and +listType=map keys. It reads the
// Go value directly, with no conversion to unstructured.
//
// true means the CRD's validator, given the object as the registry hands it over
// (dropUnset, dropAbsent), would report nothing, so the registry does not run it. false
// means "not certain", never "invalid": the object then goes the CRD's way, which finds
// the errors and gives each its CRD message and field path. So a typedCheck needs no
// messages of its own and cannot change what a client is told; it must only never say
// true where the CRD's validator would refuse. It reads the object as the registry hands
// it over: a value omitempty leaves out is not there, a nil one is a null that is pruned
// (not nullable, no default), kept valid (nullable) or kept to be refused (a default,
// which nothing applies on this path). It says false wherever that reading might drop a
// value (a required field holding its zero value, a required struct holding nothing but
// zero values and defaults), wherever it is not sure which value the unstructured form
// holds (a name two fields share), and wherever a constraint is one it does not evaluate
// itself (string formats kube-openapi's registry does not know, multipleOf, allOf, anyOf,
// oneOf, not, enums of non-strings,
// constrained int-or-string and free-form values, sets of non-scalars, Go arrays): there
// the CRD's validator decides.
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
		if vv := valueValidation(s); vv == nil || !beyond(vv, structConstraints) {
			return c.structCheck(s, t, true, true)
		}
	}
	return c.compile(s, t, true)
}

// checkCompiler compiles the typedCheck of one Go type. The structural schema is a finite
// tree (a recursive type's stops at its repetition), so compiling follows it to its leaves.
type checkCompiler struct {
	zeroStructsDropped bool
}

// uncertain is the check of a value whose constraints a typedCheck does not evaluate.
func uncertain(reflect.Value) bool { return false }

var (
	timeType         = reflect.TypeFor[metav1.Time]()
	microTimeType    = reflect.TypeFor[metav1.MicroTime]()
	durationType     = reflect.TypeFor[metav1.Duration]()
	intOrStringType  = reflect.TypeFor[intstr.IntOrString]()
	quantityType     = reflect.TypeFor[resource.Quantity]()
	rawExtensionType = reflect.TypeFor[runtime.RawExtension]()
	jsonType         = reflect.TypeFor[apiextensionsv1.JSON]()
)

// compile compiles the check of values of type t against s; nil when nothing can fail.
// reach says whether dropUnset reaches the value (it follows struct fields, pointers to
// structs, and the struct items of lists and maps, nothing else), so that a zero optional
// struct in it is dropped. A nil value is its parent's to judge (structCheck, listCheck,
// mapCheck): a null the registry prunes, keeps or reads as absent.
func (c *checkCompiler) compile(s *structuralschema.Structural, t reflect.Type, reach bool) typedCheck {
	vv := valueValidation(s)
	if t.Kind() == reflect.Pointer {
		elem := c.compile(s, t.Elem(), reach && t.Elem().Kind() == reflect.Struct)
		if elem == nil {
			return nil
		}
		return func(v reflect.Value) bool { return v.IsNil() || elem(v.Elem()) }
	}
	if s.XEmbeddedResource || (vv != nil && (len(vv.AllOf) > 0 || len(vv.AnyOf) > 0 || len(vv.OneOf) > 0 || vv.Not != nil || vv.MultipleOf != nil || vv.UniqueItems)) {
		return uncertain
	}
	if t.Kind() == reflect.Interface {
		// Any Go value: certain only as a null (the parent judges it).
		return func(v reflect.Value) bool { return v.IsNil() }
	}
	if ownJSON(t) {
		return ownJSONCheck(s, vv, t)
	}
	if s.XIntOrString || s.XPreserveUnknownFields && s.Type == "" {
		return uncertain // a Go type of its own with a schema of any type
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
		if vv != nil {
			return uncertain
		}
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if s.Type != "integer" {
			return uncertain
		}
		return intCheck(vv)
	case reflect.Float32, reflect.Float64:
		if s.Type != "number" || vv != nil && vv.Format == "float" && t.Kind() == reflect.Float64 {
			return uncertain // kube-openapi checks the value fits a float32
		}
		return floatCheck(vv)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			if s.Type != "string" || vv != nil && !onlyFormat(vv, "byte") {
				return uncertain
			}
			return nil // base64, always valid for format byte
		}
		if s.Type != "array" {
			return uncertain
		}
		return c.listCheck(s, t, reach)
	case reflect.Map:
		if s.Type != "object" || t.Key().Kind() != reflect.String {
			return uncertain
		}
		return c.mapCheck(s, t, reach)
	case reflect.Struct:
		if s.Type != "object" {
			return uncertain
		}
		return c.structCheck(s, t, false, reach)
	}
	return uncertain // arrays (which the unstructured converter refuses), unsigned, complex, ...
}

// ownJSONCheck checks a value with a JSON form of its own (times, durations, quantities,
// int-or-string, raw and free-form JSON) against s. Its form is certain only for the types
// whose marshaling always gives the schema's type: a timestamp's RFC 3339 string (whose
// date-time format holds for years 0 to 9999), a duration's string, an int-or-string or
// quantity under an int-or-string schema, raw JSON that the converter reads (under an
// object schema that keeps unknown fields, an object). Other constraints on such a value
// are read on its JSON form, which only the CRD's way computes. A null form (a zero
// timestamp, empty raw JSON) is its parent's to judge, as a nil value is.
func ownJSONCheck(s *structuralschema.Structural, vv *structuralschema.ValueValidation, t reflect.Type) typedCheck {
	if s.Default.Object != nil {
		return uncertain // its zero value's null would be defaulted, not pruned
	}
	raw := t == rawExtensionType || t == jsonType
	switch {
	case (t == timeType || t == microTimeType) && s.Type == "string" && (vv == nil || onlyFormat(vv, "date-time")):
		return func(v reflect.Value) bool {
			tm, ok := timeOf(v)
			if !ok {
				return false
			}
			y := tm.UTC().Year()
			return tm.IsZero() || y >= 0 && y <= 9999
		}
	case t == durationType && s.Type == "string" && vv == nil,
		t == quantityType && s.Type == "" && s.XIntOrString && vv == nil:
		return nil
	case t == intOrStringType && s.Type == "" && s.XIntOrString && vv == nil:
		// A protobuf body can give any Type, which the converter refuses.
		return func(v reflect.Value) bool {
			typ := intstr.Type(v.FieldByName("Type").Int())
			return typ == intstr.Int || typ == intstr.String
		}
	case raw && s.Type == "" && s.XPreserveUnknownFields && vv == nil:
		return func(v reflect.Value) bool { return rawJSON(v, false) }
	case raw && s.Type == "object" && s.XPreserveUnknownFields && vv == nil && len(s.Properties) == 0:
		return func(v reflect.Value) bool { return rawJSON(v, true) }
	}
	return uncertain
}

// rawJSON reports whether the converter reads the raw JSON v (a RawExtension or JSON),
// and with object, reads it as null or an object. It asks the converter itself
// (structured-merge-diff's, which the unstructured converter calls for such values): it
// is stricter than encoding/json (numbers beyond int64 and float64, leading blanks).
func rawJSON(v reflect.Value, object bool) bool {
	u, ok := convertedAlone(v)
	if !ok {
		return false
	}
	if _, isMap := u.(map[string]any); object && u != nil && !isMap {
		return false
	}
	return true
}

// convertedAlone returns the unstructured form of v, a value with a JSON form of its own,
// as the unstructured converter makes it; false where that fails or reflect may not read v.
func convertedAlone(v reflect.Value) (any, bool) {
	if !v.CanInterface() {
		return nil, false
	}
	u, err := value.TypeReflectEntryOf(v.Type()).ToUnstructured(v)
	return u, err == nil
}

// timeOf returns the time of v, a metav1.Time or MicroTime; false where reflect may not
// read it (a value reached through an unexported embedded field).
func timeOf(v reflect.Value) (time.Time, bool) {
	if !v.CanInterface() {
		return time.Time{}, false
	}
	switch x := v.Interface().(type) {
	case metav1.Time:
		return x.Time, true
	case metav1.MicroTime:
		return x.Time, true
	}
	return time.Time{}, false
}

// jsonNull reports whether the JSON form of v is null: a nil pointer, slice, map or
// interface, a zero timestamp, empty raw JSON. sure is false where v cannot be read.
func jsonNull(v reflect.Value) (null, sure bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return true, true
		}
		if ownJSON(v.Type().Elem()) {
			return jsonNull(v.Elem())
		}
		return false, true
	case reflect.Slice, reflect.Map, reflect.Interface:
		return v.IsNil(), true
	case reflect.Struct:
		switch v.Type() {
		case timeType, microTimeType:
			tm, ok := timeOf(v)
			return ok && tm.IsZero(), ok
		case rawExtensionType, jsonType:
			u, ok := convertedAlone(v) // "null" in Raw is a null too
			return ok && u == nil, ok
		}
	}
	return false, true
}

// mayBeNull reports whether a value of Go type t can have a null JSON form.
func mayBeNull(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return true
	}
	return t == timeType || t == microTimeType || t == rawExtensionType || t == jsonType
}

// onlyFormat reports whether vv holds nothing but the format f.
func onlyFormat(vv *structuralschema.ValueValidation, f string) bool {
	return vv.Format == f && !beyond(vv, func(w *structuralschema.ValueValidation) { w.Format = "" })
}

// beyond reports whether vv constrains anything that evaluated does not zero: evaluated
// clears the constraints a check reads itself, and any other leaves the value to the
// CRD's validator.
func beyond(vv *structuralschema.ValueValidation, evaluated func(w *structuralschema.ValueValidation)) bool {
	w := *vv
	evaluated(&w)
	return !reflect.ValueOf(w).IsZero()
}

// The constraints each kind of check reads itself (beyond's evaluated).
var (
	stringConstraints = func(w *structuralschema.ValueValidation) {
		w.Pattern, w.Enum, w.MaxLength, w.MinLength, w.Format = "", nil, nil, nil, ""
	}
	numberConstraints = func(w *structuralschema.ValueValidation) {
		w.Format, w.Maximum, w.Minimum, w.ExclusiveMaximum, w.ExclusiveMinimum = "", nil, nil, false, false
	}
	listConstraints   = func(w *structuralschema.ValueValidation) { w.MaxItems, w.MinItems = nil, nil }
	mapConstraints    = func(w *structuralschema.ValueValidation) { w.MaxProperties, w.MinProperties = nil, nil }
	structConstraints = func(w *structuralschema.ValueValidation) {
		w.MaxProperties, w.MinProperties, w.Required = nil, nil, nil
	}
)

// stringCheck checks the length (in characters, as kube-openapi counts), pattern, enum
// and format of a string. A format is checked with the registry the CRD's validator uses
// (kube-openapi's strfmt.Default, whose Validates is the validator's own check); one the
// registry does not know is left to the validator.
func stringCheck(vv *structuralschema.ValueValidation) typedCheck {
	if vv == nil {
		return nil
	}
	if beyond(vv, stringConstraints) {
		return uncertain
	}
	format := vv.Format
	if format != "" && !strfmt.Default.ContainsName(format) {
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
	if re == nil && enum == nil && maxLen == nil && minLen == nil && format == "" {
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
		if format != "" && !strfmt.Default.Validates(format, str) {
			return false
		}
		return enum == nil || slices.Contains(enum, str)
	}
}

// intCheck checks the bounds of an integer, compared as int64 as kube-openapi compares
// them, and that a value of format int32 fits one (kube-openapi checks that too). Bounds
// that are not exact integers of a safe size are left to the CRD's validator.
func intCheck(vv *structuralschema.ValueValidation) typedCheck {
	if vv == nil {
		return nil
	}
	if beyond(vv, numberConstraints) {
		return uncertain
	}
	limit := float64(1 << 53)
	int32Format := vv.Format == "int32"
	if int32Format {
		limit = math.MaxInt32
	}
	exact := func(b *float64) bool { return b == nil || *b == math.Trunc(*b) && math.Abs(*b) <= limit }
	if !exact(vv.Maximum) || !exact(vv.Minimum) {
		return uncertain
	}
	if vv.Maximum == nil && vv.Minimum == nil && !int32Format {
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
		if int32Format && (n > math.MaxInt32 || n < math.MinInt32) {
			return false
		}
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
	if beyond(vv, numberConstraints) {
		return uncertain
	}
	if vv.Format == "float" && (vv.Maximum != nil && math.Abs(*vv.Maximum) > math.MaxFloat32 || vv.Minimum != nil && math.Abs(*vv.Minimum) > math.MaxFloat32) {
		return uncertain // kube-openapi refuses such a bound under format float
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
// scalars) or of a map-list's keys (scalar fields of struct items, none of them empty). A
// nil item is a null, which the registry keeps in a list: valid only where the items are
// nullable.
func (c *checkCompiler) listCheck(s *structuralschema.Structural, t reflect.Type, reach bool) typedCheck {
	vv := valueValidation(s)
	if vv != nil && beyond(vv, listConstraints) {
		return uncertain
	}
	if s.Items == nil {
		return uncertain
	}
	et := t.Elem()
	item := c.compile(s.Items, et, reach && structOrPointerToStruct(et))
	nullItems := mayBeNull(et) && !s.Items.Nullable
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
		if !scalarKind(et.Kind()) || ownJSON(et) {
			unique = func(v reflect.Value) bool { return v.Len() < 2 }
		} else {
			unique = uniqueScalars
		}
	case "map":
		keys, ok := listMapKeysOf(et, s.XListMapKeys)
		if !ok && !structOrPointerToStruct(et) {
			unique = func(v reflect.Value) bool { return v.Len() == 0 } // items must be objects
		} else if !ok {
			unique = func(v reflect.Value) bool { return v.Len() < 2 }
		} else {
			unique = keys.unique
		}
	}
	if item == nil && !nullItems && maxItems == nil && minItems == nil && unique == nil {
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
		for i := range v.Len() {
			e := v.Index(i)
			if nullItems {
				if null, sure := jsonNull(e); null || !sure {
					return false // a null the list keeps, where items are not nullable
				}
			}
			if item != nil && !item(e) {
				return false
			}
		}
		return true
	}
}

// structOrPointerToStruct reports whether t is a struct or a pointer to one.
func structOrPointerToStruct(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct
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

// mapCheck checks the property count and each value of a map. A nil value is a null,
// which the registry prunes unless the values are nullable or have a default: pruned, it
// does not count toward minProperties; kept, it must be nullable.
func (c *checkCompiler) mapCheck(s *structuralschema.Structural, t reflect.Type, reach bool) typedCheck {
	vv := valueValidation(s)
	if vv != nil && beyond(vv, mapConstraints) {
		return uncertain
	}
	if len(s.Properties) > 0 || s.AdditionalProperties == nil || s.AdditionalProperties.Structural == nil {
		return uncertain
	}
	vs := s.AdditionalProperties.Structural
	et := t.Elem()
	value := c.compile(vs, et, reach && structOrPointerToStruct(et))
	var maxP, minP *int64
	if vv != nil {
		maxP, minP = vv.MaxProperties, vv.MinProperties
	}
	// What a nil value becomes: kept as a valid null, kept as an invalid one, or pruned.
	nilKept, nilValid := vs.Nullable || vs.Default.Object != nil, vs.Nullable
	nils := mayBeNull(et) && (!nilValid || minP != nil)
	if value == nil && !nils && maxP == nil && minP == nil {
		return nil
	}
	return func(v reflect.Value) bool {
		n := int64(v.Len())
		if maxP != nil && n > *maxP {
			return false
		}
		present := n
		iter := v.MapRange()
		for iter.Next() {
			e := iter.Value()
			null, sure := false, true
			if nils {
				null, sure = jsonNull(e)
			}
			if !sure {
				return false
			}
			if null {
				if nilKept && !nilValid {
					return false
				}
				if !nilKept {
					present--
				}
				continue
			}
			if value != nil && !value(e) {
				return false
			}
		}
		return minP == nil || present >= *minP
	}
}

// jsonField is a field of a struct as JSON names it, with the index path to it through
// embedded structs.
type jsonField struct {
	index     []int
	typ       reflect.Type
	omitempty bool
	// omitzero is set when the converter leaves the field out by its zero test.
	omitzero bool
	// unexported is set for a field the converter writes though nothing may read it.
	unexported bool
	// ambiguous is set when two fields have the name (an embedded struct's and the
	// parent's): which one the unstructured form holds is the converter's to say.
	ambiguous bool
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
			if name == "" {
				name = f.Name
			}
			if !f.IsExported() {
				if _, dup := out[name]; !dup {
					out[name] = jsonField{unexported: true}
				}
				continue
			}
			if _, dup := out[name]; dup {
				out[name] = jsonField{ambiguous: true}
				continue
			}
			// A zero value omitzero leaves out is checked as if there, which can only find
			// more to fault; but it is never filled (a type's own IsZero decides it).
			out[name] = jsonField{index: index, typ: f.Type, omitempty: slices.Contains(strings.Split(opts, ","), "omitempty"),
				omitzero: slices.Contains(strings.Split(opts, ","), "omitzero")}
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
	// nilKept and nilValid say what a nil value (a null) of the field becomes: pruned
	// (neither), kept as a valid null (nullable), or kept as a null the schema refuses
	// (a default, which nothing applies on this path).
	nilKept, nilValid bool
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
// top is set for the kind's own struct; reach says whether dropUnset reaches it (compile).
func (c *checkCompiler) structCheck(s *structuralschema.Structural, t reflect.Type, top, reach bool) typedCheck {
	vv := valueValidation(s)
	if vv != nil && beyond(vv, structConstraints) {
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
		if f, ok := fields[name]; !ok || f.ambiguous || f.unexported {
			return uncertain // a required property the Go type cannot hold
		}
	}
	for name, f := range fields {
		_, inSchema := s.Properties[name]
		if inSchema && f.unexported || maxP != nil && !inSchema {
			// The converter writes unexported fields too, and every field counts toward
			// maxProperties.
			return uncertain
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
		if f.ambiguous {
			return uncertain
		}
		p := s.Properties[name]
		pc := propertyCheck{name: name, index: f.index, required: slices.Contains(required, name), check: c.compile(&p, f.typ, reach),
			omitempty: f.omitempty, nilKept: p.Nullable || p.Default.Object != nil, nilValid: p.Nullable}
		if c.zeroStructsDropped && reach && f.typ.Kind() == reflect.Struct && !ownJSON(f.typ) && (!top && f.omitempty || top && name == "status") {
			pc.zeroDropped = true
		}
		if pc.required || minP != nil {
			pc.filled = filledCheck(&p, f.typ, nonZeroDefault(s) || f.omitzero)
		}
		if pc.check != nil || pc.required || maxP != nil || minP != nil || mayBeNull(f.typ) && pc.nilKept && !pc.nilValid {
			props = append(props, pc)
		}
	}
	if len(props) == 0 && (minP == nil || *minP <= 0) {
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
			null, sure := jsonNull(fv)
			if !sure {
				return false
			}
			if null {
				if p.nilKept && !p.nilValid {
					return false
				}
				if p.nilKept {
					present++
				}
				continue // pruned, or a valid null
			}
			present++
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

// filledCheck compiles whether a value of type t at a property of schema s certainly
// stands for one a client sent, so a CRD sees it there: not nil, not empty, not a zero
// value (as zeroJSON reads its JSON form), and for a struct, holding a value that no
// default (its properties') can have put there. never is set where no value is certain:
// under a parent's default, or in an omitzero field (the converter's zero test, a type's
// own IsZero, is not read here). The registry reads the other values as possibly left out
// (dropUnset, dropAbsent).
func filledCheck(s *structuralschema.Structural, t reflect.Type, never bool) func(reflect.Value) bool {
	if never || nonZeroDefault(s) {
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
			if !ok || f.ambiguous || f.unexported {
				continue
			}
			members = append(members, member{f.index, filledCheck(&p, f.typ, f.omitzero)})
		}
		return func(v reflect.Value) bool {
			for _, m := range members {
				if fv, ok := fieldOf(v, m.index); ok && m.filled(fv) {
					return true
				}
			}
			return false
		}
	case t.Kind() == reflect.Slice:
		return func(v reflect.Value) bool { return v.Len() > 0 }
	default:
		return jsonNonZero
	}
}

// jsonNonZero reports whether the JSON form of v is certainly not what zeroJSON calls
// zero: a non-empty list, a map or object with a member that is not zero, a scalar other
// than its zero value. A value with a JSON form of its own other than a timestamp is not
// read (false).
func jsonNonZero(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && jsonNonZero(v.Elem())
	case reflect.Slice:
		return v.Len() > 0
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if jsonNonZero(iter.Value()) {
				return true
			}
		}
		return false
	case reflect.Struct:
		t := v.Type()
		if t == timeType || t == microTimeType {
			tm, ok := timeOf(v)
			return ok && !tm.IsZero()
		}
		if ownJSON(t) {
			return false
		}
		for _, f := range jsonFieldsOf(t) {
			if f.ambiguous || f.unexported {
				continue
			}
			if fv, ok := fieldOf(v, f.index); ok && jsonNonZero(fv) {
				return true
			}
		}
		return false
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return !v.IsZero()
	}
	return false
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
