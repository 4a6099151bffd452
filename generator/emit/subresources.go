package emit

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/aagen-dev/aagen/generator/model"
)

const (
	pkgSubresource = "github.com/aagen-dev/aagen/runtime/subresource"
	pkgAPIErrors   = "k8s.io/apimachinery/pkg/api/errors"
)

// subresourceFile is one file of a kind's storage package for its imperative subresources.
type subresourceFile struct {
	name  string
	owner Ownership
	file  *jen.File
}

// subresourceFiles are the files of k's imperative subresources: the generated
// zz_generated.subresources.go installing their storages, and one user-owned
// subresource_<name>.go per subresource with the methods to implement (created once, so
// declaring a new subresource adds a file and touches none the user wrote).
func subresourceFiles(k *model.Kind) []subresourceFile {
	if len(k.Subresources) == 0 {
		return nil
	}
	out := []subresourceFile{{name: "zz_generated.subresources.go", owner: Generated, file: subresourcesInstall(k)}}
	for _, s := range k.Subresources {
		out = append(out, subresourceFile{name: "subresource_" + s.Name + ".go", owner: UserOwned, file: subresourceStub(k, s)})
	}
	return out
}

func subresourcesInstall(k *model.Kind) *jen.File {
	v := k.Version
	f := registryFile(k)
	f.ImportName(pkgSubresource, "subresource")
	ptr := func() *jen.Statement { return jen.Op("*").Qual(v.ImportPath, k.Name) }
	typ := func(name string) *jen.Statement { return jen.Op("*").Qual(v.ImportPath, name) }
	newFunc := func(name string) *jen.Statement {
		return jen.Func().Params().Add(typ(name)).Block(jen.Return(jen.Op("&").Qual(v.ImportPath, name).Values()))
	}
	body := []jen.Code{
		jen.List(jen.Id("main"), jen.Id("ok")).Op(":=").Id("storage").Index(jen.Lit(k.Plural)).Assert(jen.Op("*").Qual(pkgRegistry, "REST")),
		jen.If(jen.Op("!").Id("ok")).Block(jen.Return(jen.Qual("fmt", "Errorf").Call(
			jen.Lit("storage of "+k.Plural+": %T is not a *registry.REST"), jen.Id("storage").Index(jen.Lit(k.Plural))))),
		jen.Id("hooks").Op(":=").Id("Hooks").Values(),
		jen.Comment("Actions and views write the whole object: spec and status."),
		jen.Id("updater").Op(":=").Id("main").Dot("ObjectUpdater").Call(),
	}
	var names []string
	for _, s := range k.Subresources {
		key := jen.Id("storage").Index(jen.Lit(k.Plural + "/" + s.Name))
		names = append(names, fmt.Sprintf("%s %s", s.Type, s.Name))
		switch s.Type {
		case model.Action:
			body = append(body, key.Op("=").Qual(pkgSubresource, "NewAction").Types(ptr(), typ(s.Input)).Call(
				jen.Id("updater"), newFunc(s.Input), jen.Id("hooks").Dot(s.Hook())))
		case model.View:
			d := []jen.Code{
				field("New", newFunc(s.Object)),
				field("Get", jen.Id("hooks").Dot(s.Hook())),
			}
			if s.Writable {
				d = append(d, field("Set", jen.Id("hooks").Dot(s.SetHook())))
			}
			body = append(body, key.Op("=").Qual(pkgSubresource, "NewView").Types(ptr(), typ(s.Object)).Call(
				jen.Id("updater"), jen.Qual(pkgSubresource, "ViewFuncs").Types(ptr(), typ(s.Object)).Add(structLit(d...))))
		case model.Stream:
			body = append(body, key.Op("=").Qual(pkgSubresource, "NewStream").Types(ptr()).Call(
				jen.Id("main"), newFunc(k.Name), jen.Id("hooks").Dot(s.Hook())))
		case model.Connection:
			body = append(body, key.Op("=").Qual(pkgSubresource, "NewConnection").Types(ptr()).Call(
				jen.Id("main"), newFunc(k.Name), jen.Id("hooks").Dot(s.Hook())))
		}
	}
	body = append(body, jen.Return(jen.Nil()))
	f.Commentf("addSubresources adds the storages of the imperative subresources of %s.%s to storage", k.Plural, v.Group.Name)
	f.Commentf("(%s); their methods are yours, in subresource_<name>.go.", joinList(names))
	f.Func().Id("addSubresources").Params(jen.Id("storage").Map(jen.String()).Qual(pkgRest, "Storage")).Error().Block(body...)
	return f
}

func joinList(s []string) string {
	out := ""
	for i, x := range s {
		switch {
		case i == 0:
		case i == len(s)-1:
			out += " and "
		default:
			out += ", "
		}
		out += x
	}
	return out
}

