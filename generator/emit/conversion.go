package emit

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/aagen-dev/aagen/generator/model"
)

// ConversionFileName is the user-owned file aagen creates, once, in a version package
// whose conversions conversion-gen cannot write completely.
const ConversionFileName = "conversion.go"

// ConversionTODO is the identifier the stubs of ConversionFileName use to fail the build
// until their conversion is written.
const ConversionTODO = "TODO_convert_the_fields_named_above_then_delete_this_line"

const pkgConversion = "k8s.io/apimachinery/pkg/conversion"

// MissingConversion is a conversion function that conversion-gen calls (in RegisterConversions
// and from other conversions) but did not write, because some fields of the two types do not
// match by name and type. Until someone writes it the package does not compile.
type MissingConversion struct {
	// Name is the function, e.g. Convert_v1beta1_CronJobSpec_To_v1_CronJobSpec.
	Name string
	// In and Out are the parameter types as written in the generated file, e.g.
	// "*CronJobSpec" and "*v1.CronJobSpec".
	In, Out string
	// Fields are conversion-gen's WARNING lines: the fields left to convert by hand.
	Fields []string
	// Stub is where a hand-written stub of the function still holds its ConversionTODO
	// line; zero when there is no such stub.
	Stub token.Position
}

// MissingConversions returns the conversion functions that the zz_generated.conversion.go
// of v (generated) needs but that neither it nor a hand-written file of v defines.
func MissingConversions(v *model.Version, generated []byte) ([]MissingConversion, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "zz_generated.conversion.go", generated, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("%s: reading the generated conversions: %w", v.GroupVersion(), err)
	}
	defined := map[string]*ast.FuncDecl{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
			defined[fd.Name.Name] = fd
		}
	}
	own, stubs, err := handWrittenFuncs(v.Dir)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []MissingConversion
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			// pkg.Convert_X (metav1.Convert_Pointer_int32_To_int32, another version's
			// conversion) is another package's function, declared there: only the
			// qualifier can hold a reference to this package.
			ast.Inspect(sel.X, visit)
			return false
		}
		id, ok := n.(*ast.Ident)
		if !ok || !strings.HasPrefix(id.Name, "Convert_") || defined[id.Name] != nil || own[id.Name] || seen[id.Name] {
			return true
		}
		seen[id.Name] = true
		mc := MissingConversion{Name: id.Name, Stub: stubs[id.Name]}
		if auto := defined["auto"+id.Name]; auto != nil {
			params := auto.Type.Params.List
			if len(params) >= 2 {
				mc.In, mc.Out = exprString(fset, params[0].Type), exprString(fset, params[1].Type)
			}
			for _, cg := range f.Comments {
				if cg.Pos() < auto.Pos() || cg.End() > auto.End() {
					continue
				}
				for _, c := range cg.List {
					if text := strings.TrimSpace(strings.TrimPrefix(c.Text, "//")); strings.HasPrefix(text, "WARNING:") || strings.HasPrefix(text, "FIXME:") {
						mc.Fields = append(mc.Fields, text)
					}
				}
			}
		}
		out = append(out, mc)
		return true
	}
	ast.Inspect(f, visit)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// handWrittenFuncs are the top-level functions declared in the Go files of dir that are not
// generated (no zz_generated. prefix, no tests), split into those written and the stubs that
// still hold a ConversionTODO line (with its position).
func handWrittenFuncs(dir string) (written map[string]bool, stubs map[string]token.Position, err error) {
	written, stubs = map[string]bool{}, map[string]token.Position{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "zz_generated.") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			continue // the load step reports files that do not parse
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil {
				continue
			}
			var todo token.Pos
			ast.Inspect(fd, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok && id.Name == ConversionTODO && !todo.IsValid() {
					todo = id.Pos()
				}
				return !todo.IsValid()
			})
			if todo.IsValid() {
				stubs[fd.Name.Name] = fset.Position(todo)
			} else {
				written[fd.Name.Name] = true
			}
		}
	}
	return written, stubs, nil
}

func exprString(fset *token.FileSet, e ast.Expr) string {
	var b bytes.Buffer
	_ = printer.Fprint(&b, fset, e)
	return b.String()
}

