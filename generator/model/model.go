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
	"slices"
	"sort"
	"strings"
)

// Model is the whole API served by one server.
type Model struct {
	ModuleDir  string
	ModulePath string
	Groups     []*Group
	// Types is the type graph: every type the types packages declare and reach, wherever it
	// is declared, with the facts and markers of its fields (see typegraph.go).
	Types *Types `json:"-"`
}

// Group is one API group.
type Group struct {
	// Name is the group, e.g. "shop.example.com".
	Name string
	// PackageName is the short name used for Go packages and directories, e.g. "shop".
	PackageName string
	// GoName is the group's name in the Go identifiers of the generated clients (the
	// clientset's ShopV1()): +groupGoName, or the first label of Name capitalized, as
	// client-gen names it.
	GoName string
	// goNamePos is where GoName comes from (the +groupGoName or +groupName marker).
	goNamePos token.Position
	// Versions are the group's types packages, preferred first (Kubernetes version priority).
	Versions []*Version
	// Internal is the group's internal (unversioned) package when it has one, as in
	// k8s.io/sample-apiserver: a package named after the group directory (not a version)
	// that the version packages name in +k8s:conversion-gen. Its types are every kind's hub:
	// what the storage holds and what each version converts to and from. It is not served
	// and not in Versions.
	Internal *Version
	// StorageVersion is, with an internal package, the version objects are written to etcd
	// in: the most preferred version that defines every kind of the group (or the one marked
	// +kubebuilder:storageversion). Nil without an internal package: each resource is then
	// written in its hub's version (Resource.StorageVersion).
	StorageVersion *Version
	// Resources are the group's kinds, each across all the versions that define it, by kind name.
	Resources []*Resource
}

// Packages are the group's Go packages: the internal package first when there is one, then
// the versions, preferred first.
func (g *Group) Packages() []*Version {
	if g.Internal == nil {
		return g.Versions
	}
	return append([]*Version{g.Internal}, g.Versions...)
}

// Resource is one kind of a group across every version that defines it: what the server
// serves as one REST resource, backed by one storage that holds the kind's hub type.
// Names, scope and subresources are the same in every version (the model checks it);
// validation, defaults, columns and deprecation belong to each version (Kind).
//
// Two versions matter to the storage and are told apart by name: the Hub, whose Go type
// the storage holds and every other version converts to and from, and the StorageVersion,
// the version objects are written to etcd in. They are the same version unless the group
// has an internal package.
type Resource struct {
	Group *Group `json:"-"`
	// Kind is the kind name, e.g. "Widget".
	Kind string
	// Versions are the kind in each version of the group that defines it, preferred first.
	Versions []*Kind
	// Hub is the kind whose Go type the storage holds and the other versions convert to
	// and from: the kind in the version marked +kubebuilder:storageversion (or its only
	// version), or with an internal package the kind in that package (not served; not in
	// Versions). Its Kind.Hub is set.
	Hub *Kind
	// Backend is set when the kind is served from the user's own backend (+aagen:backend)
	// instead of etcd: see backend.go.
	Backend bool
	// ReadOnly is set when the kind is +genclient:readonly and not served from a backend:
	// its storage serves get, list and watch only (discovery lists those verbs; writes
	// are 405). See readonly.go.
	ReadOnly bool
}

// StorageVersion returns the version the resource's objects are written to etcd in: the
// group's StorageVersion with an internal package, else the hub's version.
func (r *Resource) StorageVersion() *Version {
	if r.Group.StorageVersion != nil {
		return r.Group.StorageVersion
	}
	return r.Hub.Version
}

// Served returns the kind in each version it is served in, preferred first.
func (r *Resource) Served() []*Kind {
	var out []*Kind
	for _, k := range r.Versions {
		if !k.Unserved {
			out = append(out, k)
		}
	}
	return out
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
	// MethodTypes are the types of this package other than kinds that the input= or
	// result= of a served kind's +genclient:method names (autoscaling/v1's Scale, named by
	// apps/v1's GetScale): the generated clients decode into them, so they are objects of the
	// version like the subresources' bodies (SubresourceTypes).
	MethodTypes []string
	// Internal is set on a group's internal package (Group.Internal); Name is then
	// runtime.APIVersionInternal ("__internal").
	Internal bool
	// DefaultFuncs is set when the package declares SetDefaults_<Type> functions (upstream's
	// defaults.go): defaulter-gen then writes RegisterDefaults calling them.
	DefaultFuncs bool
	// Declared are the registration identifiers (load.RegistrationNames) the package declares
	// itself, in upstream's register.go or kubebuilder's groupversion_info.go; aagen's
	// zz_generated.register.go declares the others, the way register-gen does.
	Declared []string
	// ConversionNames are the conversion functions (Convert_..., autoConvert_...) the
	// package's hand-written files declare or call, sorted: Cluster API's ConvertTo calls
	// the conversion-gen functions of its kind, which conversion-gen must then still write.
	ConversionNames []string
	// ConvertTo is the storage (hub) version this package's kinds convert to when some of
	// them are stored in another version of the group; nil when nothing converts.
	// conversion-gen writes zz_generated.conversion.go here, with functions in both directions.
	ConvertTo *Version
	// FieldDefaults is set when a field of a type the package declares or reaches has a
	// default (+kubebuilder:default): defaulter-gen then writes the package's defaulters.
	FieldDefaults bool
	// Protobuf is what the protobuf encoding makes of the package's types: the messages aagen
	// writes, or the fields that keep it JSON-only (see protobuf.go).
	Protobuf *Protobuf `json:"-"`
	Pos      token.Position
}

