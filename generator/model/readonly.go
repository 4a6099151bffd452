package model

import (
	"strings"

	"github.com/aagen-dev/aagen/generator/markers"
)

// readOnlyMarker reads +genclient:readonly on a kind: client-gen gives its client only
// get, list and watch, and the server serves only those (Resource.ReadOnly). What writes
// through the generated storage is refused at its marker: the /status and /scale
// subresources and imperative subresources. A Status field is then part of the object,
// not a /status subresource. It reports whether the kind is good.
func (b *builder) readOnlyMarker(k *Kind, ms markers.Set) bool {
	ro, m, _ := markers.Find[markers.ReadOnly](ms)
	if !ro {
		return true
	}
	k.ReadOnly = true
	k.ReadOnlyPos = m.Pos
	k.HasStatus = false
	good := true
	for _, w := range []struct {
		marker, what string
		pos          func() (bool, markers.Marker)
	}{
		{"+kubebuilder:subresource:status", "the /status subresource", func() (bool, markers.Marker) {
			v, sm, _ := markers.Find[markers.StatusSubresource](ms)
			return bool(v), sm
		}},
		{"+kubebuilder:subresource:scale", "the /scale subresource", func() (bool, markers.Marker) {
			_, sm, ok := markers.Find[markers.Scale](ms)
			return ok, sm
		}},
		{"+aagen:subresource", "imperative subresources", func() (bool, markers.Marker) {
			_, sm, ok := markers.Find[markers.Subresource](ms)
			return ok, sm
		}},
	} {
		if has, sm := w.pos(); has {
			b.errorf(sm.Pos, "remove "+w.marker+" from "+k.Name+", or its +genclient:readonly",
				"%s is +genclient:readonly (served with get, list and watch only) but has %s, which writes through its storage", k.Name, w.what)
			good = false
		}
	}
	return good
}

// readOnlyResource sets r.ReadOnly when its kinds are +genclient:readonly and not served
// from the user's backend (whose methods decide the verbs), refuses a kind read-only in
// some versions only (one storage serves every version), and warns that nothing can create
// the objects of a read-only kind stored in etcd.
func (b *builder) readOnlyResource(r *Resource) {
	var marked, unmarked []string
	var first *Kind
	for _, k := range r.Versions {
		if k.ReadOnly {
			marked = append(marked, k.Version.Name)
			if first == nil {
				first = k
			}
		} else {
			unmarked = append(unmarked, k.Version.Name)
		}
	}
	switch {
	case len(marked) == 0:
	case len(unmarked) > 0:
		b.errorf(first.ReadOnlyPos, "add `// +genclient:readonly` to "+r.Kind+" in every version, or remove it from all: one storage serves every version of a kind",
			"kind %s of group %s is +genclient:readonly in %s but not in %s", r.Kind, r.Group.Name, strings.Join(marked, ", "), strings.Join(unmarked, ", "))
	case r.Backend:
		// The backend's methods decide the verbs (Reader, Watcher, Writer).
	default:
		r.ReadOnly = true
		b.warnf(first.ReadOnlyPos, "add `// +aagen:backend` to "+r.Kind+", or pass `--backend "+r.Kind+"."+r.Group.Name+"` to aagen generate for a package you do not edit, to serve its objects from your own code (as metrics-server serves k8s.io/metrics)",
			"kind %s is +genclient:readonly: it is served with get, list and watch only (writes are 405), from etcd, where nothing can create its objects through the API", r.Kind)
	}
}
