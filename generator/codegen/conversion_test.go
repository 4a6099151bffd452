package codegen

import (
	"os"
	"path/filepath"
	"testing"
)

// TestUsesConversions: the hand-written files hidden from the models-schema program are
// those that declare a Convert_ function or name one of the package's own (which
// conversion-gen writes only in the last step); another package's Convert_ function
// (metav1.Convert_...) and a method named ConvertTo do not count.
func TestUsesConversions(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		src  string
		want bool
	}{
		"declares.go": {"package v1\nfunc Convert_v1_A_To_v2_A(in, out *int, s any) error { return autoConvert_v1_A_To_v2_A(in, out, s) }\n", true},
		// kueue v0.17.0's apis/kueue/v1beta1/cohort_conversion.go.
		"method.go": {"package v1\ntype Cohort struct{}\nfunc (src *Cohort) ConvertTo(dst any) error { return Convert_v1beta1_Cohort_To_v1beta2_Cohort(src, nil, nil) }\n", true},
		"value.go":  {"package v1\nvar funcs = []any{Convert_v1_A_To_v2_A}\n", true},
		"other.go":  {"package v1\nimport metav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\nvar f = metav1.Convert_Pointer_int32_To_int32\ntype T struct{}\nfunc (T) ConvertTo() {}\n", false},
		"none.go":   {"package v1\ntype A struct{ Convert_field int }\nfunc f(a A) int { return a.Convert_field }\n", false},
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(c.src), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := usesConversions(p); got != c.want {
			t.Errorf("%s: usesConversions = %v, want %v", name, got, c.want)
		}
	}
}
