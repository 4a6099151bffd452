package emit

import (
	"path"
	"strings"

	"github.com/dave/jennifer/jen"
	gengonamer "k8s.io/gengo/v2/namer"
	gengotypes "k8s.io/gengo/v2/types"

	"github.com/aagen-dev/aagen/generator/layout"
	"github.com/aagen-dev/aagen/generator/model"
)

const pkgServertest = "github.com/aagen-dev/aagen/runtime/servertest"

// apiTest renders the project's own test: the generated server in-process on embedded
// etcd, and the basic contract of every kind through the generated clientset.
func apiTest(m *model.Model, o Options) *jen.File {
	f := jen.NewFile("apiserver_test")
	f.HeaderComment("// " + GeneratedHeader)
	apiserverPkg := path.Join(m.ModulePath, layout.APIServerDir)
	clientsetPkg := o.GeneratedPkg + "/clientset/versioned"
	f.ImportName(apiserverPkg, "apiserver")
	f.ImportName(clientsetPkg, "versioned")
	f.ImportName(pkgServertest, "servertest")
	f.ImportAlias(pkgMetav1, "metav1")

	var runs []jen.Code
	for _, g := range m.Groups {
		groupGo := g.GoName
		for _, v := range g.Versions {
			f.ImportAlias(v.ImportPath, typesAlias(v))
			for _, k := range v.Kinds {
				if k.Unserved || k.Resource.Backend || k.Resource.ReadOnly {
					// A kind served from the user's backend has the verbs the backend implements:
					// its tests are the user's. A read-only kind takes no create.
					continue
				}
				plural := clientGoPlural(k)
				var nsArg []jen.Code
				if k.NamespaceScoped {
					nsArg = append(nsArg, jen.Lit("default"))
				}
				client := jen.Id("cs").Dot(groupGo + gengonamer.IC(v.Name)).Call().Dot(plural).Call(nsArg...)
				runs = append(runs, jen.Id("t").Dot("Run").Call(jen.Lit(k.Name+"."+g.Name+"/"+v.Name), jen.Func().Params(jen.Id("t").Op("*").Qual("testing", "T")).Block(
					jen.Qual(pkgServertest, "CRUD").Types(jen.Op("*").Qual(v.ImportPath, k.Name), jen.Op("*").Qual(v.ImportPath, k.ListName)).Call(
						jen.Id("t"), client, jen.Qual(pkgServertest, "Sample").Call(
							jen.Id("t"), jen.Lit(samplesDir), jen.Lit(g.Name+"/"+v.Name), jen.Lit(k.Name), jen.Op("&").Qual(v.ImportPath, k.Name).Values())),
				)))
			}
		}
	}
	f.Comment("TestAPI starts the server in-process on embedded etcd and checks create, get, list, watch,")
	f.Comment("update, conflicts and delete of every kind through the generated clientset, with the")
	f.Comment("kind's sample from config/samples (any file there with its apiVersion and kind), or its")
	f.Comment("zero value when there is none.")
	body := []jen.Code{
		jen.List(jen.Id("spec"), jen.Err()).Op(":=").Qual(apiserverPkg, "NewSpec").Call(),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Id("t").Dot("Fatal").Call(jen.Err())),
		jen.Id("srv").Op(":=").Qual(pkgServertest, "Start").Call(jen.Id("t"), jen.Id("spec")),
		jen.Id("cs").Op(":=").Qual(clientsetPkg, "NewForConfigOrDie").Call(jen.Id("srv").Dot("Config")),
	}
	f.Func().Id("TestAPI").Params(jen.Id("t").Op("*").Qual("testing", "T")).Block(append(body, runs...)...)
	return f
}

// samplesDir is config/samples, relative to the generated test's package (pkg/apiserver).
const samplesDir = "../../config/samples"

func apiTestPath() string { return path.Join("pkg/apiserver", "zz_generated.api_test.go") }

// clientGoPlural is the plural in the generated clientset's Go names of k (Widgets(),
// DockOccupancies(), PodMetricses()): k.ClientPlural with the kind's capitals where the two
// agree letter for letter, as codegen spells client-gen's plural exceptions.
func clientGoPlural(k *model.Kind) string {
	if k.ClientPlural == gengonamer.NewAllLowercasePluralNamer(nil).Name(&gengotypes.Type{Name: gengotypes.Name{Name: k.Name}}) {
		return gengonamer.NewPublicPluralNamer(nil).Name(&gengotypes.Type{Name: gengotypes.Name{Name: k.Name}})
	}
	n := 0
	for n < len(k.Name) && n < len(k.ClientPlural) && strings.EqualFold(k.Name[n:n+1], k.ClientPlural[n:n+1]) {
		n++
	}
	return gengonamer.IC(k.Name[:n] + k.ClientPlural[n:])
}
