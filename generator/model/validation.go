package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aagen-dev/aagen/generator/markers"
)

// Validation is the value constraints markers put on one schema node (a field, or a
// type): see markers.Schema, which the schema markers apply themselves to.
type Validation = markers.Schema

// Rule is one CEL validation rule, with the meaning of a CRD's x-kubernetes-validations
// entry.
type Rule = markers.Rule

// FieldValidation is what markers say about one field's schema (Field embeds it).
type FieldValidation struct {
	// Validation holds the field's constraints, and those of its named non-struct type
	// (type Phase string) that the field does not set itself.
	Validation Validation
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
	// OpenAPIEnum is set when the field's type is marked +enum (or +k8s:enum): the type's
	// constants are the enum the OpenAPI definitions publish, which Validation.Enum then
	// holds too (the same values when +kubebuilder:validation:Enum gives them as well: one
	// enum).
	OpenAPIEnum bool
	// DocumentedEnum is set when that enum comes from +enum alone, with no
	// +kubebuilder:validation:Enum on the field or its type: it is documentation, published
	// but not checked by the server, as kube-apiserver publishes its built-in enums (whose
	// validation is hand-written) and as a CRD of the same types takes any string
	// (controller-gen ignores +enum). With +kubebuilder:validation:Enum the enum is checked.
	DocumentedEnum bool
	// EmbeddedResource is +kubebuilder:validation:EmbeddedResource on a free-form field:
	// the value is a Kubernetes object (apiVersion, kind and metadata checked like a
	// CRD's x-kubernetes-embedded-resource).
	EmbeddedResource bool
}

// HasValidation reports whether the field's schema carries anything of the markers'.
func (fv FieldValidation) HasValidation() bool {
	return !fv.Validation.IsZero() || fv.Required != nil || fv.Default != "" || fv.FreeForm || fv.Items != nil
}

// Constrains reports whether the field's schema limits the values a client may send or
// changes what it sends: a constraint of the field or of its items, a default, or a
// required marker (an optional marker or a free-form schema limits nothing).
func (fv FieldValidation) Constrains() bool {
	return !fv.Validation.IsZero() || fv.Items != nil || fv.Default != "" || fv.Required != nil && *fv.Required
}

// HasDefaults reports whether a field of a type the version's package declares or reaches
// has a default value, or the package declares defaulting functions of its own
// (SetDefaults_<Type>): defaulter-gen then writes RegisterDefaults.
func (v *Version) HasDefaults() bool { return v.DefaultFuncs || v.FieldDefaults }

// readsMarkers reports whether the schema of t comes from its markers: types of the
// served types packages, of other packages of the module and of other modules; not those
// of an internal package (never serialized), nor Kubernetes' own (see InKubernetes).
func (b *builder) readsMarkers(t *Type) bool {
	switch t.Origin {
	case InTypesPackage:
		return !b.internalPkgs[t.Name.Pkg]
	case InModule, InDependency, InKubernetes:
		return true
	}
	return false
}

// where names a type in messages: bare in a types package, with its package name elsewhere.
func where(t *Type) string {
	if t.Origin == InTypesPackage {
		return t.Name.Name
	}
	return t.PkgName + "." + t.Name.Name
}

