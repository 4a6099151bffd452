package scaffold

import (
	"bytes"
	"context"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

func initProject(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "foo")
	err := Init(context.Background(), InitOptions{Dir: dir, Domain: "example.com", Module: "example.com/foo", SkipGoMod: true})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestInit(t *testing.T) {
	dir := initProject(t)
	for _, f := range []string{"go.mod", "PROJECT", "Makefile", "README.md", ".gitignore", "pkg/apis/.gitkeep"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	gomod := read(t, filepath.Join(dir, "go.mod"))
	mf, err := modfile.Parse("go.mod", []byte(gomod), nil)
	if err != nil {
		t.Fatalf("go.mod: %v\n%s", err, gomod)
	}
	if mf.Module.Mod.Path != "example.com/foo" || mf.Go.Version != "1.26.0" {
		t.Errorf("go.mod: module %q go %q", mf.Module.Mod.Path, mf.Go.Version)
	}
	if len(mf.Require) != 1 || mf.Require[0].Mod.Path != "k8s.io/apimachinery" || mf.Require[0].Mod.Version != APIMachineryVersion() {
		t.Errorf("go.mod requires %v, want k8s.io/apimachinery %s", mf.Require, APIMachineryVersion())
	}
	if v := APIMachineryVersion(); !strings.HasPrefix(v, "v0.") {
		t.Errorf("APIMachineryVersion() = %q", v)
	}

	p, err := ReadProject(filepath.Join(dir, "PROJECT"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Domain != "example.com" || p.Repo != "example.com/foo" || len(p.Resources) != 0 {
		t.Errorf("PROJECT = %+v", p)
	}
	if s := read(t, filepath.Join(dir, "PROJECT")); !strings.Contains(s, "domain: example.com\n") || !strings.Contains(s, "repo: example.com/foo\n") {
		t.Errorf("PROJECT:\n%s", s)
	}

	mk := read(t, filepath.Join(dir, "Makefile"))
	for _, want := range []string{
		"\n\t$(AAGEN) generate $(APIS)\n",
		"\n\t$(AAGEN) generate --verify $(APIS)\n",
		"\n\tgo build ./cmd/...\n",
		"\n\t$(AAGEN) up $(APIS)\n",
		"\n\tgo test ./...\n",
		"kubectl apply -k config/deploy",
		"APIS ?= ./pkg/apis/...",
	} {
		if !strings.Contains(mk, want) {
			t.Errorf("Makefile lacks %q", want)
		}
	}
	for _, target := range []string{"generate", "verify", "build", "run", "test", "manifests", "help"} {
		if !strings.Contains(mk, "\n"+target+":") || !strings.Contains(mk, ".PHONY: "+target+"\n") {
			t.Errorf("Makefile lacks target %s", target)
		}
	}
	for i, line := range strings.Split(mk, "\n") {
		if strings.HasPrefix(line, "    ") {
			t.Errorf("Makefile line %d is indented with spaces, not a tab: %q", i+1, line)
		}
	}
	readme := read(t, filepath.Join(dir, "README.md"))
	for _, want := range []string{"# foo", "example.com/foo", "pkg/apis/", "aagen create api", "make generate", "hooks.go"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md lacks %q", want)
		}
	}
	if gi := read(t, filepath.Join(dir, ".gitignore")); !strings.Contains(gi, "/.aagen/") {
		t.Errorf(".gitignore:\n%s", gi)
	}
}

func TestInitRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := Init(context.Background(), InitOptions{Dir: dir, Domain: "example.com", Module: "example.com/foo", SkipGoMod: true})
	if err == nil || !strings.Contains(err.Error(), "not empty") || !strings.Contains(err.Error(), "main.go") {
		t.Fatalf("err = %v, want a not-empty error naming main.go", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
		t.Error("go.mod was written into a non-empty directory")
	}
	// A second init into an initialised project is refused the same way.
	proj := initProject(t)
	err = Init(context.Background(), InitOptions{Dir: proj, Domain: "example.com", Module: "example.com/foo", SkipGoMod: true})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("second init: err = %v", err)
	}
}

func TestInitAllowsDotfiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.swp"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Init(context.Background(), InitOptions{Dir: dir, Domain: "example.com", Module: "example.com/foo", SkipGoMod: true}); err != nil {
		t.Fatal(err)
	}
	gi := read(t, filepath.Join(dir, ".gitignore"))
	if !strings.HasPrefix(gi, "*.swp\n") || !strings.Contains(gi, "/.aagen/") {
		t.Errorf(".gitignore:\n%s", gi)
	}
}

