package migrate

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SchemaDifference is one field whose schema differs between the CRD and the generated
// server, in one version.
type SchemaDifference struct {
	Version string
	// Path is the field's path: "spec.replicas", "spec.ports[*].name", "spec.labels{*}".
	Path string
	// CRD and Server are the field's type on each side ("" when the side lacks the field;
	// "object (fields not described)" when it describes none of an object's fields).
	CRD, Server string
}

func (d SchemaDifference) String() string {
	switch {
	case d.CRD == "":
		return fmt.Sprintf("%s: only in the generated server (%s)", d.Path, d.Server)
	case d.Server == "":
		return fmt.Sprintf("%s: only in the CRD (%s)", d.Path, d.CRD)
	default:
		return fmt.Sprintf("%s: %s in the CRD, %s in the generated server", d.Path, d.CRD, d.Server)
	}
}

// maxSchemaDepth bounds the walk of recursive schemas.
const maxSchemaDepth = 32

// compareSchemas compares a CRD version's schema with the schema of gvk in the generated
// server's /openapi/v3 document of that version: the fields (outside apiVersion, kind and
// metadata) each side has, and their types.
func compareSchemas(version string, crd *apiextensionsv1.JSONSchemaProps, doc map[string]any, gvk schema.GroupVersionKind) ([]SchemaDifference, error) {
	data, err := json.Marshal(crd)
	if err != nil {
		return nil, err
	}
	var crdSchema map[string]any
	if err := json.Unmarshal(data, &crdSchema); err != nil {
		return nil, err
	}
	components, _ := dig(doc, "components", "schemas").(map[string]any)
	serverSchema := findKind(components, gvk)
	if serverSchema == nil {
		return nil, fmt.Errorf("the generated server's /openapi/v3 has no schema of %s", gvk)
	}
	crdFields, serverFields := fields{}, fields{}
	crdFields.walkTop(crdSchema, nil)
	serverFields.walkTop(serverSchema, components)
	return diffFields(version, crdFields, serverFields), nil
}

// findKind returns the schema whose x-kubernetes-group-version-kind names gvk.
func findKind(components map[string]any, gvk schema.GroupVersionKind) map[string]any {
	for _, s := range components {
		m, _ := s.(map[string]any)
		list, _ := m["x-kubernetes-group-version-kind"].([]any)
		for _, e := range list {
			e, _ := e.(map[string]any)
			if e["group"] == gvk.Group && e["version"] == gvk.Version && e["kind"] == gvk.Kind {
				return m
			}
		}
	}
	return nil
}

func dig(m map[string]any, keys ...string) any {
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

// fields maps a field path to its type.
type fields map[string]string

// opaqueObject is the type of an object whose schema describes none of its fields.
const opaqueObject = "object (fields not described)"

func (f fields) walkTop(s map[string]any, components map[string]any) {
	props, _ := resolve(s, components)["properties"].(map[string]any)
	for name, p := range props {
		if name == "apiVersion" || name == "kind" || name == "metadata" {
			continue
		}
		if pm, ok := p.(map[string]any); ok {
			f.walk(pm, name, components, 0)
		}
	}
}

func (f fields) walk(s map[string]any, path string, components map[string]any, depth int) {
	if depth > maxSchemaDepth {
		return
	}
	s = resolve(s, components)
	typ, _ := s["type"].(string)
	if v, _ := s["x-kubernetes-int-or-string"].(bool); v {
		typ = "int-or-string"
	}
	props, _ := s["properties"].(map[string]any)
	items, _ := s["items"].(map[string]any)
	additional, _ := s["additionalProperties"].(map[string]any)
	if typ == "" && props != nil {
		typ = "object"
	}
	if typ == "object" && props == nil && additional == nil {
		typ = opaqueObject
	}
	if v, _ := s["x-kubernetes-preserve-unknown-fields"].(bool); v && props == nil {
		typ = opaqueObject
	}
	f[path] = typ
	for name, p := range props {
		if pm, ok := p.(map[string]any); ok {
			f.walk(pm, path+"."+name, components, depth+1)
		}
	}
	if items != nil {
		f.walk(items, path+"[*]", components, depth+1)
	}
	if additional != nil {
		f.walk(additional, path+"{*}", components, depth+1)
	}
}

// resolve follows a $ref, or an allOf of one $ref (how /openapi/v3 wraps a reference with
// a default or description), into components.
func resolve(s map[string]any, components map[string]any) map[string]any {
	for range maxSchemaDepth {
		ref, _ := s["$ref"].(string)
		if all, _ := s["allOf"].([]any); ref == "" && len(all) == 1 {
			if m, ok := all[0].(map[string]any); ok {
				ref, _ = m["$ref"].(string)
			}
		}
		if ref == "" {
			return s
		}
		target, ok := components[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
		if !ok {
			return s
		}
		s = target
	}
	return s
}

// diffFields lists the paths whose types differ, and those one side lacks; of a subtree
// one side lacks, only its root, and when one side leaves an object's fields undescribed,
// that object once.
func diffFields(version string, crd, server fields) []SchemaDifference {
	paths := map[string]bool{}
	for p := range crd {
		paths[p] = true
	}
	for p := range server {
		paths[p] = true
	}
	var out []SchemaDifference
	for p := range paths {
		c, s := crd[p], server[p]
		if c == s {
			continue
		}
		if c == "" || s == "" {
			// Reported at the parent when the parent is missing too or opaque on that side.
			parent := parentPath(p)
			if parent != "" && (crd[parent] == "" || server[parent] == "" || crd[parent] == opaqueObject || server[parent] == opaqueObject) {
				continue
			}
		}
		out = append(out, SchemaDifference{Version: version, Path: p, CRD: c, Server: s})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Path < out[b].Path })
	return out
}

// parentPath is the path of the field that holds p's ("" at the top).
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[{")
	if i < 0 {
		return ""
	}
	return p[:i]
}
