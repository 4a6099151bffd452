package model

import (
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	gengonamer "k8s.io/gengo/v2/namer"
	gengotypes "k8s.io/gengo/v2/types"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/version"

	"golang.org/x/tools/go/packages"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	clientscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/aagen-dev/aagen/generator/load"
	"github.com/aagen-dev/aagen/generator/markers"
)

const metav1Path = "k8s.io/apimachinery/pkg/apis/meta/v1"

var goIdentRE = regexp.MustCompile(`^[a-z][a-z0-9]*$`)

var versionRE = regexp.MustCompile(`^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$`)

// Config is what a run says about the types beyond their markers.
type Config struct {
	// Backends are kinds, as <Kind>.<group>, served from the user's backend as if each
	// version's type were marked +aagen:backend: the way to serve a published package's
	// kinds (k8s.io/metrics' PodMetrics, as metrics-server does) without editing it.
	Backends []string
}

// Build makes the model of the loaded packages. It returns the model and warnings, or an
// *Error holding every problem found (not just the first).
func Build(res *load.Result, reg *markers.Registry, cfg Config) (*Model, []Diagnostic, error) {
	b := &builder{reg: reg, groups: map[string]*Group{}, storageMarkers: map[*Kind]token.Position{}, jsonNamesChecked: map[*Type]bool{}, conversionTargets: conversionTargets(res.Packages),
		decls: map[GoType]*typeDecl{}, internalPkgs: map[string]bool{}, depFiles: map[string]string{}, builtin: builtinGroups(),
		backends: map[string]bool{}}
	for _, kg := range cfg.Backends {
		b.backends[kg] = false
	}
	m := &Model{ModuleDir: res.ModuleDir, ModulePath: res.ModulePath}
	b.types = loadedTypes(res)
	for _, p := range res.Packages {
		b.pkg(p)
	}
	b.readTypes(res)
	m.Types = b.types
	b.unusedBackends()
	for _, g := range b.groups {
		sort.Slice(g.Versions, func(i, j int) bool {
			return version.CompareKubeAwareVersionStrings(g.Versions[i].Name, g.Versions[j].Name) > 0
		})
		m.Groups = append(m.Groups, g)
	}
	sort.Slice(m.Groups, func(i, j int) bool { return m.Groups[i].Name < m.Groups[j].Name })
	if len(m.Groups) == 0 && len(b.diags) == 0 {
		b.errorf(token.Position{}, "add a types package with `// +groupName=<group>` in its doc.go and kinds marked `// +genclient`",
			"no API kinds found in the packages given")
	}
	b.checkClientMethods(m, res)
	b.checkServer(m)
	b.protobuf(m)
	b.dependencyDiags()
	var errs, warns []Diagnostic
	for _, d := range b.diags {
		if d.Warning {
			warns = append(warns, d)
		} else {
			errs = append(errs, d)
		}
	}
	sortDiags(warns)
	if len(errs) > 0 {
		sortDiags(errs)
		return nil, warns, &Error{Diags: errs}
	}
	return m, warns, nil
}

type builder struct {
	reg    *markers.Registry
	groups map[string]*Group
	diags  []Diagnostic
	// storageMarkers are the positions of +kubebuilder:storageversion, by kind. The marker
	// picks the hub (checkVersions) or, with an internal package, the version objects are
	// written to etcd in (checkInternal); it is kept here, never on the Kind.
	storageMarkers map[*Kind]token.Position
	// conversionTargets are the import paths version packages name in
	// +k8s:conversion-gen=<path>: the internal (hub) packages of their groups.
	conversionTargets map[string]bool
	// served are the types packages that became versions (internal ones too), in load order.
	served []servedPackage
	// decls are the type declarations of the types packages and of the packages they
	// reach, with their markers, by type.
	decls map[GoType]*typeDecl
	// internalPkgs are the import paths of the groups' internal packages.
	internalPkgs map[string]bool
	// types is the type graph (Model.Types), once built.
	types *Types
	// jsonNamesChecked are the structs whose JSON names jsonNamesOnce has checked, once
	// for every kind that reaches them.
	jsonNamesChecked map[*Type]bool
	// depFiles are the files of other modules whose markers were read, with their module's
	// path: a problem there is the dependency's, reported as a warning (see dependencyDiags).
	depFiles map[string]string
	// builtin are the groups kube-apiserver serves itself (builtinGroups).
	builtin map[string]bool
	// backends are Config.Backends (<Kind>.<group>), each true once a kind it names is read.
	backends map[string]bool
	// clientMethods are the kinds' +genclient:method markers (checkClientMethods).
	clientMethods []clientMethodMarker
}

