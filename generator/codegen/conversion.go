package codegen

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// stripConversions gives the models-schema program, through overlay, the hand-written files
// of the packages that convert to a storage version without their conversion code: the
// functions and methods that declare or call the package's Convert_ and autoConvert_
// functions (conversion.go; kueue v1beta1's ConvertTo methods, which call the generated
// Convert_v1beta1_Cohort_To_v1beta2_Cohort), and those that call what is left out. They need
// the functions conversion-gen writes in the last step, and unfinished stubs do not compile
// on purpose; the program needs none of them. Everything else the files declare stays
// (apiextensions' conversion.go declares the nullLiteral its marshal.go uses). The stripped
// copies are written under dir.
func stripConversions(in Input, overlay map[string]string, dir string) error {
	for i, p := range in.Packages {
		if p.ConvertTo == "" {
			continue
		}
		entries, err := os.ReadDir(p.Dir)
		if err != nil {
			continue
		}
		fset := token.NewFileSet()
		files := map[string]*ast.File{}
		for _, e := range entries {
			name := e.Name()
			path := filepath.Join(p.Dir, name)
			if _, staged := overlay[path]; staged || !e.Type().IsRegular() || !strings.HasSuffix(name, ".go") ||
				strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "zz_generated.") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				continue // the compiler reports it
			}
			files[path] = f
		}
		dropped := conversionFuncs(files)
		if len(dropped) == 0 {
			continue
		}
		for path, f := range files {
			src, changed, err := withoutFuncs(fset, f, dropped)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if !changed {
				continue
			}
			out := filepath.Join(dir, strconv.Itoa(i), filepath.Base(path))
			if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
				return err
			}
			if err := os.WriteFile(out, src, 0o600); err != nil {
				return err
			}
			overlay[path] = out
		}
	}
	return nil
}

// isConversionName reports whether name is one of conversion-gen's function names.
func isConversionName(name string) bool {
	return strings.HasPrefix(name, "Convert_") || strings.HasPrefix(name, "autoConvert_")
}

// conversionFuncs returns the top-level functions and methods of a package's files that are
// left out: those named Convert_ or autoConvert_, those naming such a function of the package
// (unqualified: another package's, such as metav1.Convert_Pointer_int32_To_int32, does not
// count), and, to a fixed point, those naming a left-out function.
func conversionFuncs(files map[string]*ast.File) map[*ast.FuncDecl]bool {
	dropped := map[*ast.FuncDecl]bool{}
	droppedNames := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for _, f := range files {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || dropped[fd] {
					continue
				}
				drop := fd.Recv == nil && isConversionName(fd.Name.Name)
				if !drop && fd.Body != nil {
					drop = namesAny(fd.Body, func(name string) bool { return isConversionName(name) || droppedNames[name] })
				}
				if drop {
					dropped[fd] = true
					if fd.Recv == nil {
						droppedNames[fd.Name.Name] = true
					}
					changed = true
				}
			}
		}
	}
	return dropped
}

// namesAny reports whether n names, unqualified, an identifier for which match is true
// (selectors' names, x.Name, are fields, methods or another package's).
func namesAny(n ast.Node, match func(string) bool) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if found {
			return false
		}
		switch n := n.(type) {
		case *ast.SelectorExpr:
			found = namesAny(n.X, match)
			return false
		case *ast.KeyValueExpr:
			// A struct literal's key is a field name; a map literal's an expression.
			if _, ok := n.Key.(*ast.Ident); !ok {
				found = namesAny(n.Key, match)
			}
			found = found || namesAny(n.Value, match)
			return false
		case *ast.Ident:
			found = match(n.Name)
		}
		return true
	})
	return found
}

// withoutFuncs prints f without the declarations of dropped and their comments, and without
// the imports only they used; changed is false when f has none of them.
func withoutFuncs(fset *token.FileSet, f *ast.File, dropped map[*ast.FuncDecl]bool) (src []byte, changed bool, err error) {
	var removed []ast.Decl
	f.Decls = slices.DeleteFunc(slices.Clone(f.Decls), func(d ast.Decl) bool {
		fd, ok := d.(*ast.FuncDecl)
		if ok && dropped[fd] {
			removed = append(removed, d)
		}
		return ok && dropped[fd]
	})
	if len(removed) == 0 {
		return nil, false, nil
	}
	inRemoved := func(pos token.Pos) bool {
		for _, d := range removed {
			start := d.Pos()
			if fd := d.(*ast.FuncDecl); fd.Doc != nil {
				start = fd.Doc.Pos()
			}
			if pos >= start && pos < d.End() {
				return true
			}
		}
		return false
	}
	f.Comments = slices.DeleteFunc(slices.Clone(f.Comments), func(c *ast.CommentGroup) bool { return inRemoved(c.Pos()) })
	// An import the removed declarations used and the rest does not becomes a blank import
	// (its package is still compiled, as before).
	used := func(decls []ast.Decl, name string) bool {
		for _, d := range decls {
			found := false
			ast.Inspect(d, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == name {
						found = true
					}
				}
				return !found
			})
			if found {
				return true
			}
		}
		return false
	}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := filepath.Base(path)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		if name == "_" || name == "." {
			continue
		}
		if used(removed, name) && !used(f.Decls, name) {
			imp.Name = ast.NewIdent("_")
		}
	}
	var buf bytes.Buffer
	if err := printer.Fprint(&buf, fset, f); err != nil {
		return nil, false, err
	}
	return buf.Bytes(), true, nil
}