func TestInitInvalid(t *testing.T) {
	for _, tc := range []struct {
		domain, module, want string
	}{
		{"", "example.com/foo", "--domain is required"},
		{"Example.com", "example.com/foo", `invalid --domain "Example.com"`},
		{"example..com", "example.com/foo", `invalid --domain "example..com"`},
		{"example.com", "", "--module is required"},
		{"example.com", "example.com/foo bar", "invalid --module"},
	} {
		dir := t.TempDir()
		err := Init(context.Background(), InitOptions{Dir: dir, Domain: tc.domain, Module: tc.module, SkipGoMod: true})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Init(%q, %q): err = %v, want %q", tc.domain, tc.module, err, tc.want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("Init(%q, %q) wrote files despite the error", tc.domain, tc.module)
		}
	}
}

// checkGo parses a Go file, checks it is gofmt-clean and returns it.
func checkGo(t *testing.T, path string) *ast.File {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.ParseComments)
	if err != nil {
		t.Fatalf("%s does not parse: %v\n%s", path, err, src)
	}
	formatted, err := format.Source(src)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(formatted, src) {
		t.Errorf("%s is not gofmt-clean", path)
	}
	return f
}

// structFields returns the field names of every struct type in f.
func structFields(f *ast.File) map[string][]string {
	out := map[string][]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return true
		}
		fields := []string{}
		for _, fl := range st.Fields.List {
			if len(fl.Names) == 0 {
				fields = append(fields, types(fl.Type))
			}
			for _, n := range fl.Names {
				fields = append(fields, n.Name)
			}
		}
		out[ts.Name.Name] = fields
		return false
	})
	return out
}

func types(e ast.Expr) string {
	if s, ok := e.(*ast.SelectorExpr); ok {
		return s.Sel.Name
	}
	return ""
}

func typeDoc(f *ast.File, name string) string {
	for _, d := range f.Decls {
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
			for _, s := range gd.Specs {
				if s.(*ast.TypeSpec).Name.Name == name && gd.Doc != nil {
					return gd.Doc.Text()
				}
			}
		}
	}
	return ""
}