// dependencyDiags turns the errors found in other modules' sources into warnings: the user
// cannot fix them in this module, and the marker at fault is not applied (the field is
// served without that constraint), which the warning says at the marker's file:line.
func (b *builder) dependencyDiags() {
	for i, d := range b.diags {
		mod, ok := b.depFiles[d.Pos.Filename]
		if !ok || d.Warning {
			continue
		}
		b.diags[i] = Diagnostic{Pos: d.Pos, Warning: true,
			Msg: d.Msg + " (in module " + mod + ", a dependency: not applied)",
			Fix: "fix it in " + mod + " (or ask its maintainers); until then the field is served without it"}
	}
}

// servedPackage is a types package and the version it became.
type servedPackage struct {
	p *packages.Package
	v *Version
}

func (b *builder) errorf(pos token.Position, fix, format string, args ...any) {
	b.diags = append(b.diags, Diagnostic{Pos: pos, Msg: sprintf(format, args...), Fix: fix})
}

func (b *builder) warnf(pos token.Position, fix, format string, args ...any) {
	b.diags = append(b.diags, Diagnostic{Pos: pos, Warning: true, Msg: sprintf(format, args...), Fix: fix})
}

// markerDiags records the diagnostics of parsing the markers of a node; where names the node
// (WidgetSpec.Size, Widget) in the errors of values that do not parse, "" to keep the marker's text.
func (b *builder) markerDiags(ds []markers.Diagnostic, where string) {
	for _, d := range ds {
		msg := d.Msg
		if d.ValueMsg != "" && where != "" {
			msg = sprintf("+%s on %s: %s", d.Name, where, d.ValueMsg)
		}
		b.diags = append(b.diags, Diagnostic{Pos: d.Pos, Warning: d.Warning, Msg: msg, Fix: d.Fix})
	}
}

// typeDecl is a type declaration with its markers.
type typeDecl struct {
	spec    *ast.TypeSpec
	markers markers.Set
	pos     token.Position
	doc     string
	// fields are the markers of a struct type's fields, by Go field name; fieldDocs their
	// doc comments.
	fields    map[string]markers.Set
	fieldDocs map[string]string
}

// typeDecls reads the type declarations of a file with their markers; with want, only
// those of the types it names.
func (b *builder) typeDecls(fset *token.FileSet, f *ast.File, want func(name string) bool) []typeDecl {
	var decls []typeDecl
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, s := range gd.Specs {
			ts := s.(*ast.TypeSpec)
			if want != nil && !want(ts.Name.Name) {
				continue
			}
			doc := ts.Doc
			if doc == nil && len(gd.Specs) == 1 {
				doc = gd.Doc
			}
			anchor := ts.Pos()
			if doc != nil {
				anchor = doc.Pos()
			} else if len(gd.Specs) == 1 {
				anchor = gd.Pos()
			}
			groups := []*ast.CommentGroup{secondClosest(fset, f, anchor), doc}
			ms, ds := b.reg.Parse(fset, markers.OnType, groups...)
			b.markerDiags(ds, ts.Name.Name)
			d := typeDecl{spec: ts, markers: ms, pos: fset.Position(ts.Name.Pos()), doc: docText(doc)}
			if st, ok := ts.Type.(*ast.StructType); ok {
				d.fields, d.fieldDocs = b.fieldMarkers(fset, ts.Name.Name, st)
			}
			decls = append(decls, d)
		}
	}
	return decls
}

