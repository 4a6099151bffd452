package conformance

import (
	"encoding/json"
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aagen-dev/aagen/generator/model"
)

// fieldPath is a path of JSON member names from the object's root.
type fieldPath []string

func (p fieldPath) String() string { return strings.Join(p, ".") }

// jsonKind is what a type expression is in JSON: string, integer, number, boolean, object
// (a struct), map, array, opaque (a type with its own schema, or one not followed).
func jsonKind(types *model.Types, e *model.TypeExpr) string {
	e = e.Deref()
	if e == nil {
		return "opaque"
	}
	switch e.Kind {
	case model.ExprNamed:
		t := types.Lookup(e.Name)
		if t == nil || t.OwnSchema || t.Underlying == nil || t.MarshalsJSON {
			return "opaque"
		}
		return jsonKind(types, t.Underlying)
	case model.ExprBasic:
		if k := model.BasicKind(e.Basic); k != "" {
			return k
		}
	case model.ExprSlice, model.ExprArray:
		if el := e.Elem.Deref(); el != nil && el.Kind == model.ExprBasic && el.Basic == "uint8" {
			return "opaque" // []byte: base64
		}
		return "array"
	case model.ExprMap:
		return "map"
	case model.ExprStruct:
		return "object"
	}
	return "opaque"
}

// opaqueValue is a valid value of a type with its own schema, or nil when none is known.
func opaqueValue(types *model.Types, e *model.TypeExpr) any {
	e = e.Deref()
	if e == nil || e.Kind != model.ExprNamed {
		if e != nil && (e.Kind == model.ExprSlice || e.Kind == model.ExprArray) {
			return "AA=="
		}
		return nil
	}
	switch e.Name.Name {
	case "Time", "MicroTime":
		return "2024-01-01T00:00:00Z"
	case "Duration":
		return "1s"
	case "Quantity":
		return "1"
	case "IntOrString":
		return int64(1)
	case "RawExtension", "JSON":
		return map[string]any{}
	}
	return nil
}

// synthString returns a string of length n (at least) made of one letter, matching pattern
// when the pattern allows it.
func synthString(v model.Validation) string {
	if len(v.Enum) > 0 {
		if s, ok := v.Enum[0].(string); ok {
			return s
		}
	}
	if s, ok := formatValues[v.Format]; ok {
		return s[0]
	}
	s := "a"
	if v.Pattern != "" {
		if m, ok := matchingString(v.Pattern); ok {
			s = m
		}
	}
	if v.MinLength != nil {
		for int64(len(s)) < *v.MinLength {
			s += lastChar(s)
		}
	}
	return s
}

func lastChar(s string) string {
	if s == "" {
		return "a"
	}
	return s[len(s)-1:]
}

// formatValues are a valid and an invalid value of each string format a CRD checks.
var formatValues = map[string][2]string{
	"email":     {"ana@example.com", "not-an-email"},
	"date-time": {"2024-01-01T00:00:00Z", "yesterday"},
	"date":      {"2024-01-01", "2024-13-45"},
	"uri":       {"https://example.com/a", "::not a uri"},
	"uuid":      {"123e4567-e89b-12d3-a456-426614174000", "not-a-uuid"},
	"ipv4":      {"10.0.0.1", "10.0.0.999"},
	"ipv6":      {"::1", "not:an:ipv6"},
	"cidr":      {"10.0.0.0/24", "10.0.0.0/99"},
	"hostname":  {"example.com", "not a hostname!"},
	"duration":  {"1s", "one second"},
	"byte":      {"AA==", "!!!"},
	"mac":       {"00:00:5e:00:53:01", "not-a-mac"},
}

// matchingString builds a short string the regular expression matches (the first
// alternative, the minimum repetitions, the first character of each class), checked.
func matchingString(pattern string) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	var gen func(r *syntax.Regexp)
	gen = func(r *syntax.Regexp) {
		switch r.Op {
		case syntax.OpLiteral:
			b.WriteString(string(r.Rune))
		case syntax.OpCharClass:
			if len(r.Rune) > 0 {
				c := r.Rune[0]
				// Prefer a lower-case letter or digit of the class.
				for i := 0; i+1 < len(r.Rune); i += 2 {
					if r.Rune[i] <= 'a' && 'a' <= r.Rune[i+1] {
						c = 'a'
						break
					}
				}
				b.WriteRune(c)
			}
		case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
			b.WriteByte('a')
		case syntax.OpCapture:
			gen(r.Sub[0])
		case syntax.OpConcat:
			for _, s := range r.Sub {
				gen(s)
			}
		case syntax.OpAlternate:
			gen(r.Sub[0])
		case syntax.OpPlus:
			gen(r.Sub[0])
		case syntax.OpRepeat:
			for i := 0; i < max(r.Min, 0); i++ {
				gen(r.Sub[0])
			}
		}
	}
	gen(re)
	s := b.String()
	ok, err := regexp.MatchString(pattern, s)
	return s, err == nil && ok
}

