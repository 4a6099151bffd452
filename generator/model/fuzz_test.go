package model_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/txtar"

	"github.com/aagen-dev/aagen/generator/load"
	"github.com/aagen-dev/aagen/generator/markers"
	"github.com/aagen-dev/aagen/generator/model"
)

var (
	metaOnce sync.Once
	metaPkg  *types.Package
	metaErr  error
)

// metav1 type-checks k8s.io/apimachinery's meta/v1 once, for fuzzing without go list.
func metav1(t testing.TB) *types.Package {
	metaOnce.Do(func() {
		res, err := load.Packages(context.Background(), exampleDir(t), []string{"./pkg/apis/..."})
		if err != nil {
			metaErr = err
			return
		}
		metaPkg = res.Packages[0].Imports["k8s.io/apimachinery/pkg/apis/meta/v1"].Types
	})
	if metaErr != nil {
		t.Fatal(metaErr)
	}
	return metaPkg
}

type mapImporter map[string]*types.Package

func (m mapImporter) Import(path string) (*types.Package, error) {
	if p, ok := m[path]; ok {
		return p, nil
	}
	return nil, os.ErrNotExist
}

// FuzzBuild feeds arbitrary types files to the model builder: whatever the input, it
// returns a model or errors, never panics, and every error diagnostic has a message.
func FuzzBuild(f *testing.F) {
	cases, _ := filepath.Glob("../../testdata/badinput/*.txtar")
	for _, c := range cases {
		ar, err := txtar.ParseFile(c)
		if err != nil {
			continue
		}
		for _, file := range ar.Files {
			if file.Name == "types.go" {
				f.Add(string(file.Data))
			}
		}
	}
	if data, err := os.ReadFile("../../testdata/example/pkg/apis/marina/v1alpha1/types.go"); err == nil {
		f.Add(string(data))
	}
	meta := metav1(f)
	f.Fuzz(func(t *testing.T, src string) {
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, "/fuzz/apis/shop/v1/types.go", src, parser.ParseComments)
		if err != nil || file.Name.Name != "v1" {
			return
		}
		doc, _ := parser.ParseFile(fset, "/fuzz/apis/shop/v1/doc.go", "// +groupName=shop.example.com\npackage v1\n", parser.ParseComments)
		info := &types.Info{Defs: map[*ast.Ident]types.Object{}, Types: map[ast.Expr]types.TypeAndValue{}, Uses: map[*ast.Ident]types.Object{}}
		conf := types.Config{Importer: mapImporter{"k8s.io/apimachinery/pkg/apis/meta/v1": meta}, Error: func(error) {}}
		pkg, _ := conf.Check("example.com/fuzz/apis/shop/v1", fset, []*ast.File{doc, file}, info)
		p := &packages.Package{
			ID: pkg.Path(), Name: "v1", PkgPath: pkg.Path(), Fset: fset, Syntax: []*ast.File{doc, file}, Types: pkg, TypesInfo: info,
			GoFiles: []string{"/fuzz/apis/shop/v1/doc.go", "/fuzz/apis/shop/v1/types.go"},
		}
		m, _, err := model.Build(&load.Result{ModuleDir: "/fuzz", ModulePath: "example.com/fuzz", Fset: fset, Packages: []*packages.Package{p}}, markers.Default(), model.Config{})
		if err != nil {
			e, ok := err.(*model.Error)
			if !ok || len(e.Diags) == 0 {
				t.Fatalf("error without diagnostics: %v", err)
			}
			for _, d := range e.Diags {
				if strings.TrimSpace(d.Msg) == "" {
					t.Fatalf("empty diagnostic")
				}
			}
			return
		}
		for _, k := range m.AllKinds() {
			if k.Plural == "" || k.Singular == "" || k.ListName == "" {
				t.Fatalf("kind %s without names", k.Name)
			}
		}
	})
}
