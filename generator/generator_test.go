package generator_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/generator"
	"github.com/aagen-dev/aagen/generator/emit"
	"github.com/aagen-dev/aagen/generator/protonum"
)

const example = "../testdata/example"

// handWritten are the example's files that are not generated.
var handWritten = map[string]bool{
	"go.mod": true, "go.sum": true, "pkg/apis/marina/v1alpha1/doc.go": true, "pkg/apis/marina/v1alpha1/types.go": true,
	// Certificates are created once; the example keeps its own so the caBundle is stable.
	"config/deploy/certs/ca.crt": true, "config/deploy/certs/ca.key": true,
	"config/deploy/certs/tls.crt": true, "config/deploy/certs/tls.key": true,
	"config/deploy/certs/etcd-ca.crt": true, "config/deploy/certs/etcd-ca.key": true,
	"config/deploy/certs/etcd-member.crt": true, "config/deploy/certs/etcd-member.key": true,
	"config/deploy/certs/etcd-client.crt": true, "config/deploy/certs/etcd-client.key": true,
	// The computed kind's backend (+aagen:backend): created once as a stub, then the example's own.
	"pkg/registry/marina/dockoccupancy/backend.go": true, "pkg/registry/marina/dockoccupancy/backend_test.go": true,
}

// ownFiles are the example's hand-written tests, samples and subresource methods (created as
// stubs, then written by hand), which the golden comparison ignores.
var ownFiles = map[string]bool{"test/clients_test.go": true, "test/occupancy_test.go": true, "test/subresources_test.go": true, "test/protobuf_test.go": true,
	"config/samples/boat.yaml": true, "config/samples/dock.yaml": true,
	"pkg/registry/marina/boat/subresource_depart.go": true, "pkg/registry/marina/boat/subresource_berth.go": true,
	"pkg/registry/marina/boat/subresource_log.go": true, "pkg/registry/marina/boat/subresource_attach.go": true}

// typesOnly copies the example's hand-written files (types, go.mod) to a temp module.
func typesOnly(t *testing.T) string {
	t.Helper()
	return copyFiles(t, example, handWritten)
}

