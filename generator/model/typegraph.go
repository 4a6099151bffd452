package model

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/aagen-dev/aagen/generator/markers"
	"golang.org/x/tools/go/packages"

	"github.com/aagen-dev/aagen/generator/load"
)

// Types is the type graph: every named Go type the model's types packages declare and every
// named type those reach through fields, elements, keys and pointers, in whichever package or
// module it is declared, read once from the loaded packages. Each type and field carries what
// the checks and the emitters need (Go and JSON names, inline and omitempty, doc text, typed
// markers and the constraints they put on the schema, the protobuf tag, where it was
// declared), so that no later stage looks at Go syntax or go/types again.
type Types struct {
	byName map[GoType]*Type
	all    []*Type // sorted by package and name
}

// Lookup returns the type named n, or nil when the graph does not hold it.
func (g *Types) Lookup(n GoType) *Type {
	if g == nil {
		return nil
	}
	return g.byName[n]
}

// All returns every type of the graph, sorted by package and name.
func (g *Types) All() []*Type {
	if g == nil {
		return nil
	}
	return g.all
}

// Reachable returns the types reached from the named roots (themselves included), in the
// order they are first reached: roots in order, then depth first through their fields.
func (g *Types) Reachable(roots ...GoType) []*Type {
	seen := map[*Type]bool{}
	var out []*Type
	var visitExpr func(e *TypeExpr)
	var visit func(t *Type)
	visit = func(t *Type) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		out = append(out, t)
		visitExpr(t.Underlying)
	}
	visitExpr = func(e *TypeExpr) {
		if e == nil {
			return
		}
		switch e.Kind {
		case ExprNamed:
			visit(g.Lookup(e.Name))
		case ExprStruct:
			for _, f := range e.Fields {
				visitExpr(f.Type)
			}
		default:
			visitExpr(e.Key)
			visitExpr(e.Elem)
		}
	}
	for _, r := range roots {
		visit(g.Lookup(r))
	}
	return out
}

// Origin says where a type is declared, which decides whose markers describe its schema.
type Origin uint8

const (
	// InTypesPackage: a types package of the model (a version or an internal package).
	InTypesPackage Origin = iota
	// InModule: another package of the user's module (pkg/common).
	InModule
	// InDependency: a package of another module the user's module requires (a replace
	// or a published module), whose markers apply as they do in controller-gen.
	InDependency
	// InKubernetes: a package of Kubernetes' own API modules (k8s.io/api,
	// k8s.io/apimachinery, ...): its schema is the one its own OpenAPI tags give, as
	// kube-apiserver publishes it; the model does not read its markers.
	InKubernetes
	// InStandardLibrary: time.Duration and the like; not followed.
	InStandardLibrary
)

// Type is one named Go type of the graph.
type Type struct {
	// Name is the type's package and name. A generic type is named by its origin.
	Name GoType
	// PkgName is the Go name of the declaring package.
	PkgName string
	Origin  Origin
	// Pos is the declaration's position; Doc its doc comment without marker lines ("" for
	// types whose syntax was not read).
	Pos token.Position
	Doc string
	// Underlying is what the type is declared as; for a struct, Underlying.Fields are its
	// fields. Nil for types the graph does not follow (standard library, and types that
	// describe their own OpenAPI schema).
	Underlying *TypeExpr
	// Declared is, for a type that describes its own OpenAPI schema (OwnSchema, whose
	// Underlying is nil), what it is declared as, without following the named types it
	// reaches: what its encoding (protobuf) still depends on. Decl returns either.
	Declared *TypeExpr
	// Markers are the type's own markers (nil where they are not read).
	Markers markers.Set
	// Validation holds the type's own schema constraints (CEL rules, MinProperties; on a
	// named non-struct type, constraints its fields inherit).
	Validation Validation
	// OwnSchema is set when the type describes its own OpenAPI schema (an OpenAPIDefinition
	// or OpenAPISchemaType method, as metav1.Time and intstr.IntOrString have).
	OwnSchema bool
	// MarshalsJSON is set when the type (or its pointer) has a MarshalJSON method: its JSON
	// is opaque to field paths.
	MarshalsJSON bool
	// ProtoMethods is set when the type's pointer has the protobuf methods (Size,
	// MarshalToSizedBuffer, Unmarshal) that generated code can delegate to.
	ProtoMethods bool
	// Methods are the names of the methods declared on the type (and its pointer), sorted.
	Methods []string
	// Convertible is set when the type's pointer has controller-runtime's
	// conversion.Convertible methods, ConvertTo and ConvertFrom of a conversion.Hub: a
	// kubebuilder project's kind converting itself to and from its hub version.
	Convertible bool
	// ConversionHub is set when the type's pointer has controller-runtime's Hub method
	// (conversion.Hub): the version of a kind that its other versions convert to and from.
	ConversionHub bool
	// Generic is set on a type with type parameters.
	Generic bool
	// StringConstants are the values of the constants of this type that its package
	// declares, when it is declared as a string, sorted: kube-openapi publishes them as the
	// enum of a type marked +enum.
	StringConstants []string
	// Shadowed are, on a struct, the fields of the structs it inlines that a field of the
	// same JSON name at a shallower depth hides (Go's encoding/json reads and writes only
	// the shallower one): each the Go field names from the struct's own inline field down to
	// the hidden field. Set by the model's field checks; the schema leaves them out.
	Shadowed [][]string
}