// nonMatchingString is a non-empty string the pattern does not match.
func nonMatchingString(pattern string) (string, bool) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", false
	}
	for _, s := range []string{"!", "Not Matching!", "-", "0", "a", "A", "_x_"} {
		if !re.MatchString(s) {
			return s, true
		}
	}
	return "", false
}

// synthNumber is a valid number for v, an integer when integer is set.
func synthNumber(v model.Validation, integer bool) any {
	x := 1.0
	if v.Minimum != nil {
		x = *v.Minimum
		if v.ExclusiveMinimum {
			x++
		}
	}
	if v.Maximum != nil && x > *v.Maximum {
		x = *v.Maximum
		if v.ExclusiveMaximum {
			x--
		}
	}
	if v.MultipleOf != nil && *v.MultipleOf > 0 {
		x = math.Ceil(x / *v.MultipleOf) * *v.MultipleOf
	}
	if len(v.Enum) > 0 {
		return v.Enum[0]
	}
	return number(x, integer)
}

func number(x float64, integer bool) any {
	if integer {
		return int64(math.Round(x))
	}
	return x
}

// synth is a valid value of a field: its default, else a value made from its constraints
// and, for a struct, its required fields. nil means "leave the field out".
func (b *builder) synth(e *model.TypeExpr, fv model.FieldValidation, depth int) any {
	if fv.Default != "" {
		var v any
		if json.Unmarshal([]byte(fv.Default), &v) == nil {
			return v
		}
	}
	if depth > 8 {
		return nil
	}
	v := fv.Validation
	switch jsonKind(b.types, e) {
	case "string":
		return synthString(v)
	case "integer":
		return synthNumber(v, true)
	case "number":
		return synthNumber(v, false)
	case "boolean":
		return true
	case "opaque":
		return opaqueValue(b.types, e)
	case "array":
		n := int64(0)
		if v.MinItems != nil {
			n = *v.MinItems
		}
		items := []any{}
		elem := listElem(b.types, e)
		var iv model.FieldValidation
		if fv.Items != nil {
			iv.Validation = *fv.Items
		}
		if n > 0 {
			item := distinctItems(b.synth(elem, iv, depth+1), iv.Validation)
			for i := int64(0); i < n; i++ {
				items = append(items, item(int(i)))
			}
		}
		return items
	case "map":
		n := int64(0)
		if v.MinProperties != nil {
			n = *v.MinProperties
		}
		m := map[string]any{}
		for i := int64(0); i < n; i++ {
			m[keyName(int(i))] = b.synth(mapValue(b.types, e), model.FieldValidation{}, depth+1)
		}
		return m
	case "object":
		m := map[string]any{}
		for _, f := range b.structFields(e) {
			if !f.required() {
				continue
			}
			fv := f.field.FieldValidation
			if f.field.DropsZeroValue() {
				// An empty list or map in a field with omitempty is dropped by Go, so the
				// generated server would see a required field left out where the CRD sees
				// it sent: a valid object has at least one item there.
				fv = atLeastOneItem(fv)
			}
			if x := b.synth(f.field.Type, fv, depth+1); x != nil {
				m[f.field.JSONName] = x
			}
		}
		return m
	}
	return nil
}

func keyName(i int) string { return "k" + string(rune('a'+i%26)) + strings.Repeat("x", i/26) }

// distinctItems returns the maker of a synthesized list's items from one, its first. A
// string or number item differs from the others (a set's items must be unique); a string
// stays within the items' constraints v (MaxLength, Pattern): it is one with i written in
// lower-case letters or digits after or before it, the first of those that v allows and
// no earlier item is; else one with its last character repeated i times (distinct by
// its length, whatever it breaks). Numbers grow by i, whatever Maximum says. Items of an
// enum take its values in turn (distinct while there are values enough). Objects, lists
// and booleans repeat one (a listType=map list's keys then repeat: not covered yet). Call
// the maker with i = 0, 1, 2, ... in turn.
func distinctItems(one any, v model.Validation) func(i int) any {
	if len(v.Enum) > 0 {
		return func(i int) any { return normalizeNumbers(v.Enum[i%len(v.Enum)]) }
	}
	s, isString := one.(string)
	if !isString {
		return func(i int) any {
			switch x := deepCopy(one).(type) {
			case int64:
				return x + int64(i)
			case float64:
				return x + float64(i)
			default:
				return x
			}
		}
	}
	var re *regexp.Regexp
	if v.Pattern != "" {
		re, _ = regexp.Compile(v.Pattern)
	}
	allowed := func(c string) bool {
		return (v.MaxLength == nil || int64(utf8.RuneCountInString(c)) <= *v.MaxLength) && (re == nil || re.MatchString(c))
	}
	seen := map[string]bool{}
	return func(i int) any {
		if i > 0 {
			for _, digits := range []string{"abcdefghijklmnopqrstuvwxyz", "0123456789"} {
				n := numbered(i, digits)
				for _, c := range []string{s + n, n + s} {
					if !seen[c] && allowed(c) {
						seen[c] = true
						return c
					}
				}
			}
		}
		c := s + strings.Repeat(lastChar(s), i)
		seen[c] = true
		return c
	}
}

