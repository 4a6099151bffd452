// Package model is the middle of the generator pipeline: it turns loaded types packages
// and their markers into the API the server will serve (groups, versions, kinds, scope,
// names, subresources), checking everything the emitters and code-generator rely on, and
// reporting problems with file:line and how to fix them.
//
// The model is the single source of truth: emitters and code-generator runs read it,
// never the markers directly.
package model

import (
	"fmt"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Model is the whole API served by one server.
type Model struct {
	ModuleDir  string
	ModulePath string
	Groups     []*Group
}

// Group is one API group.
type Group struct {
	// Name is the group, e.g. "shop.example.com".
	Name string
	// PackageName is the short name used for Go packages and directories, e.g. "shop".
	PackageName string
	// Versions are served versions, preferred first (Kubernetes version priority).
	Versions []*Version
}

// Version is one group-version types package.
type Version struct {
	Group *Group `json:"-"`
	// Name is the version, e.g. "v1".
	Name string
	// ImportPath and Dir locate the types package; PkgName is its Go package name.
	ImportPath, Dir, PkgName string
	// Kinds are the kinds defined in this package, sorted by name.
	Kinds []*Kind
	Pos   token.Position
}

// Kind is one served kind.
type Kind struct {
	Version *Version `json:"-"`
	// Name is the kind and Go type name, e.g. "Widget"; ListName its list type.
	Name, ListName string
	// Plural and Singular are the lower-case resource names.
	Plural, Singular string
	ShortNames       []string
	Categories       []string
	NamespaceScoped  bool
	// HasStatus is set when the /status subresource is served.
	HasStatus bool
	// SpecFields are the top-level fields other than TypeMeta, ObjectMeta and Status:
	// the desired state (usually just Spec).
	SpecFields []string
	Pos        token.Position
}

// GroupVersion returns "group/version".
func (v *Version) GroupVersion() string { return v.Group.Name + "/" + v.Name }

// AllKinds returns every kind of the model, by group, version and name.
func (m *Model) AllKinds() []*Kind {
	var out []*Kind
	for _, g := range m.Groups {
		for _, v := range g.Versions {
			out = append(out, v.Kinds...)
		}
	}
	return out
}

// ServerName is the default server name: the module's last path element + "-apiserver".
func (m *Model) ServerName() string {
	base := m.ModulePath[strings.LastIndex(m.ModulePath, "/")+1:]
	base = strings.ToLower(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, base))
	base = strings.Trim(base, "-")
	if base == "" {
		base = "api"
	}
	return base + "-apiserver"
}

// Diagnostic is one problem in the input, at a position.
type Diagnostic struct {
	Pos     token.Position
	Warning bool
	Msg     string
	Fix     string
}

func (d Diagnostic) String() string {
	s := d.Msg
	if d.Pos.IsValid() {
		pos := d.Pos
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(wd, pos.Filename); err == nil && !strings.HasPrefix(rel, "..") {
				pos.Filename = rel
			}
		}
		s = pos.String() + ": " + s
	}
	if d.Warning {
		s = strings.Replace(s, d.Msg, "warning: "+d.Msg, 1)
	}
	if d.Fix != "" {
		s += "\n\tfix: " + d.Fix
	}
	return s
}

// Error is every error diagnostic of a build, sorted by position.
type Error struct{ Diags []Diagnostic }

func (e *Error) Error() string {
	lines := make([]string, len(e.Diags))
	for i, d := range e.Diags {
		lines[i] = d.String()
	}
	return fmt.Sprintf("%d problem(s) in the API types:\n%s", len(e.Diags), strings.Join(lines, "\n"))
}

func sortDiags(d []Diagnostic) {
	sort.SliceStable(d, func(i, j int) bool {
		a, b := d[i].Pos, d[j].Pos
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Line < b.Line
	})
}
