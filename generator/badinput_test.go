package generator_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/aagen-dev/aagen/generator"
)

// TestBadInput runs every case of testdata/badinput through the whole pipeline: each must
// fail with its expected, positioned message, write nothing and not panic.
func TestBadInput(t *testing.T) {
	const corpus = "../testdata/badinput"
	cases, err := filepath.Glob(filepath.Join(corpus, "*.txtar"))
	if err != nil || len(cases) < 30 {
		t.Fatalf("corpus: %v, %d cases (want at least 30)", err, len(cases))
	}
	for _, c := range cases {
		name := strings.TrimSuffix(filepath.Base(c), ".txtar")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ar, err := txtar.ParseFile(c)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			for _, f := range []string{"go.mod", "go.sum"} {
				data, err := os.ReadFile(filepath.Join(corpus, f))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var want []string
			for _, f := range ar.Files {
				if f.Name == "want" {
					want = strings.Split(strings.TrimSpace(string(f.Data)), "\n")
					continue
				}
				p := filepath.Join(dir, "apis/shop/v1", f.Name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, f.Data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before := snapshot(t, dir)
			_, err = generator.Generate(context.Background(), generator.Options{
				Dir: dir, Patterns: []string{"./..."}, Runtime: generator.RuntimeRef{Skip: true},
			})
			if err == nil {
				t.Fatal("generate succeeded; want an error")
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			sameTree(t, before, snapshot(t, dir))
		})
	}
}
