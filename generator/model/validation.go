package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	"golang.org/x/tools/go/packages"

	"github.com/aagen-dev/aagen/generator/markers"
)

// Validation is the value constraints markers put on one schema node (a field, or a
// type). They become the OpenAPI schema of the node (published in /openapi/v2 and
// /openapi/v3) and, through it, the validation the server runs: the same structural
// schema validation and CEL rules as a CustomResourceDefinition with that schema.
type Validation struct {
	Minimum, Maximum, MultipleOf       *float64
	ExclusiveMinimum, ExclusiveMaximum bool
	MinLength, MaxLength               *int64
	MinItems, MaxItems                 *int64
	MinProperties, MaxProperties       *int64
	Pattern                            string
	// Format is an OpenAPI string format a CRD supports (date-time, email, uri, ...).
	Format string
	// Enum holds the allowed values, as JSON values of the node's type.
	Enum []any
	// Rules are CEL rules (+kubebuilder:validation:XValidation), in marker order.
	Rules []Rule
}

// Rule is one CEL validation rule, with the meaning of a CRD's x-kubernetes-validations
// entry.
type Rule struct {
	Rule, Message, MessageExpression, Reason, FieldPath string
	OptionalOldSelf                                     *bool
}

// IsZero reports whether v constrains nothing.
func (v Validation) IsZero() bool {
	return v.Minimum == nil && v.Maximum == nil && v.MultipleOf == nil && !v.ExclusiveMinimum && !v.ExclusiveMaximum &&
		v.MinLength == nil && v.MaxLength == nil && v.MinItems == nil && v.MaxItems == nil &&
		v.MinProperties == nil && v.MaxProperties == nil && v.Pattern == "" && v.Format == "" && len(v.Enum) == 0 && len(v.Rules) == 0
}

// merge fills what v leaves unset from base (a field's own markers win over its type's).
func (v Validation) merge(base Validation) Validation {
	out := v
	if out.Minimum == nil {
		out.Minimum, out.ExclusiveMinimum = base.Minimum, base.ExclusiveMinimum || v.ExclusiveMinimum
	}
	if out.Maximum == nil {
		out.Maximum, out.ExclusiveMaximum = base.Maximum, base.ExclusiveMaximum || v.ExclusiveMaximum
	}
	for _, p := range []struct{ dst, src **int64 }{
		{&out.MinLength, &base.MinLength}, {&out.MaxLength, &base.MaxLength}, {&out.MinItems, &base.MinItems},
		{&out.MaxItems, &base.MaxItems}, {&out.MinProperties, &base.MinProperties}, {&out.MaxProperties, &base.MaxProperties},
	} {
		if *p.dst == nil {
			*p.dst = *p.src
		}
	}
	if out.MultipleOf == nil {
		out.MultipleOf = base.MultipleOf
	}
	if out.Pattern == "" {
		out.Pattern = base.Pattern
	}
	if out.Format == "" {
		out.Format = base.Format
	}
	if len(out.Enum) == 0 {
		out.Enum = base.Enum
	}
	out.Rules = append(slices.Clone(base.Rules), v.Rules...)
	return out
}

// FieldValidation is what markers say about one field of a struct type.
type FieldValidation struct {
	// GoName is the Go field name; JSONName its name in JSON.
	GoName, JSONName string
	Validation
	// Required is true for +kubebuilder:validation:Required (or +required), false for
	// +kubebuilder:validation:Optional (or +optional), nil without either (then
	// OpenAPI's rule applies: required unless omitempty).
	Required *bool
	// Default is the JSON default value (+kubebuilder:default or +default), "" for none.
	Default string
	// Items holds the constraints on each item of a list field
	// (+kubebuilder:validation:items:MaxLength and the like), nil without any.
	Items *Validation
	// FreeForm is set for fields whose value is any JSON (runtime.RawExtension,
	// apiextensions' JSON): their schema keeps unknown fields
	// (x-kubernetes-preserve-unknown-fields), as controller-gen's does.
	FreeForm bool
	// EmbeddedResource is +kubebuilder:validation:EmbeddedResource on a free-form field:
	// the value is a Kubernetes object (apiVersion, kind and metadata checked like a
	// CRD's x-kubernetes-embedded-resource).
	EmbeddedResource bool
	Pos              token.Position
}