// Fields returns the fields of a struct type, nil for other types.
func (t *Type) Fields() []*Field {
	if t.Underlying == nil || t.Underlying.Kind != ExprStruct {
		return nil
	}
	return t.Underlying.Fields
}

// Decl is what the type is declared as: Underlying, or Declared for a type with its own
// schema; nil for types the graph does not describe.
func (t *Type) Decl() *TypeExpr {
	if t.Underlying != nil {
		return t.Underlying
	}
	return t.Declared
}

// IsStruct reports whether the type is declared as a struct.
func (t *Type) IsStruct() bool { return t.Underlying != nil && t.Underlying.Kind == ExprStruct }

// Field returns the struct field with Go name name, or nil.
func (t *Type) Field(name string) *Field {
	for _, f := range t.Fields() {
		if f.GoName == name {
			return f
		}
	}
	return nil
}

// HasValidation reports whether the type or one of its fields carries a constraint, a
// default, a required/optional marker or a free-form schema.
func (t *Type) HasValidation() bool {
	if !t.Validation.IsZero() {
		return true
	}
	for _, f := range t.Fields() {
		if f.HasValidation() {
			return true
		}
	}
	return false
}

// ExprKind is the form of a type expression.
type ExprKind uint8

const (
	ExprNamed ExprKind = iota
	ExprBasic
	ExprPointer
	ExprSlice
	ExprArray
	ExprMap
	ExprStruct
	ExprInterface
	ExprChan
	ExprFunc
	// ExprOther: type parameters and anything else no API type can hold.
	ExprOther
)

// TypeExpr is a Go type as a field (or a type declaration) spells it.
type TypeExpr struct {
	Kind ExprKind
	// Name is the named type (ExprNamed). Named types without a package (error) have an
	// empty Pkg.
	Name GoType
	// Basic is the predeclared type (ExprBasic): "string", "int32", "uint8" (byte),
	// "float64", "bool", "complex128", "uintptr", "unsafe.Pointer", ...
	Basic string
	// Elem is what a pointer points to and the element of a slice, array or map; Key a
	// map's key.
	Elem, Key *TypeExpr
	// Len is an array's length.
	Len int64
	// Fields are an anonymous struct's fields, or a named struct type's (Type.Underlying).
	Fields []*Field
	// String is the Go spelling with package names (map[string]common.Label), for messages.
	String string
}

// Deref returns what e points to, through every pointer (**T is T), else e.
func (e *TypeExpr) Deref() *TypeExpr {
	for e != nil && e.Kind == ExprPointer {
		e = e.Elem
	}
	return e
}

// IsNamed reports whether e is the named type pkg.name.
func (e *TypeExpr) IsNamed(pkg, name string) bool {
	return e != nil && e.Kind == ExprNamed && e.Name.Pkg == pkg && e.Name.Name == name
}

