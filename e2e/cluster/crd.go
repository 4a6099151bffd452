package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// ReadCRD reads a CustomResourceDefinition from a YAML file, as controller-gen writes them,
// strictly: a field the v1 type does not have is an error, not silently dropped.
func ReadCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if crd.Kind != "CustomResourceDefinition" || crd.APIVersion != "apiextensions.k8s.io/v1" {
		return nil, fmt.Errorf("%s: a %s %s, not an apiextensions.k8s.io/v1 CustomResourceDefinition", path, crd.APIVersion, crd.Kind)
	}
	return &crd, nil
}

// InstallCRD creates crd on the cluster admin points at and waits until its condition
// Established is true (its names accepted and its versions served), failing the test
// with the CRD's conditions otherwise.
func InstallCRD(t T, ctx context.Context, admin *rest.Config, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	client := apiextensionsclient.NewForConfigOrDie(admin).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := client.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the CRD %s: %v", crd.Name, err)
	}
	var last []apiextensionsv1.CustomResourceDefinitionCondition
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := client.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = got.Status.Conditions
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the CRD %s never became Established: %v; conditions %+v", crd.Name, err, last)
	}
}

// CRDSchema returns the schema of a kind, taken from a server's OpenAPI v3 document of one
// group-version (GET /openapi/v3/apis/<group>/<version>), in the form a
// CustomResourceDefinition version carries: references inlined, metadata an object, and
// nothing a CRD schema may not carry. kindSuffix picks the component, e.g. ".v1.Visitor".
func CRDSchema(openAPIV3 []byte, kindSuffix string) (*apiextensionsv1.JSONSchemaProps, error) {
	var doc struct {
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIV3, &doc); err != nil {
		return nil, err
	}
	var root any
	for name, s := range doc.Components.Schemas {
		if strings.HasSuffix(name, kindSuffix) {
			root = s
		}
	}
	if root == nil {
		return nil, fmt.Errorf("no schema named *%s in the OpenAPI v3 document", kindSuffix)
	}
	props := inlineSchema(root, doc.Components.Schemas, 0).(map[string]any)
	props["properties"].(map[string]any)["metadata"] = map[string]any{"type": "object"}
	raw, err := json.Marshal(props)
	if err != nil {
		return nil, err
	}
	var out apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("the *%s schema as a CRD schema: %w", kindSuffix, err)
	}
	return &out, nil
}

// inlineSchema resolves the $refs of an OpenAPI v3 schema (CRD schemas cannot have any)
// and drops what a CRD schema may not carry.
func inlineSchema(node any, defs map[string]any, depth int) any {
	if depth > 32 {
		return map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	}
	n, ok := node.(map[string]any)
	if !ok {
		return node
	}
	out := map[string]any{}
	for k, v := range n {
		out[k] = v
	}
	if all, ok := out["allOf"].([]any); ok && len(all) == 1 {
		delete(out, "allOf")
		for k, v := range all[0].(map[string]any) {
			// items: the constraints of list items (kube-openapi's allOf: [{items: ...}])
			// join the items' own schema.
			if sub, ok := v.(map[string]any); ok && k == "items" {
				if own, ok := out[k].(map[string]any); ok {
					merged := map[string]any{}
					for kk, vv := range own {
						merged[kk] = vv
					}
					for kk, vv := range sub {
						merged[kk] = vv
					}
					v = merged
				}
			}
			out[k] = v
		}
	}
	if ref, ok := out["$ref"].(string); ok {
		delete(out, "$ref")
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		def, ok := defs[name]
		if !ok {
			// A JSON pointer escapes "/" (a Go package path in a name) as ~1 and "~" as ~0.
			def = defs[strings.NewReplacer("~1", "/", "~0", "~").Replace(name)]
		}
		target := inlineSchema(def, defs, depth+1).(map[string]any)
		for k, v := range target {
			if _, set := out[k]; !set {
				out[k] = v
			}
		}
	}
	delete(out, "x-kubernetes-group-version-kind")
	// openapi-gen gives fields without omitempty their Go zero value as a default
	// ("default: {}" for a struct, "" for a string), which a CRD rejects when it breaks
	// the field's own constraints (required members, a minimum length); the schema means
	// no default there.
	switch d := out["default"].(type) {
	case map[string]any:
		if len(d) == 0 {
			delete(out, "default")
		}
	case string:
		if d == "" {
			delete(out, "default")
		}
	case float64:
		if d == 0 {
			delete(out, "default")
		}
	case bool:
		if !d {
			delete(out, "default")
		}
	}
	if ps, ok := out["properties"].(map[string]any); ok {
		res := map[string]any{}
		for name, p := range ps {
			res[name] = inlineSchema(p, defs, depth+1)
		}
		out["properties"] = res
	}
	for _, k := range []string{"items", "additionalProperties"} {
		if v, ok := out[k].(map[string]any); ok {
			out[k] = inlineSchema(v, defs, depth+1)
		}
	}
	return out
}

// MakeInstallable changes what kube-apiserver v1.37.2 refuses in a CRD controller-gen
// wrote, and returns what it changed:
//
//   - a group under k8s.io or kubernetes.io needs the api-approved.kubernetes.io annotation
//     (the API approval policy); a CRD without it gets "unapproved, aagen conformance";
//   - a CRD whose versions have different schemas but the same selectable fields is refused
//     ("spec.selectableFields: may only be set when validations.schema is included": the
//     conversion to the internal form hoists identical selectable fields, not different
//     schemas); the versions other than the storage version lose theirs (aagen conformance
//     sends its requests in one version, the hub, which is the storage version).
func MakeInstallable(crds []*apiextensionsv1.CustomResourceDefinition) []string {
	var notes []string
	for _, crd := range crds {
		g := crd.Spec.Group
		if g == "k8s.io" || g == "kubernetes.io" || strings.HasSuffix(g, ".k8s.io") || strings.HasSuffix(g, ".kubernetes.io") {
			if _, ok := crd.Annotations[apiextensionsv1.KubeAPIApprovedAnnotation]; !ok {
				if crd.Annotations == nil {
					crd.Annotations = map[string]string{}
				}
				crd.Annotations[apiextensionsv1.KubeAPIApprovedAnnotation] = "unapproved, aagen conformance"
				notes = append(notes, fmt.Sprintf("CRD %s: annotated %s (a group under k8s.io needs it)", crd.Name, apiextensionsv1.KubeAPIApprovedAnnotation))
			}
		}
		vs := crd.Spec.Versions
		if len(vs) < 2 || len(vs[0].SelectableFields) == 0 {
			continue
		}
		sameFields, sameSchemas := true, true
		for _, v := range vs[1:] {
			sameFields = sameFields && equality.Semantic.DeepEqual(v.SelectableFields, vs[0].SelectableFields)
			sameSchemas = sameSchemas && equality.Semantic.DeepEqual(v.Schema, vs[0].Schema)
		}
		if !sameFields || sameSchemas {
			continue
		}
		for i := range vs {
			if !vs[i].Storage {
				vs[i].SelectableFields = nil
				notes = append(notes, fmt.Sprintf("CRD %s: the selectable fields of version %s dropped (kube-apiserver refuses the same selectable fields on versions with different schemas)", crd.Name, vs[i].Name))
			}
		}
	}
	return notes
}