// TypeValidation is what markers say about one struct type of a types package and its
// fields. Markers on named non-struct types (type Phase string) are merged into every
// field of that type.
type TypeValidation struct {
	// Name is the Go type name.
	Name string
	// Validation holds the type's own constraints (CEL rules, MinProperties, ...).
	Validation
	Fields []FieldValidation
}

// HasDefaults reports whether any field of the version has a default value, or the package
// declares defaulting functions of its own (SetDefaults_<Type>): defaulter-gen then writes
// RegisterDefaults.
func (v *Version) HasDefaults() bool {
	if v.DefaultFuncs {
		return true
	}
	for _, t := range v.Validations {
		for _, f := range t.Fields {
			if f.Default != "" {
				return true
			}
		}
	}
	return false
}

// validationMarkers are the markers read into a Validation.
var validationMarkers = []string{
	"kubebuilder:validation:Minimum", "kubebuilder:validation:Maximum", "kubebuilder:validation:ExclusiveMinimum",
	"kubebuilder:validation:ExclusiveMaximum", "kubebuilder:validation:MultipleOf", "kubebuilder:validation:MinLength",
	"kubebuilder:validation:MaxLength", "kubebuilder:validation:Pattern", "kubebuilder:validation:Format",
	"kubebuilder:validation:Enum", "kubebuilder:validation:MinItems", "kubebuilder:validation:MaxItems",
	"kubebuilder:validation:UniqueItems", "kubebuilder:validation:MinProperties", "kubebuilder:validation:MaxProperties",
	"kubebuilder:validation:XValidation", "kubebuilder:validation:ExactlyOneOf", "kubebuilder:validation:AtMostOneOf",
	"kubebuilder:validation:AtLeastOneOf", "k8s:immutable",
}

// crdFormats are the string formats a CRD's schema validation knows (see
// k8s.io/apiextensions-apiserver/pkg/apiserver/validation/formats.go); others are
// silently dropped there, so they are errors here.
var crdFormats = []string{
	"bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid", "uuid3", "uuid4", "uuid5",
	"isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor", "rgbcolor", "byte", "password", "date", "duration",
	"datetime", "date-time",
}

var celReasons = []string{"FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate"}

