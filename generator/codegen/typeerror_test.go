package codegen

import (
	"strings"
	"testing"

	"k8s.io/gengo/v2/generator"
	"k8s.io/gengo/v2/namer"
	"k8s.io/gengo/v2/types"
)

// privateNamerGen has openapi-gen's "private" namer (the names of its schema_ functions).
type privateNamerGen struct{ generator.GoGenerator }

func (privateNamerGen) Namers(*generator.Context) namer.NameSystems {
	return namer.NameSystems{"private": &namer.NameStrategy{
		Join:                func(pre string, in []string, post string) string { return strings.Join(in, "_") },
		PrependPackageNames: 4,
	}}
}

// TestOpenAPIPrivateNamesUnique: openapi-gen's function names take as many elements of the
// package path as the types need to be told apart, and stay as openapi-gen names them
// otherwise.
func TestOpenAPIPrivateNamesUnique(t *testing.T) {
	typ := func(pkg string) *types.Type { return &types.Type{Name: types.Name{Package: pkg, Name: "JSON"}} }
	copied := typ("example.com/corpus/k8s-io-apiextensions-apiserver/pkg/apis/apiextensions/v1")
	published := typ("k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1")
	g := typeErrors{Generator: privateNamerGen{}, tool: toolOpenAPI}
	name := func(c *generator.Context, t *types.Type) string { return g.Namers(c)["private"].Name(t) }

	alone := &generator.Context{Order: []*types.Type{published}}
	if got := name(alone, published); got != "pkg_apis_apiextensions_v1_JSON" {
		t.Errorf("one type: %s, want openapi-gen's own name", got)
	}
	both := &generator.Context{Order: []*types.Type{copied, published}}
	if a, b := name(both, copied), name(both, published); a == b {
		t.Errorf("two packages with the same last four path elements: both named %s", a)
	}
	if g := (typeErrors{Generator: privateNamerGen{}, tool: toolDeepcopy}); g.Namers(both)["private"].Name(copied) != "pkg_apis_apiextensions_v1_JSON" {
		t.Error("another tool's namers changed")
	}
}