// validations reads the validation and default markers of every type of the graph whose
// schema comes from its markers (readsMarkers), reporting malformed values and markers
// that do not fit the type they annotate.
func (b *builder) validations(g *Types) {
	// Type-level constraints first: fields of a named non-struct type inherit them.
	for _, t := range g.All() {
		if !b.readsMarkers(t) || t.Underlying == nil || len(t.Markers) == 0 {
			continue
		}
		self := &TypeExpr{Kind: ExprNamed, Name: t.Name}
		val, ok := b.validation(self, t.Markers, where(t))
		if !ok {
			continue
		}
		if !t.IsStruct() && len(val.Rules) > 0 {
			_, m, _ := markers.Find[markers.XValidation](t.Markers)
			b.errorf(m.Pos, "put CEL rules on a struct type or on the field", "+kubebuilder:validation:XValidation on %s: CEL rules on named non-struct types are not supported yet", where(t))
			continue
		}
		for _, m := range t.Markers {
			switch m.Parsed.(type) {
			case markers.PreserveUnknownFields, markers.EmbeddedResource:
				b.errorf(m.Pos, "put it on a field of type runtime.RawExtension (k8s.io/apimachinery/pkg/runtime), which keeps any JSON object as it was sent",
					"+%s on type %s: a Go type keeps only the fields it declares", m.Def.Name, where(t))
			}
		}
		t.Validation = val
	}
	b.embeddedValidation(g)
	for _, t := range g.All() {
		if !b.readsMarkers(t) || !t.IsStruct() {
			continue
		}
		for _, f := range t.Fields() {
			ms := f.Markers
			if !f.Embedded {
				b.patchSemantics(t, f)
			}
			if f.Embedded || !f.Exported || f.JSONName == "" || f.JSONName == "-" {
				if len(ms) > 0 && hasAnyValidation(ms) {
					b.errorf(ms[0].Pos, "put validation markers on named fields with a json name", "validation markers on field %s.%s, which has no JSON name of its own", where(t), f.GoName)
				}
				continue
			}
			at := where(t) + "." + f.GoName
			b.fieldValidation(g, f, at)
			b.elementConstraints(g, f, at)
		}
	}
}

// embeddedValidation gives each struct type the type-level constraints of the structs it
// embeds inline (recursively): encoding/json puts an embedded struct's fields into the
// embedding object, and controller-gen merges the embedded type's schema into the
// embedding one (its CEL rules before the object's own, the object's own constraints
// winning), so the rules of Gateway API's BackendObjectReference hold in BackendRef and
// HTTPBackendRef, which embed it. kube-openapi publishes only the embedded fields.
func (b *builder) embeddedValidation(g *Types) {
	done := map[GoType]bool{}
	onPath := map[GoType]bool{}
	var visit func(t *Type)
	visit = func(t *Type) {
		if done[t.Name] || onPath[t.Name] {
			return
		}
		onPath[t.Name] = true
		for _, f := range t.Fields() {
			if !f.Embedded || !f.Inline {
				continue
			}
			n := f.Type.Deref()
			if n == nil || n.Kind != ExprNamed {
				continue
			}
			et := g.Lookup(n.Name)
			if et == nil || !et.IsStruct() || !b.readsMarkers(et) {
				continue
			}
			visit(et)
			if !et.Validation.IsZero() {
				t.Validation = t.Validation.Merge(et.Validation)
			}
		}
		delete(onPath, t.Name)
		done[t.Name] = true
	}
	for _, t := range g.All() {
		if t.IsStruct() && b.readsMarkers(t) {
			visit(t)
		}
	}
}

// elementConstraints warns when the items of a list field or the values of a map field are
// of a named non-struct type with constraints of its own (type Protocol string with an
// Enum): those constraints reach the fields of that type, not yet the items or values of a
// list or map, and a constraint that silently does not apply must be said.
func (b *builder) elementConstraints(g *Types, f *Field, at string) {
	u := g.under(f.Type.Deref())
	if u == nil || u.Kind != ExprSlice && u.Kind != ExprArray && u.Kind != ExprMap {
		return
	}
	el := u.Elem.Deref()
	if el == nil || el.Kind != ExprNamed {
		return
	}
	et := g.Lookup(el.Name)
	if et == nil || et.IsStruct() || et.Validation.IsZero() || len(et.Markers) == 0 {
		return
	}
	if u.Kind != ExprMap {
		// The items of a list have their type's constraints, as in controller-gen's CRD
		// (Gateway API's []Hostname, []HTTPMethodWithWildcard's enum); the field's own
		// +kubebuilder:validation:items: markers win.
		items := et.Validation
		if f.Items != nil {
			items = f.Items.Merge(et.Validation)
		}
		f.Items = &items
		return
	}
	pos := f.Pos
	if f.MarkerPos.IsValid() {
		pos = f.MarkerPos
	}
	b.warnf(pos, "make the values a struct with a field of that type, whose constraints apply",
		"field %s: the constraints of type %s (%s:%d) are not applied to the values of the map yet, only to fields of that type",
		at, where(et), filepath.Base(et.Markers[0].Pos.Filename), et.Markers[0].Pos.Line)
}

