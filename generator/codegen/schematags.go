package codegen

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"iter"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/gengo/v2/types"
)

// Validation and defaulting (see doc.go, "Validation").
//
// The caller's markers arrive as comment tags of the tools that implement them:
// kube-openapi's "+k8s:validation:..." (minimum, maxLength, pattern, cel[i]:rule, ...)
// and "+default=", "+required", "+optional", which kube-openapi and defaulter-gen read.
// They are injected into the gengo universe like every other tag, never into the user's
// files. Two constraints kube-openapi parses but never writes into the definitions at
// the pinned version, enum and format, are added to the generated openapi file
// afterwards (patchOpenAPI), so that the definitions, and everything built from them,
// hold every constraint.

const (
	toolDefaulter       = "defaulter-gen"
	defaultsFileName    = "zz_generated.defaults.go"
	tagDefaulter        = "k8s:defaulter-gen"
	tagValidationPrefix = "k8s:validation:"
	tagDefault          = "default"
	tagRequired         = "required"
	tagOptional         = "optional"
)

// TypeValidation holds the tags of one struct type.
type TypeValidation struct {
	Name string
	// Tags are comment tags (with the leading "+") added to the type.
	Tags []string
	// Fields are the tags of its fields.
	Fields []FieldValidation
	// Inlined are the fields of the structs it embeds inline (at any depth) that have an
	// enum, a format or vendor extensions: openapi-gen copies the embedded struct's
	// properties into this type's definition, where patchOpenAPI writes those too.
	Inlined []FieldValidation
	// Shadowed are the fields of the structs it embeds inline that a shallower field of the
	// same JSON name hides (model.Type.Shadowed): each the Go names of the inline fields
	// from this type's own down to the hidden field. openapi-gen leaves them out of this
	// type's definition (hideShadowed).
	Shadowed [][]string
}

// FieldValidation holds the tags of one field and the schema values kube-openapi drops.
type FieldValidation struct {
	// GoName is the Go field name; JSONName its property name.
	GoName, JSONName string
	// Tags are comment tags (with the leading "+") added to the field. Existing
	// +default, +required and +optional tags of the field are replaced.
	Tags []string
	// Replace names further tags of the field (without the "+") that are dropped before
	// Tags are added: patchMergeKey and patchStrategy, when they must be the struct tags'.
	Replace []string
	// Enum and Format are written into the field's property of the generated definitions;
	// ItemsEnum and ItemsFormat into its items' schema (a list field).
	Enum, ItemsEnum     []any
	Format, ItemsFormat string
	// DocumentedEnum says Enum is documentation (a +enum type's constants without
	// +kubebuilder:validation:Enum): published, and listed in DocumentedEnums so that the
	// server does not check it.
	DocumentedEnum bool
	// PreserveUnknownFields and EmbeddedResource are written into the field's property
	// as x-kubernetes-preserve-unknown-fields and x-kubernetes-embedded-resource (for
	// free-form fields, as a CRD's schema has them).
	PreserveUnknownFields, EmbeddedResource bool
}

// extensions are the vendor extensions fv adds to its property.
func (fv FieldValidation) extensions() []string {
	var out []string
	if fv.EmbeddedResource {
		out = append(out, "x-kubernetes-embedded-resource")
	}
	if fv.PreserveUnknownFields {
		out = append(out, "x-kubernetes-preserve-unknown-fields")
	}
	return out
}