// ConversionFile renders the user-owned conversion.go of v with a stub for each missing
// conversion. Each stub runs the generated autoConvert function (the fields that match)
// and then stops the build at a line naming the work left, under conversion-gen's own
// description of the fields.
func ConversionFile(m *model.Model, v *model.Version, missing []MissingConversion) (File, error) {
	hub := v.ConvertTo
	var b bytes.Buffer
	fmt.Fprintf(&b, "// This file is yours: aagen created it once and never overwrites it.\n\n")
	fmt.Fprintf(&b, "package %s\n\n", v.PkgName)
	fmt.Fprintf(&b, "import (\n\t%s %s\n\t%s\n)\n\n", hub.PkgName, strconv.Quote(hub.ImportPath), strconv.Quote(pkgConversion))
	hubName := hub.Name + ", the storage version,"
	if hub.Internal {
		hubName = hub.PkgName + ", the internal version,"
	}
	fmt.Fprintf(&b, `// Conversions between %[1]s and %[2]s that conversion-gen cannot write
// because fields were renamed, moved or changed type between the versions. The generated
// zz_generated.conversion.go calls each Convert_ function below; each starts with the
// generated autoConvert_ function, which copies every field that matches by name and type.
// Convert the fields named in the WARNING lines (conversion-gen's), then delete the
// TODO_convert_... line under them: it is there so that the package does not compile until
// you have. A field left out is lost when an object written in one version is read in the
// other. aagen generate lists the functions still missing.
`, v.Name, hubName)
	for _, mc := range missing {
		in, out := mc.In, mc.Out
		if in == "" || out == "" {
			in, out = guessParams(v, mc.Name)
		}
		for _, typ := range []string{in, out} {
			if !isTypeExpr(typ) {
				return File{}, fmt.Errorf("%s: zz_generated.conversion.go calls %s, which neither it nor a file of %s declares, and its parameter types cannot be read from its name (%q is not a Go type): write %s in %s by hand",
					v.GroupVersion(), mc.Name, v.ImportPath, typ, mc.Name, path.Join(m.RelPath(v.Dir), ConversionFileName))
			}
		}
		fmt.Fprintf(&b, "\n// %s is written by hand: conversion-gen cannot convert every field.\n", mc.Name)
		fmt.Fprintf(&b, "func %s(in %s, out %s, s conversion.Scope) error {\n", mc.Name, in, out)
		if mc.In != "" {
			fmt.Fprintf(&b, "\tif err := auto%s(in, out, s); err != nil {\n\t\treturn err\n\t}\n", mc.Name)
		} else {
			fmt.Fprintf(&b, "\t// conversion-gen wrote no auto%s for these types: convert every field here.\n", mc.Name)
		}
		for _, fl := range mc.Fields {
			fmt.Fprintf(&b, "\t// %s\n", fl)
		}
		fmt.Fprintf(&b, "\t%s\n\treturn nil\n}\n", ConversionTODO)
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		// Every piece was checked above; a failure here is aagen's bug, named as one.
		return File{}, fmt.Errorf("internal error: rendering %s for %s: %w", path.Join(m.RelPath(v.Dir), ConversionFileName), v.GroupVersion(), err)
	}
	return File{Path: path.Join(m.RelPath(v.Dir), ConversionFileName), Content: src, Owner: UserOwned}, nil
}

// isTypeExpr reports whether s is a conversion parameter's type: a pointer to a named type,
// local or qualified (*T, *pkg.T).
func isTypeExpr(s string) bool {
	e, err := parser.ParseExpr(s)
	if err != nil {
		return false
	}
	star, ok := e.(*ast.StarExpr)
	if !ok {
		return false
	}
	switch x := star.X.(type) {
	case *ast.Ident:
		return token.IsIdentifier(x.Name)
	case *ast.SelectorExpr:
		_, ok := x.X.(*ast.Ident)
		return ok
	}
	return false
}

// guessParams derives the parameter types from a conversion function's name,
// Convert_<pkg>_<Type>_To_<pkg>_<Type>, when the generated file has no autoConvert_ for it.
func guessParams(v *model.Version, name string) (string, string) {
	left, right, _ := strings.Cut(strings.TrimPrefix(name, "Convert_"), "_To_")
	typ := func(s string) string {
		pkg, t, _ := strings.Cut(s, "_")
		if pkg == v.PkgName {
			return "*" + t
		}
		return "*" + pkg + "." + t
	}
	return typ(left), typ(right)
}