// fieldValidation reads the schema markers of one field into f.FieldValidation.
func (b *builder) fieldValidation(g *Types, f *Field, at string) {
	ms := f.Markers
	var fv FieldValidation
	val, ok := b.validation(f.Type, ms, at)
	if !ok {
		return
	}
	if n := f.Type.Deref(); n.Kind == ExprNamed {
		if nt := g.Lookup(n.Name); nt != nil && !nt.IsStruct() {
			val = val.Merge(nt.Validation)
			if markers.Is[markers.OpenAPIEnum](nt.Markers) {
				if !b.sameEnum(nt, val, ms, at) {
					return
				}
				fv.OpenAPIEnum = true
				fv.DocumentedEnum = len(val.Enum) == 0
				val.Enum = nil
				for _, c := range nt.StringConstants {
					val.Enum = append(val.Enum, c)
				}
			}
		}
	}
	fv.Validation = val
	if items, ok := b.itemsValidation(f.Type, ms, at); !ok {
		return
	} else if items != nil {
		fv.Items = items
	}
	req, reqMarker, _ := markers.Find[markers.Required](ms) // or +required, +k8s:required
	opt, optMarker, _ := markers.Find[markers.Optional](ms) // or +optional, +k8s:optional
	if bool(req) && bool(opt) {
		// controller-gen reads the kubebuilder spellings before the Kubernetes ones
		// (+kubebuilder:validation:Optional, then +kubebuilder:validation:Required, then
		// +optional, then +required): k8s.io/api's IngressPortStatus.Error is +optional and
		// +kubebuilder:validation:Required, and its CRD requires it. Two markers of one
		// spelling family contradict each other.
		reqKB, optKB := reqMarker.Def.Same == "", optMarker.Def.Same == ""
		if reqKB == optKB {
			b.errorf(reqMarker.Pos, "keep one of them", "field %s is marked both required and optional", at)
			return
		}
		winner, loser := reqMarker, optMarker
		if optKB {
			winner, loser = optMarker, reqMarker
			req = false
		} else {
			opt = false
		}
		b.warnf(loser.Pos, "keep one of them", "field %s is +%s and +%s: +%s wins, as in controller-gen's CRD", at, winner.Def.Name, loser.Def.Name, winner.Def.Name)
	}
	switch {
	case bool(req):
		fv.Required = ptrTo(true)
	case bool(opt):
		fv.Required = ptrTo(false)
	}
	def, defMarker, hasDef := fieldDefault(ms)
	if hasDef && def.Ref {
		b.warnf(defMarker.Pos, "write the value itself", "+default=ref(...) on %s is not applied yet", at)
		hasDef = false
	}
	if hasDef {
		js, emptyStruct, ok := b.checkDefault(def, defMarker, f, at, fv.Validation)
		if !ok {
			return
		}
		fv.Default = js
		if js != "" && !f.OmitEmpty && f.Type.Kind != ExprPointer && fv.Required == nil {
			// Defaulted when absent (codegen shows openapi-gen the field with omitempty,
			// which it takes as optional), so a body may leave it out, as from a CRD.
			fv.Required = ptrTo(false)
		}
		if emptyStruct {
			// Never absent once defaulted, as in a CRD: not in the schema's required list,
			// where a body leaving it out would be refused before defaulting.
			fv.Required = ptrTo(false)
		}
	}
	if !b.freeForm(&fv, f.Type, ms, at) {
		return
	}
	f.FieldValidation = fv
}

