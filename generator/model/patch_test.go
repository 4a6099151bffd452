package model_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/generator/model"
)

// TestPatchMarkersAgainstStructTags: patch markers that do not say what the struct tags say
// (strategic merge patch reads the tags) get a warning at the first marker saying what a patch
// does instead, and the field publishes the struct tags (PatchFromStructTags); markers equal
// to the tags, or tags alone, are not warned about.
func TestPatchMarkersAgainstStructTags(t *testing.T) {
	spec := "type WidgetSpec struct {\n" +
		"\t// kueue v0.17.0's SchedulingStats.Evictions: two keys, no struct tags.\n" +
		"\t// +listType=map\n\t// +listMapKey=reason\n\t// +listMapKey=underlyingCause\n" +
		"\t// +patchStrategy=merge\n\t// +patchMergeKey=reason\n\t// +patchMergeKey=underlyingCause\n" +
		"\tEvictions []Eviction `json:\"evictions,omitempty\"`\n" +
		"\t// Two keys on a pointer to a list whose struct tags have one.\n" +
		"\t// +patchMergeKey=name\n\t// +patchMergeKey=port\n\t// +patchStrategy=merge\n" +
		"\tPorts *[]Port `json:\"ports,omitempty\" patchStrategy:\"merge\" patchMergeKey:\"name\"`\n" +
		"\t// +listType=map\n\t// +listMapKey=name\n\t// +patchStrategy=merge\n\t// +patchMergeKey=name\n" +
		"\tAgreed []Port `json:\"agreed,omitempty\" patchStrategy:\"merge\" patchMergeKey:\"name\"`\n" +
		"\tTagsOnly []Port `json:\"tagsOnly,omitempty\" patchStrategy:\"merge\" patchMergeKey:\"name\"`\n" +
		"}\n\n" +
		"type Eviction struct {\n\tReason string `json:\"reason\"`\n\tUnderlyingCause string `json:\"underlyingCause\"`\n}\n\n" +
		"type Port struct {\n\tName string `json:\"name\"`\n\tPort int32 `json:\"port\"`\n}\n\n"
	types := "package v1\n\nimport metav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n\n" +
		"// +genclient\ntype Widget struct {\n\tmetav1.TypeMeta   `json:\",inline\"`\n\tmetav1.ObjectMeta `json:\"metadata,omitempty\"`\n\tSpec WidgetSpec `json:\"spec\"`\n}\n\n" +
		spec +
		"type WidgetList struct {\n\tmetav1.TypeMeta `json:\",inline\"`\n\tmetav1.ListMeta `json:\"metadata,omitempty\"`\n\tItems []Widget `json:\"items\"`\n}\n"
	dir := module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": types})
	m, warnings, err := build(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range warnings {
		if strings.Contains(w.Msg, "strategic merge patch") {
			got = append(got, fmt.Sprintf("%s:%d: %s", filepath.Base(w.Pos.Filename), w.Pos.Line, w.Msg))
		}
	}
	want := []string{
		`types.go:17: field WidgetSpec.Evictions: +patchMergeKey=reason, +patchMergeKey=underlyingCause and +patchStrategy=merge, but strategic merge patch takes one merge key and reads it from the struct tags (it has none): a strategic merge patch replaces the list, as a JSON merge patch does; server-side apply merges it by its +listMapKey keys (reason, underlyingCause); the OpenAPI definitions publish what the struct tags say`,
		`types.go:22: field WidgetSpec.Ports: +patchMergeKey=name, +patchMergeKey=port and +patchStrategy=merge, but strategic merge patch takes one merge key and reads it from the struct tags (patchStrategy:"merge" patchMergeKey:"name"): a strategic merge patch follows the struct tags (patchStrategy "merge", patchMergeKey "name"); the OpenAPI definitions publish what the struct tags say`,
	}
	if len(got) != len(want) {
		t.Fatalf("warnings about patch markers:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d:\n%s\nwant it to start with\n%s", i, got[i], want[i])
		}
	}
	st := m.Types.Lookup(model.GoType{Pkg: m.Groups[0].Versions[0].ImportPath, Name: "WidgetSpec"})
	for field, fromTags := range map[string]bool{"Evictions": true, "Ports": true, "Agreed": false, "TagsOnly": true} {
		if f := st.Field(field); f == nil || f.PatchFromStructTags != fromTags {
			t.Errorf("%s: PatchFromStructTags = %v, want %v", field, f != nil && f.PatchFromStructTags, fromTags)
		}
	}
}
