package codegen

import (
	"fmt"
	"io"
	"maps"

	"k8s.io/gengo/v2/generator"
	"k8s.io/gengo/v2/namer"
	"k8s.io/gengo/v2/types"
)

// TypeError is a generator's error on one type of the input (openapi-gen's "multiple
// values are not allowed for tag patchMergeKey", which names neither), with the type and,
// for a struct, the field whose markers or tags it comes from, so that the caller can put
// it at that field's file:line.
type TypeError struct {
	// Tool is the generator, e.g. "openapi-gen".
	Tool string
	// Pkg and Name are the type's package path and name.
	Pkg, Name string
	// Field is the Go name of the field the error comes from; "" when it cannot be told.
	Field string
	Err   error
}

func (e *TypeError) Error() string {
	at := e.Pkg + "." + e.Name
	if e.Field != "" {
		at += "." + e.Field
	}
	return fmt.Sprintf("%s on %s: %v", e.Tool, at, e.Err)
}

func (e *TypeError) Unwrap() error { return e.Err }

// typeErrors is a generator whose errors on a type come back as a TypeError.
type typeErrors struct {
	generator.Generator
	tool string
}

func (g typeErrors) GenerateType(c *generator.Context, t *types.Type, w io.Writer) error {
	err := g.Generator.GenerateType(c, t, w)
	if err == nil {
		return nil
	}
	return &TypeError{Tool: g.tool, Pkg: t.Name.Package, Name: t.Name.Name, Field: g.culprit(c, t, err), Err: err}
}

// culprit is the field of struct t that alone gives the generator the same error, or "":
// the generator is run again, writing nowhere, on copies of t with one field each.
func (g typeErrors) culprit(c *generator.Context, t *types.Type, err error) string {
	if t.Kind != types.Struct || len(t.Members) < 2 {
		if t.Kind == types.Struct && len(t.Members) == 1 {
			return t.Members[0].Name
		}
		return ""
	}
	for _, m := range t.Members {
		one := *t
		one.Members = []types.Member{m}
		if e := g.Generator.GenerateType(c, &one, io.Discard); e != nil && e.Error() == err.Error() {
			return m.Name
		}
	}
	return ""
}

// Namers are the generator's, except openapi-gen's "private" namer, which names the schema_
// functions by the last four elements of a type's package path: it gets as many more as the
// types the generator names need to be told apart (a project with a copy of a published API
// package next to the package itself, two .../pkg/apis/apiextensions/v1.JSON; openapi-gen's
// output then declared one function twice).
func (g typeErrors) Namers(c *generator.Context) namer.NameSystems {
	ns := g.Generator.Namers(c)
	private, ok := ns["private"].(*namer.NameStrategy)
	if g.tool != toolOpenAPI || !ok {
		return ns
	}
	for n := private.PrependPackageNames; ; n++ {
		p := *private
		p.PrependPackageNames, p.Names = n, nil
		names := map[string]bool{}
		for _, t := range c.Order {
			name := p.Name(t)
			if names[name] {
				break
			}
			names[name] = true
		}
		// More names than a package path has elements change nothing.
		if len(names) == len(c.Order) || n > 64 {
			if n == private.PrependPackageNames {
				return ns
			}
			out := maps.Clone(ns)
			out["private"] = &p
			return out
		}
	}
}