// Field is one field of a struct type of the graph.
type Field struct {
	// GoName is the Go field name (an embedded field's type name); JSONName its name in
	// JSON: "" without a json tag name, "-" when left out.
	GoName, JSONName string
	// Exported and Embedded are the Go facts; Inline is set for an embedded field whose
	// fields JSON inlines (tagged inline, or with no json name); OmitEmpty for omitempty.
	Exported, Embedded, Inline, OmitEmpty bool
	// Tag is the whole struct tag; ProtobufTag its protobuf key.
	Tag         reflect.StructTag
	ProtobufTag string
	Type        *TypeExpr
	// Doc is the field's doc comment without marker lines ("" where syntax was not read).
	Doc string
	Pos token.Position
	// Markers are the field's markers (nil where they are not read).
	Markers markers.Set
	// MarkerPos is the first marker's position, where errors about the field's schema point.
	MarkerPos token.Position
	// ListType (atomic, set, map), ListMapKeys and MapType (atomic, granular) are the list
	// and map semantics of +listType, +listMapKey and +mapType (k8s: spellings too), which
	// server-side apply merges by and kube-openapi publishes.
	ListType    string
	ListMapKeys []string
	MapType     string
	// PatchFromStructTags is set when the field's +patchMergeKey and +patchStrategy
	// markers do not say what its patchMergeKey and patchStrategy struct tags say (two
	// merge keys, a marker without its tag, other values): strategic merge patch reads the
	// struct tags, so openapi-gen is given their values instead of the markers
	// (patchSemantics).
	PatchFromStructTags bool
	FieldValidation
}

// listSemantics reads the field's +listType, +listMapKey and +mapType markers (markers of
// kube-openapi's, which aagen passes through as they are written, so they are found by name).
func (f *Field) listSemantics() {
	for _, m := range f.Markers {
		switch m.Def.Name {
		case "listType", "k8s:listType":
			f.ListType = m.Value
		case "listMapKey", "k8s:listMapKey":
			f.ListMapKeys = append(f.ListMapKeys, m.Value)
		case "mapType":
			f.MapType = m.Value
		}
	}
}

// DropsZeroValue reports whether encoding/json leaves the field out when it holds its zero
// value: omitempty on a field that is not a pointer. (A struct is never left out; callers
// that may see one check its kind.) Such a field cannot hold a zero value sent.
func (f *Field) DropsZeroValue() bool {
	return f.OmitEmpty && f.Type != nil && f.Type.Kind != ExprPointer
}

// HasJSON reports whether the field is serialised under a name of its own.
func (f *Field) HasJSON() bool {
	return f.Exported && f.JSONName != "" && f.JSONName != "-" && !f.Inline
}

// graphBuilder turns go/types into the graph.
type graphBuilder struct {
	g          *Types
	modulePath string
	typesPkgs  map[string]bool
	// posOf turns a go/types position into a token.Position.
	posOf func(token.Pos) token.Position
}

func newGraphBuilder(modulePath string, typesPkgs map[string]bool, fset *token.FileSet) *graphBuilder {
	return &graphBuilder{
		g: &Types{byName: map[GoType]*Type{}}, modulePath: modulePath, typesPkgs: typesPkgs,
		posOf: func(p token.Pos) token.Position {
			if fset == nil {
				return token.Position{}
			}
			return fset.Position(p)
		},
	}
}

// Referenced returns the types of the graph declared outside the types packages, except
// the standard library's, sorted: the types of k8s.io/api, apimachinery, other modules and
// other packages of the module whose OpenAPI definitions, apply configurations and
// schemas the generated server needs. A type that describes its own OpenAPI schema
// (metav1.Time) is listed, though the graph does not follow it.
func (g *Types) Referenced() []GoType {
	var out []GoType
	for _, t := range g.All() {
		if t.Origin != InTypesPackage && t.Origin != InStandardLibrary {
			out = append(out, t.Name)
		}
	}
	return out
}

// keep makes the graph hold only the types given.
func (g *Types) keep(types []*Type) {
	g.byName = make(map[GoType]*Type, len(types))
	g.all = nil
	for _, t := range types {
		g.byName[t.Name] = t
		g.all = append(g.all, t)
	}
	sort.Slice(g.all, func(i, j int) bool {
		a, b := g.all[i].Name, g.all[j].Name
		if a.Pkg != b.Pkg {
			return a.Pkg < b.Pkg
		}
		return a.Name < b.Name
	})
}

// finish sorts the graph.
func (gb *graphBuilder) finish() *Types {
	gb.g.keep(gb.g.all)
	return gb.g
}

