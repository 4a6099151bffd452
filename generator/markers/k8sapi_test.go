package markers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestKubernetesAPIMarkers parses every marker of k8s.io/api v0.37.2 (the version the
// module requires), on packages, types and fields as written there: protobuf tags,
// +k8s:openapi-gen, +k8s:prerelease-lifecycle-gen, +k8s: declarative validation,
// +patchStrategy, +listType, ... Not one may be an error: types written like
// Kubernetes' own must load unchanged (none is even a warning).
func TestKubernetesAPIMarkers(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/api").Output()
	if err != nil {
		t.Fatalf("go list -m k8s.io/api: %v", err)
	}
	root := strings.TrimSpace(string(out))
	if !strings.Contains(root, "k8s.io/api@v0.37") {
		t.Fatalf("k8s.io/api is %s, want v0.37", root)
	}
	r := Default()
	files, markersSeen := 0, 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return err
		}
		files++
		check := func(target Target, groups ...*ast.CommentGroup) {
			set, diags := r.Parse(fset, target, groups...)
			markersSeen += len(set)
			for _, d := range diags {
				// core/v1's "+groupName=" names the legacy core group, which no aggregated
				// server can serve: that one stays an error (testdata/badinput/groupname-empty).
				if strings.HasSuffix(d.Pos.Filename, "core/v1/doc.go") && strings.Contains(d.Msg, "+groupName needs a value") {
					continue
				}
				t.Errorf("%s", d.Error())
			}
		}
		var above []*ast.CommentGroup
		for _, cg := range f.Comments {
			if cg.End() < f.Package {
				above = append(above, cg)
			}
		}
		check(OnPackage, above...)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GenDecl:
				if n.Tok == token.TYPE {
					check(OnType, n.Doc)
					for _, s := range n.Specs {
						check(OnType, s.(*ast.TypeSpec).Doc)
					}
				}
			case *ast.Field:
				check(OnField, n.Doc)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 || markersSeen < 1000 {
		t.Fatalf("read %d files and %d known markers of %s: too few, the walk is broken", files, markersSeen, root)
	}
}
