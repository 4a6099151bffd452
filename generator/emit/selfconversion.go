package emit

import (
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/aagen-dev/aagen/generator/model"
)

// selfConversionsFunc is the name of the generated function of package apiserver that
// registers the conversions of v's kinds that convert themselves (Kind.ConvertsThroughHub).
func selfConversionsFunc(v *model.Version) string {
	alias := typesAlias(v)
	return "selfConversions" + strings.ToUpper(alias[:1]) + alias[1:]
}

// selfConversions declares, in f (package apiserver), the function that registers with a
// scheme the conversions between v's kinds that convert themselves and their hub: each
// kind's own ConvertTo and ConvertFrom (controller-runtime's conversion.Convertible, which
// a kubebuilder project writes for its conversion webhook), and for its list the same,
// item by item. conversion-gen leaves those types alone (Model.SelfConverted). It returns
// false, declaring nothing, when v has no such kind.
func selfConversions(f *jen.File, v *model.Version) bool {
	var kinds []*model.Kind
	for _, k := range v.Kinds {
		if k.ConvertsThroughHub {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		return false
	}
	hub := v.ConvertTo
	f.ImportName(pkgConversion, "conversion")
	add := func(in, out jen.Code, body ...jen.Code) jen.Code {
		return jen.If(jen.Err().Op(":=").Id("s").Dot("AddConversionFunc").Call(
			jen.Parens(jen.Op("*").Add(in)).Call(jen.Nil()),
			jen.Parens(jen.Op("*").Add(out)).Call(jen.Nil()),
			jen.Func().Params(jen.List(jen.Id("a"), jen.Id("b")).Any(), jen.Id("_").Qual(pkgConversion, "Scope")).Error().Block(body...),
		), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err()))
	}
	// list converts the items of the list in (of type from) into out's (of type to), each
	// with method, called on the spoke's item with the hub's.
	list := func(from, to, item jen.Code, method string, toHub bool) []jen.Code {
		call := jen.Id("in").Dot("Items").Index(jen.Id("i")).Dot(method).Call(jen.Op("&").Id("out").Dot("Items").Index(jen.Id("i")))
		if !toHub {
			call = jen.Id("out").Dot("Items").Index(jen.Id("i")).Dot(method).Call(jen.Op("&").Id("in").Dot("Items").Index(jen.Id("i")))
		}
		return []jen.Code{
			jen.List(jen.Id("in"), jen.Id("out")).Op(":=").List(jen.Id("a").Assert(jen.Op("*").Add(from)), jen.Id("b").Assert(jen.Op("*").Add(to))),
			jen.Id("out").Dot("ListMeta").Op("=").Id("in").Dot("ListMeta"),
			jen.Id("out").Dot("Items").Op("=").Make(jen.Index().Add(item), jen.Len(jen.Id("in").Dot("Items"))),
			jen.For(jen.Id("i").Op(":=").Range().Id("in").Dot("Items")).Block(
				jen.If(jen.Err().Op(":=").Add(call), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
			),
			jen.Return(jen.Nil()),
		}
	}
	var body []jen.Code
	for _, k := range kinds {
		spoke, hubKind := jen.Qual(v.ImportPath, k.Name), jen.Qual(hub.ImportPath, k.Name)
		spokeList, hubList := jen.Qual(v.ImportPath, k.ListName), jen.Qual(hub.ImportPath, k.ListName)
		body = append(body,
			add(spoke, hubKind, jen.Return(jen.Id("a").Assert(jen.Op("*").Add(spoke)).Dot("ConvertTo").Call(jen.Id("b").Assert(jen.Op("*").Add(hubKind))))),
			add(hubKind, spoke, jen.Return(jen.Id("b").Assert(jen.Op("*").Add(spoke)).Dot("ConvertFrom").Call(jen.Id("a").Assert(jen.Op("*").Add(hubKind))))),
			add(spokeList, hubList, list(spokeList, hubList, hubKind, "ConvertTo", true)...),
			add(hubList, spokeList, list(hubList, spokeList, spoke, "ConvertFrom", false)...),
		)
	}
	body = append(body, jen.Return(jen.Nil()))
	f.Commentf("%s registers the conversions between %s and %s, the storage version, of the kinds", selfConversionsFunc(v), v.GroupVersion(), hub.Name)
	f.Comment("that convert themselves: their own ConvertTo and ConvertFrom (controller-runtime's")
	f.Comment("conversion.Convertible), and for their lists the same, item by item.")
	f.Func().Id(selfConversionsFunc(v)).Params(jen.Id("s").Op("*").Qual(pkgRuntime, "Scheme")).Error().Block(body...)
	f.Line()
	return true
}
