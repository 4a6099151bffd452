package emit

import (
	"path"

	"github.com/dave/jennifer/jen"

	"github.com/aagen-dev/aagen/generator/layout"
)

const (
	pkgAdmission  = "k8s.io/apiserver/pkg/admission"
	pkgClientRest = "k8s.io/client-go/rest"
)

// AdmissionFileName is the user-owned file of package apiserver where the server's own
// admission plugins are registered.
const AdmissionFileName = "admission.go"

// admissionHooks renders the user-owned admission.go of package apiserver: where a user
// registers in-process admission plugins the way k8s.io/sample-apiserver registers
// BanFlunder, and hands them the generated informers of the server's own API.
func admissionHooks(o Options) *jen.File {
	f := jen.NewFile("apiserver")
	f.HeaderComment("// This file is yours: aagen created it once and never overwrites it.")
	informersPkg := o.GeneratedPkg + "/informers/externalversions"
	f.ImportName(pkgAdmission, "admission")
	f.ImportName(informersPkg, "externalversions")
	f.Comment("registerAdmissionPlugins registers the server's own admission plugins, which run inside the")
	f.Comment("server on every write, the way k8s.io/sample-apiserver registers BanFlunder:")
	f.Comment("")
	f.Comment("\tbanflunder.Register(plugins)")
	f.Comment("")
	f.Comment("They are enabled by default, after k8s.io/apiserver's own (--disable-admission-plugins turns")
	f.Comment("one off); with --local, where k8s.io/apiserver's need a kube-apiserver, they run alone.")
	f.Func().Id("registerAdmissionPlugins").Params(jen.Id("plugins").Op("*").Qual(pkgAdmission, "Plugins")).Block()
	f.Line()
	f.Comment("admissionInitializers returns the initializers that hand the plugins what they need.")
	f.Comment("informers are the generated informers of this server's own API, started with the server.")
	f.Comment("A plugin with a SetInformers(externalversions.SharedInformerFactory) method (WantsInformers)")
	f.Comment("gets them without one; an initializer like sample-apiserver's wardleinitializer passes them on:")
	f.Comment("")
	f.Comment("\treturn []admission.PluginInitializer{wardleinitializer.New(informers)}")
	f.Func().Id("admissionInitializers").Params(jen.Id("informers").Qual(informersPkg, "SharedInformerFactory")).
		Index().Qual(pkgAdmission, "PluginInitializer").Block(jen.Return(jen.Nil()))
	return f
}

// admissionPath is the module-relative path of the user-owned admission.go.
func admissionPath() string { return path.Join(layout.APIServerDir, AdmissionFileName) }

// newAdmission adds to the generated apiserver file the function that describes the
// server's own admission plugins (admission.go) for package server, with informers of
// the generated clientset on the loopback connection.
func newAdmission(f *jen.File, o Options) {
	clientsetPkg := o.GeneratedPkg + "/clientset/versioned"
	informersPkg := o.GeneratedPkg + "/informers/externalversions"
	f.ImportName(pkgAdmission, "admission")
	f.ImportName(clientsetPkg, "versioned")
	f.ImportName(informersPkg, "externalversions")
	f.ImportAlias(pkgClientRest, "rest")
	f.Comment("newAdmission describes the server's own admission plugins (admission.go): they get the")
	f.Comment("generated informers of its API, on a clientset of the server's loopback connection.")
	f.Func().Id("newAdmission").Params().Op("*").Qual(pkgServer, "Admission").Block(
		jen.Return(jen.Op("&").Qual(pkgServer, "Admission").Add(structLit(
			field("Register", jen.Id("registerAdmissionPlugins")),
			field("Initializers", jen.Func().Params(jen.Id("loopback").Op("*").Qual(pkgClientRest, "Config")).
				Params(jen.Index().Qual(pkgAdmission, "PluginInitializer"), jen.Func().Params(jen.Op("<-").Chan().Struct()), jen.Error()).Block(
				jen.List(jen.Id("client"), jen.Err()).Op(":=").Qual(clientsetPkg, "NewForConfig").Call(jen.Id("loopback")),
				jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Nil(), jen.Err())),
				jen.Id("informers").Op(":=").Qual(informersPkg, "NewSharedInformerFactory").Call(jen.Id("client"), jen.Lit(0)),
				jen.Id("initializers").Op(":=").Append(
					jen.Index().Qual(pkgAdmission, "PluginInitializer").Values(jen.Id("informersInitializer").Values(jen.Id("informers"))),
					jen.Id("admissionInitializers").Call(jen.Id("informers")).Op("...")),
				jen.Return(jen.Id("initializers"), jen.Id("informers").Dot("Start"), jen.Nil()),
			)),
		))),
	)
	f.Line()
	f.Comment("WantsInformers is implemented by admission plugins that read this server's own API (as")
	f.Comment("sample-apiserver's WantsInternalWardleInformerFactory): the server hands them its generated")
	f.Comment("informers, started with the server. A plugin implements it without importing this package.")
	f.Type().Id("WantsInformers").Interface(
		jen.Id("SetInformers").Params(jen.Qual(informersPkg, "SharedInformerFactory")),
	)
	f.Line()
	f.Comment("informersInitializer hands the generated informers to every plugin that wants them.")
	f.Type().Id("informersInitializer").Struct(jen.Id("informers").Qual(informersPkg, "SharedInformerFactory"))
	f.Line()
	f.Comment("Initialize implements admission.PluginInitializer.")
	f.Func().Params(jen.Id("i").Id("informersInitializer")).Id("Initialize").Params(jen.Id("plugin").Qual(pkgAdmission, "Interface")).Block(
		jen.If(jen.List(jen.Id("w"), jen.Id("ok")).Op(":=").Id("plugin").Assert(jen.Id("WantsInformers")), jen.Id("ok")).Block(
			jen.Id("w").Dot("SetInformers").Call(jen.Id("i").Dot("informers")),
		),
	)
}
