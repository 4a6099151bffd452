package model

import (
	"strings"

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
// would not compile:
//   - verb=apply takes the apply configuration of its input type, which client-gen looks
//     for among the generated apply configurations (<output>/applyconfiguration/<group
//     directory>/<version>, whatever package the type is of): applyconfiguration-gen
//     writes them for the served packages only, so the input's package must be one of
//     them;
//   - an input= or result= type of a served package must be declared there.
//
// Types of packages that are not served are imported as they are by the methods of the
// other verbs (get, update, create: k8s.io/api/autoscaling/v1.Scale from the module
// k8s.io/api).
func (b *builder) checkClientMethods(m *Model) {
	served := map[string]bool{}
	for _, g := range m.Groups {
		for _, v := range g.Versions {
			if !v.Internal {
				served[v.ImportPath] = true
			}
		}
	}
	for _, cm := range b.clientMethods {
		k := cm.kind
		if k.Unserved || k.Version.Internal {
			continue
		}
		name, args, _ := strings.Cut(cm.marker.Value, ",")
		var verb string
		types := map[string]string{} // input, result -> the type as written
		for _, a := range strings.Split(args, ",") {
			key, val, _ := strings.Cut(strings.TrimSpace(a), "=")
			switch key {
			case "verb":
				verb = val
			case "input", "result":
				types[key] = val
			}
		}
		for _, key := range []string{"input", "result"} {
			typ := types[key]
			i := strings.LastIndex(typ, ".")
			if i < 0 {
				continue // a type of the kind's own package, by name
			}
			pkg, tname := typ[:i], typ[i+1:]
			switch {
			case served[pkg]:
				if _, ok := b.decls[GoType{Pkg: pkg, Name: tname}]; !ok {
					b.errorf(cm.marker.Pos, "name a type "+pkg+" declares",
						"+genclient:method=%s of %s: %s=%s: package %s declares no type %s", name, k.Name, key, typ, pkg, tname)
				}
			case key == "input" && verb == "apply":
				b.errorf(cm.marker.Pos,
					"serve "+pkg+" in the same `aagen generate` (give its directory with this package's), so that its apply configurations are generated, or remove the method",
					"+genclient:method=%s of %s: verb=apply takes the apply configuration of input=%s, which the generated clientset takes from the apply configurations generated for the served packages; %s is not one of them, so the clientset would not compile",
					name, k.Name, typ, pkg)
			}
		}
	}
}