func (b *builder) pkg(p *packages.Package) {
	fset := p.Fset
	// Package markers: every comment above the package clause of every file.
	var pkgMarkers markers.Set
	var pkgPos token.Position
	var decls []typeDecl
	for _, f := range p.Syntax {
		var above []*ast.CommentGroup
		for _, cg := range f.Comments {
			if cg.End() < f.Package {
				above = append(above, cg)
			}
		}
		ms, ds := b.reg.Parse(fset, markers.OnPackage, above...)
		b.markerDiags(ds, "")
		pkgMarkers = append(pkgMarkers, ms...)
		if !pkgPos.IsValid() || strings.HasSuffix(fset.Position(f.Package).Filename, "doc.go") {
			pkgPos = fset.Position(f.Package)
		}
		decls = append(decls, b.typeDecls(fset, f, nil)...)
	}
	if markers.Is[markers.Skip](pkgMarkers) || markers.Is[markers.SkipVersion](pkgMarkers) {
		return
	}
	if _, m, ok := markers.Find[markers.Required](pkgMarkers); ok {
		b.warnf(m.Pos, "mark the required fields +required", "+kubebuilder:validation:Required on a package (every field required unless marked optional) is not applied yet")
	}
	var kindDecls []typeDecl
	for _, d := range decls {
		if markers.Is[markers.SkipVersion](d.markers) {
			continue // controller-gen: this kind is left out of this version
		}
		root := markers.Is[markers.GenClient](d.markers) || markers.Is[markers.ObjectRoot](d.markers)
		if root && !b.isListDecl(p.PkgPath, d.spec.Name.Name) {
			kindDecls = append(kindDecls, d)
		} else if !root {
			for _, m := range firstOfEach(d.markers) {
				if isKindMarker(m) && !b.isListDecl(p.PkgPath, d.spec.Name.Name) {
					b.errorf(m.Pos, "add `// +genclient` (or `// +kubebuilder:object:root=true`) to serve the type as a kind, or remove the marker",
						"+%s on %s, which is not marked as a kind", m.Def.Canonical(), d.spec.Name.Name)
				}
			}
		}
	}
	groupName, gm, hasGroup := markers.Find[markers.GroupName](pkgMarkers)
	if !hasGroup {
		if len(kindDecls) > 0 {
			b.errorf(pkgPos, "add `// +groupName=<group>` (e.g. shop.example.com) to the package comment in doc.go",
				"package %s has API kinds (%s) but no +groupName", p.PkgPath, kindDecls[0].spec.Name.Name)
		}
		return
	}
	group := string(groupName)
	ok := true
	for _, other := range markers.FindAll[markers.GroupName](pkgMarkers) {
		if other.Value != groupName {
			b.errorf(other.Pos, "keep one +groupName in the comments of package "+p.Name+": the group its Kubernetes API is served in",
				"package %s names two groups: +groupName=%s (%s) and +groupName=%s", p.PkgPath, group, shortPos(gm.Pos), other.Value)
			ok = false
			break
		}
	}
	if errs := validation.IsDNS1123Subdomain(group); len(errs) > 0 || !strings.Contains(group, ".") {
		b.errorf(gm.Pos, "use a lower-case DNS name with at least one dot that you own, e.g. shop.example.com",
			"+groupName=%s is not a valid API group name", group)
		ok = false
	}
	b.builtinGroup(group, gm.Pos)
	verName := p.Name
	internal := !versionRE.MatchString(verName) && b.conversionTargets[p.PkgPath]
	if internal {
		verName = runtimeAPIVersionInternal
	} else if !versionRE.MatchString(verName) {
		b.errorf(pkgPos, "name the package (and its directory) after its version: v1, v1beta1, v2alpha1, ...; "+
			"for the group's internal (hub) package, as in k8s.io/sample-apiserver, put `// +k8s:conversion-gen="+p.PkgPath+"` in the doc.go of each version package",
			"package name %q is not a Kubernetes API version", verName)
		ok = false
	}
	if len(kindDecls) == 0 {
		b.errorf(gm.Pos, "mark each kind with `// +genclient` (or `// +kubebuilder:object:root=true`) above its type declaration",
			"package %s declares group %s but no kinds", p.PkgPath, group)
		return
	}
	// A package may register its kinds itself: upstream's register.go (SchemeBuilder,
	// localSchemeBuilder, addKnownTypes, AddToScheme, GroupName, ...) or a kubebuilder
	// project's groupversion_info.go (controller-runtime's scheme.Builder, filled by each
	// types file's init). aagen keeps what the package declares and generates the rest.
	declared, regOK := b.registration(p, group)
	ok = ok && regOK
	if !ok {
		return
	}
	dir := packageDir(p)
	pkgName := filepath.Base(filepath.Dir(dir))
	if internal {
		// The internal package is the group's directory itself; its versions are below it.
		pkgName = filepath.Base(dir)
	}
	if !goIdentRE.MatchString(pkgName) {
		b.errorf(pkgPos, "put version packages in a directory named after the group, e.g. pkg/apis/shop/v1 (lower-case letters and digits)",
			"directory %q above %s cannot name the group's Go packages (clients, listers, storage)", pkgName, verName)
		return
	}
	goName, goNamePos, ok := b.groupGoName(group, gm.Pos, pkgMarkers)
	if !ok {
		return
	}
	g := b.groups[group]
	if g == nil {
		g = &Group{Name: group, PackageName: pkgName, GoName: goName, goNamePos: goNamePos}
		b.groups[group] = g
	} else if g.PackageName != pkgName {
		b.errorf(pkgPos, "keep every version of a group under one directory, e.g. pkg/apis/"+g.PackageName+"/"+verName,
			"versions of group %s live under different directories (%s and %s)", group, g.PackageName, pkgName)
		return
	} else if g.GoName != goName {
		b.errorf(goNamePos, "give every version of "+group+" the same +groupGoName (client-gen names the group once in the clientset)",
			"the versions of group %s have the Go names %s and %s", group, g.GoName, goName)
		return
	}
	for _, v := range append(slices.Clone(g.Versions), g.Internal) {
		if v != nil && v.Name == verName {
			b.errorf(pkgPos, "keep one package per group and version",
				"%s/%s is defined twice: in %s and in %s", group, verName, v.ImportPath, p.PkgPath)
			return
		}
	}
	v := &Version{Group: g, Name: verName, ImportPath: p.PkgPath, PkgName: p.Name, Dir: dir, Pos: pkgPos, Internal: internal,
		Declared: declared, DefaultFuncs: declaresDefaultFuncs(p), ConversionNames: conversionNames(p)}
	for _, d := range kindDecls {
		if k := b.kind(p, v, d); k != nil {
			v.Kinds = append(v.Kinds, k)
		}
	}
	sort.Slice(v.Kinds, func(i, j int) bool { return v.Kinds[i].Name < v.Kinds[j].Name })
	for i := range decls {
		d := &decls[i]
		b.decls[GoType{Pkg: p.PkgPath, Name: d.spec.Name.Name}] = d
	}
	b.served = append(b.served, servedPackage{p, v})
	if internal {
		// Never serialized: no validation markers, no JSON paths; it is not served.
		for _, k := range v.Kinds {
			k.Unserved = true
		}
		b.internalPkgs[p.PkgPath] = true
		g.Internal = v
		return
	}
	g.Versions = append(g.Versions, v)
}

