package load

import (
	"go/types"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// TypeName is a named Go type: its package's import path and its name.
type TypeName struct {
	Package string // e.g. k8s.io/api/core/v1
	Name    string // e.g. PodTemplateSpec
}

// String returns the type's fully qualified name, "k8s.io/api/core/v1.PodTemplateSpec".
func (n TypeName) String() string { return n.Package + "." + n.Name }

// ReferencedTypes returns the named types declared outside pkgs that the types declared in
// pkgs reach through their fields, element, key and pointer types, directly or through
// other such types (the transitive closure), sorted by package and name: the types from
// k8s.io/api, apimachinery, other modules or other packages of the module whose OpenAPI
// definitions, apply configurations and schemas the generated server needs. Type
// parameters and interface types have nothing to reach; predeclared types and the standard
// library's are left out, and a type that describes its own OpenAPI schema (metav1.Time,
// intstr.IntOrString: an OpenAPIDefinition or OpenAPISchemaType method, which openapi-gen
// does not look behind) is listed but not followed.
func ReferencedTypes(pkgs []*packages.Package) []TypeName {
	own := map[string]bool{}
	w := referenceWalker{own: own, seen: map[*types.TypeName]bool{}}
	for _, p := range pkgs {
		own[p.PkgPath] = true
		if p.Module != nil {
			w.module = p.Module.Path
		}
	}
	for _, p := range pkgs {
		if p.Types == nil {
			continue
		}
		scope := p.Types.Scope()
		for _, name := range scope.Names() {
			if tn, ok := scope.Lookup(name).(*types.TypeName); ok {
				w.walk(tn.Type())
			}
		}
	}
	slices.SortFunc(w.out, func(a, b TypeName) int {
		if a.Package != b.Package {
			if a.Package < b.Package {
				return -1
			}
			return 1
		}
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return w.out
}

// referenceWalker collects the foreign named types a type reaches.
type referenceWalker struct {
	own    map[string]bool          // the import paths of the types packages
	module string                   // the path of their module
	seen   map[*types.TypeName]bool // named types already walked
	out    []TypeName
}

func (w *referenceWalker) walk(t types.Type) {
	switch t := t.(type) {
	case *types.Alias:
		w.walk(types.Unalias(t))
	case *types.Named:
		obj := t.Origin().Obj()
		if obj.Pkg() == nil || w.seen[obj] || w.standard(obj.Pkg().Path()) {
			return // predeclared (error), done, or time.Time and the like
		}
		w.seen[obj] = true
		if !w.own[obj.Pkg().Path()] {
			w.out = append(w.out, TypeName{Package: obj.Pkg().Path(), Name: obj.Name()})
		}
		if !ownSchema(t) {
			w.walk(t.Underlying())
		}
	case *types.Pointer:
		w.walk(t.Elem())
	case *types.Slice:
		w.walk(t.Elem())
	case *types.Array:
		w.walk(t.Elem())
	case *types.Map:
		w.walk(t.Key())
		w.walk(t.Elem())
	case *types.Struct:
		for i := range t.NumFields() {
			if f := t.Field(i); f.Exported() || f.Embedded() {
				w.walk(f.Type())
			}
		}
	}
}

// standard reports whether an import path is the standard library's: no dot in its first
// element, and not in the module (whose path need not have one either).
func (w *referenceWalker) standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	inModule := w.module != "" && (path == w.module || strings.HasPrefix(path, w.module+"/"))
	return !strings.Contains(first, ".") && !inModule
}

// ownSchema reports whether a named type describes its own OpenAPI schema, as openapi-gen
// recognises it: an OpenAPIDefinition or OpenAPISchemaType method on the type or its pointer.
func ownSchema(t *types.Named) bool {
	ms := types.NewMethodSet(types.NewPointer(t))
	for i := range ms.Len() {
		switch ms.At(i).Obj().Name() {
		case "OpenAPIDefinition", "OpenAPISchemaType":
			return true
		}
	}
	return false
}