// injectValidation adds the validation and default tags of in to the universe.
func injectValidation(u types.Universe, in Input) {
	for _, pkg := range in.Packages {
		if p := u[pkg.ImportPath]; p != nil && pkg.Defaults {
			// defaulter-gen: an object defaulter for every type with TypeMeta, i.e. kinds.
			tag := "+" + tagDefaulter + "=TypeMeta"
			p.Comments = rewriteTags(p.Comments, dropNames(tagDefaulter), tag)
			p.DocComments = rewriteTags(p.DocComments, dropNames(tagDefaulter), tag)
		}
	}
	for t, tv := range validatedStructs(u, in) {
		if len(tv.Tags) > 0 {
			t.CommentLines = rewriteTags(t.CommentLines, func(string, string) bool { return false }, tv.Tags...)
		}
		for _, fv := range tv.Fields {
			for i := range t.Members {
				m := &t.Members[i]
				if m.Name != fv.GoName || m.Embedded {
					continue
				}
				m.CommentLines = rewriteTags(m.CommentLines, dropNames(append([]string{tagDefault, tagRequired, tagOptional}, fv.Replace...)...), fv.Tags...)
				if slices.ContainsFunc(fv.Tags, func(tag string) bool { return tagName(tag) == tagDefault }) {
					m.Tags = withOmitEmpty(m.Tags)
				}
			}
		}
	}
}

// validatedStructs yields each struct type of the universe that in.Validation has tags
// for, with its TypeValidation; types and packages missing from the universe are skipped.
func validatedStructs(u types.Universe, in Input) iter.Seq2[*types.Type, TypeValidation] {
	return func(yield func(*types.Type, TypeValidation) bool) {
		for path, tvs := range in.Validation {
			p := u[path]
			if p == nil {
				continue
			}
			for _, tv := range tvs {
				if t := p.Types[tv.Name]; t != nil && t.Kind == types.Struct && !yield(t, tv) {
					return
				}
			}
		}
	}
}

// hideShadowed marks, for openapi-gen, the fields that a type's inline structs bring in
// and a shallower field of the same JSON name hides, as Go's encoding/json does: openapi-gen
// would otherwise write a property for each, under one key, and its output would not
// compile. It skips a member whose comment says +k8s:openapi-gen=false, so the hidden
// member gets that tag; but the inlined struct is shared (HTTPConfig is inlined by types
// that hide nothing), so the type's inline member gets a copy of the inlined struct,
// member list and all, down the path, and only the copy's member is tagged. The copies
// keep the original's name, methods and everything else, and no package lists them, so the
// other generators, which name the member's type and look up its methods, write the same
// code. Paths that the universe lacks are skipped.
func hideShadowed(u types.Universe, in Input) {
	for t, tv := range validatedStructs(u, in) {
		owned := map[*types.Type]bool{} // the copies made for t
		for _, hidden := range tv.Shadowed {
			hideMember(t, hidden, owned)
		}
	}
}

// hideMember tags the member at the end of path (Go member names, through inline members)
// +k8s:openapi-gen=false in copies of the inlined structs made for t (owned).
func hideMember(t *types.Type, path []string, owned map[*types.Type]bool) {
	for i, name := range path {
		at := slices.IndexFunc(t.Members, func(m types.Member) bool { return m.Name == name })
		if at < 0 {
			return
		}
		m := &t.Members[at]
		if i == len(path)-1 {
			m.CommentLines = rewriteTags(m.CommentLines, dropNames(tagOpenAPI), "+"+tagOpenAPI+"=false")
			return
		}
		inner := m.Type
		for inner.Kind == types.Pointer {
			inner = inner.Elem
		}
		if inner.Kind != types.Struct {
			return
		}
		if !owned[inner] {
			cp := *inner
			cp.Members = slices.Clone(inner.Members)
			owned[&cp] = true
			inner = &cp
			if m.Type.Kind == types.Pointer {
				ptr := *m.Type
				ptr.Elem = inner
				m.Type = &ptr
			} else {
				m.Type = inner
			}
		}
		t = inner
	}
}

