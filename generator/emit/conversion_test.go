package emit

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/generator/model"
)

// conversionVersion is a version package v1 in dir that converts to the group's internal
// package, as in kube-aggregator's apiregistration.
func conversionVersion(t *testing.T, dir string) (*model.Model, *model.Version) {
	t.Helper()
	g := &model.Group{Name: "apiregistration.example.com"}
	hub := &model.Version{Group: g, Name: "__internal", Internal: true, PkgName: "apiregistration",
		ImportPath: "example.com/agg/pkg/apis/apiregistration", Dir: filepath.Join(dir, "pkg/apis/apiregistration")}
	v := &model.Version{Group: g, Name: "v1", PkgName: "v1", ImportPath: "example.com/agg/pkg/apis/apiregistration/v1",
		Dir: filepath.Join(dir, "pkg/apis/apiregistration/v1"), ConvertTo: hub}
	if err := os.MkdirAll(v.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v.Dir, "types.go"), []byte("package v1\n\ntype ServiceReference struct{ Port *int32 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return &model.Model{ModuleDir: dir}, v
}

// TestConversionHelpersOfOtherPackagesAreNotMissing: a conversion function of another package
// that zz_generated.conversion.go calls by its qualified name (kube-aggregator's
// metav1.Convert_Pointer_int32_To_int32) is that package's, not a local function to stub;
// a local one the file calls but does not declare still is, and the stub file renders as Go.
func TestConversionHelpersOfOtherPackagesAreNotMissing(t *testing.T) {
	m, v := conversionVersion(t, t.TempDir())
	generated := `package v1

import (
	apiregistration "example.com/agg/pkg/apis/apiregistration"
	conversion "k8s.io/apimachinery/pkg/conversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func autoConvert_v1_ServiceReference_To_apiregistration_ServiceReference(in *ServiceReference, out *apiregistration.ServiceReference, s conversion.Scope) error {
	// WARNING: in.Port requires manual conversion: inconvertible types (*int32 vs int32)
	if err := metav1.Convert_Pointer_int32_To_int32(&in.Port, &out.Port, s); err != nil {
		return err
	}
	return nil
}

func register(s conversion.Scope) {
	_ = Convert_v1_ServiceReference_To_apiregistration_ServiceReference
}
`
	missing, err := MissingConversions(v, []byte(generated))
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) != 1 || missing[0].Name != "Convert_v1_ServiceReference_To_apiregistration_ServiceReference" {
		t.Fatalf("missing = %+v, want only Convert_v1_ServiceReference_To_apiregistration_ServiceReference (metav1's helper is not this package's)", missing)
	}
	f, err := ConversionFile(m, v, missing)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parser.ParseFile(token.NewFileSet(), f.Path, f.Content, 0); err != nil {
		t.Fatalf("the stub file is not Go: %v\n%s", err, f.Content)
	}
	if !strings.Contains(string(f.Content), "func Convert_v1_ServiceReference_To_apiregistration_ServiceReference(in *ServiceReference, out *apiregistration.ServiceReference, s conversion.Scope) error") {
		t.Errorf("the stub lacks the function with autoConvert's parameters:\n%s", f.Content)
	}
}

// TestConversionStubOfUnreadableNameIsAnError: a missing conversion whose parameter types
// cannot be read from its name (no autoConvert_ function for it) is an error naming the
// version, the function and the file to write it in, never a stub that is not Go.
func TestConversionStubOfUnreadableNameIsAnError(t *testing.T) {
	m, v := conversionVersion(t, t.TempDir())
	_, err := ConversionFile(m, v, []MissingConversion{{Name: "Convert_int32_To_v1_Port"}})
	if err == nil {
		t.Fatal("ConversionFile rendered a stub whose parameter types it cannot read")
	}
	for _, want := range []string{"apiregistration.example.com/v1", "Convert_int32_To_v1_Port", "pkg/apis/apiregistration/v1/conversion.go"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q: %v", want, err)
		}
	}
}