// validations reads the validation and default markers of every type declaration of a
// types package into v.Validations, reporting malformed values and markers that do not
// fit the type they annotate.
func (b *builder) validations(p *packages.Package, v *Version, decls []typeDecl) {
	// Type-level constraints first: fields of a named non-struct type inherit them.
	typeLevel := map[string]Validation{} // every type's own constraints
	scalar := map[string]Validation{}    // those of named non-struct types, which their fields inherit
	for _, d := range decls {
		obj, ok := p.Types.Scope().Lookup(d.spec.Name.Name).(*types.TypeName)
		if !ok {
			continue
		}
		val, ok := b.validation(obj.Type(), d.markers, d.spec.Name.Name)
		if !ok {
			continue
		}
		if _, isStruct := obj.Type().Underlying().(*types.Struct); !isStruct && len(val.Rules) > 0 {
			m, _ := d.markers.Get("kubebuilder:validation:XValidation")
			b.errorf(m.Pos, "put CEL rules on a struct type or on the field", "+kubebuilder:validation:XValidation on %s: CEL rules on named non-struct types are not supported yet", d.spec.Name.Name)
			continue
		}
		for _, name := range []string{"kubebuilder:pruning:PreserveUnknownFields", "kubebuilder:validation:EmbeddedResource"} {
			if m, ok := d.markers.Get(name); ok {
				b.errorf(m.Pos, "put it on a field of type runtime.RawExtension (k8s.io/apimachinery/pkg/runtime), which keeps any JSON object as it was sent",
					"+%s on type %s: a Go type keeps only the fields it declares", m.Def.Name, d.spec.Name.Name)
			}
		}
		typeLevel[d.spec.Name.Name] = val
		if _, isStruct := obj.Type().Underlying().(*types.Struct); !isStruct {
			scalar[d.spec.Name.Name] = val
		}
	}
	for _, d := range decls {
		obj, ok := p.Types.Scope().Lookup(d.spec.Name.Name).(*types.TypeName)
		if !ok {
			continue
		}
		st, isStruct := obj.Type().Underlying().(*types.Struct)
		if !isStruct {
			continue
		}
		tv := &TypeValidation{Name: d.spec.Name.Name, Validation: typeLevel[d.spec.Name.Name]}
		for i := 0; i < st.NumFields(); i++ {
			f := st.Field(i)
			jsonName := jsonTagName(st.Tag(i))
			ms := d.fields[f.Name()]
			if f.Embedded() || !f.Exported() || jsonName == "" || jsonName == "-" {
				if len(ms) > 0 && hasAnyValidation(ms) {
					b.errorf(ms[0].Pos, "put validation markers on named fields with a json name", "validation markers on field %s.%s, which has no JSON name of its own", tv.Name, f.Name())
				}
				continue
			}
			where := tv.Name + "." + f.Name()
			fv := FieldValidation{GoName: f.Name(), JSONName: jsonName}
			if len(ms) > 0 {
				fv.Pos = ms[0].Pos
			}
			val, ok := b.validation(f.Type(), ms, where)
			if !ok {
				continue
			}
			if n := namedIn(f.Type(), p.Types); n != "" {
				val = val.merge(scalar[n])
			}
			fv.Validation = val
			if items, ok := b.itemsValidation(f.Type(), ms, where); !ok {
				continue
			} else if items != nil {
				fv.Items = items
			}
			req, hasReq := ms.Get("kubebuilder:validation:Required") // or +required, +k8s:required
			opt, hasOpt := ms.Get("kubebuilder:validation:Optional") // or +optional, +k8s:optional
			switch {
			case hasReq && hasOpt && req.Value != "false" && opt.Value != "false":
				b.errorf(req.Pos, "keep one of them", "field %s is marked both required and optional", where)
				continue
			case hasReq && req.Value != "false":
				fv.Required = ptrTo(true)
			case hasOpt && opt.Value != "false":
				fv.Required = ptrTo(false)
			}
			// +kubebuilder:default wins over +default, as in controller-gen.
			def, hasDef := firstOf(ms, "kubebuilder:default", "default")
			if hasDef && def.Def.Name == "default" && strings.HasPrefix(def.Value, "ref(") {
				b.warnf(def.Pos, "+default=ref(...) on %s is not applied yet: write the value itself", where)
				hasDef = false
			}
			if hasDef {
				js, ok := b.checkDefault(def, f.Type(), st.Tag(i), where, fv.Validation)
				if !ok {
					continue
				}
				fv.Default = js
			}
			if !b.freeForm(&fv, f.Type(), ms, where) {
				continue
			}
			if fv.Validation.IsZero() && fv.Required == nil && fv.Default == "" && !fv.FreeForm && fv.Items == nil {
				continue
			}
			tv.Fields = append(tv.Fields, fv)
		}
		if tv.Validation.IsZero() && len(tv.Fields) == 0 {
			continue
		}
		v.Validations = append(v.Validations, tv)
	}
	sort.Slice(v.Validations, func(i, j int) bool { return v.Validations[i].Name < v.Validations[j].Name })
}

func hasAnyValidation(ms markers.Set) bool {
	for _, m := range ms {
		if slices.Contains(validationMarkers, m.Def.Canonical()) || m.Def.Name == "kubebuilder:default" || m.Def.Name == "default" ||
			m.Def.Name == "kubebuilder:validation:Required" || m.Def.Name == "kubebuilder:validation:Optional" {
			return true
		}
	}
	return false
}

// firstOf returns the first marker of ms named by one of names, in the order of names.
func firstOf(ms markers.Set, names ...string) (markers.Marker, bool) {
	for _, n := range names {
		if m, ok := ms.Get(n); ok {
			return m, true
		}
	}
	return markers.Marker{}, false
}