// numbered writes i (at least 1) in the bijective base of digits: 1 is digits[0], and
// every i has a string of its own.
func numbered(i int, digits string) string {
	var out []byte
	for k := len(digits); i > 0; i = (i - 1) / k {
		out = append(out, digits[(i-1)%k])
	}
	slices.Reverse(out)
	return string(out)
}

// listElem is the element type of a slice or array (through named types and pointers).
func listElem(types *model.Types, e *model.TypeExpr) *model.TypeExpr {
	e = underlying(types, e)
	if e == nil {
		return nil
	}
	return e.Elem
}

func mapValue(types *model.Types, e *model.TypeExpr) *model.TypeExpr {
	e = underlying(types, e)
	if e == nil {
		return nil
	}
	return e.Elem
}

// underlying follows pointers and named types to the type expression a value is built from.
func underlying(types *model.Types, e *model.TypeExpr) *model.TypeExpr {
	for i := 0; i < 16 && e != nil; i++ {
		switch e.Kind {
		case model.ExprPointer:
			e = e.Elem
		case model.ExprNamed:
			t := types.Lookup(e.Name)
			if t == nil || t.Underlying == nil {
				return nil
			}
			e = t.Underlying
		default:
			return e
		}
	}
	return e
}

// structField is a field of a struct as JSON has it (inline fields flattened).
type structField struct {
	field *model.Field
}

// required tells whether the schema requires the field: +required, or no marker and no
// omitempty (OpenAPI's rule, as controller-gen applies it).
func (f structField) required() bool {
	if f.field.Required != nil {
		return *f.field.Required
	}
	return !f.field.OmitEmpty
}

// structFields lists a struct's JSON members, inline fields flattened; TypeMeta and
// ObjectMeta are left out.
func (b *builder) structFields(e *model.TypeExpr) []structField {
	e = underlying(b.types, e)
	if e == nil || e.Kind != model.ExprStruct {
		return nil
	}
	var out []structField
	for _, f := range e.Fields {
		if f.Type.IsNamed("k8s.io/apimachinery/pkg/apis/meta/v1", "TypeMeta") || f.Type.IsNamed("k8s.io/apimachinery/pkg/apis/meta/v1", "ObjectMeta") ||
			f.Type.IsNamed("k8s.io/apimachinery/pkg/apis/meta/v1", "ListMeta") {
			continue
		}
		if f.Inline {
			out = append(out, b.structFields(f.Type)...)
			continue
		}
		if !f.HasJSON() {
			continue
		}
		out = append(out, structField{f})
	}
	return out
}

// deepCopy copies a JSON value.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, vv := range x {
			m[k] = deepCopy(vv)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, vv := range x {
			l[i] = deepCopy(vv)
		}
		return l
	}
	return v
}

// setAt sets (or with remove deletes) the member at path of obj, a JSON object it changes,
// creating the objects on the way.
func setAt(obj map[string]any, path fieldPath, v any, remove bool) {
	m := obj
	for i, name := range path {
		if i == len(path)-1 {
			if remove {
				delete(m, name)
			} else {
				m[name] = deepCopy(v)
			}
			return
		}
		next, ok := m[name].(map[string]any)
		if !ok {
			if remove {
				return
			}
			next = map[string]any{}
			m[name] = next
		}
		m = next
	}
}

// atLeastOneItem returns fv with MinItems and MinProperties raised to at least 1, so a list
// or map synthesized for it holds an item.
func atLeastOneItem(fv model.FieldValidation) model.FieldValidation {
	one := int64(1)
	if fv.Validation.MinItems == nil || *fv.Validation.MinItems < 1 {
		fv.Validation.MinItems = &one
	}
	if fv.Validation.MinProperties == nil || *fv.Validation.MinProperties < 1 {
		fv.Validation.MinProperties = &one
	}
	return fv
}
