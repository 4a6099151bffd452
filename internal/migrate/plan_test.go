package migrate

import (
	"bytes"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func widgetsCRD(scope apiextensionsv1.ResourceScope, versions ...apiextensionsv1.CustomResourceDefinitionVersion) apiextensionsv1.CustomResourceDefinition {
	return apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.shop.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "shop.example.com", Scope: scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"}, Versions: versions},
	}
}

// TestCompareResource: what stops a migration (a resource, version or scope the server
// lacks; no version in common), what is only noted (another storage version, a version
// only the server serves), and which version the objects are dry-run in.
func TestCompareResource(t *testing.T) {
	v := func(name string, served, storage bool) apiextensionsv1.CustomResourceDefinitionVersion {
		return apiextensionsv1.CustomResourceDefinitionVersion{Name: name, Served: served, Storage: storage}
	}
	server := &served{
		resources: map[string]*servedResource{"widgets": {kind: "Widget", namespaced: true, versions: []string{"v1", "v2"}}},
		storage:   map[string]string{"widgets": "v2"},
	}
	cases := []struct {
		name                    string
		crd                     apiextensionsv1.CustomResourceDefinition
		server                  *served
		problems, notes, dryRun string
	}{
		{"same versions, another storage version", widgetsCRD(apiextensionsv1.NamespaceScoped, v("v1", true, true), v("v2", true, false)), server,
			"", "the CRD stores v1, the generated server v2: objects are converted on import", "v1"},
		{"a version only the server serves", widgetsCRD(apiextensionsv1.NamespaceScoped, v("v2", true, true), v("v0", false, false)), server,
			"", "the generated server also serves v1, which the CRD does not", "v2"},
		{"a version only the CRD serves", widgetsCRD(apiextensionsv1.NamespaceScoped, v("v1", true, true), v("v3", true, false)), server,
			"the CRD serves v3, the generated server does not: its clients would get 404 after the switch",
			"the generated server also serves v2, which the CRD does not; the CRD stores v1, the generated server v2: objects are converted on import", "v1"},
		{"another scope", widgetsCRD(apiextensionsv1.ClusterScoped, v("v1", true, true), v("v2", true, false)), server,
			"the CRD is cluster-scoped, the generated server's resource namespaced", "the CRD stores v1, the generated server v2: objects are converted on import", "v1"},
		{"no version in common", widgetsCRD(apiextensionsv1.NamespaceScoped, v("v3", true, true)), server,
			"the CRD serves v3, the generated server does not: its clients would get 404 after the switch; the CRD and the generated server serve no version in common: the objects cannot be read in a version the server takes",
			"the generated server also serves v1, which the CRD does not; the generated server also serves v2, which the CRD does not; the CRD stores v3, the generated server v2: objects are converted on import", ""},
		{"not served", widgetsCRD(apiextensionsv1.NamespaceScoped, v("v1", true, true)), &served{resources: map[string]*servedResource{}},
			"the generated server does not serve widgets.shop.example.com: its objects would have nowhere to go", "", ""},
	}
	for _, c := range cases {
		rp := compareResource(c.crd, c.server)
		if got := strings.Join(rp.Problems, "; "); got != c.problems {
			t.Errorf("%s: problems %q, want %q", c.name, got, c.problems)
		}
		if got := strings.Join(rp.Notes, "; "); got != c.notes {
			t.Errorf("%s: notes %q, want %q", c.name, got, c.notes)
		}
		if rp.DryRunVersion != c.dryRun {
			t.Errorf("%s: dry run in %q, want %q", c.name, rp.DryRunVersion, c.dryRun)
		}
	}
}

// TestPlanBlocking: a plan blocks on a problem or on a refused object --skip does not name,
// and says so on its last line.
func TestPlanBlocking(t *testing.T) {
	refused := func(skipped bool) *Plan {
		return &Plan{Group: "shop.example.com", Resources: []ResourcePlan{{Resource: "widgets.shop.example.com", DryRunVersion: "v1", Objects: 2,
			Refused: []RefusedObject{{Name: "ns/a", Skipped: skipped, Fields: []FieldCause{{Field: "spec.size", Message: "Invalid value: 7"}}}}}}}
	}
	for _, c := range []struct {
		plan  *Plan
		block bool
		line  string
	}{
		{refused(false), true, "REFUSED ns/a: spec.size: Invalid value: 7"},
		{refused(true), false, "refused (skipped) ns/a: spec.size: Invalid value: 7"},
		{&Plan{Resources: []ResourcePlan{{Problems: []string{"x"}}}}, true, "PROBLEM: x"},
		{&Plan{Resources: []ResourcePlan{{Notes: []string{"y"}}}}, false, "note: y"},
	} {
		var out bytes.Buffer
		c.plan.Print(&out)
		if c.plan.Blocking() != c.block || !strings.Contains(out.String(), c.line) {
			t.Errorf("blocking %v, output:\n%s\nwant blocking %v and %q", c.plan.Blocking(), out.String(), c.block, c.line)
		}
		last := "can start"
		if c.block {
			last = "cannot start"
		}
		if !strings.Contains(out.String(), last) {
			t.Errorf("output:\n%s\nwant it to say %q", out.String(), last)
		}
	}
}