func TestCreateAPI(t *testing.T) {
	dir := initProject(t)
	ctx := context.Background()
	if err := CreateAPI(ctx, APIOptions{Dir: dir, Group: "ships", Version: "v1alpha1", Kind: "Frigate", Status: true, SkipGoMod: true}); err != nil {
		t.Fatal(err)
	}
	// Run from a subdirectory: PROJECT is found above it.
	if err := CreateAPI(ctx, APIOptions{Dir: filepath.Join(dir, "pkg"), Group: "ships", Version: "v1alpha1", Kind: "Harbor", ClusterScoped: true, SkipGoMod: true}); err != nil {
		t.Fatal(err)
	}
	if err := CreateAPI(ctx, APIOptions{Dir: dir, Group: "ships", Version: "v1", Kind: "Fleet", Scale: true, Plural: "fleetz", SkipGoMod: true}); err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(dir, "pkg/apis/ships/v1alpha1")

	doc := checkGo(t, filepath.Join(pkg, "doc.go"))
	if doc.Name.Name != "v1alpha1" || !strings.Contains(doc.Doc.Text(), "+groupName=ships.example.com\n") {
		t.Errorf("doc.go: package %s, comment %q", doc.Name.Name, doc.Doc.Text())
	}

	frigate := checkGo(t, filepath.Join(pkg, "frigate_types.go"))
	want := map[string][]string{
		"Frigate":       {"TypeMeta", "ObjectMeta", "Spec", "Status"},
		"FrigateSpec":   {"Foo"},
		"FrigateStatus": {"Conditions"},
		"FrigateList":   {"TypeMeta", "ListMeta", "Items"},
	}
	if got := structFields(frigate); !reflect.DeepEqual(got, want) {
		t.Errorf("frigate_types.go types = %v, want %v", got, want)
	}
	d := typeDoc(frigate, "Frigate")
	for _, m := range []string{"+genclient\n", "+kubebuilder:resource:path=frigates,scope=Namespaced\n", "+kubebuilder:subresource:status\n"} {
		if !strings.Contains(d, m) {
			t.Errorf("Frigate lacks marker %q:\n%s", m, d)
		}
	}
	if strings.Contains(d, "nonNamespaced") || strings.Contains(d, "scale") {
		t.Errorf("Frigate has markers it should not:\n%s", d)
	}
	src := read(t, filepath.Join(pkg, "frigate_types.go"))
	if !strings.Contains(src, "// +listType=map\n\t// +listMapKey=type\n\tConditions []metav1.Condition `json:\"conditions,omitempty\"`") {
		t.Errorf("Conditions lacks its list markers:\n%s", src)
	}

	sample := read(t, filepath.Join(dir, "config/samples/ships_v1alpha1_frigate.yaml"))
	for _, want := range []string{"apiVersion: ships.example.com/v1alpha1\n", "kind: Frigate\n", "name: frigate-sample\n"} {
		if !strings.Contains(sample, want) {
			t.Errorf("sample lacks %q:\n%s", want, sample)
		}
	}
	if fleet := read(t, filepath.Join(dir, "config/samples/ships_v1_fleet.yaml")); !strings.Contains(fleet, "replicas: 1") {
		t.Errorf("the scalable kind's sample has no replicas:\n%s", fleet)
	}

	harbor := checkGo(t, filepath.Join(pkg, "harbor_types.go"))
	want = map[string][]string{
		"Harbor":     {"TypeMeta", "ObjectMeta", "Spec"},
		"HarborSpec": {"Foo"},
		"HarborList": {"TypeMeta", "ListMeta", "Items"},
	}
	if got := structFields(harbor); !reflect.DeepEqual(got, want) {
		t.Errorf("harbor_types.go types = %v, want %v", got, want)
	}
	d = typeDoc(harbor, "Harbor")
	for _, m := range []string{"+genclient\n", "+genclient:nonNamespaced\n", "+kubebuilder:resource:path=harbors,scope=Cluster\n"} {
		if !strings.Contains(d, m) {
			t.Errorf("Harbor lacks marker %q:\n%s", m, d)
		}
	}
	if strings.Contains(d, "subresource") {
		t.Errorf("Harbor has a subresource marker:\n%s", d)
	}

	fleet := checkGo(t, filepath.Join(dir, "pkg/apis/ships/v1/fleet_types.go"))
	want = map[string][]string{
		"Fleet":       {"TypeMeta", "ObjectMeta", "Spec", "Status"},
		"FleetSpec":   {"Foo", "Replicas"},
		"FleetStatus": {"Conditions", "Replicas", "Selector"},
		"FleetList":   {"TypeMeta", "ListMeta", "Items"},
	}
	if got := structFields(fleet); !reflect.DeepEqual(got, want) {
		t.Errorf("fleet_types.go types = %v, want %v", got, want)
	}
	d = typeDoc(fleet, "Fleet")
	for _, m := range []string{
		"+kubebuilder:resource:path=fleetz,scope=Namespaced\n",
		"+kubebuilder:subresource:status\n",
		"+kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector\n",
	} {
		if !strings.Contains(d, m) {
			t.Errorf("Fleet lacks marker %q:\n%s", m, d)
		}
	}
	checkGo(t, filepath.Join(dir, "pkg/apis/ships/v1/doc.go"))

	p, err := ReadProject(filepath.Join(dir, "PROJECT"))
	if err != nil {
		t.Fatal(err)
	}
	wantRes := []Resource{
		{Group: "ships", Domain: "example.com", Version: "v1alpha1", Kind: "Frigate", Plural: "frigates", Path: "example.com/foo/pkg/apis/ships/v1alpha1", Namespaced: true, Status: true},
		{Group: "ships", Domain: "example.com", Version: "v1alpha1", Kind: "Harbor", Plural: "harbors", Path: "example.com/foo/pkg/apis/ships/v1alpha1"},
		{Group: "ships", Domain: "example.com", Version: "v1", Kind: "Fleet", Plural: "fleetz", Path: "example.com/foo/pkg/apis/ships/v1", Namespaced: true, Status: true, Scale: true},
	}
	if !reflect.DeepEqual(p.Resources, wantRes) {
		t.Errorf("PROJECT resources = %+v\nwant %+v", p.Resources, wantRes)
	}
}

