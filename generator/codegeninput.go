package generator

import (
	"fmt"

	"github.com/aagen-dev/aagen/generator/codegen"
	"github.com/aagen-dev/aagen/generator/model"
)

// The model, translated for package codegen: what code-generator and openapi-gen are told
// about each types package (validationtags.go translates its validation markers).

// codegenInput is codegen's input for the model m, writing clients and OpenAPI to
// generatedPkg, with openapi-gen also defining the referenced types declared elsewhere
// (the type graph's Types.Referenced) and the validation tags of every package's types.
func codegenInput(m *model.Model, generatedPkg string) codegen.Input {
	in := codegen.Input{ModuleDir: m.ModuleDir, ModulePath: m.ModulePath, OutputPkg: generatedPkg, Validation: validationTags(m.Types)}
	for _, n := range m.Types.Referenced() {
		in.ReferencedTypes = append(in.ReferencedTypes, n.Pkg+"."+n.Name)
	}
	if m.HasScale() {
		in.ExtraOpenAPIPackages = []string{scalePackage}
	}
	for _, g := range m.Groups {
		for _, v := range g.Versions {
			p := codegen.Package{ImportPath: v.ImportPath, Dir: v.Dir, Group: g.Name, GroupPackageName: g.PackageName, GroupGoName: g.GoName, Version: v.Name}
			p.Defaults = v.HasDefaults()
			if v.ConvertTo != nil {
				p.ConvertTo = v.ConvertTo.ImportPath
				p.SelfConverted = m.SelfConverted(v)
			}
			for _, k := range v.Kinds {
				ck := codegen.Kind{Name: k.Name, NamespaceScoped: k.NamespaceScoped, HasStatus: k.HasStatus, Plural: k.ClientPlural, Unserved: k.Unserved,
					ClientMethods: clientMethods(k)}
				if k.Plural != k.ClientPlural {
					ck.ResourceName = k.Plural
				}
				p.Kinds = append(p.Kinds, ck)
			}
			p.Objects = v.SubresourceTypes()
			in.Packages = append(in.Packages, p)
		}
		if v := g.Internal; v != nil {
			p := codegen.Package{ImportPath: v.ImportPath, Dir: v.Dir, Group: g.Name, GroupPackageName: g.PackageName, GroupGoName: g.GoName, Internal: true}
			for _, k := range v.Kinds {
				p.Kinds = append(p.Kinds, codegen.Kind{Name: k.Name, NamespaceScoped: k.NamespaceScoped, HasStatus: k.HasStatus, Plural: k.ClientPlural, Unserved: true})
			}
			in.Packages = append(in.Packages, p)
		}
	}
	return in
}

// clientMethods are the client-gen +genclient:method tag values of k's imperative
// subresources: <Name> for an action, Get<Name> and Update<Name> for a view. Streams and
// connections have no typed method (client-gen cannot express them): clients use the REST
// client's SubResource(...).Stream or client-go's websocket executor.
func clientMethods(k *model.Kind) []string {
	var out []string
	for _, s := range k.Subresources {
		switch s.Type {
		case model.Action:
			result := s.Answer(k.Name)
			if result == "Status" {
				result = "k8s.io/apimachinery/pkg/apis/meta/v1.Status"
			}
			out = append(out, fmt.Sprintf("%s,verb=create,subresource=%s,input=%s,result=%s", s.GoName(), s.Name, s.Input, result))
		case model.View:
			out = append(out, fmt.Sprintf("Get%s,verb=get,subresource=%s,result=%s", s.GoName(), s.Name, s.Object))
			if s.Writable {
				out = append(out, fmt.Sprintf("Update%s,verb=update,subresource=%s,input=%s,result=%s", s.GoName(), s.Name, s.Object, s.Object))
			}
		}
	}
	return out
}