func (gb *graphBuilder) origin(path string) Origin {
	switch {
	case gb.typesPkgs[path]:
		return InTypesPackage
	case path == gb.modulePath || strings.HasPrefix(path, gb.modulePath+"/"):
		return InModule
	case strings.HasPrefix(path, "k8s.io/"):
		return InKubernetes
	}
	first, _, _ := strings.Cut(path, "/")
	if !strings.Contains(first, ".") {
		return InStandardLibrary
	}
	return InDependency
}

// controllerRuntimeHub is controller-runtime's conversion.Hub, the parameter of the
// ConvertTo and ConvertFrom methods a kubebuilder project's kinds convert with.
var controllerRuntimeHub = GoType{Pkg: "sigs.k8s.io/controller-runtime/pkg/conversion", Name: "Hub"}

// hubMethod reports whether the method set has a method name of controller-runtime's
// conversion.Convertible: func(conversion.Hub) error.
func hubMethod(ms *types.MethodSet, name string) bool {
	sel := ms.Lookup(nil, name)
	if sel == nil {
		return false
	}
	sig := sel.Type().(*types.Signature)
	if sig.Params().Len() != 1 || sig.Results().Len() != 1 || sig.Results().At(0).Type().String() != "error" {
		return false
	}
	param, ok := sig.Params().At(0).Type().(*types.Named)
	return ok && param.Obj().Pkg() != nil && (GoType{Pkg: param.Obj().Pkg().Path(), Name: param.Obj().Name()}) == controllerRuntimeHub
}

// named adds the named type n (and everything it reaches) and returns its node.
func (gb *graphBuilder) named(n *types.Named) *Type {
	obj := n.Origin().Obj()
	if obj.Pkg() == nil {
		return nil // error
	}
	key := GoType{Pkg: obj.Pkg().Path(), Name: obj.Name()}
	if t := gb.g.byName[key]; t != nil {
		return t
	}
	t := &Type{Name: key, PkgName: obj.Pkg().Name(), Origin: gb.origin(key.Pkg), Pos: gb.posOf(obj.Pos()),
		Generic: n.Origin().TypeParams().Len() > 0}
	gb.g.byName[key] = t
	gb.g.all = append(gb.g.all, t)
	origin := n.Origin()
	ptr := types.NewMethodSet(types.NewPointer(origin))
	for i := range ptr.Len() {
		switch ptr.At(i).Obj().Name() {
		case "OpenAPIDefinition", "OpenAPISchemaType":
			t.OwnSchema = true
		case "MarshalJSON":
			t.MarshalsJSON = true
		}
	}
	t.ProtoMethods = ptr.Lookup(nil, "Size") != nil && ptr.Lookup(nil, "MarshalToSizedBuffer") != nil && ptr.Lookup(nil, "Unmarshal") != nil
	t.Convertible = hubMethod(ptr, "ConvertTo") && hubMethod(ptr, "ConvertFrom")
	if hub := ptr.Lookup(nil, "Hub"); hub != nil {
		sig := hub.Type().(*types.Signature)
		t.ConversionHub = sig.Params().Len() == 0 && sig.Results().Len() == 0
	}
	for i := range origin.NumMethods() {
		t.Methods = append(t.Methods, origin.Method(i).Name())
	}
	sort.Strings(t.Methods)
	if b, isBasic := origin.Underlying().(*types.Basic); isBasic && b.Info()&types.IsString != 0 && origin.Obj().Pkg() != nil {
		scope := origin.Obj().Pkg().Scope()
		for _, name := range scope.Names() {
			if c, isConst := scope.Lookup(name).(*types.Const); isConst && types.Identical(c.Type(), origin) && c.Val().Kind() == constant.String {
				t.StringConstants = append(t.StringConstants, constant.StringVal(c.Val()))
			}
		}
		sort.Strings(t.StringConstants)
		t.StringConstants = slices.Compact(t.StringConstants)
	}
	if t.OwnSchema {
		t.Declared = gb.expr(origin.Underlying(), false)
		return t
	}
	t.Underlying = gb.expr(origin.Underlying(), true)
	return t
}

// declared adds every named type package p declares (and everything they reach).
func (gb *graphBuilder) declared(p *types.Package) {
	scope := p.Scope()
	for _, name := range scope.Names() {
		if tn, ok := scope.Lookup(name).(*types.TypeName); ok && !tn.IsAlias() {
			if n, ok := tn.Type().(*types.Named); ok {
				gb.named(n)
			}
		}
	}
}