// sameEnum checks that the +kubebuilder:validation:Enum of a field of the +enum type nt
// (on the field, or on nt) lists the values of nt's constants, which kube-openapi
// publishes as the enum: the two are one enum, or the markers contradict each other.
func (b *builder) sameEnum(nt *Type, val Validation, fieldMarkers markers.Set, at string) bool {
	if len(val.Enum) == 0 {
		return true
	}
	var listed []string
	for _, v := range val.Enum {
		listed = append(listed, fmt.Sprint(v))
	}
	slices.Sort(listed)
	listed = slices.Compact(listed)
	if slices.Equal(listed, nt.StringConstants) {
		return true
	}
	_, m, onField := markers.Find[markers.Enum](fieldMarkers)
	if !onField {
		_, m, _ = markers.Find[markers.Enum](nt.Markers)
	}
	_, em, _ := markers.Find[markers.OpenAPIEnum](nt.Markers)
	consts := "none"
	if len(nt.StringConstants) > 0 {
		consts = strings.Join(nt.StringConstants, ";")
	}
	b.errorf(m.Pos, "list the same values in +kubebuilder:validation:Enum as the constants of "+where(nt)+", or keep only one of the two markers",
		"+kubebuilder:validation:Enum on %s allows %s, but %s is +enum (%s:%d) with the constants %s; they would be two different enums",
		at, strings.Join(listed, ";"), where(nt), filepath.Base(em.Pos.Filename), em.Pos.Line, consts)
	return false
}

// hasAnyValidation reports whether ms holds a marker that puts something in a field's
// schema: a constraint (on the field or its items) or a default. Required and Optional, in any spelling, do not count:
// on an embedded field (Gateway API has +optional above its inline BackendRef)
// they say nothing, and controller-gen ignores them there too.
func hasAnyValidation(ms markers.Set) bool {
	for _, m := range ms {
		switch m.Parsed.(type) {
		case markers.SchemaValue, markers.DefaultValue, markers.Items:
			return true
		}
	}
	return false
}

// fieldDefault returns the default of a field: +kubebuilder:default wins over +default, as
// in controller-gen.
func fieldDefault(ms markers.Set) (markers.DefaultValue, markers.Marker, bool) {
	all := markers.FindAll[markers.DefaultValue](ms)
	for _, d := range all {
		if !d.Value.CodeGenerator {
			return d.Value, d.Marker, true
		}
	}
	if len(all) > 0 {
		return all[0].Value, all[0].Marker, true
	}
	return markers.DefaultValue{}, markers.Marker{}, false
}

// validation applies the schema markers in ms (each value's ApplyToSchema) to a node of
// type e.
func (b *builder) validation(e *TypeExpr, ms markers.Set, where string) (Validation, bool) {
	var v Validation
	good := true
	fail := func(m markers.Marker, fix, format string, args ...any) {
		b.errorf(m.Pos, fix, "+%s on %s: "+format, append([]any{m.Def.Name, where}, args...)...)
		good = false
	}
	node := markers.Node{Kind: b.types.schemaKind(e)}
	if u := b.types.under(e); u != nil && u.Kind == ExprStruct {
		node.IsStruct = true
		for _, f := range u.Fields {
			if f.JSONName != "" && f.JSONName != "-" {
				node.Fields = append(node.Fields, f.JSONName)
			}
		}
	}
	for _, m := range ms {
		sv, ok := m.Parsed.(markers.SchemaValue)
		if !ok {
			continue
		}
		if p := sv.ApplyToSchema(&v, node); p != nil {
			fail(m, p.Fix, "%s", p.Msg)
		}
	}
	if v.Minimum != nil && v.Maximum != nil && *v.Minimum > *v.Maximum {
		_, m, _ := markers.Find[markers.Minimum](ms)
		fail(m, "make the minimum at most the maximum", "minimum %v is greater than maximum %v", *v.Minimum, *v.Maximum)
	}
	for _, p := range []struct {
		lo, hi *int64
		m      func() markers.Marker
	}{
		{v.MinLength, v.MaxLength, func() markers.Marker { _, m, _ := markers.Find[markers.MinLength](ms); return m }},
		{v.MinItems, v.MaxItems, func() markers.Marker { _, m, _ := markers.Find[markers.MinItems](ms); return m }},
		{v.MinProperties, v.MaxProperties, func() markers.Marker { _, m, _ := markers.Find[markers.MinProperties](ms); return m }},
	} {
		if p.lo != nil && p.hi != nil && *p.lo > *p.hi {
			fail(p.m(), "make the minimum at most the maximum", "%d is greater than the maximum %d", *p.lo, *p.hi)
		}
	}
	return v, good
}

