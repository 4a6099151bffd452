package model

import (
	"fmt"
	"go/ast"
	"slices"
	"strings"

	"github.com/aagen-dev/aagen/generator/load"
	"github.com/aagen-dev/aagen/generator/markers"
)

// clientMethodMarker is a +genclient:method marker of a kind: client-gen's extra client
// method (k8s.io/api's apps/v1 Deployment has GetScale, UpdateScale and ApplyScale, whose
// input= and result= name autoscaling/v1's Scale).
type clientMethodMarker struct {
	kind   *Kind
	marker markers.Marker
}

// clientMethodMarkers records the +genclient:method markers of k, checked with the
// packages of every group once they are known (checkClientMethods).
func (b *builder) clientMethodMarkers(k *Kind, ms markers.Set) {
	for _, m := range ms {
		if m.Def != nil && m.Def.Name == "genclient:method" {
			b.clientMethods = append(b.clientMethods, clientMethodMarker{kind: k, marker: m})
		}
	}
}

// checkClientMethods refuses, at its marker, a +genclient:method whose generated client
// would not compile. The client imports the package of every input= and result= type
// (autoscaling/v1 for k8s.io/api's apps/v1 GetScale), so the package must be loadable
// from the module (its own, or one of a module it requires) and declare the type; and
// verb=apply takes the input type's apply configuration, which client-gen looks for among
// the generated apply configurations (<output>/applyconfiguration/<group directory>/<version>,
// whatever package the type is of): applyconfiguration-gen writes them for the served
// packages only, so an apply method's input must be a type of a served package. The types
// of served packages it names (by name alone: of the kind's own package) become their MethodTypes (deep-copied as runtime.Objects and
// registered); those of other packages are the user's to make runtime.Objects.
func (b *builder) checkClientMethods(m *Model, res *load.Result) {
	served := map[string]*Version{}
	for _, g := range m.Groups {
		for _, v := range g.Versions {
			if !v.Internal {
				served[v.ImportPath] = v
			}
		}
	}
	type named struct {
		cm                       clientMethodMarker
		method, key, typ, pkg, t string
		verb                     string
	}
	var refs []named
	var others []string // packages named that are not served
	for _, cm := range b.clientMethods {
		k := cm.kind
		if k.Unserved || k.Version.Internal {
			continue
		}
		method, args, _ := strings.Cut(cm.marker.Value, ",")
		var verb, subresource string
		typs := map[string]string{} // input, result -> the type as written
		for _, a := range strings.Split(args, ",") {
			key, val, _ := strings.Cut(strings.TrimSpace(a), "=")
			switch key {
			case "verb":
				verb = val
			case "subresource":
				subresource = val
			case "input", "result":
				typs[key] = val
			}
		}
		if subresource != "" && !servesSubresource(k, subresource) {
			b.warnf(cm.marker.Pos, unservedSubresourceFix(subresource),
				"+genclient:method=%s of %s: the generated client's %s calls the /%s subresource, which the server does not serve for %s: the call gets 404 Not Found",
				method, k.Name, method, subresource, k.Plural)
		}
		for _, key := range []string{"input", "result"} {
			typ := typs[key]
			if typ == "" {
				continue // the kind itself
			}
			pkg, t := k.Version.ImportPath, typ // a type of the kind's own package, by name
			if i := strings.LastIndex(typ, "."); i >= 0 {
				pkg, t = typ[:i], typ[i+1:]
			}
			r := named{cm: cm, method: method, key: key, typ: typ, pkg: pkg, t: t, verb: verb}
			refs = append(refs, r)
			if served[r.pkg] == nil && !slices.Contains(others, r.pkg) {
				others = append(others, r.pkg)
			}
		}
	}
	// The types the packages that are not served declare, from their syntax.
	declared := map[GoType]bool{}
	listed := map[string]bool{}
	if len(others) > 0 {
		deps, err := res.Syntax(others)
		if err != nil {
			b.errorf(refs[0].cm.marker.Pos, "make the packages +genclient:method names loadable (go build ./... in the module)", "%v", err)
			return
		}
		for _, d := range deps {
			if len(d.Syntax) > 0 {
				listed[d.PkgPath] = true
			}
			for _, f := range d.Syntax {
				for _, decl := range f.Decls {
					if gd, ok := decl.(*ast.GenDecl); ok {
						for _, spec := range gd.Specs {
							if ts, ok := spec.(*ast.TypeSpec); ok {
								declared[GoType{Pkg: d.PkgPath, Name: ts.Name.Name}] = true
							}
						}
					}
				}
			}
		}
	}
	for _, r := range refs {
		where := fmt.Sprintf("+genclient:method=%s of %s: %s=%s", r.method, r.cm.kind.Name, r.key, r.typ)
		switch {
		case served[r.pkg] != nil:
			v := served[r.pkg]
			switch _, ok := b.decls[GoType{Pkg: r.pkg, Name: r.t}]; {
			case !ok:
				b.errorf(r.cm.marker.Pos, "name a type "+r.pkg+" declares", "%s: package %s declares no type %s", where, r.pkg, r.t)
			case !isKindName(v, r.t) && !slices.Contains(v.MethodTypes, r.t):
				v.MethodTypes = append(v.MethodTypes, r.t)
			}
		case !listed[r.pkg]:
			b.errorf(r.cm.marker.Pos, "name a package of this module or of a module it requires (go get its module), or remove the method",
				"%s: the generated client imports package %s, which the module cannot load, so the clientset would not compile", where, r.pkg)
		case !declared[GoType{Pkg: r.pkg, Name: r.t}]:
			b.errorf(r.cm.marker.Pos, "name a type "+r.pkg+" declares", "%s: package %s declares no type %s", where, r.pkg, r.t)
		case r.key == "input" && r.verb == "apply":
			b.errorf(r.cm.marker.Pos,
				"serve "+r.pkg+" in the same `aagen generate` (give its directory with this package's), so that its apply configurations are generated, or remove the method",
				"%s: verb=apply takes the apply configuration of the input type, which the generated clientset takes from the apply configurations generated for the served packages; %s is not one of them, so the clientset would not compile",
				where, r.pkg)
		}
	}
}

// servesSubresource reports whether the server serves the subresource name of k.
func servesSubresource(k *Kind, name string) bool {
	switch name {
	case "status":
		return k.HasStatus
	case "scale":
		return k.Scale != nil
	}
	return slices.ContainsFunc(k.Subresources, func(s Subresource) bool { return s.Name == name })
}

// unservedSubresourceFix is how to serve the subresource name a client method calls.
func unservedSubresourceFix(name string) string {
	switch name {
	case "status":
		return "serve /status with +kubebuilder:subresource:status on the kind, or remove the method"
	case "scale":
		return "serve /scale with +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas (it answers autoscaling/v1 Scale), or remove the method"
	}
	return "serve /" + name + " as an imperative subresource (+aagen:subresource:action, :view, :stream or :connection with name=" + name + "; docs/markers.md), or remove the method"
}