// withOmitEmpty returns the struct tag tags with omitempty in its json tag, as openapi-gen
// sees a defaulted field: a field the decoded object holds at its zero value is defaulted
// (defaulter-gen), so an absent one is, as in a CRD. openapi-gen otherwise takes a field
// without omitempty as always sent and refuses any default but the zero value
// ("invalid default value ... for non-pointer/non-omitempty"); it then also publishes the
// field as optional, which with its default it is. Only the universe's copy changes, never
// the user's file.
func withOmitEmpty(tags string) string {
	const key = `json:"`
	i := strings.Index(tags, key)
	if i < 0 || (i > 0 && tags[i-1] != ' ') {
		return tags
	}
	start := i + len(key)
	end := strings.IndexByte(tags[start:], '"')
	if end < 0 {
		return tags
	}
	value := tags[start : start+end]
	name, opts, _ := strings.Cut(value, ",")
	if name == "-" || slices.Contains(strings.Split(opts, ","), "omitempty") {
		return tags
	}
	return tags[:start] + value + ",omitempty" + tags[start+end:]
}

// defaulterPackages are the types packages with defaults: defaulter-gen's inputs.
func (in Input) defaulterPackages() []string {
	var out []string
	for _, p := range in.Packages {
		if p.Defaults {
			out = append(out, p.ImportPath)
		}
	}
	return out
}

// documentedEnumsFunc is the function patchOpenAPI adds to the generated openapi file: the
// properties, by definition, whose enum is documentation. openapi-gen writes an enum only
// from a +enum type's constants (for the fields of every package it defines, Kubernetes'
// own types among them); the server checks only the enums a +kubebuilder:validation:Enum
// gives, which codegen writes. Every other enum is published, as kube-apiserver publishes
// its built-in enums (validated by hand-written code, not by the schema), and not checked,
// as a CRD of the same types does not check it (controller-gen ignores +enum).
const documentedEnumsFunc = "DocumentedEnums"

// patchOpenAPI writes enum and format of the fields that have them, and the vendor
// extensions of free-form fields, into the property schemas of the generated openapi file,
// and adds the function documentedEnumsFunc.
func patchOpenAPI(files []File, in Input) ([]File, error) {
	byType := map[string]map[string]FieldValidation{} // import path + "." + type -> json name -> field
	for path, tvs := range in.Validation {
		for _, tv := range tvs {
			// The type's own fields after the inlined ones: a property of its own wins, as
			// in openapi-gen's definition.
			for _, fv := range slices.Concat(tv.Inlined, tv.Fields) {
				if len(fv.Enum) == 0 && fv.Format == "" && len(fv.ItemsEnum) == 0 && fv.ItemsFormat == "" && len(fv.extensions()) == 0 {
					continue
				}
				key := path + "." + tv.Name
				if byType[key] == nil {
					byType[key] = map[string]FieldValidation{}
				}
				byType[key][fv.JSONName] = fv
			}
		}
	}
	name := path.Join(strings.TrimPrefix(strings.TrimPrefix(in.OutputPkg, in.ModulePath), "/"), "openapi", openAPIFileName)
	i := slices.IndexFunc(files, func(f File) bool { return f.Path == name })
	if i < 0 {
		return nil, fmt.Errorf("codegen: enum and format: %s was not generated", name)
	}
	out, err := patchOpenAPISource(files[i].Content, byType)
	if err != nil {
		return nil, fmt.Errorf("codegen: enum and format in %s: %w", name, err)
	}
	files = slices.Clone(files)
	files[i].Content = out
	return files, nil
}

type edit struct {
	start, end int // byte offsets replaced by text
	text       string
}

