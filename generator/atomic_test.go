package generator_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/generator"
	"github.com/aagen-dev/aagen/generator/output"
)

// TestGoModTidyFailureLeavesTreeAsBefore makes go mod tidy fail after the files were
// switched and go.mod edited (the replace of aagen's runtime), on a fresh module and on one
// generated before whose types changed since, and checks that the tree, go.mod and go.sum
// included, is byte for byte as it was.
func TestGoModTidyFailureLeavesTreeAsBefore(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	injected := errors.New("injected go mod tidy failure")
	run := func(dir string, tidyCalled *bool) error {
		_, err := generator.Generate(context.Background(), generator.Options{
			Dir: dir, Patterns: []string{"./pkg/apis/..."}, Force: true,
			Runtime: generator.RuntimeRef{Replace: root},
			GoModTidy: func(ctx context.Context, moduleDir string) error {
				*tidyCalled = true
				// What tidy sees: the go.mod edit and the files are in place.
				data, err := os.ReadFile(filepath.Join(moduleDir, "go.mod"))
				if err != nil || !strings.Contains(string(data), root) {
					t.Errorf("go.mod when tidy runs (%v) does not replace aagen with %s:\n%s", err, root, data)
				}
				if _, err := os.Stat(filepath.Join(moduleDir, "pkg/apiserver")); err != nil {
					t.Errorf("generated files not in place when tidy runs: %v", err)
				}
				return injected
			},
		})
		return err
	}
	check := func(t *testing.T, dir string) {
		before := snapshot(t, dir)
		tidyCalled := false
		err := run(dir, &tidyCalled)
		if !errors.Is(err, injected) {
			t.Fatalf("Generate: %v, want the injected tidy failure", err)
		}
		if !tidyCalled {
			t.Fatal("tidy was not called")
		}
		if !strings.Contains(err.Error(), "as they were") {
			t.Errorf("error %q does not say that the tree was put back", err)
		}
		sameTree(t, before, snapshot(t, dir))
	}

	t.Run("fresh module", func(t *testing.T) {
		check(t, typesOnly(t))
	})
	t.Run("generated module whose types changed", func(t *testing.T) {
		dir := typesOnly(t)
		if _, err := generate(t, dir, false); err != nil {
			t.Fatal(err)
		}
		types := filepath.Join(dir, "pkg/apis/marina/v1alpha1/types.go")
		data, err := os.ReadFile(types)
		if err != nil {
			t.Fatal(err)
		}
		// A new Boat status field changes deepcopy, OpenAPI, apply configurations.
		changed := strings.Replace(string(data), "type BoatStatus struct {", "type BoatStatus struct {\n\t// Moored says whether the boat is tied up.\n\t// +optional\n\tMoored bool `json:\"moored,omitempty\"`\n", 1)
		if changed == string(data) {
			t.Fatal("types.go has no BoatStatus to change")
		}
		if err := os.WriteFile(types, []byte(changed), 0o644); err != nil {
			t.Fatal(err)
		}
		check(t, dir)
	})
}

// TestRenameFailureLeavesTreeAsBefore makes the tenth rename of a run fail, after nine
// files were switched, and checks that the tree is byte for byte as it was.
func TestRenameFailureLeavesTreeAsBefore(t *testing.T) {
	dir := typesOnly(t)
	before := snapshot(t, dir)
	injected := errors.New("injected rename failure")
	calls := 0
	_, err := generator.Generate(context.Background(), generator.Options{
		Dir: dir, Patterns: []string{"./pkg/apis/..."}, Force: true, Runtime: generator.RuntimeRef{Skip: true},
		Writer: output.Writer{Rename: func(oldpath, newpath string) error {
			calls++
			if calls == 10 {
				return injected
			}
			return os.Rename(oldpath, newpath)
		}},
	})
	if !errors.Is(err, injected) {
		t.Fatalf("Generate: %v, want the injected rename failure", err)
	}
	sameTree(t, before, snapshot(t, dir))
}
