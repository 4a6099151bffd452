package codegen

import (
	"errors"
	"io"
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

// refusesField is a generator that refuses any struct with a field named Bad, as openapi-gen
// refuses a type for one field's tags without naming the field.
type refusesField struct{ generator.GoGenerator }

func (refusesField) GenerateType(_ *generator.Context, t *types.Type, _ io.Writer) error {
	for _, m := range t.Members {
		if m.Name == "Bad" {
			return errors.New("multiple values are not allowed for tag patchMergeKey")
		}
	}
	return nil
}

// TestTypeErrorNamesTheField: a generator's error on a struct comes back as a TypeError
// naming the type and the one field that alone gives the same error, which the generator
// puts at that field's file:line.
func TestTypeErrorNamesTheField(t *testing.T) {
	g := typeErrors{Generator: refusesField{}, tool: toolOpenAPI}
	st := &types.Type{Name: types.Name{Package: "example.com/w/v1", Name: "WidgetSpec"}, Kind: types.Struct,
		Members: []types.Member{{Name: "Size"}, {Name: "Bad"}, {Name: "Color"}}}
	err := g.GenerateType(&generator.Context{}, st, io.Discard)
	te, ok := errors.AsType[*TypeError](err)
	if !ok || te.Tool != toolOpenAPI || te.Pkg != "example.com/w/v1" || te.Name != "WidgetSpec" || te.Field != "Bad" {
		t.Fatalf("got %#v, want a TypeError of openapi-gen on example.com/w/v1.WidgetSpec field Bad", err)
	}
	if want := "openapi-gen on example.com/w/v1.WidgetSpec.Bad: multiple values are not allowed for tag patchMergeKey"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}