func (b *builder) kind(p *packages.Package, v *Version, d typeDecl) *Kind {
	name := d.spec.Name.Name
	k := &Kind{Version: v, Name: name, ListName: name + "List", Pos: d.pos, NamespaceScoped: true}
	t := b.structType(p.PkgPath, name)
	if t == nil {
		b.errorf(d.pos, "kinds are structs with metav1.TypeMeta, metav1.ObjectMeta, Spec and Status", "%s is marked as a kind but is not a struct", name)
		return nil
	}
	if d.spec.TypeParams != nil {
		b.errorf(d.pos, "declare a concrete struct type", "%s is generic; kinds cannot have type parameters", name)
		return nil
	}
	good := true
	if !embedsTypeMeta(t) {
		b.errorf(d.pos, "add the field `metav1.TypeMeta `json:\",inline\"`` to "+name,
			"kind %s does not embed metav1.TypeMeta with json:\",inline\" (or json:\"\")", name)
		good = false
	}
	if !hasField(t, "ObjectMeta", metav1Path, "ObjectMeta", "metadata") && !v.Internal {
		b.errorf(d.pos, "add the field `metav1.ObjectMeta `json:\"metadata,omitempty\"`` to "+name,
			"kind %s has no metav1.ObjectMeta field with json:\"metadata\"", name)
		good = false
	}
	b.list(p, k, d.pos)

	var hasStatusField bool
	for _, f := range t.Fields() {
		switch {
		case f.Embedded && f.Type.IsNamed(metav1Path, "TypeMeta"), f.GoName == "ObjectMeta":
		case f.GoName == "Status":
			hasStatusField = true
		case !f.Exported || f.JSONName == "-":
		default:
			k.SpecFields = append(k.SpecFields, f.GoName)
		}
	}

	// Scope, names and subresources.
	ms := d.markers
	resource, res, hasRes := markers.Find[markers.Resource](ms)
	if markers.Is[markers.NonNamespaced](ms) {
		k.NamespaceScoped = false
	}
	if hasRes {
		switch scope := resource.Scope; scope {
		case "", "Namespaced":
			if scope == "Namespaced" && markers.Is[markers.NonNamespaced](ms) {
				b.errorf(res.Pos, "remove one of them", "%s is +genclient:nonNamespaced but +kubebuilder:resource says scope=Namespaced", name)
				good = false
			}
		case "Cluster":
			k.NamespaceScoped = false
		default:
			b.errorf(res.Pos, "use scope=Namespaced or scope=Cluster", "unknown scope %q", scope)
			good = false
		}
	}
	k.Plural = gengonamer.NewAllLowercasePluralNamer(nil).Name(&gengotypes.Type{Name: gengotypes.Name{Name: name}})
	k.ClientPlural = k.Plural
	k.Singular = strings.ToLower(name)
	namesPos := res.Pos
	rn, rnm, hasResourceName := markers.Find[markers.ResourceName](ms)
	if hasResourceName {
		// client-gen's +resourceName names the resource in URLs and leaves the client's Go
		// names to the kind's plural (k8s.io/metrics: pods, PodMetricses()); the server,
		// discovery and docs serve the same name.
		namesPos = rnm.Pos
		if hasRes && resource.Path != "" && resource.Path != string(rn) {
			b.errorf(rnm.Pos, "keep one of them, or give both the same name",
				"%s has +resourceName=%s but +kubebuilder:resource:path=%s; a kind has one resource name", name, rn, resource.Path)
			good = false
		}
		k.Plural = string(rn)
	}
	if hasRes {
		if resource.Path != "" {
			k.Plural = resource.Path
			if !hasResourceName {
				k.ClientPlural = resource.Path
			}
		}
		if resource.Singular != "" {
			k.Singular = resource.Singular
		}
		k.ShortNames = resource.ShortNames
		k.Categories = resource.Categories
	}
	for _, n := range append(append([]string{k.Plural, k.Singular}, k.ShortNames...), k.Categories...) {
		if errs := validation.IsDNS1035Label(n); len(errs) > 0 {
			b.errorf(namesPos, "resource names, short names and categories are lower-case letters, digits and '-', starting with a letter",
				"%q is not a valid resource name for %s: %s", n, name, strings.Join(errs, "; "))
			good = false
		}
	}
	status, statusMarker, _ := markers.Find[markers.StatusSubresource](ms)
	hasStatusMarker := bool(status)
	switch {
	case hasStatusMarker && !hasStatusField:
		b.errorf(statusMarker.Pos, "add a `Status "+name+"Status `json:\"status,omitempty\"`` field or remove the marker",
			"%s has +kubebuilder:subresource:status but no Status field", name)
		good = false
	case hasStatusField && markers.Is[markers.NoStatus](ms):
	case hasStatusField && (hasStatusMarker || markers.Is[markers.GenClient](ms)):
		k.HasStatus = true
	}
	if !b.readOnlyMarker(k, ms) {
		good = false
	}
	b.clientMethodMarkers(k, ms)
	if sv, m, _ := markers.Find[markers.StorageVersion](ms); sv {
		b.storageMarkers[k] = m.Pos
	}
	k.Unserved = markers.Is[markers.UnservedVersion](ms)
	if dv, _, ok := markers.Find[markers.DeprecatedVersion](ms); ok {
		k.Deprecated = true
		k.DeprecationWarning = dv.Warning
		if k.DeprecationWarning == "" {
			// The default of a CRD's deprecated version.
			k.DeprecationWarning = v.Group.Name + "/" + v.Name + " " + name + " is deprecated"
		}
	}
	if !b.backendMarker(k, ms) {
		good = false
	}
	if !b.subresources(p, k, d) {
		good = false
	}
	if !good {
		return nil
	}
	return k
}