// validation reads the constraint markers in ms for a node of Go type t.
func (b *builder) validation(t types.Type, ms markers.Set, where string) (Validation, bool) {
	var v Validation
	good := true
	kind := schemaKind(t)
	fail := func(m markers.Marker, fix, format string, args ...any) {
		b.errorf(m.Pos, fix, "+%s on %s: "+format, append([]any{m.Def.Name, where}, args...)...)
		good = false
	}
	number := func(m markers.Marker) *float64 {
		if kind != "integer" && kind != "number" {
			fail(m, "use it on an integer or floating-point field, or remove it", "the field is %s, not a number", article(kind))
			return nil
		}
		f, err := m.Number()
		if err != nil {
			fail(m, "write a number, e.g. +"+m.Def.Name+"=1", "%v", err)
			return nil
		}
		if kind == "integer" && f != math.Trunc(f) && m.Def.Name != "kubebuilder:validation:MultipleOf" {
			fail(m, "write an integer", "%q is not an integer, and the field is", m.Value)
			return nil
		}
		return &f
	}
	count := func(m markers.Marker, want ...string) *int64 {
		if !slices.Contains(want, kind) {
			fail(m, "use it on "+strings.Join(want, " or ")+" fields, or remove it", "the field is %s", article(kind))
			return nil
		}
		n, err := m.Int()
		if err != nil || n < 0 {
			fail(m, "write a non-negative integer, e.g. +"+m.Def.Name+"=1", "%q is not a non-negative integer", m.Value)
			return nil
		}
		return &n
	}
	flag := func(m markers.Marker) bool {
		v, err := m.Bool()
		if err != nil {
			fail(m, "write =true or =false", "%v", err)
		}
		return v
	}
	for _, m := range ms {
		switch m.Def.Canonical() {
		case "kubebuilder:validation:Minimum":
			v.Minimum = number(m)
		case "kubebuilder:validation:Maximum":
			v.Maximum = number(m)
		case "kubebuilder:validation:MultipleOf":
			v.MultipleOf = number(m)
			if v.MultipleOf != nil && *v.MultipleOf <= 0 {
				fail(m, "use a positive number", "%s is not positive", m.Value)
			}
		case "kubebuilder:validation:ExclusiveMinimum", "kubebuilder:validation:ExclusiveMaximum":
			if kind != "integer" && kind != "number" {
				fail(m, "use it on an integer or floating-point field, or remove it", "the field is %s, not a number", article(kind))
				continue
			}
			if strings.HasSuffix(m.Def.Name, "Minimum") {
				v.ExclusiveMinimum = flag(m)
			} else {
				v.ExclusiveMaximum = flag(m)
			}
		case "kubebuilder:validation:MinLength":
			v.MinLength = count(m, "string")
		case "kubebuilder:validation:MaxLength":
			v.MaxLength = count(m, "string")
		case "kubebuilder:validation:MinItems":
			v.MinItems = count(m, "array")
		case "kubebuilder:validation:MaxItems":
			v.MaxItems = count(m, "array")
		case "kubebuilder:validation:MinProperties":
			v.MinProperties = count(m, "object")
		case "kubebuilder:validation:MaxProperties":
			v.MaxProperties = count(m, "object")
		case "kubebuilder:validation:UniqueItems":
			if flag(m) {
				fail(m, "use +listType=set, which the server checks in linear time", "uniqueItems is not allowed in Kubernetes structural schemas (its runtime cost is quadratic)")
			}
		case "kubebuilder:validation:Pattern":
			if kind != "string" {
				fail(m, "use it on a string field, or remove it", "the field is %s", article(kind))
				continue
			}
			if _, err := regexp.Compile(m.Value); err != nil {
				fail(m, "write a regular expression in Go (RE2) syntax; quote it when it contains commas", "invalid regular expression %q: %v", m.Value, err)
				continue
			}
			v.Pattern = m.Value
		case "kubebuilder:validation:Format":
			if kind != "string" {
				fail(m, "use it on a string field, or remove it", "the field is %s", article(kind))
				continue
			}
			if !slices.Contains(crdFormats, m.Value) {
				fail(m, "use one of "+strings.Join(crdFormats, ", "), "format %q is not one a Kubernetes server validates", m.Value)
				continue
			}
			v.Format = m.Value
		case "kubebuilder:validation:Enum":
			if !slices.Contains([]string{"string", "integer", "number", "boolean"}, kind) {
				fail(m, "use +kubebuilder:validation:Enum on a string, number or boolean field (or its named type)", "the field is %s; enum values must be scalars", article(kind))
				continue
			}
			for _, s := range m.Strings() {
				val, err := enumValue(s, kind)
				if err != nil {
					fail(m, "list values of the field's type separated by ';', e.g. +kubebuilder:validation:Enum=Wood;Steel", "%v", err)
					break
				}
				v.Enum = append(v.Enum, val)
			}
		case "kubebuilder:validation:XValidation":
			r, ok := b.rule(m, where)
			if !ok {
				good = false
				continue
			}
			v.Rules = append(v.Rules, r)
		case "k8s:immutable":
			// controller-gen's rule and message for +k8s:immutable.
			v.Rules = append(v.Rules, Rule{Rule: "self == oldSelf", Message: "field is immutable"})
		case "kubebuilder:validation:ExactlyOneOf", "kubebuilder:validation:AtMostOneOf", "kubebuilder:validation:AtLeastOneOf":
			if r, ok := b.oneOfRule(t, m, where); ok {
				v.Rules = append(v.Rules, r)
			} else {
				good = false
			}
		}
	}
	if v.Minimum != nil && v.Maximum != nil && *v.Minimum > *v.Maximum {
		m, _ := ms.Get("kubebuilder:validation:Minimum")
		fail(m, "make the minimum at most the maximum", "minimum %v is greater than maximum %v", *v.Minimum, *v.Maximum)
	}
	for _, p := range []struct {
		lo, hi *int64
		name   string
	}{{v.MinLength, v.MaxLength, "MinLength"}, {v.MinItems, v.MaxItems, "MinItems"}, {v.MinProperties, v.MaxProperties, "MinProperties"}} {
		if p.lo != nil && p.hi != nil && *p.lo > *p.hi {
			m, _ := ms.Get("kubebuilder:validation:" + p.name)
			fail(m, "make the minimum at most the maximum", "%d is greater than the maximum %d", *p.lo, *p.hi)
		}
	}
	return v, good
}

