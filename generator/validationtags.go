package generator

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/aagen-dev/aagen/generator/codegen"
	"github.com/aagen-dev/aagen/generator/model"
)

// validationTags translates the validation and default markers of a version into the
// comment tags kube-openapi and defaulter-gen read (+k8s:validation:..., +default,
// +required, +optional), plus the enum and format values codegen writes into the
// definitions itself.
func validationTags(v *model.Version) codegen.Validation {
	out := codegen.Validation{Defaults: v.HasDefaults()}
	for _, tv := range v.Validations {
		ct := codegen.TypeValidation{Name: tv.Name, Tags: schemaTags(tv.Validation)}
		for _, f := range tv.Fields {
			cf := codegen.FieldValidation{GoName: f.GoName, JSONName: f.JSONName, Tags: schemaTags(f.Validation), Enum: f.Enum, Format: f.Format,
				PreserveUnknownFields: f.FreeForm, EmbeddedResource: f.EmbeddedResource}
			if f.Items != nil {
				cf.Tags = append(cf.Tags, prefixedSchemaTags("+k8s:validation:items:", *f.Items)...)
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
		out.Types = append(out.Types, ct)
	}
	return out
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