// list checks that <Kind>List exists with ListMeta and Items []<Kind>.
func (b *builder) list(p *packages.Package, k *Kind, pos token.Position) {
	t := b.structType(p.PkgPath, k.ListName)
	fix := "declare `type " + k.ListName + " struct { metav1.TypeMeta `json:\",inline\"`; metav1.ListMeta `json:\"metadata,omitempty\"`; Items []" + k.Name + " `json:\"items\"` }`"
	if t == nil {
		b.errorf(pos, fix, "kind %s has no list type %s", k.Name, k.ListName)
		return
	}
	if !embedsTypeMeta(t) || !hasField(t, "ListMeta", metav1Path, "ListMeta", "metadata") && !k.Version.Internal {
		b.errorf(t.Pos, fix, "%s needs metav1.TypeMeta (inline) and metav1.ListMeta (json:\"metadata\")", k.ListName)
		return
	}
	items := t.Field("Items")
	if items == nil {
		b.errorf(t.Pos, fix, "%s has no Items field", k.ListName)
		return
	}
	if items.Type.Kind != ExprSlice || !items.Type.Elem.IsNamed(p.PkgPath, k.Name) {
		b.errorf(items.Pos, fix, "%s.Items must be []%s", k.ListName, k.Name)
		return
	}
	if items.JSONName != "items" && !k.Version.Internal {
		b.errorf(items.Pos, "tag it `json:\"items\"`", "%s.Items must have json name \"items\"", k.ListName)
	}
}

// groupGoName returns the name of group in the Go identifiers of the generated clients
// (ShopV1(), CertManagerV1()) and where it comes from: +groupGoName among the package
// markers, as client-gen reads it, else the group's first label capitalized, client-gen's
// default. A first label that is not a Go identifier (cert-manager) needs the marker.
func (b *builder) groupGoName(group string, groupPos token.Position, pkgMarkers markers.Set) (string, token.Position, bool) {
	first, _, _ := strings.Cut(group, ".")
	if v, m, ok := markers.Find[markers.GroupGoName](pkgMarkers); ok {
		name := gengonamer.IC(string(v))
		if !goExportedRE.MatchString(name) {
			b.errorf(m.Pos, "write a Go identifier of letters and digits, e.g. +groupGoName="+suggestGoName(first),
				"+groupGoName=%s is not a Go identifier (client-gen names the group %sV1() with it)", v, name)
			return "", m.Pos, false
		}
		return name, m.Pos, true
	}
	if !goIdentRE.MatchString(first) {
		b.errorf(groupPos, "add `// +groupGoName="+suggestGoName(first)+"` to the package comment: client-gen's Go name for the group",
			"the first label of group %s names the group in the clientset's Go identifiers (client-gen's <Group>V1()), and %q is not a Go identifier", group, first)
		return "", groupPos, false
	}
	return gengonamer.IC(first), groupPos, true
}

var goExportedRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)

// suggestGoName spells a DNS label as a Go name: cert-manager gives CertManager.
func suggestGoName(label string) string {
	var out string
	for _, part := range strings.FieldsFunc(label, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }) {
		out += gengonamer.IC(part)
	}
	if out == "" || !goExportedRE.MatchString(out) {
		return "MyGroup"
	}
	return out
}

// checkServer checks what must be unique across the whole server.
func (b *builder) checkServer(m *Model) {
	goNames := map[string]*Group{}
	for _, g := range m.Groups {
		if o := goNames[g.GoName]; o != nil {
			b.errorf(g.goNamePos, "give one of them another +groupGoName",
				"groups %s and %s have the same Go name %s in the clientset (%sV1())", o.Name, g.Name, g.GoName, g.GoName)
		}
		goNames[g.GoName] = g
	}
	pkgNames := map[string]string{}
	short := map[string]*Kind{}
	for _, g := range m.Groups {
		if len(g.Versions) == 0 {
			b.errorf(g.Internal.Pos, "add a version package (e.g. "+g.PackageName+"/v1alpha1) whose doc.go has `// +k8s:conversion-gen="+g.Internal.ImportPath+"`",
				"group %s has an internal package but no version to serve", g.Name)
			continue
		}
		if other, dup := pkgNames[g.PackageName]; dup {
			b.errorf(g.Versions[0].Pos, "put the groups' versions under directories with different names",
				"groups %s and %s both live in directories named %q, which name their Go packages", other, g.Name, g.PackageName)
		}
		pkgNames[g.PackageName] = g.Name
		plurals := map[string]*Kind{}
		for _, v := range g.Versions {
			for _, k := range v.Kinds {
				if o := plurals[k.Plural]; o != nil && o != k && o.Name != k.Name {
					b.errorf(k.Pos, "set a distinct path with +kubebuilder:resource:path=<plural>",
						"kinds %s and %s of group %s have the same plural %q", o.Name, k.Name, g.Name, k.Plural)
				}
				plurals[k.Plural] = k
				for _, s := range k.ShortNames {
					if o := short[s]; o != nil && o != k && (o.Name != k.Name || o.Version.Group != g) {
						b.errorf(k.Pos, "short names must be unique across the server", "short name %q is used by %s and %s", s, o.Name, k.Name)
					}
					short[s] = k
				}
			}
		}
		b.checkVersions(g)
	}
}

// checkVersions picks the hub of each kind of g (the version marked
// +kubebuilder:storageversion, which is also the version stored) and checks that the versions
// of a kind agree on what must be the same in all of them (resource names, scope), and
// says which version package converts to which.
func (b *builder) checkVersions(g *Group) {
	byName := map[string][]*Kind{}
	var names []string
	for _, v := range g.Versions {
		for _, k := range v.Kinds {
			if byName[k.Name] == nil {
				names = append(names, k.Name)
			}
			byName[k.Name] = append(byName[k.Name], k)
		}
	}
	sort.Strings(names)
	if b.checkInternal(g, names, byName) {
		return
	}
	hubs := map[*Version]map[*Version][]string{} // version -> hub versions -> kinds
	for _, name := range names {
		ks := byName[name] // preferred version first
		r := g.addResource(name, ks)
		var vs []string
		for _, k := range ks {
			vs = append(vs, k.Version.Name)
		}
		var marked []*Kind
		for _, k := range ks {
			if _, ok := b.storageMarkers[k]; ok {
				marked = append(marked, k)
			}
		}
		var hub *Kind
		switch {
		case len(ks) == 1:
			hub = ks[0]
		case len(marked) == 0:
			last := ks[len(ks)-1]
			b.errorf(last.Pos, "add `// +kubebuilder:storageversion` above "+name+" in exactly one of its versions (usually the most stable, "+ks[0].Version.Name+
				"): objects are stored in that version and the others convert to and from it",
				"kind %s of group %s is defined in %s but none of them is marked as the storage version", name, g.Name, strings.Join(vs, ", "))
			continue
		case len(marked) > 1:
			var where []string
			for _, k := range marked {
				where = append(where, k.Version.Name)
			}
			b.errorf(b.storageMarkers[marked[1]], "keep `// +kubebuilder:storageversion` on one version of "+name+" and remove it from the others",
				"kind %s of group %s is marked +kubebuilder:storageversion in %s; exactly one version is stored", name, g.Name, strings.Join(where, " and "))
			continue
		default:
			hub = marked[0]
		}
		hub.Hub = true
		r.Hub = hub
		b.checkResource(r, hub, ", its storage version")
		b.hubConversions(ks, hub)
		for _, k := range ks {
			if k == hub {
				continue
			}
			if hubs[k.Version] == nil {
				hubs[k.Version] = map[*Version][]string{}
			}
			hubs[k.Version][hub.Version] = append(hubs[k.Version][hub.Version], name)
		}
	}
	for _, v := range g.Versions {
		h := hubs[v]
		switch len(h) {
		case 0:
		case 1:
			for hub := range h {
				v.ConvertTo = hub
			}
		default:
			var parts []string
			for hub, kinds := range h {
				parts = append(parts, strings.Join(kinds, ", ")+" in "+hub.Name)
			}
			sort.Strings(parts)
			b.errorf(v.Pos, "mark the same version with +kubebuilder:storageversion for every kind of "+v.Name+" that is served in several versions",
				"the kinds of %s are stored in different versions (%s); aagen converts each version package to one storage version", v.GroupVersion(), strings.Join(parts, "; "))
		}
	}
}

