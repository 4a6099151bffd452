package generator

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aagen-dev/aagen/generator/codegen"
	"github.com/aagen-dev/aagen/generator/model"
)

// validationTags translates the schema of every type of the graph whose markers say
// something (model.Type.HasValidation), by package, into the comment tags kube-openapi and
// defaulter-gen read (+k8s:validation:..., +default, +required, +optional), plus the enum,
// format and free-form values codegen writes into the definitions itself. Types of every
// package count: the types packages' own and those of other packages and modules they
// reach, whose markers apply wherever the types are used.
func validationTags(g *model.Types) map[string][]codegen.TypeValidation {
	out := map[string][]codegen.TypeValidation{}
	for _, t := range g.All() {
		inlined := inlinedSchemaValues(g, t)
		if t.HasValidation() || slices.ContainsFunc(t.Fields(), func(f *model.Field) bool { return f.PatchFromStructTags }) || len(inlined) > 0 || len(t.Shadowed) > 0 {
			tv := typeTags(t)
			tv.Inlined = inlined
			tv.Shadowed = t.Shadowed
			out[t.Name.Pkg] = append(out[t.Name.Pkg], tv)
		}
	}
	return out
}

// inlinedSchemaValues returns the fields of the structs t embeds inline, at any depth, whose
// enum, format or vendor extensions codegen writes into the definitions itself: openapi-gen
// copies those properties into t's definition (Gateway API's CommonRouteSpec in every route
// spec), so they must be written there too. A field that a shallower one hides
// (t.Shadowed) is not in the definition, and its values are not written onto the shallower one.
func inlinedSchemaValues(g *model.Types, t *model.Type) []codegen.FieldValidation {
	hidden := map[string]bool{}
	for _, p := range t.Shadowed {
		hidden[strings.Join(p, ".")] = true
	}
	seen := map[*model.Type]bool{}
	var walk func(s *model.Type, path []string) []codegen.FieldValidation
	walk = func(s *model.Type, path []string) []codegen.FieldValidation {
		if seen[s] {
			return nil
		}
		seen[s] = true
		var out []codegen.FieldValidation
		for _, f := range s.Fields() {
			if !f.Inline || f.Type == nil {
				continue
			}
			e := f.Type.Deref()
			if e.Kind != model.ExprNamed {
				continue
			}
			et := g.Lookup(e.Name)
			if et == nil || !et.IsStruct() {
				continue
			}
			at := append(slices.Clone(path), f.GoName)
			out = append(out, walk(et, at)...)
			for _, fv := range typeTags(et).Fields {
				if hidden[strings.Join(append(at, fv.GoName), ".")] {
					continue
				}
				if len(fv.Enum) > 0 || fv.Format != "" || len(fv.ItemsEnum) > 0 || fv.ItemsFormat != "" || fv.PreserveUnknownFields || fv.EmbeddedResource {
					out = append(out, fv)
				}
			}
		}
		return out
	}
	return walk(t, nil)
}

// typeTags renders one type's schema as tags.
func typeTags(t *model.Type) codegen.TypeValidation {
	ct := codegen.TypeValidation{Name: t.Name.Name, Tags: schemaTags(t.Validation)}
	for _, f := range t.Fields() {
		if !f.HasValidation() && !f.PatchFromStructTags {
			continue
		}
		cf := codegen.FieldValidation{GoName: f.GoName, JSONName: f.JSONName, Tags: schemaTags(f.Validation), Enum: f.Validation.Enum, Format: f.Validation.Format,
			PreserveUnknownFields: f.FreeForm, EmbeddedResource: f.EmbeddedResource}
		if f.PatchFromStructTags {
			// openapi-gen publishes the patch markers and refuses any that differ from the
			// struct tags, which are what strategic merge patch reads: it gets those.
			cf.Replace = []string{"patchMergeKey", "patchStrategy"}
			for _, name := range cf.Replace {
				if v := f.Tag.Get(name); v != "" {
					cf.Tags = append(cf.Tags, "+"+name+"="+v)
				}
			}
		}
		// The enum of a +enum type (the type's constants, which openapi-gen writes for +enum
		// but not for +k8s:enum) is written by codegen either way; without
		// +kubebuilder:validation:Enum it is documentation, which the server does not check.
		cf.DocumentedEnum = f.DocumentedEnum
		if f.Items != nil {
			cf.Tags = append(cf.Tags, prefixedSchemaTags("+k8s:validation:items:", *f.Items)...)
			cf.ItemsEnum, cf.ItemsFormat = f.Items.Enum, f.Items.Format
		}
		if f.Default != "" {
			cf.Tags = append(cf.Tags, "+default="+f.Default)
		}
		if f.Required != nil {
			if *f.Required {
				cf.Tags = append(cf.Tags, "+required")
			} else {
				cf.Tags = append(cf.Tags, "+optional")
			}
		}
		ct.Fields = append(ct.Fields, cf)
	}
	return ct
}

// schemaTags renders kube-openapi's +k8s:validation: tags (values are JSON).
func schemaTags(v model.Validation) []string { return prefixedSchemaTags("+k8s:validation:", v) }

// prefixedSchemaTags renders v as kube-openapi's tags under prefix p: "+k8s:validation:"
// for the node itself, "+k8s:validation:items:" for the items of a list.
func prefixedSchemaTags(p string, v model.Validation) []string {
	var tags []string
	num := func(name string, f *float64) {
		if f != nil {
			tags = append(tags, p+name+"="+strconv.FormatFloat(*f, 'g', -1, 64))
		}
	}
	count := func(name string, n *int64) {
		if n != nil {
			tags = append(tags, p+name+"="+strconv.FormatInt(*n, 10))
		}
	}
	num("minimum", v.Minimum)
	num("maximum", v.Maximum)
	if v.ExclusiveMinimum {
		tags = append(tags, p+"exclusiveMinimum=true")
	}
	if v.ExclusiveMaximum {
		tags = append(tags, p+"exclusiveMaximum=true")
	}
	num("multipleOf", v.MultipleOf)
	count("minLength", v.MinLength)
	count("maxLength", v.MaxLength)
	if v.Pattern != "" {
		tags = append(tags, p+"pattern="+jsonString(v.Pattern))
	}
	count("minItems", v.MinItems)
	count("maxItems", v.MaxItems)
	count("minProperties", v.MinProperties)
	count("maxProperties", v.MaxProperties)
	for i, r := range v.Rules {
		cel := fmt.Sprintf("%scel[%d]:", p, i)
		tags = append(tags, cel+"rule="+jsonString(r.Rule))
		switch {
		case r.MessageExpression != "":
			tags = append(tags, cel+"messageExpression="+jsonString(r.MessageExpression))
		case r.Message != "":
			tags = append(tags, cel+"message="+jsonString(r.Message))
		default:
			// kube-openapi requires a message; this is the one a CRD reports without one.
			tags = append(tags, cel+"message="+jsonString("failed rule: "+r.Rule))
		}
		if r.Reason != "" {
			tags = append(tags, cel+"reason="+jsonString(r.Reason))
		}
		if r.FieldPath != "" {
			tags = append(tags, cel+"fieldPath="+jsonString(r.FieldPath))
		}
		if r.OptionalOldSelf != nil {
			tags = append(tags, cel+"optionalOldSelf="+strconv.FormatBool(*r.OptionalOldSelf))
		}
	}
	return tags
}

// jsonString is s as a JSON string, without HTML escaping (rules keep their "<" and "&").
func jsonString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
