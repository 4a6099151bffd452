package generator_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/generator"
)

// TestPatchMarkersPublishStructTags generates fields whose +patchMergeKey and +patchStrategy
// markers differ from their struct tags (kueue v0.17.0's SchedulingStats.Evictions has two
// merge keys and no tags, which openapi-gen refused): the run succeeds with a warning at each
// field, and the OpenAPI definitions publish the struct tags, what strategic merge patch reads.
func TestPatchMarkersPublishStructTags(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join("../testdata/example", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pkg := filepath.Join(dir, "pkg/apis/shop/v1")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"doc.go": "// +groupName=shop.example.com\npackage v1\n",
		"types.go": `package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +genclient
type Widget struct {
	metav1.TypeMeta   ` + "`json:\",inline\"`" + `
	metav1.ObjectMeta ` + "`json:\"metadata,omitempty\"`" + `
	Spec WidgetSpec ` + "`json:\"spec\"`" + `
}

type WidgetSpec struct {
	// +listType=map
	// +listMapKey=reason
	// +listMapKey=underlyingCause
	// +patchStrategy=merge
	// +patchMergeKey=reason
	// +patchMergeKey=underlyingCause
	Evictions []Eviction ` + "`json:\"evictions,omitempty\"`" + `
	// +patchStrategy=merge
	// +patchMergeKey=name
	// +patchMergeKey=port
	Ports []Port ` + "`json:\"ports,omitempty\" patchStrategy:\"merge\" patchMergeKey:\"name\"`" + `
}

type Eviction struct {
	Reason          string ` + "`json:\"reason\"`" + `
	UnderlyingCause string ` + "`json:\"underlyingCause\"`" + `
}

type Port struct {
	Name string ` + "`json:\"name\"`" + `
	Port int32  ` + "`json:\"port\"`" + `
}

type WidgetList struct {
	metav1.TypeMeta ` + "`json:\",inline\"`" + `
	metav1.ListMeta ` + "`json:\"metadata,omitempty\"`" + `
	Items []Widget ` + "`json:\"items\"`" + `
}
`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(pkg, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := generator.Generate(context.Background(), generator.Options{
		Dir: dir, Patterns: []string{"./pkg/apis/..."}, Runtime: generator.RuntimeRef{Skip: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	warned := map[string]bool{}
	for _, w := range res.Warnings {
		for _, at := range []string{"types.go:16:2: warning: field WidgetSpec.Evictions", "types.go:20:2: warning: field WidgetSpec.Ports"} {
			if strings.Contains(w.String(), at) && strings.Contains(w.String(), "strategic merge patch takes one merge key") {
				warned[at] = true
			}
		}
	}
	if len(warned) != 2 {
		t.Errorf("warnings at the patch markers: %v; all warnings: %v", warned, res.Warnings)
	}
	openapi := string(snapshot(t, dir)["pkg/generated/openapi/zz_generated.openapi.go"])
	spec := openapi[strings.Index(openapi, "func schema_pkg_apis_shop_v1_WidgetSpec("):]
	spec = spec[:strings.Index(spec, "\n}\n")]
	property := func(name, next string) string {
		i, j := strings.Index(spec, `"`+name+`": {`), strings.Index(spec, next)
		if i < 0 || j < i {
			t.Fatalf("no property %s before %s in WidgetSpec's definition:\n%s", name, next, spec)
		}
		return spec[i:j]
	}
	if ev := property("evictions", `"ports": {`); strings.Contains(ev, "x-kubernetes-patch") || !strings.Contains(ev, `"x-kubernetes-list-map-keys": []interface{}{`) {
		t.Errorf("evictions publishes a patch key, or no list map keys:\n%s", ev)
	}
	if ports := strings.Join(strings.Fields(property("ports", "Dependencies:")), " "); !strings.Contains(ports, `"x-kubernetes-patch-merge-key": "name"`) || !strings.Contains(ports, `"x-kubernetes-patch-strategy": "merge"`) {
		t.Errorf("ports does not publish its struct tags' merge key name and strategy merge:\n%s", ports)
	}
}
