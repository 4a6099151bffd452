package generator_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/generator"
)

// TestControllerGenStyle generates a types package written for controller-gen
// (testdata/controllergen: +name:=value, literal defaults, oneOf rules, +k8s:immutable,
// items constraints, CRD-only metadata, RBAC and webhook markers, protobuf tags) and
// checks that the markers aagen applies reach the defaulting code and the OpenAPI
// definitions. The same package's model is checked in generator/model's
// TestControllerGenMarkers.
func TestControllerGenStyle(t *testing.T) {
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
	src := "testdata/controllergen/pkg/apis/shop/v1"
	dst := filepath.Join(dir, "pkg/apis/shop/v1")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"doc.go", "types.go"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := generator.Generate(context.Background(), generator.Options{
		Dir: dir, Patterns: []string{"./pkg/apis/..."}, Runtime: generator.RuntimeRef{Skip: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	sizeWarned, zeroWarned := false, false
	for _, w := range res.Warnings {
		// WidgetSpec.Size is `json:"size,omitempty"` with a minimum of 1: a 0 sent is dropped
		// by Go and defaulted, where controller-gen's CRD refuses it; the warning says so.
		if strings.Contains(w.String(), "types.go:30:2: warning: field WidgetSpec.Size has omitempty and a minimum of 1, which refuses its zero value") &&
			strings.Contains(w.Fix, "make it a pointer (*int32)") {
			zeroWarned = true
			continue
		}
		// WidgetSpec.Size cannot coexist with the protobuf method Size: the package is
		// served in JSON only, and the warning says so at the field.
		if strings.Contains(w.String(), "types.go:30:2: warning: no protobuf for package example.com/marina/pkg/apis/shop/v1: WidgetSpec.Size has the name of a protobuf method") {
			sizeWarned = true
			continue
		}
		t.Errorf("unexpected warning: %s", w)
	}
	if !sizeWarned {
		t.Error("no warning that WidgetSpec.Size keeps the package from protobuf")
	}
	if !zeroWarned {
		t.Error("no warning that WidgetSpec.Size (omitempty, minimum 1) cannot refuse a 0 sent, as a CRD does")
	}
	if _, ok := snapshot(t, dir)["pkg/apis/shop/v1/zz_generated.protobuf.go"]; ok {
		t.Error("zz_generated.protobuf.go written for a package whose WidgetSpec has a field named Size")
	}
	tree := snapshot(t, dir)
	// The package is JSON-only, so its typed client does not ask for protobuf.
	if client, ok := tree["pkg/generated/clientset/versioned/typed/shop/v1/widget.go"]; !ok || bytes.Contains(client, []byte("PrefersProtobuf")) {
		t.Errorf("the typed Widget client (present: %v) asks for protobuf, but the package has no protobuf methods", ok)
	}
	defaults := string(tree["pkg/apis/shop/v1/zz_generated.defaults.go"])
	openapi := string(tree["pkg/generated/openapi/zz_generated.openapi.go"])
	for _, want := range []string{
		"in.Spec.Size = 3",
		"json.Unmarshal([]byte(`{\"from\":\"Same\"}`), &in.Spec.Namespaces)",
		"json.Unmarshal([]byte(`[{\"name\":\"a\",\"port\":80},{\"name\":\"b\",\"port\":443}]`), &in.Spec.Ports)",
	} {
		if !strings.Contains(defaults, want) {
			t.Errorf("zz_generated.defaults.go lacks %s:\n%s", want, defaults)
		}
	}
	for _, want := range []string{
		`"rule": "(has(self.http)?1:0)+(has(self.grpc)?1:0) == 1"`,
		`"message": "exactly one of the fields in [http grpc] must be set"`,
		`"message": "field is immutable", "rule": "self == oldSelf"`,
		"MaxLength: ptr.To[int64](16)",
		"Minimum: ptr.To[float64](1)",
		"MaxLength: ptr.To[int64](8)",
	} {
		if !strings.Contains(openapi, want) {
			t.Errorf("the OpenAPI definitions lack %s", want)
		}
	}
}