// itemsValidation reads the +kubebuilder:validation:items:* markers of a list field of
// type e: the constraints of each item, checked against the item type. It returns nil
// without any.
func (b *builder) itemsValidation(e *TypeExpr, ms markers.Set, where string) (*Validation, bool) {
	var items markers.Set
	for _, it := range markers.FindAll[markers.Items](ms) {
		m := it.Marker
		m.Parsed = it.Value.Value // applied to each item
		items = append(items, m)
	}
	if len(items) == 0 {
		return nil, true
	}
	var elem *TypeExpr
	if u := b.types.under(e.Deref()); u != nil && (u.Kind == ExprSlice || u.Kind == ExprArray) {
		elem = u.Elem
	}
	if elem == nil || b.types.schemaKind(e) != "array" {
		b.errorf(items[0].Pos, "put +kubebuilder:validation:items:* markers on list fields only", "+%s on %s: the field is not a list",
			items[0].Def.Name, where)
		return nil, false
	}
	v, ok := b.validation(elem, items, where+"[*]")
	if !ok {
		return nil, false
	}
	return &v, true
}

// freeForm reads the markers of free-form JSON (+kubebuilder:pruning:PreserveUnknownFields,
// +kubebuilder:validation:EmbeddedResource and their X spellings) on a field of type e.
// A Go struct or map cannot keep fields it does not declare, so on other types they are
// errors that say what to use instead.
func (b *builder) freeForm(fv *FieldValidation, e *TypeExpr, ms markers.Set, where string) bool {
	fv.FreeForm = e.Deref().IsNamed(pkgRuntimePath, "RawExtension")
	_, preserve, hasPreserve := markers.Find[markers.PreserveUnknownFields](ms)
	embeddedValue, embedded, hasEmbedded := markers.Find[markers.EmbeddedResource](ms)
	good := true
	why := "keeps only the fields its Go type declares"
	if b.types.containsInterface(e) {
		// map[string]any, []interface{}: deepcopy-gen and openapi-gen have no code for interface{}.
		why = "holds interface{} values, which deepcopy-gen cannot copy and openapi-gen cannot describe"
	}
	for _, m := range []struct {
		m             markers.Marker
		has, preserve bool
	}{{preserve, hasPreserve, true}, {embedded, hasEmbedded, false}} {
		if !m.has || fv.FreeForm {
			continue
		}
		if m.preserve && b.rawExtensionItems(e) {
			// A list or map of RawExtension: each item keeps any JSON object, which is what
			// the marker asks of the items (controller-gen's CRD has the same items).
			continue
		}
		if m.preserve && !b.types.containsInterface(e) {
			// Published types put it on typed fields to keep a recursive schema out of their
			// CRD (Cluster API's JSONSchemaProps). Decoding into the Go type drops what it does
			// not declare, which is all a typed server can do: said, not refused.
			b.warnf(m.m.Pos, "nothing, if the Go type declares every field clients send; to keep any JSON object as it was sent, make the field a *runtime.RawExtension (k8s.io/apimachinery/pkg/runtime)",
				"+%s on %s is not applied: a field of type %s %s, and the server drops the rest (a CRD of these types would keep it)", m.m.Def.Name, where, e.String, why)
			continue
		}
		b.errorf(m.m.Pos, "make the field a *runtime.RawExtension (k8s.io/apimachinery/pkg/runtime), which keeps any JSON object as it was sent",
			"+%s on %s: a field of type %s %s", m.m.Def.Name, where, e.String, why)
		good = false
	}
	if hasEmbedded && fv.FreeForm {
		fv.EmbeddedResource = bool(embeddedValue)
	}
	return good
}

// rawExtensionItems says whether e is a list or map whose items are runtime.RawExtension.
func (b *builder) rawExtensionItems(e *TypeExpr) bool {
	u := b.types.under(e.Deref())
	if u == nil || u.Kind != ExprSlice && u.Kind != ExprArray && u.Kind != ExprMap || u.Elem == nil {
		return false
	}
	return u.Elem.Deref().IsNamed(pkgRuntimePath, "RawExtension")
}

