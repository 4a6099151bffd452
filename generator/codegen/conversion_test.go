package codegen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStripConversions: the models-schema program gets the hand-written files of a package
// that converts without the functions that declare or call its Convert_ functions (and those
// calling them in turn), keeping everything else the files declare; a file without any is
// not in the overlay, and another package's Convert_ function does not count.
func TestStripConversions(t *testing.T) {
	dir, work := t.TempDir(), t.TempDir()
	files := map[string]string{
		// apiextensions v0.37.2's conversion.go declares a var its marshal.go uses.
		"conversion.go": `package v1

import (
	"bytes"

	"k8s.io/apimachinery/pkg/conversion"
)

// Convert_v1_A_To_v2_A converts.
func Convert_v1_A_To_v2_A(in, out *A, s conversion.Scope) error {
	return autoConvert_v1_A_To_v2_A(in, out, s)
}

var nullLiteral = []byte("null")

func helper(a *A) error { return Convert_v1_A_To_v2_A(a, a, nil) }

func usesHelper() bool { return helper(nil) == nil && bytes.Equal(nullLiteral, nil) }
`,
		// kueue v0.17.0's v1beta1 cohort_conversion.go.
		"cohort_conversion.go": `package v1

type Cohort struct{}

func (src *Cohort) ConvertTo(dst any) error {
	return Convert_v1beta1_Cohort_To_v1beta2_Cohort(src, nil, nil)
}
`,
		"types.go": `package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

type A struct{ Convert_field int }

var f = metav1.Convert_Pointer_int32_To_int32

func (a A) ConvertTo() int { return a.Convert_field }
`,
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	overlay := map[string]string{}
	in := Input{Packages: []Package{{ImportPath: "example.com/w/v1", Dir: dir, ConvertTo: "example.com/w/v2"}}}
	if err := stripConversions(in, overlay, work); err != nil {
		t.Fatal(err)
	}
	if _, ok := overlay[filepath.Join(dir, "types.go")]; ok {
		t.Error("types.go, which has no conversion code, is in the overlay")
	}
	read := func(name string) string {
		p, ok := overlay[filepath.Join(dir, name)]
		if !ok {
			t.Fatalf("%s is not in the overlay", name)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	conv := read("conversion.go")
	for _, gone := range []string{"func Convert_v1_A_To_v2_A", "converts.", "func helper", "func usesHelper"} {
		if strings.Contains(conv, gone) {
			t.Errorf("stripped conversion.go still has %q:\n%s", gone, conv)
		}
	}
	for _, kept := range []string{"var nullLiteral", `_ "k8s.io/apimachinery/pkg/conversion"`, `"bytes"`} {
		if !strings.Contains(conv, kept) {
			t.Errorf("stripped conversion.go lacks %q:\n%s", kept, conv)
		}
	}
	if cohort := read("cohort_conversion.go"); strings.Contains(cohort, "ConvertTo") || !strings.Contains(cohort, "type Cohort struct") {
		t.Errorf("stripped cohort_conversion.go:\n%s", cohort)
	}
}