func subresourceStub(k *model.Kind, s model.Subresource) *jen.File {
	v := k.Version
	f := jen.NewFile(RegistryPackage(k))
	f.ImportAlias(v.ImportPath, typesAlias(v))
	f.ImportAlias(pkgAPIErrors, "apierrors")
	f.ImportName(pkgRuntime, "runtime")
	f.ImportName(pkgSubresource, "subresource")
	f.HeaderComment("// This file is yours: aagen created it once and never overwrites it.")
	ptr := func() *jen.Statement { return jen.Op("*").Qual(v.ImportPath, k.Name) }
	typ := func(name string) *jen.Statement { return jen.Op("*").Qual(v.ImportPath, name) }
	ctx := jen.Id("ctx").Qual("context", "Context")
	notYet := func(zero jen.Code) jen.Code {
		call := jen.Qual(pkgAPIErrors, "NewMethodNotSupported").Call(
			jen.Qual(v.ImportPath, "Resource").Call(jen.Lit(k.Plural)), jen.Lit(s.Name))
		if zero == nil {
			return jen.Return(call)
		}
		return jen.Return(zero, call)
	}
	path := k.Plural + "/<name>/" + s.Name
	switch s.Type {
	case model.Action:
		f.Commentf("%s runs the action %s (POST %s with a %s). obj is a copy of the", s.Hook(), s.Name, path, s.Input)
		f.Comment("stored object: what you change in it is stored as an update (validated like any update;")
		f.Comment("nothing is written when you leave it as it was). Return obj (answered as stored), another")
		f.Comment("object of the API or a *metav1.Status. The function runs again when the object changed")
		f.Comment("meanwhile (a conflict): keep effects outside obj idempotent. Errors of")
		f.Comment("k8s.io/apimachinery/pkg/api/errors keep their code; others are 500.")
		f.Func().Params(jen.Id("Hooks")).Id(s.Hook()).Params(ctx, jen.Id("obj").Add(ptr()), jen.Id("in").Add(typ(s.Input))).
			Params(jen.Qual(pkgRuntime, "Object"), jen.Error()).Block(notYet(jen.Nil()))
	case model.View:
		f.Commentf("%s returns the view %s of obj (GET %s).", s.Hook(), s.Name, path)
		f.Func().Params(jen.Id("Hooks")).Id(s.Hook()).Params(ctx, jen.Id("obj").Add(ptr())).
			Params(typ(s.Object), jen.Error()).Block(notYet(jen.Nil()))
		if s.Writable {
			f.Line()
			f.Commentf("%s changes obj, a copy of the stored object, to what view says (PUT or PATCH %s);", s.SetHook(), path)
			f.Comment("the change is stored as an update of the object.")
			f.Func().Params(jen.Id("Hooks")).Id(s.SetHook()).Params(ctx, jen.Id("obj").Add(ptr()), jen.Id("view").Add(typ(s.Object))).
				Error().Block(notYet(nil))
		}
	case model.Stream:
		f.Commentf("%s writes the stream %s of obj to w (GET %s[?follow=true]). Without", s.Hook(), s.Name, path)
		f.Comment("opts.Follow, return when everything is written; with it, keep writing what comes until ctx")
		f.Comment("is done (the client went away or the server is shutting down). Each write reaches the")
		f.Comment("client at once and blocks while it does not read.")
		f.Func().Params(jen.Id("Hooks")).Id(s.Hook()).Params(ctx, jen.Id("obj").Add(ptr()),
			jen.Id("opts").Qual(pkgSubresource, "StreamOptions"), jen.Id("w").Qual("io", "Writer")).Error().Block(notYet(nil))
	case model.Connection:
		f.Commentf("%s serves one connection %s to obj (websocket, v5.channel.k8s.io, on %s):", s.Hook(), s.Name, path)
		f.Comment("read what the client sends from session.Stdin, write to session.Stdout and Stderr, and")
		f.Comment("return when done or when ctx is done. The error, or success, is sent as the status.")
		f.Func().Params(jen.Id("Hooks")).Id(s.Hook()).Params(ctx, jen.Id("obj").Add(ptr()),
			jen.Id("session").Qual(pkgSubresource, "Session")).Error().Block(notYet(nil))
	}
	return f
}

// subresourceRoles are the "<plural>/<sub>" of k's imperative subresources in the edit role
// (all verbs) and in the view role (get, list, watch), as Kubernetes' own roles list the
// same shapes: pods/eviction and pods/exec, pods/attach (create, get) in edit, pods/log in view,
// and a view like deployments/scale in both.
func subresourceRoles(k *model.Kind) (edit, view []string) {
	for _, s := range k.Subresources {
		r := k.Plural + "/" + s.Name
		switch s.Type {
		case model.Action, model.Connection:
			edit = append(edit, r)
		case model.View:
			edit = append(edit, r)
			view = append(view, r)
		case model.Stream:
			view = append(view, r)
		}
	}
	return edit, view
}

// subresourceDoc describes an imperative subresource in the API reference.
func subresourceDoc(k *model.Kind, s model.Subresource) string {
	switch s.Type {
	case model.Action:
		return fmt.Sprintf("action: POST a `%s`, answered with a `%s`", s.Input, s.Answer(k.Name))
	case model.View:
		if s.Writable {
			return fmt.Sprintf("view: get, update, patch a `%s`", s.Object)
		}
		return fmt.Sprintf("view: get a `%s`", s.Object)
	case model.Stream:
		return "stream: GET answers text as it is written; `?follow=true` keeps it open"
	default:
		return "connection: websocket (`v5.channel.k8s.io`: stdin, stdout, stderr), GET or POST"
	}
}