// TypeGraph builds the type graph of every type the loaded packages declare and reach, from
// their Go types alone (no doc text, no markers; the packages given are InTypesPackage):
// for packages that are not API groups, such as internal/protoshape's shapes of k8s.io/api
// types, whose protobuf methods ProtobufOf describes.
func TypeGraph(pkgs []*packages.Package) *Types {
	typesPkgs := map[string]bool{}
	var fset *token.FileSet
	for _, p := range pkgs {
		typesPkgs[p.PkgPath] = true
		if fset == nil {
			fset = p.Fset
		}
	}
	gb := newGraphBuilder("", typesPkgs, fset)
	for _, p := range pkgs {
		if p.Types != nil {
			gb.declared(p.Types)
		}
	}
	return gb.finish()
}

// expr describes a Go type, adding the named types it reaches to the graph.
//
// Named types behind an unexported field (which is never serialized) are named but not
// added: follow is false there.
func (gb *graphBuilder) expr(t types.Type, follow bool) *TypeExpr {
	e := &TypeExpr{String: types.TypeString(t, func(p *types.Package) string { return p.Name() })}
	switch u := types.Unalias(t).(type) {
	case *types.Named:
		e.Kind = ExprNamed
		obj := u.Origin().Obj()
		if obj.Pkg() == nil {
			// error: what it is underneath (an interface).
			under := gb.expr(u.Underlying(), follow)
			under.String = e.String
			return under
		}
		e.Name = GoType{Pkg: obj.Pkg().Path(), Name: obj.Name()}
		if follow {
			gb.named(u)
		}
	case *types.Basic:
		e.Kind = ExprBasic
		e.Basic = u.Name()
		if u.Kind() == types.Byte {
			e.Basic = "uint8"
		}
	case *types.Pointer:
		e.Kind = ExprPointer
		e.Elem = gb.expr(u.Elem(), follow)
	case *types.Slice:
		e.Kind = ExprSlice
		e.Elem = gb.expr(u.Elem(), follow)
	case *types.Array:
		e.Kind = ExprArray
		e.Len = u.Len()
		e.Elem = gb.expr(u.Elem(), follow)
	case *types.Map:
		e.Kind = ExprMap
		e.Key = gb.expr(u.Key(), follow)
		e.Elem = gb.expr(u.Elem(), follow)
	case *types.Struct:
		e.Kind = ExprStruct
		for i := range u.NumFields() {
			e.Fields = append(e.Fields, gb.field(u.Field(i), u.Tag(i), follow))
		}
	case *types.Interface:
		e.Kind = ExprInterface
	case *types.Chan:
		e.Kind = ExprChan
	case *types.Signature:
		e.Kind = ExprFunc
	default:
		e.Kind = ExprOther
	}
	return e
}

func (gb *graphBuilder) field(v *types.Var, tag string, follow bool) *Field {
	st := reflect.StructTag(tag)
	jsonTag := st.Get("json")
	name, opts, _ := strings.Cut(jsonTag, ",")
	f := &Field{
		GoName: v.Name(), JSONName: name, Exported: v.Exported(), Embedded: v.Embedded(),
		OmitEmpty: slices.Contains(strings.Split(opts, ","), "omitempty"),
		Tag:       st, ProtobufTag: st.Get("protobuf"), Pos: gb.posOf(v.Pos()),
	}
	f.Inline = f.Embedded && (name == "" || slices.Contains(strings.Split(opts, ","), "inline"))
	f.Type = gb.expr(v.Type(), follow && (f.Exported || f.Embedded))
	return f
}

// loadedTypes builds the type graph of every type the loaded packages declare and reach,
// before the model knows which of them become versions: the checks of kinds and lists read
// it. readTypes prunes it to what the served packages reach.
func loadedTypes(res *load.Result) *Types {
	typesPkgs := map[string]bool{}
	for _, p := range res.Packages {
		typesPkgs[p.PkgPath] = true
	}
	gb := newGraphBuilder(res.ModulePath, typesPkgs, res.Fset)
	for _, p := range res.Packages {
		if p.Types != nil {
			gb.declared(p.Types)
		}
	}
	return gb.finish()
}

