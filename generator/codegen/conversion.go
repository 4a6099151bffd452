package codegen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

// hideConversionFiles hides, in overlay, the hand-written files of the packages that
// convert to a storage version which declare Convert_ functions (conversion.go) or call the
// package's own (kueue's v1beta1 cohort_conversion.go, whose ConvertTo method calls the
// generated Convert_v1beta1_Cohort_To_v1beta2_Cohort). They call the functions
// conversion-gen writes in the last step, and unfinished stubs do not compile on purpose;
// the models-schema program needs neither.
func hideConversionFiles(in Input, overlay map[string]string) {
	for _, p := range in.Packages {
		if p.ConvertTo == "" {
			continue
		}
		entries, err := os.ReadDir(p.Dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			path := filepath.Join(p.Dir, name)
			if _, staged := overlay[path]; staged || !e.Type().IsRegular() || !strings.HasSuffix(name, ".go") ||
				strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "zz_generated.") {
				continue
			}
			if usesConversions(path) {
				overlay[path] = "" // hidden
			}
		}
	}
}

// usesConversions reports whether the Go file at path declares a Convert_ function or
// names one of its package's Convert_ or autoConvert_ functions (unqualified: not another
// package's, such as metav1.Convert_Pointer_int32_To_int32).
func usesConversions(path string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return false
	}
	conversion := func(name string) bool {
		return strings.HasPrefix(name, "Convert_") || strings.HasPrefix(name, "autoConvert_")
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && conversion(fd.Name.Name) {
			return true
		}
	}
	uses := false
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			ast.Inspect(n.X, func(x ast.Node) bool {
				if id, ok := x.(*ast.Ident); ok && conversion(id.Name) {
					uses = true
				}
				return !uses
			})
			return false // n.Sel is another package's or a field's name
		case *ast.Field:
			if n.Type != nil {
				ast.Inspect(n.Type, func(x ast.Node) bool {
					if id, ok := x.(*ast.Ident); ok && conversion(id.Name) {
						uses = true
					}
					return !uses
				})
			}
			return false // n.Names are the struct's fields or the function's parameters
		case *ast.Ident:
			if conversion(n.Name) {
				uses = true
			}
		}
		return !uses
	})
	return uses
}
