package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/aagen-dev/aagen/generator/markers"
)

// Validation is the value constraints markers put on one schema node (a field, or a
// type): see markers.Schema, which the schema markers apply themselves to.
type Validation = markers.Schema

// Rule is one CEL validation rule, with the meaning of a CRD's x-kubernetes-validations
// entry.
type Rule = markers.Rule

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
			_, m, _ := markers.Find[markers.XValidation](d.markers)
			b.errorf(m.Pos, "put CEL rules on a struct type or on the field", "+kubebuilder:validation:XValidation on %s: CEL rules on named non-struct types are not supported yet", d.spec.Name.Name)
			continue
		}
		for _, m := range d.markers {
			switch m.Parsed.(type) {
			case markers.PreserveUnknownFields, markers.EmbeddedResource:
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
				val = val.Merge(scalar[n])
			}
			fv.Validation = val
			if items, ok := b.itemsValidation(f.Type(), ms, where); !ok {
				continue
			} else if items != nil {
				fv.Items = items
			}
			req, reqMarker, _ := markers.Find[markers.Required](ms) // or +required, +k8s:required
			opt, _, _ := markers.Find[markers.Optional](ms)         // or +optional, +k8s:optional
			switch {
			case bool(req) && bool(opt):
				b.errorf(reqMarker.Pos, "keep one of them", "field %s is marked both required and optional", where)
				continue
			case bool(req):
				fv.Required = ptrTo(true)
			case bool(opt):
				fv.Required = ptrTo(false)
			}
			def, defMarker, hasDef := fieldDefault(ms)
			if hasDef && def.Ref {
				b.warnf(defMarker.Pos, "write the value itself", "+default=ref(...) on %s is not applied yet", where)
				hasDef = false
			}
			if hasDef {
				js, ok := b.checkDefault(def, defMarker, f.Type(), st.Tag(i), where, fv.Validation)
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

// validation applies the schema markers in ms (each value's ApplyToSchema) to a node of Go
// type t.
func (b *builder) validation(t types.Type, ms markers.Set, where string) (Validation, bool) {
	var v Validation
	good := true
	fail := func(m markers.Marker, fix, format string, args ...any) {
		b.errorf(m.Pos, fix, "+%s on %s: "+format, append([]any{m.Def.Name, where}, args...)...)
		good = false
	}
	node := markers.Node{Kind: schemaKind(t)}
	if st, ok := t.Underlying().(*types.Struct); ok {
		node.IsStruct = true
		for i := 0; i < st.NumFields(); i++ {
			if n := jsonTagName(st.Tag(i)); n != "" && n != "-" {
				node.Fields = append(node.Fields, n)
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
// type t: the constraints of each item, checked against the item type. It returns nil
// without any.
func (b *builder) itemsValidation(t types.Type, ms markers.Set, where string) (*Validation, bool) {
	var items markers.Set
	for _, it := range markers.FindAll[markers.Items](ms) {
		m := it.Marker
		m.Parsed = it.Value.Value // applied to each item
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
// +kubebuilder:validation:EmbeddedResource and their X spellings) on a field of type t.
// A Go struct or map cannot keep fields it does not declare, so on other types they are
// errors that say what to use instead.
func (b *builder) freeForm(fv *FieldValidation, t types.Type, ms markers.Set, where string) bool {
	fv.FreeForm = isRawExtension(t)
	_, preserve, hasPreserve := markers.Find[markers.PreserveUnknownFields](ms)
	embeddedValue, embedded, hasEmbedded := markers.Find[markers.EmbeddedResource](ms)
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
		fv.EmbeddedResource = bool(embeddedValue)
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
	return IsNamed(t, pkgRuntimePath, "RawExtension")
}

// checkDefault reads a default value (controller-tools' literal syntax or JSON) as the
// field's type, and checks that the field can tell "unset" from "set" (a pointer, or
// omitempty), as defaulting requires. It returns the default as JSON.
func (b *builder) checkDefault(def markers.DefaultValue, m markers.Marker, t types.Type, tag, where string, val Validation) (string, bool) {
	kind := schemaKind(t)
	v, err := def.Literal.JSON(literalShape(t, 0))
	if err != nil {
		var mm *markers.MismatchError
		if errors.As(err, &mm) && mm.WrongType && len(mm.Path) == 0 {
			b.errorf(m.Pos, "write a default of the field's JSON type ("+kind+")", "+%s on %s: default %s does not match the field's type (%s)", m.Def.Name, where, def.Text, kind)
		} else {
			b.errorf(m.Pos, "write a default of the field's JSON type ("+kind+")", "+%s on %s: default %s: %v", m.Def.Name, where, def.Text, err)
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
			b.warnf(m.Pos, "make the field a pointer to default it", "+%s on %s: not applied: a non-pointer struct field is never unset, so it cannot be defaulted", m.Def.Name, where)
			return "", false
		}
	}
	if !isPtr && !slices.Contains([]string{"array", "object"}, kind) && !strings.Contains(tagJSON(tag), ",omitempty") {
		b.errorf(m.Pos, "add omitempty to the field's json tag, or make it a pointer", "+%s on %s: the field has no omitempty, so it is always set and a default never applies", m.Def.Name, where)
		return "", false
	}
	if len(val.Enum) > 0 && !slices.ContainsFunc(val.Enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		b.errorf(m.Pos, "use one of the enum values as the default", "+%s on %s: default %s is not one of the allowed values", m.Def.Name, where, def.Text)
		return "", false
	}
	return string(js), true
}

// Packages of the types whose JSON is free-form (any value): a literal on them is guessed,
// as by controller-tools.
const (
	apiextV1Path = "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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
	if IsNamed(t, pkgRuntimePath, "RawExtension") || IsNamed(t, apiextV1Path, "JSON") {
		return true
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

func ptrTo[T any](v T) *T { return &v }

// fieldMarkers parses the markers of each field of a struct type declaration, by Go field
// name (embedded fields by their type name).
func (b *builder) fieldMarkers(fset *token.FileSet, typeName string, st *ast.StructType) map[string]markers.Set {
	out := map[string]markers.Set{}
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
			}
			continue
		}
		for _, n := range names {
			out[n.Name] = ms
		}
	}
	return out
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
