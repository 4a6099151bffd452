package emit

import (
	"path"

	"github.com/dave/jennifer/jen"

	"github.com/aagen-dev/aagen/generator/layout"
	"github.com/aagen-dev/aagen/generator/model"
)

const pkgBackend = "github.com/aagen-dev/aagen/runtime/backend"

// BackendFileName is the user-owned file of a kind served from the user's backend
// (+aagen:backend), next to the kind's generated storage.
const BackendFileName = "backend.go"

// backendStorage renders NewStorage of a kind served from the user's backend: the
// runtime/backend wrapper around what NewBackend (backend.go) returns, with the kind's
// names, printer columns and selectable fields.
func backendStorage(r *model.Resource) *jen.File {
	k := r.Hub
	v := k.Version
	f := registryFile(k)
	f.ImportName(pkgBackend, "backend")
	f.ImportName(pkgRuntime, "runtime")
	f.ImportName(pkgGeneric, "generic")
	ptr := jen.Op("*").Qual(v.ImportPath, k.Name)
	fields := resourceFields(k, nil)
	if cols := columns(k); cols != nil {
		fields = append(fields, field("Columns", cols))
	}
	if sel := selectableFields(k, pkgBackend, ptr); sel != nil {
		fields = append(fields, field("SelectableFields", sel))
	}
	f.Commentf("NewStorage builds the REST storage of %s.%s:", k.Plural, v.Group.Name)
	f.Commentf("the backend NewBackend returns (%s, yours) serves it instead of etcd, and discovery lists", BackendFileName)
	f.Comment("exactly the verbs the backend implements.")
	f.Func().Id("NewStorage").Params(
		jen.Id("_").Op("*").Qual(pkgRuntime, "Scheme"),
		jen.Id("_").Qual(pkgGeneric, "RESTOptionsGetter"),
	).Params(jen.Map(jen.String()).Qual(pkgRest, "Storage"), jen.Error()).Block(
		jen.List(jen.Id("b"), jen.Err()).Op(":=").Id("NewBackend").Call(),
		jen.If(jen.Err().Op("!=").Nil()).Block(
			jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit("creating the backend of "+k.Plural+"."+v.Group.Name+": %w"), jen.Err())),
		),
		jen.Return(jen.Qual(pkgBackend, "NewStorage").Call(
			jen.Qual(pkgBackend, "Resource").Types(ptr.Clone()).Add(structLit(fields...)), jen.Id("b"))),
	)
	return f
}

// resourceFields are the fields of a registry.Resource or backend.Resource literal that
// name k's resource and make its objects: group, kind, versions (registry only: pass nil
// for none), names, scope, New and NewList.
func resourceFields(k *model.Kind, versions jen.Code) []jen.Code {
	v := k.Version
	fields := []jen.Code{field("Group", jen.Lit(v.Group.Name)), field("Kind", jen.Lit(k.Name))}
	if versions != nil {
		fields = append(fields, versions)
	}
	fields = append(fields, field("Plural", jen.Lit(k.Plural)), field("Singular", jen.Lit(k.Singular)))
	if len(k.ShortNames) > 0 {
		fields = append(fields, field("ShortNames", jen.Index().String().Values(lits(k.ShortNames)...)))
	}
	if len(k.Categories) > 0 {
		fields = append(fields, field("Categories", jen.Index().String().Values(lits(k.Categories)...)))
	}
	return append(fields,
		field("NamespaceScoped", jen.Lit(k.NamespaceScoped)),
		field("New", jen.Func().Params().Op("*").Qual(v.ImportPath, k.Name).Block(jen.Return(jen.Op("&").Qual(v.ImportPath, k.Name).Values()))),
		field("NewList", jen.Func().Params().Qual(pkgRuntime, "Object").Block(jen.Return(jen.Op("&").Qual(v.ImportPath, k.ListName).Values()))),
	)
}