// patchOpenAPISource edits openapi-gen's output: for each definition of byType (found
// through the keys of GetOpenAPIDefinitions, "<alias>.<Type>{}.OpenAPIModelName()"), it
// sets Enum and Format in the SchemaProps of the named properties; then it appends
// documentedEnumsFunc, listing under the same keys every property with an enum that is not
// a checked one of byType.
func patchOpenAPISource(src []byte, byType map[string]map[string]FieldValidation) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "openapi.go", src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	imports := map[string]string{}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		name := path.Base(p)
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = p
	}
	funcs := map[string]*ast.FuncDecl{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok {
			funcs[fd.Name.Name] = fd
		}
	}
	off := func(p token.Pos) int { return fset.Position(p).Offset }
	schemaFunc := map[string]string{} // type key -> schema_ function
	keyOfFunc := map[string]string{}  // schema_ function -> type key
	// The definitions in GetOpenAPIDefinitions' order: its key as written, its schema_ function.
	type definition struct{ keySrc, schemaFunc string }
	var definitions []definition
	if fd := funcs["GetOpenAPIDefinitions"]; fd != nil {
		ast.Inspect(fd, func(n ast.Node) bool {
			kv, ok := n.(*ast.KeyValueExpr)
			if !ok {
				return true
			}
			call, ok := kv.Value.(*ast.CallExpr)
			if !ok {
				return true
			}
			id, ok := call.Fun.(*ast.Ident)
			if !ok {
				return true
			}
			definitions = append(definitions, definition{string(src[off(kv.Key.Pos()):off(kv.Key.End())]), id.Name})
			if key := modelNameKey(kv.Key, imports); key != "" {
				schemaFunc[key] = id.Name
				keyOfFunc[id.Name] = key
			}
			return true
		})
	}
	// checkedEnum: schema_ function -> the properties whose enum codegen writes from a
	// +kubebuilder:validation:Enum.
	checkedEnum := map[string]map[string]bool{}
	for key, fields := range byType {
		for prop, fv := range fields {
			if len(fv.Enum) > 0 && !fv.DocumentedEnum {
				if checkedEnum[schemaFunc[key]] == nil {
					checkedEnum[schemaFunc[key]] = map[string]bool{}
				}
				checkedEnum[schemaFunc[key]][prop] = true
			}
		}
	}
	var documented []string // the entries of documentedEnumsFunc's map
	for _, d := range definitions {
		fd := funcs[d.schemaFunc]
		if fd == nil {
			continue
		}
		props := findProperties(fd)
		if props == nil {
			continue
		}
		var names []string
		for prop, kv := range propertyEntries(props) {
			if checkedEnum[d.schemaFunc][prop] {
				continue
			}
			fv, handed := byType[keyOfFunc[d.schemaFunc]][prop]
			if handed && len(fv.Enum) > 0 || hasEnum(kv.Value) {
				names = append(names, strconv.Quote(prop))
			}
		}
		if len(names) > 0 {
			sort.Strings(names)
			documented = append(documented, d.keySrc+": {"+strings.Join(names, ", ")+"},")
		}
	}
	var edits []edit
	keys := make([]string, 0, len(byType))
	for k := range byType {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		fd := funcs[schemaFunc[key]]
		if fd == nil {
			return nil, fmt.Errorf("no definition of %s", key)
		}
		props := findProperties(fd)
		if props == nil {
			return nil, fmt.Errorf("definition of %s has no properties", key)
		}
		found := map[string]bool{}
		for prop, kv := range propertyEntries(props) {
			fv, ok := byType[key][prop]
			if !ok {
				continue
			}
			sp := keyed(kv.Value, "SchemaProps")
			if sp == nil {
				return nil, fmt.Errorf("%s property %s has no SchemaProps", key, prop)
			}
			found[prop] = true
			// openapi-gen's enum, from the +enum constants of a type of another module
			// (corev1.PullPolicy), is replaced: the field's marker decides, as in
			// controller-gen's CRD, which does not read +enum. A type of the user's own
			// module with other values is refused before (model's sameEnum).
			edits = append(edits, valueEdits(sp, fv.Format, fv.Enum, off)...)
			if len(fv.ItemsEnum) > 0 || fv.ItemsFormat != "" {
				// The items' enum and format (a list of a named type with them, or
				// +kubebuilder:validation:items:Enum), in the items' schema, as a CRD has them.
				isp := keyed(keyed(keyed(sp, "Items"), "Schema"), "SchemaProps")
				if isp == nil {
					return nil, fmt.Errorf("%s property %s has no inline items schema for its items' enum or format", key, prop)
				}
				edits = append(edits, valueEdits(isp, fv.ItemsFormat, fv.ItemsEnum, off)...)
			}
			if fv.PreserveUnknownFields {
				// A free-form object is published inline (type: object), as controller-gen
				// writes it, not as a reference to runtime.RawExtension: kube-openapi's
				// conversion to the field manager's schema makes that reference an atomic
				// value, where an inline object that keeps unknown fields has its members
				// tracked one by one, as a CRD's are (server-side apply then merges inside it
				// and two managers can own different keys). Validation is the same: the
				// definition of RawExtension is an object too.
				if ref := keyValue(sp, "Ref"); ref != nil && refersTo(ref.Value, imports) == rawExtensionModel {
					edits = append(edits, edit{off(ref.Pos()), off(ref.End()), `Type: []string{"object"}`})
				}
			}
			if exts := fv.extensions(); len(exts) > 0 {
				var entries []string
				for _, x := range exts {
					entries = append(entries, strconv.Quote(x)+": true,")
				}
				propLit, _ := kv.Value.(*ast.CompositeLit)
				if ve := keyed(propLit, "VendorExtensible"); ve != nil {
					ext := keyed(ve, "Extensions")
					if ext == nil {
						return nil, fmt.Errorf("%s property %s has VendorExtensible without Extensions", key, prop)
					}
					at := off(ext.Rbrace)
					edits = append(edits, edit{at, at, strings.Join(entries, "\n") + "\n"})
				} else {
					at := off(propLit.Rbrace)
					edits = append(edits, edit{at, at, "VendorExtensible: spec.VendorExtensible{\nExtensions: spec.Extensions{\n" + strings.Join(entries, "\n") + "\n},\n},\n"})
				}
			}
		}
		for prop := range byType[key] {
			if !found[prop] {
				return nil, fmt.Errorf("definition of %s has no property %s", key, prop)
			}
		}
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].start > edits[j].start })
	out := slices.Clone(src)
	for _, e := range edits {
		out = append(out[:e.start:e.start], append([]byte(e.text), out[e.end:]...)...)
	}
	out = append(out, documentedEnumsSource(documented)...)
	res, err := format.Source(out)
	if err != nil {
		return nil, fmt.Errorf("formatting: %w", err)
	}
	return bytes.TrimLeft(res, "\n"), nil
}