// rule reads one +kubebuilder:validation:XValidation marker. The rule and the message
// expression are parsed with cel-go here, so syntax errors have a position; type errors
// (a field that does not exist) are reported when the server builds the kind's schema.
func (b *builder) rule(m markers.Marker, where string) (Rule, bool) {
	r := Rule{Rule: m.Args["rule"], Message: m.Args["message"], MessageExpression: m.Args["messageExpression"],
		Reason: m.Args["reason"], FieldPath: m.Args["fieldPath"]}
	good := true
	fail := func(fix, format string, args ...any) {
		b.errorf(m.Pos, fix, "+kubebuilder:validation:XValidation on %s: "+format, append([]any{where}, args...)...)
		good = false
	}
	if strings.TrimSpace(r.Rule) == "" {
		fail(`add rule="<CEL expression>", e.g. rule="self.min <= self.max"`, "rule is required")
		return r, false
	}
	if r.Message != "" && r.MessageExpression != "" {
		fail("keep message or messageExpression", "message and messageExpression are mutually exclusive")
	}
	if r.Reason != "" && !slices.Contains(celReasons, r.Reason) {
		fail("use reason="+strings.Join(celReasons, "|"), "reason %q is not one of %s", r.Reason, strings.Join(celReasons, ", "))
	}
	if r.FieldPath != "" && !strings.HasPrefix(r.FieldPath, ".") {
		fail("write fieldPath as a JSON path from the annotated node, e.g. fieldPath=.spec.size", "fieldPath %q must start with '.'", r.FieldPath)
	}
	if s, ok := m.Args["optionalOldSelf"]; ok {
		bv, err := strconv.ParseBool(s)
		if err != nil {
			fail("write optionalOldSelf=true or optionalOldSelf=false", "optionalOldSelf=%q is not a boolean", s)
		}
		r.OptionalOldSelf = &bv
	}
	env, err := cel.NewEnv()
	if err == nil {
		for _, e := range []struct{ name, src string }{{"rule", r.Rule}, {"messageExpression", r.MessageExpression}} {
			if e.src == "" {
				continue
			}
			if _, iss := env.Parse(e.src); iss != nil && iss.Err() != nil {
				fail("fix the CEL expression (quote the marker's value when it contains commas)", "%s %q does not parse: %s", e.name, e.src, oneLine(iss.Err().Error()))
			}
		}
	}
	return r, good
}