// columns is the []registry.Column literal of k's printer columns; nil without any.
func columns(k *model.Kind) jen.Code {
	if len(k.PrintColumns) == 0 {
		return nil
	}
	var cols []jen.Code
	for _, c := range k.PrintColumns {
		d := []jen.Code{field("Name", jen.Lit(c.Name)), field("Type", jen.Lit(c.Type))}
		if c.Format != "" {
			d = append(d, field("Format", jen.Lit(c.Format)))
		}
		if c.Description != "" {
			d = append(d, field("Description", jen.Lit(c.Description)))
		}
		if c.Priority != 0 {
			d = append(d, field("Priority", jen.Lit(int(c.Priority))))
		}
		d = append(d, field("JSONPath", jen.Lit(c.JSONPath)))
		cols = append(cols, structLit(d...))
	}
	return jen.Index().Qual(pkgRegistry, "Column").Values(cols...)
}

// selectableFields is the []<pkg>.SelectableField[ptr] literal of k's selectable fields
// (pkg is runtime/registry or runtime/backend, which declare the same type); nil without any.
func selectableFields(k *model.Kind, pkg string, ptr *jen.Statement) jen.Code {
	if len(k.SelectableFields) == 0 {
		return nil
	}
	var sel []jen.Code
	for _, fp := range k.SelectableFields {
		sel = append(sel, structLit(
			field("Name", jen.Lit(fp.Label())),
			field("Value", jen.Func().Params(jen.Id("obj").Add(ptr.Clone())).String().Block(
				readField(fp, jen.Lit(""), func(v *jen.Statement) jen.Code { return selectorValue(fp, v) })...)),
		))
	}
	return jen.Index().Qual(pkg, "SelectableField").Types(ptr.Clone()).Values(sel...)
}

// backendStub renders the user-owned backend.go of a kind served from the user's backend: a
// Backend whose Get and List answer a clear error until the user writes them.
func backendStub(k *model.Kind) *jen.File {
	v := k.Version
	f := jen.NewFile(RegistryPackage(k))
	f.ImportAlias(v.ImportPath, typesAlias(v))
	f.ImportName(pkgBackend, "backend")
	f.HeaderComment("// This file is yours: aagen created it once and never overwrites it.")
	ptr := jen.Op("*").Qual(v.ImportPath, k.Name)
	rel := path.Join(layout.RegistryDir, v.Group.PackageName, RegistryPackage(k), BackendFileName)
	f.Commentf("NewBackend returns what serves %s.%s (+aagen:backend):", k.Plural, v.Group.Name)
	f.Comment("a backend.Reader (Get, List). Add methods to serve more: Watch (backend.Watcher) for watch and kubectl get -w;")
	f.Comment("Create, Update and Delete (backend.Writer) for writes; Start (backend.Starter) to start with a")
	f.Comment("loopback client once the server runs, e.g. to read other kinds through informers (an informer")
	f.Comment("keeps a second copy of every object the server already caches: give it a SetTransform that")
	f.Comment("keeps only the fields you read). Discovery lists exactly the verbs implemented; the others")
	f.Comment("are answered 405 MethodNotAllowed.")
	f.Func().Id("NewBackend").Params().Params(jen.Qual(pkgBackend, "Reader").Types(ptr.Clone()), jen.Error()).Block(
		jen.Return(jen.Op("&").Id("Backend").Values(), jen.Nil()),
	)
	f.Line()
	f.Commentf("Backend serves %s. Replace the bodies of Get and List with your own code.", k.Plural)
	f.Type().Id("Backend").Struct()
	f.Line()
	nsDoc := "namespace is \"\" for a cluster-scoped kind."
	if k.NamespaceScoped {
		nsDoc = "namespace is the request's namespace."
	}
	f.Comment("Get returns the object named name, or an error wrapping backend.ErrNotFound (404).")
	f.Comment(nsDoc)
	f.Func().Params(jen.Id("b").Op("*").Id("Backend")).Id("Get").Params(jen.Id("ctx").Qual("context", "Context"), jen.List(jen.Id("namespace"), jen.Id("name")).String()).
		Params(ptr.Clone(), jen.Error()).Block(
		jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit("get "+k.Plural+"."+v.Group.Name+": not implemented yet: write Get in "+rel))),
	)
	f.Line()
	f.Comment("List returns every object in namespace (\"\": all namespaces); the server applies label and")
	f.Comment("field selectors and sorts.")
	f.Func().Params(jen.Id("b").Op("*").Id("Backend")).Id("List").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("namespace").String()).
		Params(jen.Index().Add(ptr.Clone()), jen.Error()).Block(
		jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit("list "+k.Plural+"."+v.Group.Name+": not implemented yet: write List in "+rel))),
	)
	return f
}