// valueEdits sets Format (unless "") and Enum (unless empty) in the SchemaProps literal sp:
// replacing the values openapi-gen wrote there, else adding them before its closing brace.
func valueEdits(sp *ast.CompositeLit, format string, enum []any, off func(token.Pos) int) []edit {
	var edits []edit
	var add []string
	set := func(key, value string) {
		if old := keyValue(sp, key); old != nil {
			edits = append(edits, edit{off(old.Value.Pos()), off(old.Value.End()), value})
		} else {
			add = append(add, key+": "+value+",")
		}
	}
	if format != "" {
		set("Format", strconv.Quote(format))
	}
	if len(enum) > 0 {
		var vals []string
		for _, v := range enum {
			vals = append(vals, goLiteral(v))
		}
		set("Enum", "[]interface{}{"+strings.Join(vals, ", ")+"}")
	}
	if len(add) > 0 {
		at := off(sp.Rbrace)
		edits = append(edits, edit{at, at, strings.Join(add, "\n") + "\n"})
	}
	return edits
}

// documentedEnumsSource renders documentedEnumsFunc with the map entries documented.
func documentedEnumsSource(documented []string) string {
	body := "return nil"
	if len(documented) > 0 {
		body = "return map[string][]string{\n" + strings.Join(documented, "\n") + "\n}"
	}
	return "\n// " + documentedEnumsFunc + " names, by definition, the properties whose enum is documentation:\n" +
		"// the constants of a +enum type without +kubebuilder:validation:Enum. The definitions\n" +
		"// publish them, as kube-apiserver publishes its built-in enums; the server does not check\n" +
		"// them, as a CRD of the same types does not (controller-gen ignores +enum).\n" +
		"func " + documentedEnumsFunc + "() map[string][]string {\n" + body + "\n}\n"
}

