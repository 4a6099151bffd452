package model

import (
	"fmt"
	"strings"

	"github.com/aagen-dev/aagen/generator/markers"
)

// patchSemantics compares a field's +patchMergeKey and +patchStrategy markers with its
// patchMergeKey and patchStrategy struct tags. Strategic merge patch reads only the struct
// tags (k8s.io/apiserver applies it with strategicpatch.StrategicMergeMapPatch on the Go
// type), and openapi-gen publishes the markers only when they say the same (one value each,
// equal to the tag). When they differ, the struct tags are what the server does, so they are
// what openapi-gen is given (Field.PatchFromStructTags); markers that said something else
// (two merge keys, as kueue's SchedulingStats.Evictions has, a marker without its tag, other
// values) get a warning saying what a patch does instead.
func (b *builder) patchSemantics(t *Type, f *Field) {
	var keys, strategies []string
	var first *markers.Marker
	for i, m := range f.Markers {
		switch m.Def.Name {
		case "patchMergeKey":
			keys = append(keys, m.Value)
		case "patchStrategy":
			strategies = append(strategies, m.Value)
		default:
			continue
		}
		if first == nil {
			first = &f.Markers[i]
		}
	}
	tagKey, tagStrategy := f.Tag.Get("patchMergeKey"), f.Tag.Get("patchStrategy")
	if agrees(keys, tagKey) && agrees(strategies, tagStrategy) {
		return
	}
	f.PatchFromStructTags = true
	if first == nil {
		return // struct tags alone: published as they are, nothing is lost
	}
	var said []string
	if len(keys) > 0 {
		said = append(said, fmt.Sprintf("+patchMergeKey=%s", strings.Join(keys, ", +patchMergeKey=")))
	}
	if len(strategies) > 0 {
		said = append(said, fmt.Sprintf("+patchStrategy=%s", strings.Join(strategies, ", +patchStrategy=")))
	}
	does := "a strategic merge patch replaces the list, as a JSON merge patch does"
	if tagStrategy != "" {
		does = fmt.Sprintf("a strategic merge patch follows the struct tags (patchStrategy %q, patchMergeKey %q)", tagStrategy, tagKey)
	}
	ssa := ""
	switch {
	case f.ListType == "map":
		ssa = fmt.Sprintf("; server-side apply merges it by its +listMapKey keys (%s)", strings.Join(f.ListMapKeys, ", "))
	case f.ListType != "":
		ssa = fmt.Sprintf("; server-side apply treats it as +listType=%s", f.ListType)
	}
	tags := "it has none"
	if tagKey != "" || tagStrategy != "" {
		tags = fmt.Sprintf("patchStrategy:%q patchMergeKey:%q", tagStrategy, tagKey)
	}
	b.warnf(first.Pos,
		"give the field at most one merge key, the same in the markers and the struct tags (`patchStrategy:\"merge\" patchMergeKey:\"name\"`), or drop the +patchMergeKey and +patchStrategy markers (a list keyed by several fields is +listType=map with a +listMapKey for each, which server-side apply merges by)",
		"field %s.%s: %s, but strategic merge patch takes one merge key and reads it from the struct tags (%s): %s%s; the OpenAPI definitions publish what the struct tags say (x-kubernetes-patch-merge-key, x-kubernetes-patch-strategy)",
		where(t), f.GoName, strings.Join(said, " and "), tags, does, ssa)
}

// agrees reports whether the values of a patch marker are the one value of its struct tag
// (none when the tag is empty), as openapi-gen requires.
func agrees(markerValues []string, tag string) bool {
	switch len(markerValues) {
	case 0:
		return tag == ""
	case 1:
		return markerValues[0] == tag
	}
	return false
}