// Kind is a kind in one version: one Go type of a types package with its names, scope
// and markers. Most kinds are served; those marked +kubebuilder:unservedversion are not
// (they only convert), nor are the kinds of a group's internal package (hubs).
type Kind struct {
	Version *Version `json:"-"`
	// Resource is the kind across all its versions.
	Resource *Resource `json:"-"`
	// Name is the kind and Go type name, e.g. "Widget"; ListName its list type.
	Name, ListName string
	// Plural and Singular are the lower-case resource names: Plural is the resource the
	// server serves and discovery, clients, roles and docs name (+kubebuilder:resource:path,
	// +resourceName, or the plural of the kind).
	Plural, Singular string
	// ClientPlural is the lower-case plural the generated clients' Go names follow
	// (Widgets() in the clientset): Plural, except with +resourceName, where client-gen
	// keeps the plural of the kind's name (PodMetricses() for the resource pods).
	ClientPlural    string
	ShortNames      []string
	Categories      []string
	NamespaceScoped bool
	// HasStatus is set when the /status subresource is served.
	HasStatus bool
	// SpecFields are the top-level fields other than TypeMeta, ObjectMeta and Status:
	// the desired state (usually just Spec).
	SpecFields []string
	// PrintColumns are the columns kubectl get shows after NAME, in marker order
	// (+kubebuilder:printcolumn).
	PrintColumns []PrintColumn
	// SelectableFields are the fields usable in field selectors besides metadata.name and
	// metadata.namespace (+kubebuilder:selectablefield), in marker order.
	SelectableFields []FieldPath
	// Scale is set when the /scale subresource is served (+kubebuilder:subresource:scale).
	Scale *Scale
	// Subresources are the imperative subresources (+aagen:subresource:...), in marker
	// order; see subresources.go.
	Subresources []Subresource
	// Hub is set on the kind that is its Resource's Hub: the storage holds its Go type and
	// the kind's other versions convert to and from it. It says nothing about the version
	// written to etcd (Resource.StorageVersion), which differs with an internal package.
	Hub bool
	// ConvertsThroughHub is set on a kind of another version than its Resource's Hub when
	// it converts itself, as a kubebuilder project's kinds do for controller-runtime's
	// conversion webhook: its type has ConvertTo and ConvertFrom (conversion.Convertible)
	// and the Hub's has the Hub method. The server registers those methods as the kind's
	// conversions (and its list's, item by item), and conversion-gen is not run on the
	// types only such kinds reach (Model.SelfConverted).
	ConvertsThroughHub bool
	// Unserved is set by +kubebuilder:unservedversion: the version is not installed nor
	// discoverable, but objects still convert to and from it.
	Unserved bool
	// Deprecated is set by +kubebuilder:deprecatedversion; DeprecationWarning is the
	// warning sent with every response in this version (a default when the marker has none).
	Deprecated         bool
	DeprecationWarning string
	// ReadOnly is set by +genclient:readonly (see Resource.ReadOnly); ReadOnlyPos is the
	// marker's position.
	ReadOnly    bool
	ReadOnlyPos token.Position
	// Backend is set by +aagen:backend (see Resource.Backend); BackendPos is the marker's position.
	Backend    bool
	BackendPos token.Position
	Pos        token.Position
}

// PrintColumn is one column of kubectl get, with the meaning of a CRD's
// additionalPrinterColumns entry.
type PrintColumn struct {
	// Name is the column header.
	Name string
	// Type is integer, number, string, boolean or date (shown as an age).
	Type string
	// Format is an optional OpenAPI format (int32, int64, float, double, byte, date,
	// date-time, password).
	Format string
	// Description documents the column; empty means a default naming the JSON path.
	Description string
	// JSONPath selects the value, e.g. ".spec.dock" (wrapped in {} and evaluated with
	// k8s.io/client-go/util/jsonpath).
	JSONPath string
	// Priority 0 columns are always shown; higher ones only with -o wide.
	Priority int32
}