// itemsValidation reads the +kubebuilder:validation:items:* markers of a list field of
// type t: the constraints of each item, checked against the item type. It returns nil
// without any.
func (b *builder) itemsValidation(t types.Type, ms markers.Set, where string) (*Validation, bool) {
	var items markers.Set
	for _, m := range ms {
		if !strings.HasPrefix(m.Def.Name, markers.ItemsPrefix) || m.Def.Pending != "" {
			continue
		}
		base := b.reg.Lookup("kubebuilder:validation:" + strings.TrimPrefix(m.Def.Name, markers.ItemsPrefix))
		if base == nil {
			continue
		}
		m.Def = base
		items = append(items, m)
	}
	if len(items) == 0 {
		return nil, true
	}
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	var elem types.Type
	switch u := t.Underlying().(type) {
	case *types.Slice:
		elem = u.Elem()
	case *types.Array:
		elem = u.Elem()
	}
	if elem == nil || schemaKind(t) != "array" {
		b.errorf(items[0].Pos, "put +kubebuilder:validation:items:* markers on list fields only", "+%s%s on %s: the field is not a list",
			markers.ItemsPrefix, strings.TrimPrefix(items[0].Def.Name, "kubebuilder:validation:"), where)
		return nil, false
	}
	v, ok := b.validation(elem, items, where+"[*]")
	if !ok {
		return nil, false
	}
	return &v, true
}

// freeForm reads the markers of free-form JSON (+kubebuilder:pruning:PreserveUnknownFields,
// +kubebuilder:validation:EmbeddedResource and their X spellings) on a field of type t.
// A Go struct or map cannot keep fields it does not declare, so on other types they are
// errors that say what to use instead.
func (b *builder) freeForm(fv *FieldValidation, t types.Type, ms markers.Set, where string) bool {
	fv.FreeForm = isRawExtension(t)
	preserve, hasPreserve := ms.Get("kubebuilder:pruning:PreserveUnknownFields")
	embedded, hasEmbedded := ms.Get("kubebuilder:validation:EmbeddedResource")
	good := true
	why := "keeps only the fields its Go type declares"
	if containsInterface(t) {
		// map[string]any, []interface{}: deepcopy-gen and openapi-gen have no code for interface{}.
		why = "holds interface{} values, which deepcopy-gen cannot copy and openapi-gen cannot describe"
	}
	for _, m := range []struct {
		m   markers.Marker
		has bool
	}{{preserve, hasPreserve}, {embedded, hasEmbedded}} {
		if m.has && !fv.FreeForm {
			b.errorf(m.m.Pos, "make the field a *runtime.RawExtension (k8s.io/apimachinery/pkg/runtime), which keeps any JSON object as it was sent",
				"+%s on %s: a field of type %s %s", m.m.Def.Name, where, types.TypeString(t, func(p *types.Package) string { return p.Name() }), why)
			good = false
		}
	}
	if hasEmbedded && fv.FreeForm {
		fv.EmbeddedResource, _ = embedded.Bool()
	}
	return good
}

// containsInterface reports whether t is, or holds in a map, slice or pointer, an interface.
func containsInterface(t types.Type) bool {
	switch u := t.Underlying().(type) {
	case *types.Interface:
		return true
	case *types.Pointer:
		return containsInterface(u.Elem())
	case *types.Slice:
		return containsInterface(u.Elem())
	case *types.Map:
		return containsInterface(u.Elem())
	}
	return false
}

// isRawExtension reports whether t is runtime.RawExtension or a pointer to one.
func isRawExtension(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path()+"."+n.Obj().Name() == rawExtensionPath
}

// oneOfRule is the CEL rule controller-gen writes for +kubebuilder:validation:ExactlyOneOf,
// AtMostOneOf and AtLeastOneOf on a struct type: fields are the JSON names of its fields.
func (b *builder) oneOfRule(t types.Type, m markers.Marker, where string) (Rule, bool) {
	st, ok := t.Underlying().(*types.Struct)
	if !ok {
		b.errorf(m.Pos, "put it on a struct type", "+%s on %s: the type is not a struct", m.Def.Name, where)
		return Rule{}, false
	}
	fields := m.Strings()
	if len(fields) == 0 {
		b.errorf(m.Pos, "list JSON field names separated by ';', e.g. +"+m.Def.Name+"=http;https", "+%s on %s: no fields", m.Def.Name, where)
		return Rule{}, false
	}
	var known []string
	for i := 0; i < st.NumFields(); i++ {
		if n := jsonTagName(st.Tag(i)); n != "" && n != "-" {
			known = append(known, n)
		}
	}
	for _, f := range fields {
		if !slices.Contains(known, f) {
			b.errorf(m.Pos, "use the JSON names of the type's fields: "+strings.Join(known, ", "), "+%s on %s: no field %q", m.Def.Name, where, f)
			return Rule{}, false
		}
	}
	var sum, or []string
	for _, f := range fields {
		sum = append(sum, "(has(self."+f+")?1:0)")
		or = append(or, "has(self."+f+")")
	}
	switch strings.TrimPrefix(m.Def.Name, "kubebuilder:validation:") {
	case "ExactlyOneOf":
		return Rule{Rule: strings.Join(sum, "+") + " == 1", Message: fmt.Sprintf("exactly one of the fields in %v must be set", fields)}, true
	case "AtMostOneOf":
		return Rule{Rule: strings.Join(sum, "+") + " <= 1", Message: fmt.Sprintf("at most one of the fields in %v may be set", fields)}, true
	}
	return Rule{Rule: strings.Join(or, "||"), Message: fmt.Sprintf("at least one of the fields in %v must be set", fields)}, true
}