// checkDefault reads a default value (controller-tools' literal syntax or JSON) as the
// field's type, and checks that it can be applied (a non-pointer struct only takes {}).
// It returns the default as JSON ("" with true for a default that needs nothing generated).
func (b *builder) checkDefault(def markers.DefaultValue, m markers.Marker, f *Field, where string, val Validation) (js string, emptyStruct, ok bool) {
	kind := b.types.schemaKind(f.Type)
	v, err := def.Literal.JSON(b.types.literalShape(f.Type, 0))
	if err != nil {
		var mm *markers.MismatchError
		if errors.As(err, &mm) && mm.WrongType && len(mm.Path) == 0 {
			b.errorf(m.Pos, "write a default of the field's JSON type ("+kind+")", "+%s on %s: default %s does not match the field's type (%s)", m.Def.Name, where, def.Text, kind)
		} else {
			b.errorf(m.Pos, "write a default of the field's JSON type ("+kind+")", "+%s on %s: default %s: %v", m.Def.Name, where, def.Text, err)
		}
		return "", false, false
	}
	encoded, err := json.Marshal(v)
	if err != nil {
		b.errorf(m.Pos, "write the default as JSON", "+%s on %s: %v", m.Def.Name, where, err)
		return "", false, false
	}
	isPtr := f.Type.Kind == ExprPointer
	if !isPtr && kind == "object" {
		if u := b.types.under(f.Type); u != nil && u.Kind == ExprStruct {
			// A CRD fills an absent object with its default, then defaults that object's
			// fields. A Go struct field is never absent: its fields' defaults always
			// apply, which is all an empty default ({}) asks (kueue, Gateway API); it is
			// applied that way, with nothing to generate. defaulter-gen cannot default a
			// non-pointer struct to other values (Gateway API's status defaults), so such
			// a default is a warning: neither published nor applied.
			if obj, isObj := v.(map[string]any); isObj && len(obj) == 0 {
				return "", true, true
			}
			b.warnf(m.Pos, "make the field a pointer to default it", "+%s on %s: not applied: a non-pointer struct field is never unset, so it cannot be defaulted to anything but {}", m.Def.Name, where)
			return "", false, true // the field's other constraints still apply
		}
	}
	// A scalar without omitempty (openshift/api, kueue) is defaulted as one with it: by
	// defaulter-gen, when the decoded field holds its zero value, so an absent field gets
	// the default as in a CRD (docs/markers.md says what differs: an explicit zero value).
	if len(val.Enum) > 0 && !slices.ContainsFunc(val.Enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		b.errorf(m.Pos, "use one of the enum values as the default", "+%s on %s: default %s is not one of the allowed values", m.Def.Name, where, def.Text)
		return "", false, false
	}
	return string(encoded), false, true
}

