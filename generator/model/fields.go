package model

import (
	"fmt"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
)

// checkFields walks the fields reachable from a kind in the type graph and reports what
// cannot be stored, served as JSON or described in OpenAPI: channels, functions, complex
// numbers, unsafe pointers, empty interfaces, maps with non-string keys, unexported fields
// with json tags, embedded structs without inline tags, and types that inline themselves;
// a recursive type (apiextensions' JSONSchemaProps) gets a warning saying what its
// validation covers. Types of
// other modules and Kubernetes' own bring their own OpenAPI and are not walked; those of
// the user's module are, wherever in it they are declared.
func (b *builder) checkFields(k *Kind) {
	t := b.types.Lookup(GoType{Pkg: k.Version.ImportPath, Name: k.Name})
	if t == nil || !t.IsStruct() {
		return
	}
	w := &fieldWalker{b: b, visiting: map[*Type]int{}, done: map[*Type]bool{}}
	w.jsonNamesOnce(k.Name, t)
	w.structFields(k.Name, t.Fields())
}

type fieldWalker struct {
	b *builder
	// visiting holds the types being walked, each with the JSON depth it was entered at;
	// depth counts the fields walked into that are not inlined.
	visiting map[*Type]int
	depth    int
	done     map[*Type]bool
}

func (w *fieldWalker) errorf(pos token.Position, fix, format string, args ...any) {
	w.b.errorf(pos, fix, format, args...)
}

func (w *fieldWalker) structFields(path string, fields []*Field) {
	for _, f := range fields {
		name := f.JSONName
		fieldPath := path + "." + f.GoName
		if name == "-" {
			continue
		}
		if !f.Exported {
			if name != "" {
				w.errorf(f.Pos, "export the field (capitalise it) or drop its json tag",
					"field %s is unexported but has json tag %q; it would never be stored", fieldPath, name)
			}
			continue
		}
		if f.Embedded {
			if f.Type.IsNamed(metav1Path, "TypeMeta") || f.Type.IsNamed(metav1Path, "ObjectMeta") || f.Type.IsNamed(metav1Path, "ListMeta") {
				continue
			}
			// encoding/json promotes the fields of an embedded struct (or pointer to struct)
			// whose tag names nothing (no tag, `json:""`, as k8s.io/api's SecretKeySelector
			// embeds LocalObjectReference): it is inline, as openapi-gen reads it. Any other
			// embedded type is serialised under its type's name.
			if u := w.b.types.under(f.Type.Deref()); !strings.Contains(f.Tag.Get("json"), "inline") && name == "" && (u == nil || u.Kind != ExprStruct) {
				w.errorf(f.Pos, "add `json:\",inline\"` to the embedded field, or give it a name and a json tag",
					"embedded field %s has no json tag; its fields would be serialised under %q", fieldPath, f.GoName)
				continue
			}
		} else if name == "" {
			w.errorf(f.Pos, "add a json tag in lowerCamelCase, e.g. `json:\""+lowerFirst(f.GoName)+",omitempty\"`",
				"field %s has no json tag; Kubernetes API fields need explicit lowerCamelCase json names", fieldPath)
		}
		if f.Inline {
			w.typ(fieldPath, f.Pos, f.Type)
			continue
		}
		w.depth++
		w.typ(fieldPath, f.Pos, f.Type)
		w.depth--
	}
}

func (w *fieldWalker) typ(path string, pos token.Position, e *TypeExpr) {
	switch e.Kind {
	case ExprNamed:
		t := w.b.types.Lookup(e.Name)
		if t == nil {
			return // error
		}
		if t.Origin != InTypesPackage && t.Origin != InModule || t.Underlying == nil {
			// Types from other modules (metav1.Time, resource.Quantity, runtime.RawExtension,
			// types of published API packages) bring their own OpenAPI.
			return
		}
		if depth, ok := w.visiting[t]; ok {
			if depth == w.depth {
				w.errorf(pos, "make one of the inlined fields a named field with a json name",
					"type %s inlines itself (through %s); its JSON fields would never end", t.Name.Name, path)
				return
			}
			w.b.warnf(pos, "nothing, if checking the repetitions by their Go type is enough; to have every level validated, break the cycle (a list of names, a runtime.RawExtension)",
				"type %s is recursive (reached again through %s): it is served, and published with $ref as kube-apiserver publishes JSONSchemaProps, but the schema the server validates with is a CRD's structural schema, which cannot repeat: from %s down, values are only decoded into the Go type, without the schema's value validations, required fields and CEL rules", t.Name.Name, path, path)
			return
		}
		if w.done[t] {
			return
		}
		w.visiting[t] = w.depth
		if t.IsStruct() {
			w.jsonNamesOnce(t.Name.Name, t)
			w.structFields(path, t.Fields())
		} else {
			w.typ(path, pos, t.Underlying)
		}
		delete(w.visiting, t)
		w.done[t] = true
	case ExprPointer:
		w.typ(path, pos, e.Elem)
	case ExprSlice, ExprArray:
		w.typ(path+"[]", pos, e.Elem)
	case ExprMap:
		if k := w.b.types.under(e.Key); k == nil || k.Kind != ExprBasic || k.Basic != "string" {
			w.errorf(pos, "use map[string]...: JSON object keys are strings",
				"field %s is a map with %s keys", path, e.Key.String)
			return
		}
		w.typ(path+"[key]", pos, e.Elem)
	case ExprStruct:
		w.structFields(path, e.Fields)
	case ExprBasic:
		switch e.Basic {
		case "complex64", "complex128":
			w.errorf(pos, "store the parts as two numbers, or as a string", "field %s is %s; JSON has no complex numbers", path, e.Basic)
		case "unsafe.Pointer", "uintptr":
			w.errorf(pos, "use an integer or a string", "field %s is %s, which cannot be serialised", path, e.Basic)
		}
	case ExprInterface:
		w.errorf(pos, "use a concrete type, or runtime.RawExtension for arbitrary embedded objects",
			"field %s is an interface; it cannot be decoded from JSON or described in OpenAPI", path)
	case ExprChan:
		w.errorf(pos, "remove it from the API type", "field %s is a channel, which cannot be serialised", path)
	case ExprFunc:
		w.errorf(pos, "remove it from the API type", "field %s is a function, which cannot be serialised", path)
	}
}

