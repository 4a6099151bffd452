package load

import (
	"fmt"
	"go/ast"
	"go/parser"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Dep is a package outside the types packages whose types the types packages reach
// (another package of the user's module, or a package of another module), with the
// syntax of its files: their doc comments carry the markers that apply wherever the
// types are used, as controller-gen reads them.
type Dep struct {
	// PkgPath is the import path; Name the package name.
	PkgPath, Name string
	// Module is the module holding the package (nil for a package without one).
	Module *packages.Module
	// Syntax are the package's files, parsed with comments into Result.Fset.
	Syntax []*ast.File
}

// Syntax lists and parses, with comments, the files of the packages at paths (other
// packages of the module, packages of other modules), for the markers and doc comments of
// the types the model reaches there. Positions go into r.Fset. Generated files are left out.
func (r *Result) Syntax(paths []string) ([]*Dep, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	listed, err := packages.Load(&packages.Config{
		Context: r.ctx, Dir: r.dir, Mode: packages.NeedName | packages.NeedFiles | packages.NeedModule,
		BuildFlags: []string{"-tags=" + BuildTag},
	}, paths...)
	if err != nil {
		return nil, fmt.Errorf("listing the packages the types reach: %w", err)
	}
	var out []*Dep
	for _, p := range listed {
		d := &Dep{PkgPath: p.PkgPath, Name: p.Name, Module: p.Module}
		for _, name := range p.GoFiles {
			if generatedFile(name) {
				continue
			}
			f, err := parser.ParseFile(r.Fset, name, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				return nil, fmt.Errorf("reading the markers of %s: %w", p.PkgPath, err)
			}
			d.Syntax = append(d.Syntax, f)
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b *Dep) int { return strings.Compare(a.PkgPath, b.PkgPath) })
	return out, nil
}

// generatedFile reports whether a file holds generated code no marker lives in (deepcopy,
// protobuf and the like), by name: skipping them keeps the parse small.
func generatedFile(name string) bool {
	base := filepath.Base(name)
	return strings.HasPrefix(base, "zz_generated") || strings.HasSuffix(base, ".pb.go")
}
