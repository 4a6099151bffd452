package model

import (
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/packages"
)

// checkFields walks the fields reachable from a kind and reports what cannot be stored,
// served as JSON or described in OpenAPI: channels, functions, complex numbers, unsafe
// pointers, empty interfaces, maps with non-string keys, unexported fields with json
// tags, embedded structs without inline tags, and recursive types.
func (b *builder) checkFields(p *packages.Package, kind string, st *types.Struct) bool {
	w := &fieldWalker{b: b, p: p, kind: kind, visiting: map[*types.Named]bool{}, done: map[*types.Named]bool{}}
	w.structFields(kind, st)
	return !w.failed
}

type fieldWalker struct {
	b        *builder
	p        *packages.Package
	kind     string
	visiting map[*types.Named]bool
	done     map[*types.Named]bool
	failed   bool
}

func (w *fieldWalker) errorf(pos token.Pos, fix, format string, args ...any) {
	w.failed = true
	w.b.errorf(w.p.Fset.Position(pos), fix, format, args...)
}

func (w *fieldWalker) structFields(path string, st *types.Struct) {
	for i := 0; i < st.NumFields(); i++ {
		f := st.Field(i)
		tag := st.Tag(i)
		name := jsonTagName(tag)
		fieldPath := path + "." + f.Name()
		if name == "-" {
			continue
		}
		if !f.Exported() {
			if name != "" {
				w.errorf(f.Pos(), "export the field (capitalise it) or drop its json tag",
					"field %s is unexported but has json tag %q; it would never be stored", fieldPath, name)
			}
			continue
		}
		if f.Embedded() {
			if IsNamed(f.Type(), metav1Path, "TypeMeta") || IsNamed(f.Type(), metav1Path, "ObjectMeta") || IsNamed(f.Type(), metav1Path, "ListMeta") {
				continue
			}
			if !strings.Contains(tagJSON(tag), "inline") && name == "" {
				w.errorf(f.Pos(), "add `json:\",inline\"` to the embedded field, or give it a name and a json tag",
					"embedded field %s has no json tag; its fields would be serialised under %q", fieldPath, f.Name())
				continue
			}
		} else if name == "" {
			w.errorf(f.Pos(), "add a json tag in lowerCamelCase, e.g. `json:\""+lowerFirst(f.Name())+",omitempty\"`",
				"field %s has no json tag; Kubernetes API fields need explicit lowerCamelCase json names", fieldPath)
		}
		w.typ(fieldPath, f.Pos(), f.Type())
	}
}

func (w *fieldWalker) typ(path string, pos token.Pos, t types.Type) {
	switch t := t.(type) {
	case *types.Named:
		obj := t.Obj()
		if obj.Pkg() == nil {
			w.typ(path, pos, t.Underlying()) // error, etc.
			return
		}
		if obj.Pkg().Path() != w.p.PkgPath {
			// Types from other packages (metav1.Time, resource.Quantity, intstr.IntOrString,
			// runtime.RawExtension, types of other API packages) bring their own OpenAPI.
			return
		}
		if w.visiting[t] {
			w.errorf(pos, "break the cycle, e.g. with a list of names or a runtime.RawExtension",
				"type %s is recursive (reached again through %s); OpenAPI schemas of Kubernetes APIs cannot be recursive", obj.Name(), path)
			return
		}
		if w.done[t] {
			return
		}
		w.visiting[t] = true
		if st, ok := t.Underlying().(*types.Struct); ok {
			w.structFields(path, st)
		} else {
			w.typ(path, pos, t.Underlying())
		}
		delete(w.visiting, t)
		w.done[t] = true
	case *types.Pointer:
		w.typ(path, pos, t.Elem())
	case *types.Slice:
		w.typ(path+"[]", pos, t.Elem())
	case *types.Array:
		w.typ(path+"[]", pos, t.Elem())
	case *types.Map:
		if b, ok := t.Key().Underlying().(*types.Basic); !ok || b.Info()&types.IsString == 0 {
			w.errorf(pos, "use map[string]...: JSON object keys are strings",
				"field %s is a map with %s keys", path, types.TypeString(t.Key(), types.RelativeTo(w.p.Types)))
			return
		}
		w.typ(path+"[key]", pos, t.Elem())
	case *types.Struct:
		w.structFields(path, t)
	case *types.Basic:
		switch {
		case t.Info()&types.IsComplex != 0:
			w.errorf(pos, "store the parts as two numbers, or as a string", "field %s is %s; JSON has no complex numbers", path, t.Name())
		case t.Kind() == types.UnsafePointer || t.Kind() == types.Uintptr:
			w.errorf(pos, "use an integer or a string", "field %s is %s, which cannot be serialised", path, t.Name())
		case t.Kind() == types.Float32 || t.Kind() == types.Float64:
			// Allowed (API conventions discourage floats; kube-openapi marks them).
		}
	case *types.Interface:
		w.errorf(pos, "use a concrete type, or runtime.RawExtension for arbitrary embedded objects",
			"field %s is an interface; it cannot be decoded from JSON or described in OpenAPI", path)
	case *types.Chan:
		w.errorf(pos, "remove it from the API type", "field %s is a channel, which cannot be serialised", path)
	case *types.Signature:
		w.errorf(pos, "remove it from the API type", "field %s is a function, which cannot be serialised", path)
	}
}

func tagJSON(tag string) string {
	_, rest, _ := strings.Cut(tag, `json:"`)
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
