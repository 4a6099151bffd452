package model_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecursiveTypes: a recursive type is served (apiextensions' JSONSchemaProps), with a
// warning at each field that repeats it saying what the server's validation covers, whatever
// the shape of the repetition: a map value, a named list type, a pointer.
func TestRecursiveTypes(t *testing.T) {
	types := "package v1\n\nimport metav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n\n" +
		"// +genclient\ntype Widget struct {\n\tmetav1.TypeMeta   `json:\",inline\"`\n\tmetav1.ObjectMeta `json:\"metadata,omitempty\"`\n\tSpec Node `json:\"spec\"`\n}\n\n" +
		"type Node struct {\n" +
		"\tName string `json:\"name\"`\n" +
		"\tChildren map[string]Node `json:\"children,omitempty\"`\n" +
		"\tList Nodes `json:\"list,omitempty\"`\n" +
		"\tNext *Node `json:\"next,omitempty\"`\n" +
		"}\n\n" +
		"type Nodes []Node\n\n" +
		"type WidgetList struct {\n\tmetav1.TypeMeta `json:\",inline\"`\n\tmetav1.ListMeta `json:\"metadata,omitempty\"`\n\tItems []Widget `json:\"items\"`\n}\n"
	_, warnings, err := build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": types}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range warnings {
		if strings.Contains(w.Msg, "is recursive") {
			got = append(got, fmt.Sprintf("%s:%d: %s", filepath.Base(w.Pos.Filename), w.Pos.Line, w.Msg))
		}
	}
	want := []string{
		"types.go:14: type Node is recursive (reached again through Widget.Spec.Children[key]): it is served",
		"types.go:15: type Node is recursive (reached again through Widget.Spec.List[]): it is served",
		"types.go:16: type Node is recursive (reached again through Widget.Spec.Next): it is served",
	}
	if len(got) != len(want) {
		t.Fatalf("warnings about recursion:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) || !strings.Contains(got[i], "values are only decoded into the Go type, without the schema's value validations, required fields and CEL rules") {
			t.Errorf("warning %d:\n%s\nwant it to start with\n%s", i, got[i], want[i])
		}
	}
}