// hubConversions sets ConvertsThroughHub on the kinds of ks (one kind's versions) that
// convert themselves to and from hub, as controller-runtime's conversion webhook has them
// do; it warns where half of that is there: ConvertTo and ConvertFrom without a Hub method
// on the storage version (controller-runtime's hub must be the version objects are stored
// in here), or a Hub method on another version than the storage version.
func (b *builder) hubConversions(ks []*Kind, hub *Kind) {
	hubType := b.structType(hub.Version.ImportPath, hub.Name)
	for _, k := range ks {
		t := b.structType(k.Version.ImportPath, k.Name)
		if t == nil || hubType == nil {
			continue
		}
		switch {
		case k != hub && t.ConversionHub:
			b.warnf(k.Pos, "move `func (*"+k.Name+") Hub() {}` to the storage version's "+k.Name+" ("+hub.Version.Name+")",
				"%s of %s has controller-runtime's Hub method, but %s is stored in %s: the other versions convert to and from %s, not %s, so their ConvertTo and ConvertFrom are not used",
				k.Name, k.Version.GroupVersion(), k.Name, hub.Version.Name, hub.Version.Name, k.Version.Name)
		case k != hub && t.Convertible && !hubType.ConversionHub:
			b.warnf(k.Pos, "add `func (*"+k.Name+") Hub() {}` to "+k.Name+" in "+hub.Version.Name+", its storage version",
				"%s of %s has ConvertTo and ConvertFrom (controller-runtime's conversion.Convertible), but %s of %s has no Hub method: they are not used, and conversion-gen's conversions are",
				k.Name, k.Version.GroupVersion(), k.Name, hub.Version.GroupVersion())
		case k != hub && t.Convertible:
			k.ConvertsThroughHub = true
		}
	}
}

// addResource adds the resource of kind name, defined by ks (preferred version first), to g.
func (g *Group) addResource(name string, ks []*Kind) *Resource {
	r := &Resource{Group: g, Kind: name, Versions: ks}
	for _, k := range ks {
		k.Resource = r
	}
	g.Resources = append(g.Resources, r)
	return r
}

// checkResource checks what every version of r must agree on, against ref (the hub,
// refName saying so in messages, or the preferred version when the hub is an
// internal type): resource names and scope; that one version at least is served; and the
// markers that apply to the resource as a whole: imperative subresources and +aagen:backend.
func (b *builder) checkResource(r *Resource, ref *Kind, refName string) {
	served := false
	var vs []string
	for _, k := range r.Versions {
		vs = append(vs, k.Version.Name)
		served = served || !k.Unserved
		if k == ref {
			continue
		}
		if k.Plural != ref.Plural || k.Singular != ref.Singular {
			b.errorf(k.Pos, "give "+r.Kind+" the same +kubebuilder:resource path and singular in every version",
				"kind %s is the resource %q (singular %q) in %s but %q (singular %q) in %s%s; a kind has one resource name in all versions",
				r.Kind, k.Plural, k.Singular, k.Version.Name, ref.Plural, ref.Singular, ref.Version.Name, refName)
		}
		if k.NamespaceScoped != ref.NamespaceScoped {
			b.errorf(k.Pos, "give "+r.Kind+" the same scope in every version",
				"kind %s is %s in %s but %s in %s%s", r.Kind, scopeName(k), k.Version.Name, scopeName(ref), ref.Version.Name, refName)
		}
	}
	if !served {
		b.errorf(r.Versions[0].Pos, "remove +kubebuilder:unservedversion from one version of "+r.Kind,
			"kind %s of group %s is unserved in every version (%s)", r.Kind, r.Group.Name, strings.Join(vs, ", "))
	}
	b.checkSubresources(r)
	b.backendResource(r)
	b.readOnlyResource(r)
}