// jsonNamesOnce applies Go's encoding/json rule to the JSON names t's fields give, its own
// and those of the structs it inlines (json:",inline" or untagged embedding): of the fields
// with one name, the shallowest is the one encoded and decoded, and the deeper ones are
// hidden (prometheus-operator's ProbeSpec has an authorization field and inlines
// HTTPConfig, which has one too). The hidden ones are recorded in t.Shadowed, with a
// warning, so that openapi-gen leaves them out of t's schema; two at the shallowest depth
// are an error, as encoding/json then drops both.
func (w *fieldWalker) jsonNamesOnce(where string, t *Type) {
	if w.b.jsonNamesChecked[t] {
		return
	}
	w.b.jsonNamesChecked[t] = true
	byName := map[string][]jsonNameUse{}
	var names []string
	var walk func(fields []*Field, via []*Field, seen map[*Type]bool)
	walk = func(fields []*Field, via []*Field, seen map[*Type]bool) {
		for _, f := range fields {
			if !f.Exported || f.JSONName == "-" {
				continue
			}
			if f.Embedded && f.JSONName == "" {
				et := w.b.types.Lookup(f.Type.Deref().Name)
				if et == nil || !et.IsStruct() || seen[et] || f.Type.IsNamed(metav1Path, "TypeMeta") {
					continue
				}
				seen[et] = true
				walk(et.Fields(), append(slices.Clone(via), f), seen)
				continue
			}
			if f.JSONName == "" {
				continue // no json tag: an error of structFields
			}
			prev, ok := byName[f.JSONName]
			if !ok {
				names = append(names, f.JSONName)
			}
			if slices.ContainsFunc(prev, func(o jsonNameUse) bool { return o.field == f }) {
				continue // the struct inlines itself: reported by structFields
			}
			byName[f.JSONName] = append(prev, jsonNameUse{f, via})
		}
	}
	walk(t.Fields(), nil, map[*Type]bool{})
	var shadowed [][]string
	for _, name := range names {
		uses := byName[name]
		if len(uses) < 2 {
			continue
		}
		shallowest := slices.MinFunc(uses, func(a, b jsonNameUse) int { return len(a.via) - len(b.via) })
		if i := slices.IndexFunc(uses, func(o jsonNameUse) bool { return o.field != shallowest.field && len(o.via) == len(shallowest.via) }); i >= 0 {
			o := uses[i]
			w.errorf(o.at().Pos, "rename one of the two JSON names, or make the inlined struct a named field",
				"%s has two fields with the JSON name %q at one depth, %s and %s: Go's encoding/json reads and writes neither",
				where, name, describeNamed(shallowest.field, shallowest.via), describeNamed(o.field, o.via))
			continue
		}
		for _, o := range uses {
			if o.field == shallowest.field {
				continue
			}
			w.b.warnf(o.at().Pos, "nothing, if that is meant; else rename one of the two JSON names",
				"%s: %s is hidden by %s, which has the same JSON name %q and is shallower: Go's encoding/json reads and writes only that one, so the schema has only that one (a CRD of these types from controller-gen merges the two fields' schemas: it keeps what only the hidden one declares and checks both's constraints)",
				where, describeNamed(o.field, o.via), describeNamed(shallowest.field, shallowest.via), name)
			path := make([]string, 0, len(o.via)+1)
			for _, v := range o.via {
				path = append(path, v.GoName)
			}
			shadowed = append(shadowed, append(path, o.field.GoName))
		}
	}
	t.Shadowed = shadowed
}

// jsonNameUse is a field of a struct, or of a struct it inlines, that gives a JSON name.
type jsonNameUse struct {
	field *Field
	via   []*Field // the inline fields it was reached through, from the struct's own
}

// at is where the use is said: at the struct's own inline field that brought the field
// in, else at the field.
func (u jsonNameUse) at() *Field {
	if len(u.via) > 0 {
		return u.via[0]
	}
	return u.field
}

// describeNamed names field f (file:line) and the inline field it was reached through.
func describeNamed(f *Field, via []*Field) string {
	s := fmt.Sprintf("%s (%s)", f.GoName, shortPos(f.Pos))
	if len(via) > 0 {
		s += " through the inline " + via[0].GoName
	}
	return s
}

// shortPos is file:line of pos without the directory.
func shortPos(pos token.Position) string {
	return fmt.Sprintf("%s:%d", filepath.Base(pos.Filename), pos.Line)
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
