package load

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMissingModuleIsNamed: a types package that imports a package of a module go.mod does
// not require gets go's own cause and fix at the import's file:line, not the type checker's
// "could not import k8s.io/api/core/v1 (invalid package name: "")".
func TestMissingModuleIsNamed(t *testing.T) {
	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join("..", "..", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod":                  "module example.com/pipes\n\ngo 1.26.0\n\nrequire k8s.io/apimachinery v0.37.2\n",
		"go.sum":                  string(sum),
		"pkg/apis/ci/v1/doc.go":   "// +groupName=ci.example.com\npackage v1\n",
		"pkg/apis/ci/v1/types.go": "package v1\n\nimport corev1 \"k8s.io/api/core/v1\"\n\n// +genclient\ntype Pipeline struct {\n\tSteps []corev1.Container `json:\"steps\"`\n}\n",
	}
	writeFiles(t, dir, files)
	_, err = Packages(context.Background(), dir, []string{"./pkg/apis/..."})
	if err == nil {
		t.Fatal("the load succeeded without k8s.io/api in go.mod")
	}
	for _, want := range []string{"pkg/apis/ci/v1/types.go:3:", "cannot import k8s.io/api/core/v1", "no required module provides package k8s.io/api/core/v1", "go get"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "invalid package name") {
		t.Errorf("the error still shows the type checker's symptom:\n%v", err)
	}
}

// TestIncompleteGoSumSaysTidy: a go.sum with the entries of the modules the types import
// directly but not of theirs (what `go get k8s.io/api@...` leaves) is one error naming go mod
// tidy, not the code generators' error per package later.
func TestIncompleteGoSumSaysTidy(t *testing.T) {
	dir := t.TempDir()
	full, err := os.ReadFile(filepath.Join("..", "..", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	var sum []string
	for _, line := range strings.Split(string(full), "\n") {
		if strings.HasPrefix(line, "k8s.io/apimachinery v0.37.2") {
			sum = append(sum, line)
		}
	}
	files := map[string]string{
		"go.mod":                  "module example.com/pipes\n\ngo 1.26.0\n\nrequire k8s.io/apimachinery v0.37.2\n",
		"go.sum":                  strings.Join(sum, "\n") + "\n",
		"pkg/apis/ci/v1/doc.go":   "// +groupName=ci.example.com\npackage v1\n",
		"pkg/apis/ci/v1/types.go": "package v1\n\nimport metav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n\n// +genclient\ntype Pipeline struct {\n\tmetav1.TypeMeta `json:\",inline\"`\n\tmetav1.ObjectMeta `json:\"metadata,omitempty\"`\n}\n",
	}
	writeFiles(t, dir, files)
	_, err = Packages(context.Background(), dir, []string{"./pkg/apis/..."})
	if err == nil {
		t.Fatal("the load succeeded with an incomplete go.sum")
	}
	for _, want := range []string{"go.sum lacks entries", "missing go.sum entry", "run `go mod tidy` in " + dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHandWrittenCallsOfGeneratedMethodsLoad: hand-written code in a types package calling
// the methods deepcopy-gen generates (left out of the load) loads whatever the expression's
// shape: apiextensions' (*in).DeepCopyInto(out) and (*in)[i].DeepCopyInto, cert-manager's
// c.DeepCopy(), a value's val.DeepCopy(), a method expression; any other undefined method
// is still an error at its file:line.
func TestHandWrittenCallsOfGeneratedMethodsLoad(t *testing.T) {
	// No imports: what is tested is the type checker's errors on the package's own types.
	types := "package v1\n\n" +
		"// +genclient\n// +kubebuilder:object:root=true\ntype Issuer struct {\n\tItems []Props `json:\"items,omitempty\"`\n}\n\n" +
		"type Props struct {\n\tMore *Props `json:\"more,omitempty\"`\n}\n"
	deepcopy := "package v1\n\n" +
		"func (in *Props) DeepCopyJSON(out *Props) {\n\tif in.More != nil {\n\t\tin, out := &in.More, &out.More\n\t\t*out = new(Props)\n\t\t(*in).DeepCopyInto(*out)\n\t}\n}\n\n" +
		"func copyItems(in, out *[]Props) {\n\tfor i := range *in {\n\t\t(*in)[i].DeepCopyInto(&(*out)[i])\n\t}\n}\n\n" +
		"func (c *Issuer) Copy() *Issuer { return c.DeepCopy() }\n\n" +
		"func byValue(val Props) *Props { return val.DeepCopy() }\n\n" +
		"var copyIssuer = (*Issuer).DeepCopyObject\n"
	files := map[string]string{
		"go.mod":                     "module example.com/issuers\n\ngo 1.26.0\n",
		"pkg/apis/ci/v1/doc.go":      "// +groupName=ci.example.com\npackage v1\n",
		"pkg/apis/ci/v1/types.go":    types,
		"pkg/apis/ci/v1/deepcopy.go": deepcopy,
	}
	dir := t.TempDir()
	writeFiles(t, dir, files)
	if _, err := Packages(context.Background(), dir, []string{"./pkg/apis/..."}); err != nil {
		t.Fatalf("hand-written calls of generated methods were refused:\n%v", err)
	}

	files["pkg/apis/ci/v1/deepcopy.go"] = deepcopy + "\nfunc (c *Issuer) Other() { c.Validate() }\n"
	dir = t.TempDir()
	writeFiles(t, dir, files)
	_, err := Packages(context.Background(), dir, []string{"./pkg/apis/..."})
	if err == nil || !strings.Contains(err.Error(), "pkg/apis/ci/v1/deepcopy.go:") || !strings.Contains(err.Error(), "c.Validate undefined") {
		t.Fatalf("a call of a method no generator declares: err = %v, want it at deepcopy.go's line", err)
	}
	if strings.Contains(err.Error(), "DeepCopy") {
		t.Errorf("the error still lists calls of generated methods:\n%v", err)
	}
}
