package generator_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureDocNames checks that every package, file and Go name docs/architecture.md
// names in backquotes exists: `pkg.Name` must be declared in that package, `Type.Member`
// must be a field or method of a type of the repository, and paths must exist.
func TestArchitectureDocNames(t *testing.T) {
	root := filepath.Join("..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	packages := map[string]string{
		"generator": "generator", "load": "generator/load", "markers": "generator/markers", "model": "generator/model",
		"codegen": "generator/codegen", "emit": "generator/emit", "output": "generator/output", "layout": "generator/layout",
		"server": "runtime/server", "registry": "runtime/registry", "etcd": "runtime/etcd", "localauth": "runtime/localauth",
		"servertest": "runtime/servertest", "cluster": "e2e/cluster", "subresource": "runtime/subresource",
	}
	decls := map[string]map[string]bool{} // package dir -> top-level names
	members := map[string]bool{}          // "Type.Member" over every package
	for _, dir := range packages {
		decls[dir] = map[string]bool{}
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, filepath.Join(root, dir), func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkgs {
			for _, f := range p.Files {
				collectNames(f, decls[dir], members)
			}
		}
	}
	code := regexp.MustCompile("`([^`]+)`")
	ident := regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)(\[.*\]|\(\))?$`)
	checked := 0
	for _, m := range code.FindAllStringSubmatch(string(doc), -1) {
		tok := m[1]
		if strings.Contains(tok, "...") {
			continue
		}
		if id := ident.FindStringSubmatch(tok); id != nil && id[2] != "go" && id[2] != "md" {
			if dir, ok := packages[id[1]]; ok {
				if !decls[dir][id[2]] {
					t.Errorf("docs/architecture.md names %s, but package %s declares no %s", tok, dir, id[2])
				}
			} else if !members[id[1]+"."+id[2]] {
				t.Errorf("docs/architecture.md names %s, but no type %s has a field or method %s", tok, id[1], id[2])
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
					if st, ok := s.Type.(*ast.StructType); ok {
						for _, fld := range st.Fields.List {
							for _, n := range fld.Names {
								members[s.Name.Name+"."+n.Name] = true
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
