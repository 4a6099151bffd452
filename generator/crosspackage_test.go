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

// TestMarkersOnTypesOfOtherPackages generates testdata/crosspkg, whose kind's spec holds a
// struct of another package of the module (pkg/common) and one of a second module
// (example.com/extlib, by a replace): the markers on those structs reach the OpenAPI
// definitions (so the server's validation and kubectl explain) and the version's defaulters,
// as controller-gen applies markers wherever a type is declared (e2e
// TestCrossPackageMarkersLikeControllerGenCRD compares the served result with the CRD).
//
// The second module is moved beside the first (replace ../extlib): an edit there makes the
// next run regenerate, not find everything up to date.
func TestMarkersOnTypesOfOtherPackages(t *testing.T) {
	top := t.TempDir()
	dir := filepath.Join(top, "crosspkg")
	src := filepath.Join("..", "testdata", "crosspkg")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "extlib"), filepath.Join(top, "extlib")); err != nil {
		t.Fatal(err)
	}
	gomod := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "=> ./extlib") {
		t.Fatalf("testdata/crosspkg/go.mod no longer replaces example.com/extlib with ./extlib:\n%s", data)
	}
	if err := os.WriteFile(gomod, []byte(strings.Replace(string(data), "=> ./extlib", "=> ../extlib", 1)), 0o644); err != nil {
		t.Fatal(err)
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
	defaults := string(tree["pkg/apis/depot/v1/zz_generated.defaults.go"])
	for _, want := range []string{`in.Spec.Label.Color = "green"`, `in.Spec.Limits.Unit = "kg"`} {
		if !strings.Contains(defaults, want) {
			t.Errorf("zz_generated.defaults.go lacks %s:\n%s", want, defaults)
		}
	}
	openapi := string(tree["pkg/generated/openapi/zz_generated.openapi.go"])
	for def, wants := range map[string][]string{
		"examplecom_crosspkg_pkg_common_Label": {
			`"rule": "!has(self.code) || self.text != self.code"`, `"message": "text must differ from code"`,
			"MaxLength: ptr.To[int64](12)", `Pattern: "^[a-z]+-[0-9]+$"`, "Minimum: ptr.To[float64](6)", `Enum: []interface{}{"red", "green", "blue"}`,
			`Default: "green"`, `Enum: []interface{}{"Gloss", "Matte"}`,
		},
		"examplecom_extlib_Limits": {
			`"rule": "!has(self.minWeight) || self.minWeight <= self.maxWeight"`, "Minimum: ptr.To[float64](1)", `Enum: []interface{}{"kg", "lb"}`,
			"MaxLength: ptr.To[int64](4)", `Default: "kg"`,
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
	// Label.finish, of the +enum type Finish, is a documented enum (published, not checked);
	// Label.color's +kubebuilder:validation:Enum is checked, so not listed.
	documented := regexp.MustCompile(`(?s)func DocumentedEnums\(\) map\[string\]\[\]string \{.*?\n}\n`).FindString(openapi)
	if !regexp.MustCompile(`\n\s*pkgcommon.Label\{\}.OpenAPIModelName\(\):\s*\{"finish"\},\n`).MatchString(documented) || strings.Contains(documented, `"color"`) {
		t.Errorf("DocumentedEnums does not list Label's finish alone:\n%s", documented)
	}
	if !gen().UpToDate {
		t.Errorf("a second run with nothing changed was not skipped")
	}
	limits := filepath.Join(top, "extlib", "limits.go")
	code, err := os.ReadFile(limits)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(limits, []byte(strings.Replace(string(code), "MaxLength=4", "MaxLength=5", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if gen().UpToDate {
		t.Fatalf("an edit of the replaced module's types was taken as up to date")
	}
	edited := regexp.MustCompile(`\s+`).ReplaceAllString(string(snapshot(t, dir)["pkg/generated/openapi/zz_generated.openapi.go"]), " ")
	if !strings.Contains(edited, "MaxLength: ptr.To[int64](5)") {
		t.Errorf("the edited MaxLength did not reach the OpenAPI definitions")
	}
}
