package model

import (
	"go/token"
	"slices"
	"sort"
	"strings"

	"github.com/aagen-dev/aagen/generator/markers"
)

// backendMarker reads +aagen:backend on a kind, or Config.Backends naming it (then the
// kind's position stands for the marker's), and refuses what a kind served from the
// user's backend cannot have: the /status and /scale subresources and imperative
// subresources, which the generated storage serves. It reports whether the kind is good.
func (b *builder) backendMarker(k *Kind, ms markers.Set) bool {
	backend, m, _ := markers.Find[markers.Backend](ms)
	if byConfig := b.backendByConfig(k); !backend {
		if !byConfig {
			return true
		}
		m = markers.Marker{Pos: k.Pos}
	}
	k.Backend = true
	k.BackendPos = m.Pos
	good := true
	if status, sm, _ := markers.Find[markers.StatusSubresource](ms); status {
		b.errorf(sm.Pos, "remove +kubebuilder:subresource:status: a kind served from your backend has no /status subresource "+
			"(your backend's Update may still write the status)",
			"%s has +aagen:backend and +kubebuilder:subresource:status", k.Name)
		good = false
	} else if k.HasStatus {
		b.errorf(m.Pos, "add `// +genclient:noStatus` to "+k.Name+" (a kind served from your backend has no /status subresource), or rename its Status field",
			"%s has +aagen:backend and a Status field, which +genclient serves as the /status subresource", k.Name)
		good = false
	}
	if _, sm, ok := markers.Find[markers.Scale](ms); ok {
		b.errorf(sm.Pos, "remove +kubebuilder:subresource:scale: a kind served from your backend has no /scale subresource",
			"%s has +aagen:backend and +kubebuilder:subresource:scale", k.Name)
		good = false
	}
	if _, sm, ok := markers.Find[markers.Subresource](ms); ok {
		b.errorf(sm.Pos, "remove the +aagen:subresource markers from "+k.Name+", or its +aagen:backend: the subresources are served through the generated storage, which a kind from your backend does not have",
			"%s has +aagen:backend and imperative subresources", k.Name)
		good = false
	}
	return good
}

// backendByConfig reports whether Config.Backends names k (<Kind>.<group>) and records
// that the name was used. It names the served versions' kinds, not an internal hub's.
func (b *builder) backendByConfig(k *Kind) bool {
	name := k.Name + "." + k.Version.Group.Name
	if _, ok := b.backends[name]; !ok || k.Version.Internal {
		return false
	}
	b.backends[name] = true
	return true
}

// unusedBackends refuses a Config.Backends name that names no kind of the packages loaded.
func (b *builder) unusedBackends() {
	var kinds []string
	for _, g := range b.groups {
		for _, v := range g.Versions {
			for _, k := range v.Kinds {
				kinds = append(kinds, k.Name+"."+g.Name)
			}
		}
	}
	sort.Strings(kinds)
	kinds = slices.Compact(kinds)
	var unused []string
	for name, used := range b.backends {
		if !used {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	for _, name := range unused {
		b.errorf(token.Position{}, "name a kind of the types packages as <Kind>.<group> (one of: "+strings.Join(kinds, ", ")+")",
			"--backend %s names no kind of the packages given", name)
	}
}

// backendResource sets r.Backend when its kinds are served from a backend, and refuses a
// kind marked +aagen:backend in some of its versions only: one storage serves every version.
func (b *builder) backendResource(r *Resource) {
	var marked, unmarked []string
	for _, k := range r.Versions {
		if k.Backend {
			marked = append(marked, k.Version.Name)
		} else {
			unmarked = append(unmarked, k.Version.Name)
		}
	}
	switch {
	case len(marked) == 0:
	case len(unmarked) == 0:
		r.Backend = true
	default:
		var pos = r.Versions[0].Pos
		for _, k := range r.Versions {
			if k.Backend {
				pos = k.BackendPos
				break
			}
		}
		b.errorf(pos, "add `// +aagen:backend` to "+r.Kind+" in every version, or remove it from all: one storage serves every version of a kind",
			"kind %s of group %s is marked +aagen:backend in %s but not in %s", r.Kind, r.Group.Name, strings.Join(marked, ", "), strings.Join(unmarked, ", "))
	}
}
