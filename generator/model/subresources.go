package model

import (
	"go/token"
	"slices"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/aagen-dev/aagen/generator/markers"
	"k8s.io/apimachinery/pkg/util/validation"
)

// SubresourceType says what an imperative subresource does (see package
// github.com/aagen-dev/aagen/runtime/subresource).
type SubresourceType string

// The imperative subresources, by marker.
const (
	// Action is POST <plural>/<name>/<sub> with a body (+aagen:subresource:action).
	Action SubresourceType = "action"
	// View is GET, and with Writable PUT and PATCH, of another representation
	// (+aagen:subresource:view).
	View SubresourceType = "view"
	// Stream is a chunked GET, ?follow=true keeping it open (+aagen:subresource:stream).
	Stream SubresourceType = "stream"
	// Connection is an upgraded bidirectional stream (+aagen:subresource:connection).
	Connection SubresourceType = "connection"
)

// Subresource is one imperative subresource of a kind.
type Subresource struct {
	Type SubresourceType
	// Name is the subresource's name: the path element after the object's name.
	Name string
	// Input is the body type of an action, Object the type of a view: a struct of the kind's
	// package with metav1.TypeMeta, registered in the scheme as an object of the version.
	Input, Object string
	// Output is the answer type of an action: "" for the kind itself, "Status" for a
	// metav1.Status, else a struct of the kind's package like Input.
	Output string
	// Writable is set on a view that takes PUT and PATCH (update=true).
	Writable bool
	Pos      token.Position
}

