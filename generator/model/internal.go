package model

import (
	"go/ast"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
)

// runtimeAPIVersionInternal is k8s.io/apimachinery's runtime.APIVersionInternal, the version
// name of internal types in a scheme.
const runtimeAPIVersionInternal = "__internal"

// conversionTargetTag is conversion-gen's package tag naming the internal package a version
// package converts to (upstream's layout; aagen reads it, code-generator's own reading is
// replaced by the model's).
const conversionTargetTag = "+k8s:conversion-gen="

// conversionTargets returns the import paths that the packages name in
// +k8s:conversion-gen=<path> above their package clause.
func conversionTargets(pkgs []*packages.Package) map[string]bool {
	out := map[string]bool{}
	for _, p := range pkgs {
		for _, f := range p.Syntax {
			for _, cg := range f.Comments {
				if cg.End() >= f.Package {
					continue
				}
				for _, c := range cg.List {
					text := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
					if v, ok := strings.CutPrefix(text, conversionTargetTag); ok {
						out[strings.TrimSpace(v)] = true
					}
				}
			}
		}
	}
	return out
}

// declaresDefaultFuncs reports whether p declares a SetDefaults_<Type> function, which
// defaulter-gen calls from the object defaulters it writes.
func declaresDefaultFuncs(p *packages.Package) bool {
	for _, f := range p.Syntax {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "SetDefaults_") {
				return true
			}
		}
	}
	return false
}

// conversionNames returns the conversion functions (Convert_..., autoConvert_...) the
// package's hand-written files declare or call, sorted.
func conversionNames(p *packages.Package) []string {
	var out []string
	for _, f := range p.Syntax {
		if strings.HasPrefix(filepath.Base(p.Fset.Position(f.Pos()).Filename), "zz_generated") {
			continue
		}
		var visit func(n ast.Node) bool
		visit = func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				// pkg.Convert_X is another package's function: only the qualifier can name
				// one of this package's.
				ast.Inspect(sel.X, visit)
				return false
			}
			if id, ok := n.(*ast.Ident); ok && (strings.HasPrefix(id.Name, "Convert_") || strings.HasPrefix(id.Name, "autoConvert_")) {
				out = append(out, id.Name)
			}
			return true
		}
		ast.Inspect(f, visit)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// checkInternal makes the group's internal package every resource's hub: the storage holds
// its types, every version converts to and from it, and objects are written to etcd in one
// version of the group that defines every kind (the group's storage version). It returns
// false when g has no internal package.
func (b *builder) checkInternal(g *Group, names []string, byName map[string][]*Kind) bool {
	in := g.Internal
	if in == nil {
		return false
	}
	internal := map[string]*Kind{}
	for _, k := range in.Kinds {
		internal[k.Name] = k
	}
	for _, name := range names {
		ks := byName[name] // preferred version first
		r := g.addResource(name, ks)
		first := ks[0]
		hub := internal[name]
		if hub == nil {
			b.errorf(first.Pos, "declare "+name+" and "+name+"List in "+in.ImportPath+", the group's internal package",
				"kind %s of %s has no internal type: every kind of a group with an internal package is stored as its internal type", name, first.Version.GroupVersion())
			continue
		}
		// Names, scope and subresources are the served versions'.
		hub.Resource = r
		hub.Hub = true
		hub.Plural, hub.Singular, hub.ShortNames, hub.Categories = first.Plural, first.Singular, first.ShortNames, first.Categories
		hub.NamespaceScoped, hub.HasStatus = first.NamespaceScoped, first.HasStatus
		r.Hub = hub
		b.checkResource(r, first, "")
		for _, k := range ks {
			k.Version.ConvertTo = in
			if k.Scale != nil || len(k.SelectableFields) > 0 || len(k.PrintColumns) > 0 || len(k.Subresources) > 0 {
				b.errorf(k.Pos, "remove +kubebuilder:subresource:scale, +kubebuilder:selectablefield, +kubebuilder:printcolumn and +aagen:subresource from "+name+
					", or drop the internal package and mark one version +kubebuilder:storageversion",
					"kind %s: /scale, selectable fields, print columns and imperative subresources are not supported yet for kinds stored as an internal type (%s)", name, in.ImportPath)
			}
		}
	}
	// The storage version: the one marked +kubebuilder:storageversion, else the most
	// preferred version that defines every kind.
	var marked []*Version
	for _, name := range names {
		for _, k := range byName[name] {
			if _, ok := b.storageMarkers[k]; ok && !containsVersion(marked, k.Version) {
				marked = append(marked, k.Version)
			}
		}
	}
	definesAll := func(v *Version) bool {
		have := map[string]bool{}
		for _, k := range v.Kinds {
			have[k.Name] = true
		}
		for _, name := range names {
			if !have[name] {
				return false
			}
		}
		return true
	}
	switch {
	case len(marked) > 1:
		var vs []string
		for _, v := range marked {
			vs = append(vs, v.Name)
		}
		sort.Strings(vs)
		b.errorf(marked[1].Pos, "mark kinds +kubebuilder:storageversion in one version of "+g.Name+" only",
			"kinds of group %s are marked +kubebuilder:storageversion in %s; with an internal package, objects are written to etcd in one version", g.Name, strings.Join(vs, " and "))
	case len(marked) == 1:
		if !definesAll(marked[0]) {
			b.errorf(marked[0].Pos, "mark a version that defines every kind of "+g.Name,
				"%s is marked +kubebuilder:storageversion but does not define every kind of group %s, which objects are written to etcd in", marked[0].GroupVersion(), g.Name)
		}
		g.StorageVersion = marked[0]
	default:
		for _, v := range g.Versions {
			if definesAll(v) {
				g.StorageVersion = v
				break
			}
		}
		if g.StorageVersion == nil && len(names) > 0 {
			b.errorf(in.Pos, "define every kind of "+g.Name+" in one of its versions (objects are written to etcd in one version)",
				"no version of group %s defines all its kinds (%s)", g.Name, strings.Join(names, ", "))
		}
	}
	return true
}

func containsVersion(vs []*Version, v *Version) bool {
	for _, o := range vs {
		if o == v {
			return true
		}
	}
	return false
}
