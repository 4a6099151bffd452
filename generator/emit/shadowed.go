package emit

import (
	"path"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/aagen-dev/aagen/generator/model"
)

// ShadowedJSONFileName is the file, in a package of the user's module, with the MarshalJSON
// methods of its structs that hide an inlined field (shadowedJSON).
const ShadowedJSONFileName = "zz_generated.json.go"

// shadowedJSONFiles renders, for each package of the user's module that declares structs
// with hidden fields (model.Type.Shadowed), a MarshalJSON method for each: see shadowedJSON.
func shadowedJSONFiles(m *model.Model) map[string]*jen.File {
	byDir := map[string][]*model.Type{}
	for _, t := range m.Types.All() {
		if len(t.Shadowed) == 0 || t.Generic || t.MarshalsJSON {
			continue
		}
		rel, ok := strings.CutPrefix(t.Name.Pkg+"/", m.ModulePath+"/")
		if !ok {
			continue // only the user's module is written to
		}
		// A package of the module is in the directory its import path names.
		dir := strings.TrimSuffix(rel, "/")
		byDir[dir] = append(byDir[dir], t)
	}
	out := map[string]*jen.File{}
	for dir, ts := range byDir {
		slices.SortFunc(ts, func(a, b *model.Type) int { return strings.Compare(a.Name.Name, b.Name.Name) })
		out[path.Join(dir, ShadowedJSONFileName)] = shadowedJSON(ts)
	}
	return out
}

// shadowedJSON declares MarshalJSON on each struct of one package that hides a field of a
// struct it inlines behind a shallower field of the same JSON name. encoding/json writes
// only the shallower one, and so does the method (it marshals the struct without its
// methods); but structured-merge-diff's and k8s.io/apimachinery's converters from Go
// structs, which managed fields and server-side apply use, read fields by JSON name and may
// take the hidden one. A type with MarshalJSON is converted through its JSON instead. The
// file is left out of aagen's own loads (its build constraint), which see the struct's
// fields.
func shadowedJSON(ts []*model.Type) *jen.File {
	f := newGenerated(ts[0].PkgName, true)
	for _, t := range ts {
		var hidden []string
		for _, p := range t.Shadowed {
			hidden = append(hidden, strings.Join(p, "."))
		}
		f.Commentf("MarshalJSON writes %s as encoding/json does, which hides %s", t.Name.Name, strings.Join(hidden, ", "))
		f.Comment("behind a shallower field of the same JSON name. The converters of managed fields and")
		f.Commentf("server-side apply, which would read the hidden field, convert %s through this JSON instead.", t.Name.Name)
		f.Func().Params(jen.Id("in").Id(t.Name.Name)).Id("MarshalJSON").Params().Params(jen.Index().Byte(), jen.Error()).Block(
			jen.Type().Id("plain").Id(t.Name.Name),
			jen.Return(jen.Qual("encoding/json", "Marshal").Call(jen.Id("plain").Call(jen.Id("in")))),
		)
		f.Line()
	}
	return f
}