// Packages of the types whose JSON is free-form (any value): a literal on them is guessed,
// as by controller-tools.
const (
	apiextV1Path = "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// under returns what e is underneath: the declaration of a named type (nil when the graph
// does not follow it), e itself otherwise.
func (g *Types) under(e *TypeExpr) *TypeExpr {
	if e == nil {
		return nil
	}
	if e.Kind == ExprNamed {
		if t := g.Lookup(e.Name); t != nil {
			return t.Underlying
		}
		return nil
	}
	return e
}

// literalShape is the JSON shape of type e, for reading a literal default as it.
func (g *Types) literalShape(e *TypeExpr, depth int) *markers.Shape {
	e = e.Deref()
	if depth > 32 || g.isFreeForm(e) {
		return nil
	}
	kind := g.schemaKind(e)
	s := &markers.Shape{Type: kind}
	u := g.under(e)
	switch kind {
	case "unknown":
		return nil
	case "array":
		if u != nil {
			s.Items = g.literalShape(u.Elem, depth+1)
		}
	case "object":
		switch {
		case u == nil:
		case u.Kind == ExprMap:
			s.Values = g.literalShape(u.Elem, depth+1)
		case u.Kind == ExprStruct:
			s.Properties = map[string]*markers.Shape{}
			g.structShape(u.Fields, s.Properties, depth)
		}
	}
	return s
}

// structShape adds the JSON fields of a struct (those of inlined embedded structs too) to props.
func (g *Types) structShape(fields []*Field, props map[string]*markers.Shape, depth int) {
	for _, f := range fields {
		if f.Inline {
			if u := g.under(f.Type.Deref()); u != nil && u.Kind == ExprStruct {
				g.structShape(u.Fields, props, depth+1)
			}
			continue
		}
		if !f.Exported || f.JSONName == "" || f.JSONName == "-" {
			continue
		}
		props[f.JSONName] = g.literalShape(f.Type, depth+1)
	}
}

// isFreeForm reports whether values of e hold any JSON: interface{}, runtime.RawExtension,
// apiextensions' JSON.
func (g *Types) isFreeForm(e *TypeExpr) bool {
	e = e.Deref()
	if e.IsNamed(pkgRuntimePath, "RawExtension") || e.IsNamed(apiextV1Path, "JSON") {
		return true
	}
	u := g.under(e)
	return u != nil && u.Kind == ExprInterface
}

// containsInterface reports whether e is, or holds in a map, slice or pointer, an interface.
func (g *Types) containsInterface(e *TypeExpr) bool {
	u := g.under(e)
	if u == nil {
		return false
	}
	switch u.Kind {
	case ExprInterface:
		return true
	case ExprPointer, ExprSlice, ExprMap:
		return g.containsInterface(u.Elem)
	}
	return false
}

// schemaKind is the OpenAPI type of type e: string, integer, number, boolean, array,
// object, int-or-string, or unknown.
func (g *Types) schemaKind(e *TypeExpr) string {
	e = e.Deref()
	if e == nil {
		return "unknown"
	}
	if e.Kind == ExprNamed {
		switch e.Name.Pkg + "." + e.Name.Name {
		case metav1Path + ".Time", metav1Path + ".MicroTime", metav1Path + ".Duration":
			return "string"
		case "k8s.io/apimachinery/pkg/util/intstr.IntOrString", "k8s.io/apimachinery/pkg/api/resource.Quantity":
			return "int-or-string"
		}
	}
	u := g.under(e)
	if u == nil {
		return "unknown"
	}
	switch u.Kind {
	case ExprBasic:
		if k := BasicKind(u.Basic); k != "" {
			return k
		}
	case ExprSlice:
		if u.Elem.Kind == ExprBasic && u.Elem.Basic == "uint8" {
			return "string"
		}
		return "array"
	case ExprArray:
		return "array"
	case ExprMap, ExprStruct:
		return "object"
	}
	return "unknown"
}

// BasicKind is the JSON kind of a predeclared type (TypeExpr.Basic): boolean, integer,
// number or string; "" for one JSON has no kind for (complex numbers, unsafe.Pointer).
func BasicKind(basic string) string {
	switch basic {
	case "bool":
		return "boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "uintptr":
		return "integer"
	case "float32", "float64":
		return "number"
	case "string":
		return "string"
	}
	return ""
}

func ptrTo[T any](v T) *T { return &v }

// fieldMarkers parses the markers of each field of a struct type declaration, by Go field
// name (embedded fields by their type name), and returns their doc comments too.
func (b *builder) fieldMarkers(fset *token.FileSet, typeName string, st *ast.StructType) (map[string]markers.Set, map[string]string) {
	out := map[string]markers.Set{}
	docs := map[string]string{}
	for _, fld := range st.Fields.List {
		ms, ds := b.reg.Parse(fset, markers.OnField, fld.Doc)
		where := typeName + "." + embeddedName(fld.Type)
		if len(fld.Names) > 0 {
			where = typeName + "." + fld.Names[0].Name
		}
		b.markerDiags(ds, where)
		names := fld.Names
		if len(names) == 0 {
			if id := embeddedName(fld.Type); id != "" {
				out[id] = ms
				docs[id] = docText(fld.Doc)
			}
			continue
		}
		for _, n := range names {
			out[n.Name] = ms
			docs[n.Name] = docText(fld.Doc)
		}
	}
	return out, docs
}

// embeddedName is the name of an embedded field of type e: T, *T, pkg.T, T[X].
func embeddedName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return embeddedName(e.X)
	case *ast.IndexExpr:
		return embeddedName(e.X)
	case *ast.IndexListExpr:
		return embeddedName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}