// FieldPath is a simple JSON path (.a.b.c) into a kind, resolved to the kind's Go fields.
type FieldPath struct {
	// JSONPath is the path as written, e.g. ".spec.dock".
	JSONPath string
	// Steps are the Go fields from the kind to the leaf, in order. An inline embedded
	// struct is a step of its own.
	Steps []FieldStep
	// Leaf is the JSON type of the leaf: "string", "integer" or "boolean".
	Leaf string
	// LeafType names the leaf's Go type when it is a named type (e.g. type Phase string),
	// for conversions; it is zero for predeclared types.
	LeafType GoType
	// LeafBasic is the predeclared type underlying the leaf, e.g. "int32" or "string".
	LeafBasic string
}

// FieldStep is one Go field on a FieldPath.
type FieldStep struct {
	// GoName is the Go field name.
	GoName string
	// Pointer is set when the field is a pointer.
	Pointer bool
	// Elem names the struct a pointer field points to (to allocate it); zero for the leaf.
	Elem GoType
}

// GoType names a Go type by import path and name.
type GoType struct{ Pkg, Name string }

// IsZero reports whether t names no type.
func (t GoType) IsZero() bool { return t.Name == "" }

// Label is the field's name in field selectors: the JSON path without its leading dot.
func (p FieldPath) Label() string { return strings.TrimPrefix(p.JSONPath, ".") }

// Scale is the /scale subresource: where the replicas and the selector live.
type Scale struct {
	// SpecReplicas is an int32 (or *int32) under .spec; StatusReplicas an int32 under .status.
	SpecReplicas, StatusReplicas FieldPath
	// Selector is a string under .spec or .status holding the label selector in string form;
	// nil without selectorpath.
	Selector *FieldPath
}

// HasScale reports whether any kind of the model serves /scale.
func (m *Model) HasScale() bool {
	for _, k := range m.AllKinds() {
		if k.Scale != nil {
			return true
		}
	}
	return false
}

// Served reports whether the version serves at least one kind.
func (v *Version) Served() bool {
	for _, k := range v.Kinds {
		if !k.Unserved {
			return true
		}
	}
	return false
}

// GroupVersion returns "group/version".
func (v *Version) GroupVersion() string { return v.Group.Name + "/" + v.Name }

// RelPath returns dir relative to the module root, slash-separated.
func (m *Model) RelPath(dir string) string {
	rel, err := filepath.Rel(m.ModuleDir, dir)
	if err != nil {
		return filepath.ToSlash(dir)
	}
	return filepath.ToSlash(rel)
}

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

// SelfConverted returns the types of v's package that only kinds converting themselves
// (Kind.ConvertsThroughHub) reach, their lists included, sorted: conversion-gen, which
// converts the types of one name between v and its hub, must leave them alone, since the
// kinds' own ConvertTo and ConvertFrom convert them (and conversion-gen could not convert
// fields that changed). conversion-gen keeps what anything else needs: the types other
// kinds of v reach, the types of v with one of the same name in the hub that no kind
// reaches (conversion-gen converts those too), and the types whose conversion-gen
// functions the package's own code names (ConversionNames), each with what it reaches.
func (m *Model) SelfConverted(v *Version) []string {
	var self, other []GoType
	for _, k := range v.Kinds {
		if k.Resource == nil || k.Hub {
			continue
		}
		roots := []GoType{{Pkg: v.ImportPath, Name: k.Name}, {Pkg: v.ImportPath, Name: k.ListName}}
		if k.ConvertsThroughHub {
			self = append(self, roots...)
		} else {
			other = append(other, roots...)
		}
	}
	if len(self) == 0 || v.ConvertTo == nil {
		return nil
	}
	reached := map[*Type]bool{}
	for _, t := range m.Types.Reachable(self...) {
		reached[t] = true
	}
	for _, t := range m.Types.All() {
		if t.Name.Pkg != v.ImportPath {
			continue
		}
		peer := m.Types.Lookup(GoType{Pkg: v.ConvertTo.ImportPath, Name: t.Name.Name})
		if peer != nil && !reached[t] || slices.ContainsFunc(v.ConversionNames, func(n string) bool { return convertsType(n, t.Name.Name) }) {
			other = append(other, t.Name)
		}
	}
	shared := map[*Type]bool{}
	for _, t := range m.Types.Reachable(other...) {
		shared[t] = true
	}
	var out []string
	for _, t := range m.Types.Reachable(self...) {
		if t.Name.Pkg == v.ImportPath && !shared[t] {
			out = append(out, t.Name.Name)
		}
	}
	sort.Strings(out)
	return out
}

// convertsType reports whether name is a conversion function of the type named typeName
// as conversion-gen names them: [auto]Convert_<pkg>_<typeName>_To_<pkg>_<typeName>.
func convertsType(name, typeName string) bool {
	name = strings.TrimPrefix(name, "auto")
	rest, ok := strings.CutPrefix(name, "Convert_")
	if !ok {
		return false
	}
	from, to, ok := strings.Cut(rest, "_To_")
	return ok && (strings.HasSuffix(from, "_"+typeName) || strings.HasSuffix(to, "_"+typeName))
}
