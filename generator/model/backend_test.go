package model_test

import (
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/generator/model"
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

	// A kind stored as the group's internal type is served from a backend of its internal
	// type (the storage's, which every version converts from), as metrics-server serves
	// k8s.io/metrics.
	internal := strings.NewReplacer("package v1", "package shop", "`json:\",inline\"`", "", "`json:\"metadata,omitempty\"`", "",
		"`json:\"spec\"`", "", "`json:\"status\"`", "", "`json:\"items\"`", "", "`json:\"size\"`", "", "`json:\"ready\"`", "").Replace(goodKind)
	withHub := func(v1Markers string) map[string]string {
		return map[string]string{
			"apis/shop/doc.go":      strings.Replace(docGo, "package v1", "package shop", 1),
			"apis/shop/types.go":    internal,
			"apis/shop/v1/doc.go":   "// +k8s:conversion-gen=example.com/marina/apis/shop\n" + docGo,
			"apis/shop/v1/types.go": marked(v1Markers)}
	}
	m, _, err = build(t, module(t, withHub("// +genclient:noStatus\n// +aagen:backend\n")))
	if err != nil {
		t.Fatalf("+aagen:backend on a kind with an internal hub: %v", err)
	}
	if r := m.Groups[0].Resources[0]; !r.Backend || r.Hub == nil || !r.Hub.Version.Internal {
		t.Errorf("+aagen:backend on a kind with an internal hub: resource %+v", r)
	}

	// Config.Backends serves a kind of a package the user does not edit (a published one)
	// from a backend, as the marker does; a name that is no kind is an error listing them.
	m, _, err = buildWith(t, module(t, withHub("// +genclient:noStatus\n// +genclient:readonly\n")), model.Config{Backends: []string{"Widget.shop.example.com"}})
	if err != nil {
		t.Fatalf("Config.Backends: %v", err)
	}
	if r := m.Groups[0].Resources[0]; !r.Backend || r.ReadOnly || !r.Versions[0].Backend {
		t.Errorf("Config.Backends on a read-only kind: resource %+v", r)
	}
	if _, _, err := buildWith(t, module(t, withHub("// +genclient:noStatus\n// +aagen:backend\n")), model.Config{Backends: []string{"Widget.shop.example.com"}}); err != nil {
		t.Errorf("Config.Backends naming a kind marked +aagen:backend already: %v", err)
	}
	_, _, err = buildWith(t, module(t, withHub("// +genclient:noStatus\n")), model.Config{Backends: []string{"Gadget.shop.example.com"}})
	if err == nil || !strings.Contains(err.Error(), "--backend Gadget.shop.example.com names no kind of the packages given") ||
		!strings.Contains(err.Error(), "(one of: Widget.shop.example.com)") {
		t.Errorf("Config.Backends naming no kind: %v", err)
	}
	_, _, err = buildWith(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": goodKind}), model.Config{Backends: []string{"Widget.shop.example.com"}})
	if err == nil || !strings.Contains(err.Error(), "Widget has +aagen:backend and a Status field") {
		t.Errorf("Config.Backends on a kind with a /status subresource: %v", err)
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