// hasEnum reports whether the schema literal e sets Enum anywhere: on itself, or on its
// items or additional properties (openapi-gen's enum of a list or map of a +enum type).
func hasEnum(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if kv, ok := n.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "Enum" {
				found = true
			}
		}
		return !found
	})
	return found
}

// propertyEntries yields the entries of a definition's Properties literal by property
// name ("name": {SchemaProps: ...}).
func propertyEntries(props *ast.CompositeLit) iter.Seq2[string, *ast.KeyValueExpr] {
	return func(yield func(string, *ast.KeyValueExpr) bool) {
		for _, el := range props.Elts {
			kv, ok := el.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			lit, ok := kv.Key.(*ast.BasicLit)
			if !ok {
				continue
			}
			prop, _ := strconv.Unquote(lit.Value)
			if !yield(prop, kv) {
				return
			}
		}
	}
}

// rawExtensionModel is the model name of runtime.RawExtension in openapi-gen's output.
const rawExtensionModel = "k8s.io/apimachinery/pkg/runtime.RawExtension"

// refersTo returns the model a property's Ref names ("ref(<model name>)"), "" for another
// expression.
func refersTo(e ast.Expr, imports map[string]string) string {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return ""
	}
	if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "ref" {
		return ""
	}
	return modelNameKey(call.Args[0], imports)
}

// modelNameKey returns "<import path>.<Type>" for "<alias>.<Type>{}.OpenAPIModelName()",
// and for the string key of a type whose package has no model package (a package of
// another module: "example.com/lib/pkg.Type").
func modelNameKey(e ast.Expr, imports map[string]string) string {
	if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
		key, err := strconv.Unquote(lit.Value)
		if err != nil || !strings.Contains(key, "/") {
			return ""
		}
		return key
	}
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return ""
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "OpenAPIModelName" {
		return ""
	}
	lit, ok := sel.X.(*ast.CompositeLit)
	if !ok {
		return ""
	}
	tsel, ok := lit.Type.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	pkg, ok := tsel.X.(*ast.Ident)
	if !ok || imports[pkg.Name] == "" {
		return ""
	}
	return imports[pkg.Name] + "." + tsel.Sel.Name
}

// findProperties returns the Properties map literal of the definition's top-level schema.
func findProperties(fd *ast.FuncDecl) *ast.CompositeLit {
	for _, st := range fd.Body.List {
		ret, ok := st.(*ast.ReturnStmt)
		if !ok || len(ret.Results) != 1 {
			continue
		}
		s := keyed(ret.Results[0], "Schema")
		if s == nil {
			return nil
		}
		sp := keyed(s, "SchemaProps")
		if sp == nil {
			return nil
		}
		return keyed(sp, "Properties")
	}
	return nil
}

// keyed returns the composite literal value of key in composite literal e.
func keyed(e ast.Expr, key string) *ast.CompositeLit {
	lit, ok := e.(*ast.CompositeLit)
	if !ok || lit == nil {
		return nil
	}
	if kv := keyValue(lit, key); kv != nil {
		v := kv.Value
		if u, ok := v.(*ast.UnaryExpr); ok && u.Op == token.AND {
			v = u.X // &spec.SchemaOrArray{...}
		}
		out, _ := v.(*ast.CompositeLit)
		return out
	}
	return nil
}

func keyValue(lit *ast.CompositeLit, key string) *ast.KeyValueExpr {
	for _, el := range lit.Elts {
		if kv, ok := el.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == key {
				return kv
			}
		}
	}
	return nil
}

func goLiteral(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case bool:
		return strconv.FormatBool(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return "float64(" + strconv.FormatFloat(v, 'g', -1, 64) + ")"
	}
	return fmt.Sprintf("%#v", v)
}