func TestCreateAPIRefusesToClobber(t *testing.T) {
	dir := initProject(t)
	ctx := context.Background()
	o := APIOptions{Dir: dir, Group: "ships", Version: "v1", Kind: "Frigate", SkipGoMod: true}
	if err := CreateAPI(ctx, o); err != nil {
		t.Fatal(err)
	}
	typesFile := filepath.Join(dir, "pkg/apis/ships/v1/frigate_types.go")
	if err := os.WriteFile(typesFile, []byte(read(t, typesFile)+"\n// mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := read(t, typesFile)
	projectBefore := read(t, filepath.Join(dir, "PROJECT"))

	err := CreateAPI(ctx, o)
	if err == nil || !strings.Contains(err.Error(), typesFile) || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second create api: err = %v, want an error naming %s", err, typesFile)
	}
	if read(t, typesFile) != before {
		t.Error("the types file was overwritten")
	}

	// The kind declared in another file of the package is refused too, naming that file.
	if err := os.Rename(typesFile, filepath.Join(dir, "pkg/apis/ships/v1/types.go")); err != nil {
		t.Fatal(err)
	}
	err = CreateAPI(ctx, o)
	if err == nil || !strings.Contains(err.Error(), "kind Frigate already exists") || !strings.Contains(err.Error(), filepath.Join(dir, "pkg/apis/ships/v1/types.go")) {
		t.Fatalf("create api of a declared kind: err = %v", err)
	}
	if _, err := os.Stat(typesFile); err == nil {
		t.Error("create api wrote the types file of a kind the package declares")
	}
	if read(t, filepath.Join(dir, "PROJECT")) != projectBefore {
		t.Error("PROJECT changed after a refused create api")
	}

	// Same plural for another kind of the group.
	err = CreateAPI(ctx, APIOptions{Dir: dir, Group: "ships", Version: "v1", Kind: "Corvette", Plural: "frigates", SkipGoMod: true})
	if err == nil || !strings.Contains(err.Error(), `already has the resource name "frigates"`) {
		t.Fatalf("duplicate plural: err = %v", err)
	}
}

func TestCreateAPIChecksPackage(t *testing.T) {
	dir := initProject(t)
	pkg := filepath.Join(dir, "pkg/apis/ships/v1")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "doc.go"), []byte("// +groupName=boats.example.org\npackage v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := CreateAPI(context.Background(), APIOptions{Dir: dir, Group: "ships", Version: "v1", Kind: "Frigate", SkipGoMod: true})
	if err == nil || !strings.Contains(err.Error(), "+groupName=boats.example.org, not ships.example.com") {
		t.Fatalf("err = %v", err)
	}
}

func TestCreateAPIWithoutProject(t *testing.T) {
	err := CreateAPI(context.Background(), APIOptions{Dir: t.TempDir(), Group: "ships", Version: "v1", Kind: "Frigate", SkipGoMod: true})
	if err == nil || !strings.Contains(err.Error(), "no PROJECT file") {
		t.Fatalf("err = %v", err)
	}
}

func TestCreateAPIInvalid(t *testing.T) {
	dir := initProject(t)
	for _, tc := range []struct {
		group, version, kind, plural, want string
	}{
		{"", "v1", "Frigate", "", "--group is required"},
		{"Ships", "v1", "Frigate", "", `invalid --group "Ships"`},
		{"ships.fleet", "v1", "Frigate", "", `invalid --group "ships.fleet"`},
		{"war-ships", "v1", "Frigate", "", `invalid --group "war-ships": it names the directory`},
		{"1ships", "v1", "Frigate", "", `invalid --group "1ships"`},
		{"ships", "", "Frigate", "", "--version is required"},
		{"ships", "1", "Frigate", "", `invalid --version "1"`},
		{"ships", "v0", "Frigate", "", `invalid --version "v0"`},
		{"ships", "v1beta", "Frigate", "", `invalid --version "v1beta"`},
		{"ships", "v1gamma1", "Frigate", "", `invalid --version "v1gamma1"`},
		{"ships", "V1", "Frigate", "", `invalid --version "V1"`},
		{"ships", "v1", "", "", "--kind is required"},
		{"ships", "v1", "frigate", "", `invalid --kind "frigate": use an UpperCamelCase Go identifier`},
		{"ships", "v1", "Big_Ship", "", `invalid --kind "Big_Ship"`},
		{"ships", "v1", "Frigate-1", "", `invalid --kind "Frigate-1"`},
		{"ships", "v1", "Resource", "", `invalid --kind "Resource": aagen generates Resource`},
		{"ships", "v1", "Frigate", "Frigates", `invalid --plural "Frigates"`},
		{"ships", "v1", "Frigate", "frig.ates", `invalid --plural "frig.ates"`},
		{"Ships", "v1.0", "frigate", "", "invalid --group \"Ships\""},
	} {
		err := CreateAPI(context.Background(), APIOptions{Dir: dir, Group: tc.group, Version: tc.version, Kind: tc.kind, Plural: tc.plural, SkipGoMod: true})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("create api --group=%q --version=%q --kind=%q --plural=%q: err = %v, want %q", tc.group, tc.version, tc.kind, tc.plural, err, tc.want)
		}
	}
	err := ValidateAPI("Ships", "v1.0", "frigate", "")
	if err == nil || strings.Count(err.Error(), "\n") != 2 {
		t.Errorf("ValidateAPI reports every bad input on its own line: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pkg/apis/ships")); err == nil {
		t.Error("invalid create api wrote files")
	}
}

func TestDefaultPlural(t *testing.T) {
	for kind, want := range map[string]string{"Frigate": "frigates", "Policy": "policies", "Box": "boxes"} {
		if got := DefaultPlural(kind); got != want {
			t.Errorf("DefaultPlural(%s) = %s, want %s", kind, got, want)
		}
	}
}