// checkDefault reads a default value (controller-tools' literal syntax or JSON) as the
// field's type, and checks that the field can tell "unset" from "set" (a pointer, or
// omitempty), as defaulting requires. It returns the default as JSON.
func (b *builder) checkDefault(m markers.Marker, t types.Type, tag, where string, val Validation) (string, bool) {
	kind := schemaKind(t)
	lit, err := m.Literal()
	if err != nil {
		b.errorf(m.Pos, `write the default in controller-tools' syntax (3, Wood, {a, b}, {key: value}) or as JSON`,
			"+%s on %s: %v", m.Def.Name, where, err)
		return "", false
	}
	v, err := lit.JSON(literalShape(t, 0))
	if err != nil {
		var mm *markers.MismatchError
		if errors.As(err, &mm) && mm.WrongType && len(mm.Path) == 0 {
			b.errorf(m.Pos, "write a default of the field's JSON type ("+kind+")", "+%s on %s: default %s does not match the field's type (%s)", m.Def.Name, where, m.Text, kind)
		} else {
			b.errorf(m.Pos, "write a default of the field's JSON type ("+kind+")", "+%s on %s: default %s: %v", m.Def.Name, where, m.Text, err)
		}
		return "", false
	}
	js, err := json.Marshal(v)
	if err != nil {
		b.errorf(m.Pos, "write the default as JSON", "+%s on %s: %v", m.Def.Name, where, err)
		return "", false
	}
	_, isPtr := t.(*types.Pointer)
	if !isPtr && kind == "object" {
		if _, isStruct := t.Underlying().(*types.Struct); isStruct {
			// A CRD sets such a default when the object has no such field; a Go struct
			// field is never absent, and defaulter-gen cannot default it. controller-gen
			// packages carry these (Gateway API's status defaults), so this is a warning,
			// not a refusal: the default is neither published nor applied.
			b.warnf(m.Pos, "+%s on %s: not applied: a non-pointer struct field is never unset, so it cannot be defaulted (make it a pointer to default it)", m.Def.Name, where)
			return "", false
		}
	}
	if !isPtr && !slices.Contains([]string{"array", "object"}, kind) && !strings.Contains(tagJSON(tag), ",omitempty") {
		b.errorf(m.Pos, "add omitempty to the field's json tag, or make it a pointer", "+%s on %s: the field has no omitempty, so it is always set and a default never applies", m.Def.Name, where)
		return "", false
	}
	if len(val.Enum) > 0 && !slices.ContainsFunc(val.Enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		b.errorf(m.Pos, "use one of the enum values as the default", "+%s on %s: default %s is not one of the allowed values", m.Def.Name, where, m.Text)
		return "", false
	}
	return string(js), true
}

// Types whose JSON is free-form (any value): a literal on them is guessed, as by controller-tools.
const (
	rawExtensionPath = "k8s.io/apimachinery/pkg/runtime.RawExtension"
	apiextJSONPath   = "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSON"
)

// literalShape is the JSON shape of Go type t, for reading a literal default as it.
func literalShape(t types.Type, depth int) *markers.Shape {
	if p, ok := t.(*types.Pointer); ok {
		return literalShape(p.Elem(), depth)
	}
	if depth > 32 || isFreeForm(t) {
		return nil
	}
	kind := schemaKind(t)
	s := &markers.Shape{Type: kind}
	switch kind {
	case "unknown":
		return nil
	case "array":
		switch u := t.Underlying().(type) {
		case *types.Slice:
			s.Items = literalShape(u.Elem(), depth+1)
		case *types.Array:
			s.Items = literalShape(u.Elem(), depth+1)
		}
	case "object":
		switch u := t.Underlying().(type) {
		case *types.Map:
			s.Values = literalShape(u.Elem(), depth+1)
		case *types.Struct:
			s.Properties = map[string]*markers.Shape{}
			structShape(u, s.Properties, depth)
		}
	}
	return s
}

