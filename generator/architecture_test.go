package generator_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestArchitectureDocNames checks that every package, file and Go name docs/architecture.md
// names in backquotes exists: `pkg.Name` must be declared in that package, `pkg.Type.Member`
// must be a field, embedded field or method of that type of that package, `Type.Member` a
// field or method of a type of that name in some package of the repository, and paths must
// exist. The packages are every Go package under generator/, runtime/, internal/ and
// e2e/cluster, by their last path element.
func TestArchitectureDocNames(t *testing.T) {
	root := filepath.Join("..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	packages := map[string]string{}         // package name -> dir
	decls := map[string]map[string]bool{}   // package dir -> top-level names
	members := map[string]map[string]bool{} // package dir -> "Type.Member"
	anyMember := map[string]bool{}          // "Type.Member" over every package
	for _, top := range []string{"generator", "runtime", "internal", "e2e/cluster"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, e os.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return err
			}
			if name := e.Name(); name == "testdata" || strings.HasPrefix(name, ".") {
				return filepath.SkipDir
			}
			fset := token.NewFileSet()
			pkgs, err := parser.ParseDir(fset, path, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
			if err != nil {
				return err
			}
			dir, _ := filepath.Rel(root, path)
			for name, p := range pkgs {
				if name == "main" {
					continue
				}
				if prev, dup := packages[name]; dup {
					t.Errorf("two packages named %s (%s and %s): the doc's names would be ambiguous", name, prev, dir)
				}
				packages[name], decls[dir], members[dir] = dir, map[string]bool{}, map[string]bool{}
				for _, f := range p.Files {
					collectNames(f, decls[dir], members[dir])
				}
				for m := range members[dir] {
					anyMember[m] = true
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	code := regexp.MustCompile("`([^`]+)`")
	ident := regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?(\[.*\]|\(\))?$`)
	// file names (doc.go, types.go) look like identifiers too
	fileExts := []string{"go", "md", "yaml", "json", "txt"}
	checked := 0
	for _, m := range code.FindAllStringSubmatch(string(doc), -1) {
		tok := m[1]
		if strings.Contains(tok, "...") {
			continue
		}
		if id := ident.FindStringSubmatch(tok); id != nil && !slices.Contains(fileExts, id[2]) && !slices.Contains(fileExts, id[3]) {
			dir, isPkg := packages[id[1]]
			switch {
			case isPkg && id[3] != "":
				if !members[dir][id[2]+"."+id[3]] {
					t.Errorf("docs/architecture.md names %s, but type %s of package %s has no field or method %s", tok, id[2], dir, id[3])
				}
			case isPkg:
				if !decls[dir][id[2]] {
					t.Errorf("docs/architecture.md names %s, but package %s declares no %s", tok, dir, id[2])
				}
			case id[3] != "":
				continue // not ours (e.g. an upstream package.Type.Member)
			default:
				if !anyMember[id[1]+"."+id[2]] {
					t.Errorf("docs/architecture.md names %s, but no type %s has a field or method %s", tok, id[1], id[2])
				}
			}
			checked++
			continue
		}
		for _, top := range []string{"cmd/", "generator/", "runtime/", "templates/", "e2e/", "testdata/", "docs/"} {
			if strings.HasPrefix(tok, top) && !strings.ContainsAny(tok, "<> ") {
				if _, err := os.Stat(filepath.Join(root, tok)); err != nil {
					t.Errorf("docs/architecture.md names %s, which does not exist", tok)
				}
				checked++
			}
		}
	}
	if checked < 30 {
		t.Errorf("only %d names checked; the pattern no longer matches the document", checked)
	}
}

// TestArchitecturePackageTable checks docs/architecture.md's package table (the rows of the
// table under "## Packages", each starting with a package directory in backquotes) against
// the tree: every Go package under generator/ and runtime/ has a row, and every row names
// a package that exists.
func TestArchitecturePackageTable(t *testing.T) {
	root := filepath.Join("..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "\n## Packages\n")
	if !ok {
		t.Fatal("docs/architecture.md has no \"## Packages\" section")
	}
	if end := strings.Index(table, "\n## "); end >= 0 {
		table = table[:end]
	}
	rows := map[string]bool{}
	row := regexp.MustCompile("(?m)^\\| `((?:generator|runtime)(?:/[a-z0-9]+)*)` \\|")
	for _, m := range row.FindAllStringSubmatch(table, -1) {
		rows[m[1]] = true
	}
	have := map[string]bool{}
	for _, top := range []string{"generator", "runtime"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, e os.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return err
			}
			if name := e.Name(); name == "testdata" || strings.HasPrefix(name, ".") {
				return filepath.SkipDir
			}
			entries, err := os.ReadDir(path)
			if err != nil {
				return err
			}
			if slices.ContainsFunc(entries, func(e os.DirEntry) bool {
				return strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go")
			}) {
				dir, _ := filepath.Rel(root, path)
				have[filepath.ToSlash(dir)] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for dir := range have {
		if !rows[dir] {
			t.Errorf("docs/architecture.md's package table has no row for %s", dir)
		}
	}
	for dir := range rows {
		if !have[dir] {
			t.Errorf("docs/architecture.md's package table names %s, which is not a package", dir)
		}
	}
}

func collectNames(f *ast.File, top map[string]bool, members map[string]bool) {
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				top[d.Name.Name] = true
				continue
			}
			recv := d.Recv.List[0].Type
			for {
				switch r := recv.(type) {
				case *ast.StarExpr:
					recv = r.X
					continue
				case *ast.IndexExpr:
					recv = r.X
					continue
				case *ast.IndexListExpr:
					recv = r.X
					continue
				}
				break
			}
			if id, ok := recv.(*ast.Ident); ok {
				members[id.Name+"."+d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					top[s.Name.Name] = true
					var fields []*ast.Field
					switch typ := s.Type.(type) {
					case *ast.StructType:
						fields = typ.Fields.List
					case *ast.InterfaceType:
						fields = typ.Methods.List
					}
					for _, fld := range fields {
						for _, n := range fld.Names {
							members[s.Name.Name+"."+n.Name] = true
						}
						if len(fld.Names) == 0 { // embedded: its type name is the field's
							if n := embeddedName(fld.Type); n != "" {
								members[s.Name.Name+"."+n] = true
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						top[n.Name] = true
					}
				}
			}
		}
	}
}

// embeddedName is the name of an embedded field of type t: T, *T, pkg.T, T[X].
func embeddedName(t ast.Expr) string {
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.SelectorExpr:
			return x.Sel.Name
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// TestREADMEVersions checks that the versions README.md states are the ones the modules pin:
// k8s.io/*, etcd and Go in its Versions section, controller-runtime's minor and the
// kube-apiserver the e2e tests build.
func TestREADMEVersions(t *testing.T) {
	root := filepath.Join("..")
	read := func(p string) string {
		data, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	readme, gomod := read("README.md"), read("go.mod")
	require := func(mod string) string {
		m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(mod) + ` (v\S+)`).FindStringSubmatch(gomod)
		if m == nil {
			t.Fatalf("go.mod does not require %s", mod)
		}
		return m[1]
	}
	_, versions, _ := strings.Cut(readme, "\n## Versions\n")
	versions, _, _ = strings.Cut(versions, "\n## ")
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(gomod)
	kube := regexp.MustCompile(`KubeVersion = "(v[^"]+)"`).FindStringSubmatch(read("e2e/cluster/tools.go"))
	if goVersion == nil || kube == nil {
		t.Fatal("go.mod's go directive or e2e/cluster's KubeVersion not found")
	}
	crMinor := regexp.MustCompile(`^v\d+\.\d+`).FindString(require("sigs.k8s.io/controller-runtime"))
	for _, c := range []struct{ text, want string }{
		{versions, "k8s.io/* " + require("k8s.io/apiserver")},
		{versions, "go.etcd.io/etcd/server/v3 " + require("go.etcd.io/etcd/server/v3")},
		{versions, "Go " + goVersion[1]},
		{readme, "controller-runtime " + crMinor + " manager"},
		{strings.ReplaceAll(readme, "\n", " "), "kube-apiserver and kube-controller-manager " + kube[1]},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("README.md does not say %q (the version the modules pin)", c.want)
		}
	}
}

// TestEmittersReadOnlyTheModel checks that the emitters are functions of the model (issue
// #23): no non-test file of generator/emit or generator/protobuf imports go/packages or
// go/types. What they need of the Go types is in the model and its type graph.
func TestEmittersReadOnlyTheModel(t *testing.T) {
	forbidden := []string{"go/types", "go/packages", "golang.org/x/tools/go/packages"}
	for _, dir := range []string{"emit", "protobuf"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for _, imp := range f.Imports {
				if path := strings.Trim(imp.Path.Value, `"`); slices.Contains(forbidden, path) {
					t.Errorf("%s imports %s: emitters read the model (generator/model), not the Go types", file, path)
				}
			}
		}
		if checked == 0 {
			t.Errorf("no Go files in generator/%s", dir)
		}
	}
}