// GoName is the subresource's name as an exported Go identifier: "depart" is "Depart",
// "port-forward" is "PortForward".
func (s Subresource) GoName() string {
	var b strings.Builder
	for _, part := range strings.Split(s.Name, "-") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// Hook is the name of the user's Hooks method that serves the subresource: <GoName> for an
// action, Get<GoName> for a view (Set<GoName> writes a writable one, SetHook), Stream<GoName>
// and Connect<GoName> for streams and connections.
func (s Subresource) Hook() string {
	switch s.Type {
	case View:
		return "Get" + s.GoName()
	case Stream:
		return "Stream" + s.GoName()
	case Connection:
		return "Connect" + s.GoName()
	}
	return s.GoName()
}

// SetHook is the name of the Hooks method that writes a writable view.
func (s Subresource) SetHook() string { return "Set" + s.GoName() }

// Answer is the type an action answers with, given the kind's name: the kind itself,
// "Status" (metav1.Status) or the Output type.
func (s Subresource) Answer(kind string) string {
	if s.Output == "" {
		return kind
	}
	return s.Output
}

// kubeLongRunning are the subresources kube-apiserver exempts from its request timeout
// (k8s.io/kubernetes pkg/controlplane/apiserver/config.go, LongRunningFunc): an
// aggregated stream or connection under another name is cut after --request-timeout.
var kubeLongRunning = []string{"attach", "exec", "log", "portforward", "proxy"}

// subresourceTypes are the subresource types by the last word of their marker.
var subresourceTypes = map[string]SubresourceType{
	"action":     Action,
	"view":       View,
	"stream":     Stream,
	"connection": Connection,
}

// subresources reads the imperative subresource markers of kind k. It reports false when
// one is wrong (the errors are recorded).
func (b *builder) subresources(p *packages.Package, k *Kind, d typeDecl) bool {
	good := true
	seen := map[string]bool{"status": true, "scale": true}
	var subs []Subresource
	// In the order written: a duplicate is reported where it is repeated.
	for _, found := range markers.FindAll[markers.Subresource](d.markers) {
		m, decl := found.Marker, found.Value
		mname := m.Def.Name
		s := Subresource{Type: subresourceTypes[decl.Form], Name: decl.Name, Pos: m.Pos}
		fail := func(fix, format string, args ...any) {
			b.errorf(m.Pos, fix, "+%s on %s: "+format, append([]any{mname, k.Name}, args...)...)
			good = false
		}
		switch {
		case s.Name == "":
			fail("add name=<subresource>, e.g. name=restart", "no name")
			continue
		case len(validation.IsDNS1035Label(s.Name)) > 0:
			fail("use lower-case letters, digits and '-', starting with a letter", "%q is not a valid subresource name", s.Name)
			continue
		case seen[s.Name]:
			fail("give every subresource of the kind its own name", "subresource %q is declared twice or is built in", s.Name)
			continue
		}
		seen[s.Name] = true
		objectType := func(t, arg, what string) string {
			if t == "" {
				fail("add "+arg+"=<type>, a struct of "+k.Version.PkgName+" with metav1.TypeMeta", "no %s", what)
				return ""
			}
			if !b.subresourceType(p, t) {
				fail("declare `type "+t+" struct { metav1.TypeMeta `json:\",inline\"`; ... }` in "+k.Version.PkgName+" (kinds and their lists are not allowed)",
					"%s %q is not a struct of package %s embedding metav1.TypeMeta", what, t, k.Version.PkgName)
				return ""
			}
			return t
		}
		switch s.Type {
		case Action:
			s.Input = objectType(decl.Input, "input", "input type")
			switch out := decl.Output; out {
			case "", k.Name:
			case "Status":
				s.Output = "Status"
			default:
				s.Output = objectType(decl.Output, "output", "output type")
			}
		case View:
			s.Object = objectType(decl.Type, "type", "view type")
			s.Writable = decl.Update
		case Stream, Connection:
			if !slices.Contains(kubeLongRunning, s.Name) {
				b.warnf(m.Pos, "name it one of "+strings.Join(kubeLongRunning, ", ")+" if it must stay open longer",
					"+%s on %s: through kube-apiserver's aggregator, requests to %s/%s are cut after kube-apiserver's --request-timeout (default 1m): it exempts only the subresources named %s",
					mname, k.Name, k.Plural, s.Name, strings.Join(kubeLongRunning, ", "))
			}
		}
		subs = append(subs, s)
	}
	k.Subresources = subs
	return good
}

// subresourceType reports whether name is a struct of p embedding metav1.TypeMeta (either tag form).
func (b *builder) subresourceType(p *packages.Package, name string) bool {
	t := b.structType(p.PkgPath, name)
	return t != nil && embedsTypeMeta(t)
}

func isKindName(v *Version, name string) bool {
	for _, k := range v.Kinds {
		if k.Name == name || k.ListName == name {
			return true
		}
	}
	return false
}

// SubresourceTypes are the types of the version's subresources (action bodies and answers,
// views) and its MethodTypes that are not kinds, sorted: the scheme registers them as
// objects of the version.
func (v *Version) SubresourceTypes() []string {
	set := map[string]bool{}
	for _, t := range v.MethodTypes {
		set[t] = true
	}
	for _, k := range v.Kinds {
		for _, s := range k.Subresources {
			for _, t := range []string{s.Input, s.Output, s.Object} {
				if t != "" && t != "Status" {
					set[t] = true
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// checkSubresources refuses subresources on a kind served in several versions: their
// storages would be shared by versions whose types differ.
func (b *builder) checkSubresources(r *Resource) {
	for _, k := range r.Versions {
		if len(k.Subresources) > 0 && len(r.Versions) > 1 {
			b.errorf(k.Subresources[0].Pos, "define the kind in one version, or move the subresources to a kind defined in one version",
				"%s has imperative subresources but is defined in %d versions; subresources of multi-version kinds are not supported yet", k.Name, len(r.Versions))
			return
		}
		for _, s := range k.Subresources {
			for _, t := range []string{s.Input, s.Output, s.Object} {
				if t != "" && isKindName(k.Version, t) {
					b.errorf(s.Pos, "declare a type of its own for the subresource",
						"subresource %q of %s: %s is a kind or a kind's list", s.Name, k.Name, t)
				}
			}
		}
	}
}