// readTypes keeps, of the type graph, the types the types packages that became versions
// declare and reach; attaches the declarations' doc text and markers (types packages, other
// packages of the module, other modules; not Kubernetes' own); reads their schema markers;
// checks the fields of every kind and resolves the JSON paths its markers name (printer
// columns, selectable fields, /scale).
func (b *builder) readTypes(res *load.Result) {
	g := b.types
	var roots []GoType
	for _, sp := range b.served {
		for _, name := range sp.p.Types.Scope().Names() {
			roots = append(roots, GoType{Pkg: sp.p.PkgPath, Name: name})
		}
	}
	g.keep(g.Reachable(roots...))
	// The declarations of the reached types of other packages, parsed only for those types:
	// markers on types no kind reaches are none of the server's business.
	var paths []string
	origin := map[string]Origin{} // of the packages whose syntax is read
	for _, t := range g.All() {
		if _, seen := origin[t.Name.Pkg]; !seen && (t.Origin == InModule || t.Origin == InDependency || t.Origin == InKubernetes) {
			origin[t.Name.Pkg] = t.Origin
			paths = append(paths, t.Name.Pkg)
		}
	}
	deps, err := res.Syntax(paths)
	if err != nil {
		b.errorf(token.Position{}, "make the packages the types use loadable (go build ./... in the module)", "%v", err)
	}
	for _, d := range deps {
		if o := origin[d.PkgPath]; o == InDependency || o == InKubernetes {
			mod := d.PkgPath
			if d.Module != nil {
				mod = d.Module.Path
			}
			for _, f := range d.Syntax {
				b.depFiles[res.Fset.Position(f.Package).Filename] = mod
			}
		}
		want := func(name string) bool {
			t := g.Lookup(GoType{Pkg: d.PkgPath, Name: name})
			return t != nil
		}
		for _, f := range d.Syntax {
			diags := len(b.diags)
			for _, td := range b.typeDecls(res.Fset, f, want) {
				td := td
				if origin[d.PkgPath] == InKubernetes {
					// Of Kubernetes' own types, the kubebuilder markers (metav1.Condition's
					// enum, patterns and lengths): what controller-gen reads there beyond
					// the OpenAPI tags the definitions already hold. The rest (+optional,
					// +default=ref(...), +k8s: declarative tags) stays openapi-gen's.
					td.markers = kubernetesMarkers(td.markers)
					for name, ms := range td.fields {
						td.fields[name] = kubernetesMarkers(ms)
					}
				}
				b.decls[GoType{Pkg: d.PkgPath, Name: td.spec.Name.Name}] = &td
			}
			if origin[d.PkgPath] == InKubernetes {
				// Tags of Kubernetes' own tools that the marker registry reads otherwise
				// are not the user's problem.
				b.diags = b.diags[:diags]
			}
		}
	}
	for _, t := range g.All() {
		d := b.decls[t.Name]
		if d == nil {
			continue
		}
		t.Doc, t.Markers = d.doc, d.markers
		for _, f := range t.Fields() {
			f.Markers, f.Doc = d.fields[f.GoName], d.fieldDocs[f.GoName]
			if len(f.Markers) > 0 {
				f.MarkerPos = f.Markers[0].Pos
			}
			f.listSemantics()
		}
	}
	b.validations(g)
	for _, sp := range b.served {
		v := sp.v
		var roots []GoType
		for _, name := range sp.p.Types.Scope().Names() {
			roots = append(roots, GoType{Pkg: v.ImportPath, Name: name})
		}
		for _, t := range g.Reachable(roots...) {
			for _, f := range t.Fields() {
				if f.Default != "" {
					v.FieldDefaults = true
				}
			}
		}
		if v.Internal {
			continue
		}
		for _, k := range v.Kinds {
			b.checkFields(k)
			b.jsonPathMarkers(k, b.decls[GoType{Pkg: v.ImportPath, Name: k.Name}])
		}
	}
}

// docText is a doc comment's text without marker lines (+...), trimmed.
func docText(cg *ast.CommentGroup) string {
	if cg == nil {
		return ""
	}
	var lines []string
	for _, l := range strings.Split(cg.Text(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "+") {
			continue
		}
		lines = append(lines, l)
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// kubernetesMarkers keeps, of the markers of a declaration in Kubernetes' own API packages,
// those controller-gen applies on top of what openapi-gen writes from the same source: the
// +kubebuilder: ones.
func kubernetesMarkers(ms markers.Set) markers.Set {
	var out markers.Set
	for _, m := range ms {
		if strings.HasPrefix(m.Def.Name, "kubebuilder:") {
			out = append(out, m)
		}
	}
	return out
}
