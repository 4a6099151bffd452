package generator_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/generator"
)

// TestMarkersOnTypesOfOtherPackages generates a module whose kind's spec holds a struct of
// another package of the module (pkg/common) and one of a second module (example.com/extlib,
// by a replace): the markers on those structs reach the OpenAPI definitions (so the
// server's validation and kubectl explain) and the version's defaulters, as controller-gen
// applies markers wherever a type is declared.
//
// The second module lives beside the first (replace ../extlib): an edit there makes the
// next run regenerate, not find everything up to date.
func TestMarkersOnTypesOfOtherPackages(t *testing.T) {
	top := t.TempDir()
	dir := filepath.Join(top, "shop")
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join("../testdata/example", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "go.mod" {
			data = append(data, []byte("\nrequire example.com/extlib v0.0.0\n\nreplace example.com/extlib => ../extlib\n")...)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"pkg/apis/shop/v1/doc.go": "// +groupName=shop.example.com\npackage v1\n",
		"pkg/apis/shop/v1/types.go": `package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/extlib/limits"
	"example.com/marina/pkg/common"
)

// +genclient
type Widget struct {
	metav1.TypeMeta   ` + "`json:\",inline\"`" + `
	metav1.ObjectMeta ` + "`json:\"metadata,omitempty\"`" + `
	Spec WidgetSpec ` + "`json:\"spec\"`" + `
}

type WidgetSpec struct {
	Label  common.Label  ` + "`json:\"label\"`" + `
	Limits *limits.Limits ` + "`json:\"limits,omitempty\"`" + `
}

type WidgetList struct {
	metav1.TypeMeta ` + "`json:\",inline\"`" + `
	metav1.ListMeta ` + "`json:\"metadata,omitempty\"`" + `
	Items           []Widget ` + "`json:\"items\"`" + `
}
`,
		"pkg/common/label.go": `package common

// +kubebuilder:validation:XValidation:rule="self.value != 'zzz'",message="value must not be zzz"
type Label struct {
	// +kubebuilder:validation:MaxLength=3
	// +kubebuilder:validation:Pattern=` + "`^[a-z]+$`" + `
	Value string ` + "`json:\"value\"`" + `
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=2
	Count int32 ` + "`json:\"count,omitempty\"`" + `
	// +kubebuilder:validation:Enum=red;blue
	Color string ` + "`json:\"color,omitempty\"`" + `
}
`,
		"../extlib/go.mod": "module example.com/extlib\n\ngo 1.24\n",
		"../extlib/limits/limits.go": `package limits

// +kubebuilder:validation:XValidation:rule="self.min <= self.max",message="min must not exceed max"
type Limits struct {
	// +kubebuilder:validation:Minimum=0
	Min int64 ` + "`json:\"min,omitempty\"`" + `
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=50
	Max int64 ` + "`json:\"max,omitempty\"`" + `
	// +kubebuilder:validation:Enum=m;s
	Unit string ` + "`json:\"unit,omitempty\"`" + `
}
`,
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gen := func() *generator.Result {
		t.Helper()
		res, err := generator.Generate(context.Background(), generator.Options{
			Dir: dir, Patterns: []string{"./pkg/apis/..."}, Runtime: generator.RuntimeRef{Skip: true},
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	gen()
	tree := snapshot(t, dir)
	defaults := string(tree["pkg/apis/shop/v1/zz_generated.defaults.go"])
	for _, want := range []string{"in.Spec.Label.Count = 2", "in.Spec.Limits.Max = 50"} {
		if !strings.Contains(defaults, want) {
			t.Errorf("zz_generated.defaults.go lacks %s:\n%s", want, defaults)
		}
	}
	openapi := string(tree["pkg/generated/openapi/zz_generated.openapi.go"])
	for def, wants := range map[string][]string{
		"examplecom_marina_pkg_common_Label": {
			`"rule": "self.value != 'zzz'"`, `"message": "value must not be zzz"`,
			"MaxLength: ptr.To[int64](3)", `Pattern:   "^[a-z]+$"`, "Minimum: ptr.To[float64](1)", `Enum: []interface{}{"red", "blue"}`,
			"Default: 2",
		},
		"examplecom_extlib_limits_Limits": {
			`"rule": "self.min <= self.max"`, "Minimum: ptr.To[float64](0)", "Maximum: ptr.To[float64](100)", `Enum: []interface{}{"m", "s"}`,
			"Default: 50",
		},
	} {
		body := regexp.MustCompile(`(?s)func schema_` + def + `\(.*?\n}\n`).FindString(openapi)
		if body == "" {
			t.Errorf("no definition schema_%s in the OpenAPI definitions", def)
			continue
		}
		flat := regexp.MustCompile(`\s+`).ReplaceAllString(body, " ")
		for _, want := range wants {
			if !strings.Contains(flat, regexp.MustCompile(`\s+`).ReplaceAllString(want, " ")) {
				t.Errorf("schema_%s lacks %s:\n%s", def, want, body)
			}
		}
	}
	if !gen().UpToDate {
		t.Errorf("a second run with nothing changed was not skipped")
	}
	limits := filepath.Join(top, "extlib", "limits", "limits.go")
	src, err := os.ReadFile(limits)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(limits, []byte(strings.Replace(string(src), "Maximum=100", "Maximum=90", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if gen().UpToDate {
		t.Fatalf("an edit of the replaced module's types was taken as up to date")
	}
	if !strings.Contains(string(snapshot(t, dir)["pkg/generated/openapi/zz_generated.openapi.go"]), "Maximum: ptr.To[float64](90)") {
		t.Errorf("the edited maximum did not reach the OpenAPI definitions")
	}
}
