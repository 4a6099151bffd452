package model_test

import (
	"strings"
	"testing"
)

// TestBackendMarker checks +aagen:backend: it marks the resource as served from the user's
// backend, and what such a kind cannot have is an error at the marker with a fix.
func TestBackendMarker(t *testing.T) {
	marked := func(markers string) string {
		return strings.Replace(goodKind, "// +genclient\n", "// +genclient\n"+markers, 1)
	}
	m, _, err := build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo,
		"apis/shop/v1/types.go": marked("// +genclient:noStatus\n// +aagen:backend\n")}))
	if err != nil {
		t.Fatal(err)
	}
	k := m.AllKinds()[0]
	if !k.Backend || !k.Resource.Backend || k.HasStatus || k.BackendPos.Line != 7 {
		t.Errorf("+aagen:backend: %+v", k)
	}

	cases := []struct {
		name, markers string
		want          []string
	}{
		{"status subresource", "// +aagen:backend\n// +kubebuilder:subresource:status\n",
			[]string{"types.go:7:1: Widget has +aagen:backend and +kubebuilder:subresource:status", "fix: remove +kubebuilder:subresource:status"}},
		{"status field", "// +aagen:backend\n",
			[]string{"types.go:6:1: Widget has +aagen:backend and a Status field", "fix: add `// +genclient:noStatus`"}},
		{"scale subresource", "// +genclient:noStatus\n// +aagen:backend\n// +kubebuilder:subresource:scale:specpath=.spec.size,statuspath=.status.size\n",
			[]string{"types.go:8:1: Widget has +aagen:backend and +kubebuilder:subresource:scale", "fix: remove +kubebuilder:subresource:scale"}},
		{"imperative subresource", "// +genclient:noStatus\n// +aagen:backend\n// +aagen:subresource:stream:name=log\n",
			[]string{"types.go:8:1: Widget has +aagen:backend and imperative subresources", "fix: remove the +aagen:subresource markers from Widget, or its +aagen:backend"}},
		{"unknown option", "// +genclient:noStatus\n// +aagen:backend:watch=true\n",
			[]string{"types.go:7:1: unknown marker \"+aagen:backend:watch\"; did you mean +aagen:backend?"}},
	}
	// One storage serves every version: the marker is on all of them or on none.
	v2 := strings.ReplaceAll(marked("// +genclient:noStatus\n"), "package v1", "package v2")
	_, _, err = build(t, module(t, map[string]string{
		"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": marked("// +genclient:noStatus\n// +kubebuilder:storageversion\n// +aagen:backend\n"),
		"apis/shop/v2/doc.go": strings.Replace(docGo, "package v1", "package v2", 1), "apis/shop/v2/types.go": v2}))
	if err == nil || !strings.Contains(err.Error(), "types.go:8:1: kind Widget of group shop.example.com is marked +aagen:backend in v1 but not in v2") ||
		!strings.Contains(err.Error(), "fix: add `// +aagen:backend` to Widget in every version") {
		t.Errorf("+aagen:backend in one version of two: %v", err)
	}

	// A kind stored as the group's internal type cannot be served from a backend yet.
	internal := strings.NewReplacer("package v1", "package shop", "`json:\",inline\"`", "", "`json:\"metadata,omitempty\"`", "",
		"`json:\"spec\"`", "", "`json:\"status\"`", "", "`json:\"items\"`", "", "`json:\"size\"`", "", "`json:\"ready\"`", "").Replace(goodKind)
	_, _, err = build(t, module(t, map[string]string{
		"apis/shop/doc.go":      strings.Replace(docGo, "package v1", "package shop", 1),
		"apis/shop/types.go":    internal,
		"apis/shop/v1/doc.go":   "// +k8s:conversion-gen=example.com/marina/apis/shop\n" + docGo,
		"apis/shop/v1/types.go": marked("// +genclient:noStatus\n// +aagen:backend\n")}))
	if err == nil || !strings.Contains(err.Error(), "imperative subresources and +aagen:backend are not supported yet for kinds stored as an internal type") {
		t.Errorf("+aagen:backend on a kind with an internal hub: %v", err)
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": marked(c.markers)}))
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}