// copyFiles copies files of the project in src, except those in skip, to a temp module
// whose go.mod reaches the runtime in this checkout.
func copyFiles(t *testing.T, src string, files map[string]bool, skip ...string) string {
	t.Helper()
	dst := t.TempDir()
	root, _ := filepath.Abs("..")
	for f := range files {
		if slices.Contains(skip, f) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "go.mod" {
			// The examples reach the runtime through a relative replace.
			data = bytes.ReplaceAll(data, []byte("=> ../.."), []byte("=> "+root))
		}
		p := filepath.Join(dst, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// compareGolden compares the generated tree in dir with the golden project, leaving out
// the files ignore names; regenerate is the command that updates the golden copy.
func compareGolden(t *testing.T, dir, golden string, ignore func(string) bool, regenerate string) {
	t.Helper()
	got, want := snapshot(t, dir), snapshot(t, golden)
	for _, tree := range []map[string][]byte{got, want} {
		for p := range tree {
			if ignore(p) {
				delete(tree, p)
			}
		}
	}
	for p, w := range want {
		g, ok := got[p]
		switch {
		case !ok:
			t.Errorf("%s: in the golden tree but not generated", p)
		case !bytes.Equal(g, w):
			t.Errorf("%s differs from the golden tree; run: %s", p, regenerate)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: generated but not in the golden tree", p)
		}
	}
}

// generate runs the whole pipeline (Force: the run cache is tested on its own, in
// TestRunCache).
func generate(t *testing.T, dir string, verify bool) (*generator.Result, error) {
	t.Helper()
	return generator.Generate(context.Background(), generator.Options{
		Dir: dir, Patterns: []string{"./pkg/apis/..."}, Runtime: generator.RuntimeRef{Skip: true}, Verify: verify, Force: true,
	})
}

// TestRunCache checks that a run with nothing changed since the last one skips the
// generators, and that every kind of change makes a full run again.
func TestRunCache(t *testing.T) {
	dir := typesOnly(t)
	cached := func() (*generator.Result, error) {
		return generator.Generate(context.Background(), generator.Options{
			Dir: dir, Patterns: []string{"./pkg/apis/..."}, Runtime: generator.RuntimeRef{Skip: true},
		})
	}
	if res, err := cached(); err != nil || res.UpToDate {
		t.Fatalf("first run: %v, up to date %v", err, res != nil && res.UpToDate)
	}
	golden := snapshot(t, dir)
	if res, err := cached(); err != nil || !res.UpToDate {
		t.Fatalf("unchanged tree: want the run skipped, got %v (up to date %v)", err, res != nil && res.UpToDate)
	}
	types := filepath.Join(dir, "pkg/apis/marina/v1alpha1/types.go")
	typesData, _ := os.ReadFile(types)
	lister := filepath.Join(dir, "pkg/generated/listers/marina/v1alpha1/boat.go")
	listerData, _ := os.ReadFile(lister)
	hooks := filepath.Join(dir, "pkg/registry/marina/boat/hooks.go")
	stray := filepath.Join(dir, "pkg/registry/marina/boat/zz_generated.old.go")
	for _, c := range []struct {
		name   string
		change func()
		check  func(t *testing.T, res *generator.Result)
	}{
		{"a generated file deleted", func() { _ = os.Remove(lister) }, func(t *testing.T, _ *generator.Result) {
			if got, _ := os.ReadFile(lister); !bytes.Equal(got, listerData) {
				t.Errorf("the deleted lister was not written again")
			}
		}},
		{"a generated file edited", func() { _ = os.WriteFile(lister, append(slices.Clone(listerData), "// mine\n"...), 0o644) }, func(t *testing.T, _ *generator.Result) {
			if got, _ := os.ReadFile(lister); !bytes.Equal(got, listerData) {
				t.Errorf("the edited lister was not written again")
			}
		}},
		{"a stale generated file added", func() {
			_ = os.WriteFile(stray, []byte("// Code generated by aagen. DO NOT EDIT.\n\npackage boat\n"), 0o644)
		}, func(t *testing.T, _ *generator.Result) {
			if _, err := os.Stat(stray); !os.IsNotExist(err) {
				t.Errorf("the stale generated file was not deleted")
			}
		}},
		{"a user file deleted", func() { _ = os.Remove(hooks) }, func(t *testing.T, _ *generator.Result) {
			if _, err := os.Stat(hooks); err != nil {
				t.Errorf("hooks.go was not created again: %v", err)
			}
		}},
		{"an option changed", func() {
			res, err := generator.Generate(context.Background(), generator.Options{
				Dir: dir, Patterns: []string{"./pkg/apis/..."}, Runtime: generator.RuntimeRef{Skip: true}, Deploy: emit.DeployOptions{Image: "registry.example.com/marina:v2"},
			})
			if err != nil || res.UpToDate {
				t.Fatalf("another --image: want a full run, got %v (up to date %v)", err, res != nil && res.UpToDate)
			}
		}, nil},
		{"--backend given", func() {
			// DockOccupancy is marked +aagen:backend already: the same outputs, another option.
			res, err := generator.Generate(context.Background(), generator.Options{
				Dir: dir, Patterns: []string{"./pkg/apis/..."}, Runtime: generator.RuntimeRef{Skip: true}, Deploy: emit.DeployOptions{Image: "registry.example.com/marina:v2"},
				Backends: []string{"DockOccupancy.marina.example.com"},
			})
			if err != nil || res.UpToDate {
				t.Fatalf("--backend: want a full run, got %v (up to date %v)", err, res != nil && res.UpToDate)
			}
		}, nil},
		{"go.mod changed", func() {
			data, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
			_ = os.WriteFile(filepath.Join(dir, "go.mod"), append(data, "\n"...), 0o644)
		}, nil},
		{"a package the types import", func() {
			common := filepath.Join(dir, "pkg/common/common.go")
			_ = os.MkdirAll(filepath.Dir(common), 0o755)
			_ = os.WriteFile(common, []byte("package common\n\n// Colour is a colour.\ntype Colour string\n"), 0o644)
			withImport := bytes.Replace(typesData, []byte("import (\n"), []byte("import (\n\t\"example.com/marina/pkg/common\"\n"), 1)
			withImport = bytes.Replace(withImport, []byte("\tDock string `json:\"dock\"`"), []byte("\tDock string `json:\"dock\"`\n\n\t// Paint is the hull's colour.\n\t// +optional\n\tPaint common.Colour `json:\"paint,omitempty\"`"), 1)
			_ = os.WriteFile(types, withImport, 0o644)
			if res, err := cached(); err != nil || res.UpToDate {
				t.Fatalf("types importing a new package: %v", err)
			}
			// Only the imported package changes now.
			_ = os.WriteFile(common, []byte("package common\n\n// Colour is the colour of a thing.\ntype Colour string\n"), 0o644)
		}, nil},
		{"a type changed", func() {
			_ = os.RemoveAll(filepath.Join(dir, "pkg/common"))
			_ = os.WriteFile(types, bytes.Replace(typesData, []byte("// Dock is the name of the Dock the boat berths at."), []byte("// Dock names the berth."), 1), 0o644)
		}, func(t *testing.T, res *generator.Result) {
			if len(res.Plan.Write) == 0 {
				t.Errorf("a changed doc comment wrote nothing")
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.change()
			res, err := cached()
			if err != nil {
				t.Fatal(err)
			}
			if res.UpToDate {
				t.Fatalf("the run was skipped")
			}
			if c.check != nil {
				c.check(t, res)
			}
			if res, err := cached(); err != nil || !res.UpToDate {
				t.Errorf("the run after it was not skipped: %v", err)
			}
		})
	}
	_ = os.WriteFile(types, typesData, 0o644)
	if _, err := cached(); err != nil {
		t.Fatal(err)
	}
	got := snapshot(t, dir)
	// The protobuf numbers keep the removed field's number out of use: Paint had 7.
	numbers := "pkg/apis/marina/v1alpha1/" + protonum.FileName
	wantNumbers := bytes.Replace(golden[numbers], []byte("  Contact: 6\n"), []byte("  Contact: 6\n  reserved: 7\n"), 1)
	if !bytes.Equal(got[numbers], wantNumbers) {
		t.Errorf("%s after the changes were undone:\n%s\nwant Paint's number 7 reserved:\n%s", numbers, got[numbers], wantNumbers)
	}
	for p, w := range golden {
		if p != "go.mod" && p != numbers && !bytes.Equal(got[p], w) {
			t.Errorf("%s differs after the changes were undone", p)
		}
	}
}

// snapshot reads every file below dir.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.IsDir() && d.Name() == ".aagen" {
				return filepath.SkipDir
			}
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTree fails the test unless a failed run left the tree exactly as it was: the same
// files with the same contents.
func sameTree(t *testing.T, before, after map[string][]byte) {
	t.Helper()
	for p, b := range before {
		if a, ok := after[p]; !ok {
			t.Errorf("a failed run deleted %s", p)
		} else if !bytes.Equal(a, b) {
			t.Errorf("a failed run changed %s", p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("a failed run wrote %s", p)
		}
	}
}

// TestGolden generates the example from its types alone and compares the tree with the
// checked-in example, which is the golden copy. To update it after an intended change:
//
//	go run ./cmd/aagen generate -C testdata/example ./pkg/apis/...
func TestGolden(t *testing.T) {
	dir := typesOnly(t)
	if _, err := generate(t, dir, false); err != nil {
		t.Fatal(err)
	}
	compareGolden(t, dir, example, func(p string) bool { return handWritten[p] || ownFiles[p] },
		"go run ./cmd/aagen generate -C testdata/example ./pkg/apis/...")
}

// TestIdempotent checks that a second run changes nothing and --verify agrees.
func TestIdempotent(t *testing.T) {
	dir := typesOnly(t)
	if _, err := generate(t, dir, false); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	res, err := generate(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Write) != 0 || len(res.Plan.Delete) != 0 {
		t.Errorf("second run wrote %d and deleted %d files", len(res.Plan.Write), len(res.Plan.Delete))
	}
	sameTree(t, before, snapshot(t, dir))
	if _, err := generate(t, dir, true); err != nil {
		t.Errorf("verify after generate: %v", err)
	}
}

// TestUserFilesKept checks that edited hooks survive and stale generated files go.
func TestUserFilesKept(t *testing.T) {
	dir := typesOnly(t)
	if _, err := generate(t, dir, false); err != nil {
		t.Fatal(err)
	}
	hooks := filepath.Join(dir, "pkg/registry/marina/boat/hooks.go")
	edited := []byte("package boat\n\n// Hooks are mine.\ntype Hooks struct{}\n")
	if err := os.WriteFile(hooks, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "pkg/registry/marina/gone/zz_generated.storage.go")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("// Code generated by aagen. DO NOT EDIT.\n\npackage gone\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := generate(t, dir, true)
	var se *generator.StaleError
	if !errors.As(err, &se) || !strings.Contains(se.Error(), "pkg/registry/marina/gone/zz_generated.storage.go") {
		t.Errorf("verify: want the stale file listed, got %v", err)
	}
	if res, err = generate(t, dir, false); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(hooks); !bytes.Equal(data, edited) {
		t.Errorf("hooks.go was overwritten")
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale generated file not deleted: %v", err)
	}
	if len(res.Plan.Kept) == 0 {
		t.Errorf("no user-owned files reported as kept")
	}
}

// TestNoOverwriteOfUserFile checks that a hand-written file at a generated path stops the run.
func TestNoOverwriteOfUserFile(t *testing.T) {
	dir := typesOnly(t)
	mine := filepath.Join(dir, "pkg/apiserver/zz_generated.apiserver.go")
	if err := os.MkdirAll(filepath.Dir(mine), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mine, []byte("package apiserver\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	_, err := generate(t, dir, false)
	if err == nil || !strings.Contains(err.Error(), "pkg/apiserver/zz_generated.apiserver.go exists and was not generated by aagen") {
		t.Fatalf("want a refusal, got %v", err)
	}
	sameTree(t, before, snapshot(t, dir))
}

// TestFailedRunWritesNothing checks that bad types leave the tree untouched.
func TestFailedRunWritesNothing(t *testing.T) {
	dir := typesOnly(t)
	types := filepath.Join(dir, "pkg/apis/marina/v1alpha1/types.go")
	data, _ := os.ReadFile(types)
	if err := os.WriteFile(types, bytes.Replace(data, []byte("type BoatList struct"), []byte("type BoatCollection struct"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	_, err := generate(t, dir, false)
	if err == nil || !strings.Contains(err.Error(), "types.go:") || !strings.Contains(err.Error(), "no list type BoatList") {
		t.Fatalf("want a positioned error, got %v", err)
	}
	sameTree(t, before, snapshot(t, dir))
}

// TestGeneratedDir checks that --generated-dir moves clients and OpenAPI, and that the
// server and the clients import them from there.
func TestGeneratedDir(t *testing.T) {
	dir := typesOnly(t)
	_, err := generator.Generate(context.Background(), generator.Options{
		Dir: dir, Patterns: []string{"./pkg/apis/..."}, Runtime: generator.RuntimeRef{Skip: true}, GeneratedDir: "internal/gen",
	})
	if err != nil {
		t.Fatal(err)
	}
	tree := snapshot(t, dir)
	for _, p := range []string{
		"internal/gen/clientset/versioned/clientset.go",
		"internal/gen/clientset/versioned/fake/clientset_generated.go",
		"internal/gen/listers/marina/v1alpha1/boat.go",
		"internal/gen/informers/externalversions/factory.go",
		"internal/gen/applyconfiguration/marina/v1alpha1/boat.go",
		"internal/gen/openapi/zz_generated.openapi.go",
	} {
		if _, ok := tree[p]; !ok {
			t.Errorf("%s not generated", p)
		}
	}
	for p := range tree {
		if strings.HasPrefix(p, "pkg/generated/") {
			t.Errorf("%s generated in the default directory", p)
		}
	}
	if srv := string(tree["pkg/apiserver/zz_generated.apiserver.go"]); !strings.Contains(srv, `"example.com/marina/internal/gen/openapi"`) {
		t.Errorf("the server does not import the OpenAPI definitions from internal/gen")
	}
	if inf := string(tree["internal/gen/informers/externalversions/factory.go"]); !strings.Contains(inf, `"example.com/marina/internal/gen/clientset/versioned"`) {
		t.Errorf("the informers do not import the clientset from internal/gen")
	}
}