func scopeName(k *Kind) string {
	if k.NamespaceScoped {
		return "namespaced"
	}
	return "cluster-scoped"
}

// isVar reports whether p declares a package-level variable name.
func isVar(p *packages.Package, name string) bool {
	_, ok := p.Types.Scope().Lookup(name).(*types.Var)
	return ok
}

func packageDir(p *packages.Package) string {
	if len(p.GoFiles) > 0 {
		return filepath.Dir(p.GoFiles[0])
	}
	return ""
}

// secondClosest returns the comment group that ends exactly one blank line above pos
// (code-generator's "second closest comment lines", where kind markers often live).
func secondClosest(fset *token.FileSet, f *ast.File, pos token.Pos) *ast.CommentGroup {
	line := fset.Position(pos).Line
	for _, cg := range f.Comments {
		if fset.Position(cg.End()).Line == line-2 {
			return cg
		}
	}
	return nil
}

func (b *builder) isListDecl(pkg, name string) bool {
	if !strings.HasSuffix(name, "List") {
		return false
	}
	t := b.structType(pkg, name)
	return t != nil && t.Field("Items") != nil
}

// structType returns the struct type pkg.name of the type graph, nil when there is none.
func (b *builder) structType(pkg, name string) *Type {
	t := b.types.Lookup(GoType{Pkg: pkg, Name: name})
	if t == nil || !t.IsStruct() {
		return nil
	}
	return t
}

// isKindMarker reports whether m is a marker that only a kind may carry.
func isKindMarker(m markers.Marker) bool {
	switch m.Parsed.(type) {
	case markers.NonNamespaced, markers.NoStatus, markers.Resource, markers.StatusSubresource, markers.StorageVersion,
		markers.Scale, markers.PrintColumn, markers.SelectableField, markers.Backend, markers.Subresource, markers.ResourceName:
		return true
	}
	return false
}

// firstOfEach returns the first marker of each definition in ms (another spelling counts
// as the same definition), in source order.
func firstOfEach(ms markers.Set) markers.Set {
	var out markers.Set
	seen := map[string]bool{}
	for _, m := range ms {
		if !seen[m.Def.Canonical()] {
			seen[m.Def.Canonical()] = true
			out = append(out, m)
		}
	}
	return out
}

// IsNamed reports whether t is the named type pkg.name.
func IsNamed(t types.Type, pkg, name string) bool {
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == pkg && n.Obj().Name() == name
}

// embedsTypeMeta reports whether t embeds metav1.TypeMeta inline: tagged json:",inline"
// (kubebuilder's form), json:"" (the form k8s.io/api v0.37 and sample-apiserver use) or
// without a json tag (an internal version's types, which are never serialized). encoding/json
// inlines an embedded struct in all three.
func embedsTypeMeta(t *Type) bool {
	for _, f := range t.Fields() {
		if f.Embedded && f.Type.IsNamed(metav1Path, "TypeMeta") {
			switch f.Tag.Get("json") {
			case ",inline", "":
				return true
			}
			return false
		}
	}
	return false
}

// hasField reports whether t has the field of Go type pkg.name, and whether its JSON name is json.
func hasField(t *Type, field, pkg, name, json string) bool {
	f := t.Field(field)
	return f != nil && f.Type.IsNamed(pkg, name) && f.JSONName == json
}

// apiregistrationGroup is the group of APIServices, which kube-apiserver's aggregator
// serves itself; its Go package (k8s.io/kube-aggregator) is not a dependency of aagen.
const apiregistrationGroup = "apiregistration.k8s.io"

// builtinGroups are the API groups kube-apiserver serves itself: every group of
// k8s.io/api (client-go's scheme registers them all), apiextensions.k8s.io
// (CustomResourceDefinitions) and apiregistration.k8s.io (APIServices).
func builtinGroups() map[string]bool {
	groups := map[string]bool{apiextensionsv1.GroupName: true, apiregistrationGroup: true}
	for _, gv := range clientscheme.Scheme.PrioritizedVersionsAllGroups() {
		groups[gv.Group] = true
	}
	return groups
}

// builtinGroup warns when a package declares a group kube-apiserver serves itself: the
// APIService of each of its versions (config/deploy) would send that group version's
// requests to this server instead, taking it over from kube-apiserver.
func (b *builder) builtinGroup(group string, pos token.Position) {
	if !b.builtin[group] {
		return
	}
	b.warnf(pos, "serve it under a group of a domain you own (e.g. "+strings.SplitN(group, ".", 2)[0]+".example.com); keep "+group+" only to replace kube-apiserver's own API",
		"group %s is served by kube-apiserver itself: the APIService of each version this server registers (config/deploy) takes that group version over from kube-apiserver", group)
}
