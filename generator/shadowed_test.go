package generator_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestShadowedJSON: a struct that inlines another with a field of the same JSON name as a
// shallower one of its own (prometheus-operator's ProbeSpec and HTTPConfig) gets a generated
// MarshalJSON in zz_generated.json.go of its package, in a types package and in another
// package of the module alike; the inlined struct, which hides nothing itself, gets none.
// The method is what makes k8s.io/apimachinery's converter to unstructured (and
// structured-merge-diff's, which managed fields and server-side apply use; both take a
// type's JSON when it marshals itself) read the field encoding/json writes: without it, the
// converter takes the hidden one. A program built in the generated module shows both.
func TestShadowedJSON(t *testing.T) {
	dir := typesOnly(t)
	types := filepath.Join(dir, "pkg/apis/marina/v1alpha1/types.go")
	src, err := os.ReadFile(types)
	if err != nil {
		t.Fatal(err)
	}
	const dock = "\tDock string `json:\"dock\"`\n"
	if !strings.Contains(string(src), dock) {
		t.Fatalf("the example's BoatSpec no longer has %q", dock)
	}
	fields := dock + "\t// Rigging hides its config's authorization.\n\t// +optional\n\tRigging *Rigging `json:\"rigging,omitempty\"`\n" +
		"\t// Mooring is of another package of the module.\n\t// +optional\n\tMooring *common.Mooring `json:\"mooring,omitempty\"`\n"
	withFields := strings.Replace(string(src), dock, fields, 1)
	withFields = strings.Replace(withFields, "import (\n", "import (\n\t\"example.com/marina/pkg/common\"\n", 1)
	withFields += "\n// Rigging has an authorization of its own and inlines RiggingConfig's.\ntype Rigging struct {\n\tAuthorization string `json:\"authorization,omitempty\"`\n\tRiggingConfig `json:\",inline\"`\n}\n\n" +
		"// RiggingConfig is inlined by Rigging.\ntype RiggingConfig struct {\n\tLine string `json:\"line,omitempty\"`\n\t// +kubebuilder:validation:Enum=basic;bearer\n\tAuthorization *string `json:\"authorization,omitempty\"`\n}\n"
	if err := os.WriteFile(types, []byte(withFields), 0o644); err != nil {
		t.Fatal(err)
	}
	common := "package common\n\n// Mooring has a name of its own and inlines Rope's.\ntype Mooring struct {\n\tName string `json:\"name,omitempty\"`\n\tRope `json:\",inline\"`\n}\n\n" +
		"// Rope is inlined by Mooring.\ntype Rope struct {\n\tName string `json:\"name,omitempty\"`\n\tLength int32 `json:\"length,omitempty\"`\n}\n\n" +
		"func (in *Mooring) DeepCopyInto(out *Mooring) { *out = *in }\n\nfunc (in *Mooring) DeepCopy() *Mooring {\n\tout := new(Mooring)\n\tin.DeepCopyInto(out)\n\treturn out\n}\n"
	writeNew(t, filepath.Join(dir, "pkg/common/mooring.go"), common)
	res, err := generate(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	var warned int
	for _, w := range res.Warnings {
		if strings.Contains(w.Msg, "is hidden by") {
			warned++
		}
	}
	if warned != 2 {
		t.Errorf("want a warning for each hidden field, got %q", res.Warnings)
	}
	for file, want := range map[string]string{
		"pkg/apis/marina/v1alpha1/zz_generated.json.go": "func (in Rigging) MarshalJSON() ([]byte, error) {",
		"pkg/common/zz_generated.json.go":               "func (in Mooring) MarshalJSON() ([]byte, error) {",
	} {
		got, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil || !strings.Contains(string(got), want) || strings.Contains(string(got), "RiggingConfig) MarshalJSON") || strings.Contains(string(got), "Rope) MarshalJSON") {
			t.Errorf("%s: want %q and nothing for the inlined structs, got %v\n%s", file, want, err, got)
		}
	}

	// A second run, which loads the types with the MarshalJSON of the first, writes them again.
	first := snapshot(t, dir)
	if _, err := generate(t, dir, false); err != nil {
		t.Fatal(err)
	}
	second := snapshot(t, dir)
	for file, content := range first {
		if strings.HasSuffix(file, "zz_generated.json.go") && !bytes.Equal(content, second[file]) {
			t.Errorf("%s differs or is gone after a second run", file)
		}
	}

	// The hidden field's enum is in RiggingConfig's definition, not in Rigging's.
	openapi, err := os.ReadFile(filepath.Join(dir, "pkg/generated/openapi/zz_generated.openapi.go"))
	if err != nil {
		t.Fatal(err)
	}
	definition := func(name string) string {
		_, def, _ := strings.Cut(string(openapi), "func schema_pkg_apis_marina_v1alpha1_"+name+"(")
		def, _, _ = strings.Cut(def, "\n}\n")
		return def
	}
	if rigging, config := definition("Rigging"), definition("RiggingConfig"); strings.Contains(rigging, "Enum:") || !strings.Contains(config, `Enum:`) {
		t.Errorf("want the hidden authorization's enum in RiggingConfig's definition only:\nRigging:%s\nRiggingConfig:%s", rigging, config)
	}

	// The API reference has one row per JSON name, the shallower field's.
	doc, err := os.ReadFile(filepath.Join(dir, "docs/api/zz_generated.marina.example.com.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rigging, _ := strings.Cut(string(doc), "#### Rigging v1alpha1")
	rigging, _, _ = strings.Cut(rigging, "####")
	if strings.Count(rigging, "| `authorization` |") != 1 || !strings.Contains(rigging, "| `line` |") {
		t.Errorf("Rigging's reference wants one authorization row and the line:\n%s", rigging)
	}

	program := "package main\n\nimport (\n\t\"fmt\"\n\n\t\"k8s.io/apimachinery/pkg/runtime\"\n\n\t\"example.com/marina/pkg/apis/marina/v1alpha1\"\n\t\"example.com/marina/pkg/common\"\n)\n\n" +
		"func main() {\n\thidden := \"hidden\"\n\tboat := &v1alpha1.Boat{Spec: v1alpha1.BoatSpec{\n" +
		"\t\tRigging: &v1alpha1.Rigging{Authorization: \"outer\", RiggingConfig: v1alpha1.RiggingConfig{Line: \"l\", Authorization: &hidden}},\n" +
		"\t\tMooring: &common.Mooring{Name: \"outer\", Rope: common.Rope{Name: \"hidden\", Length: 3}},\n\t}}\n" +
		"\tu, err := runtime.DefaultUnstructuredConverter.ToUnstructured(boat)\n\tif err != nil {\n\t\tpanic(err)\n\t}\n\tspec := u[\"spec\"].(map[string]any)\n" +
		"\tfmt.Println(spec[\"rigging\"], spec[\"mooring\"])\n}\n"
	writeNew(t, filepath.Join(dir, "cmd/shadowcheck/main.go"), program)
	run := func() string {
		t.Helper()
		cmd := exec.Command("go", "run", "./cmd/shadowcheck")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go run: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got, want := run(), "map[authorization:outer line:l] map[length:3 name:outer]"; got != want {
		t.Errorf("converted with the generated MarshalJSON: %s, want %s (what encoding/json writes)", got, want)
	}
	for _, f := range []string{"pkg/apis/marina/v1alpha1/zz_generated.json.go", "pkg/common/zz_generated.json.go"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := run(), "map[authorization:hidden line:l] map[length:3 name:hidden]"; got != want {
		t.Errorf("converted without it: %s, want %s (the hidden fields, which is why it is generated)", got, want)
	}
}

// writeNew writes content to the file at p, making its directory.
func writeNew(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