// structShape adds the JSON fields of st (those of inlined embedded structs too) to props.
func structShape(st *types.Struct, props map[string]*markers.Shape, depth int) {
	for i := 0; i < st.NumFields(); i++ {
		f := st.Field(i)
		name := jsonTagName(st.Tag(i))
		if f.Embedded() && (name == "" || strings.Contains(tagJSON(st.Tag(i)), "inline")) {
			et := f.Type()
			if p, ok := et.(*types.Pointer); ok {
				et = p.Elem()
			}
			if est, ok := et.Underlying().(*types.Struct); ok {
				structShape(est, props, depth+1)
			}
			continue
		}
		if !f.Exported() || name == "" || name == "-" {
			continue
		}
		props[name] = literalShape(f.Type(), depth+1)
	}
}

// isFreeForm reports whether values of t hold any JSON: interface{}, runtime.RawExtension,
// apiextensions' JSON.
func isFreeForm(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok && n.Obj().Pkg() != nil {
		switch n.Obj().Pkg().Path() + "." + n.Obj().Name() {
		case rawExtensionPath, apiextJSONPath:
			return true
		}
	}
	_, isIface := t.Underlying().(*types.Interface)
	return isIface
}

// jsonKind is the OpenAPI type of a Go type: string, integer, number, boolean, array,
// object or int-or-string.
func schemaKind(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		return schemaKind(p.Elem())
	}
	if n, ok := t.(*types.Named); ok && n.Obj().Pkg() != nil {
		switch n.Obj().Pkg().Path() + "." + n.Obj().Name() {
		case metav1Path + ".Time", metav1Path + ".MicroTime", metav1Path + ".Duration":
			return "string"
		case "k8s.io/apimachinery/pkg/util/intstr.IntOrString", "k8s.io/apimachinery/pkg/api/resource.Quantity":
			return "int-or-string"
		}
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		switch {
		case u.Info()&types.IsBoolean != 0:
			return "boolean"
		case u.Info()&types.IsInteger != 0:
			return "integer"
		case u.Info()&types.IsFloat != 0:
			return "number"
		case u.Info()&types.IsString != 0:
			return "string"
		}
	case *types.Slice:
		if b, ok := u.Elem().(*types.Basic); ok && b.Kind() == types.Byte {
			return "string"
		}
		return "array"
	case *types.Array:
		return "array"
	case *types.Map, *types.Struct:
		return "object"
	}
	return "unknown"
}

func enumValue(s, kind string) (any, error) {
	switch kind {
	case "string":
		return s, nil
	case "boolean":
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("enum value %q is not a boolean", s)
		}
		return b, nil
	default:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || kind == "integer" && f != math.Trunc(f) {
			return nil, fmt.Errorf("enum value %q is not %s", s, article(kind))
		}
		if kind == "integer" {
			return int64(f), nil
		}
		return f, nil
	}
}

// namedIn returns the name of t's named type (through a pointer) if it is declared in pkg.
func namedIn(t types.Type, pkg *types.Package) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok && n.Obj().Pkg() == pkg {
		return n.Obj().Name()
	}
	return ""
}

func article(kind string) string {
	switch kind {
	case "integer", "array", "object", "int-or-string":
		return "an " + kind
	case "unknown":
		return "of a type without a JSON schema"
	}
	return "a " + kind
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func ptrTo[T any](v T) *T { return &v }

// fieldMarkers parses the markers of each field of a struct type declaration, by Go field
// name (embedded fields by their type name).
func (b *builder) fieldMarkers(fset *token.FileSet, st *ast.StructType) map[string]markers.Set {
	out := map[string]markers.Set{}
	for _, fld := range st.Fields.List {
		ms, ds := b.reg.Parse(fset, markers.OnField, fld.Doc)
		b.markerDiags(ds)
		names := fld.Names
		if len(names) == 0 {
			if id := embeddedName(fld.Type); id != "" {
				out[id] = ms
			}
			continue
		}
		for _, n := range names {
			out[n.Name] = ms
		}
	}
	return out
}

func embeddedName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return embeddedName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}
