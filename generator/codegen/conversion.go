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
// convert to a storage version which declare Convert_ functions (conversion.go). They call
// the autoConvert_ functions conversion-gen writes in the last step, and unfinished stubs
// do not compile on purpose; the models-schema program needs neither.
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
			if declaresConversions(path) {
				overlay[path] = "" // hidden
			}
		}
	}
}

// declaresConversions reports whether the Go file at path declares a Convert_ function.
func declaresConversions(path string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return false
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Convert_") {
			return true
		}
	}
	return false
}
