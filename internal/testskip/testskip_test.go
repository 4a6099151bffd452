package testskip

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Skip and Fatalf instead of stopping the test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Skip(args ...any)             { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatalf(f string, args ...any) { r.failed = fmt.Sprintf(f, args...) }

func TestParseReasons(t *testing.T) {
	readme := []byte("# x\n- `not here`\n## Test skips\n\nText.\n\n- `needs a GPU`: why.\n- plain item\n- `second` and `more`\n## Next\n- `after`\n")
	if got, want := ParseReasons(readme), []string{"needs a GPU", "second"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ParseReasons = %q, want %q", got, want)
	}
}

func TestSkipOutsideCI(t *testing.T) {
	t.Setenv("CI", "")
	r := &recorder{TB: t}
	Skip(r, "anything")
	if r.skipped != "anything" || r.failed != "" {
		t.Errorf("outside CI: skipped %q, failed %q", r.skipped, r.failed)
	}
}

func TestSkipUnderCIFailsUnlessListed(t *testing.T) {
	t.Setenv("CI", "true")
	r := &recorder{TB: t}
	Skip(r, "a reason the README does not list")
	if r.skipped != "" || r.failed == "" {
		t.Errorf("unlisted reason under CI: skipped %q, failed %q", r.skipped, r.failed)
	}
	// The README's section is found and parses (it may list nothing).
	if _, err := AllowedReasons(); err != nil {
		t.Fatal(err)
	}
	r = &recorder{TB: t}
	skipListed(r, "needs a GPU", []string{"other", "needs a GPU"})
	if r.skipped == "" || r.failed != "" {
		t.Errorf("listed reason under CI: skipped %q, failed %q", r.skipped, r.failed)
	}
}

// TestEverySkipGoesThroughTestskip audits the repository's Go files: a test skips with
// Skip or Short of this package, never with t.Skip, t.SkipNow or t.Skipf directly, so that
// CI can hold every skip to the README's list.
func TestEverySkipGoesThroughTestskip(t *testing.T) {
	readme, err := findReadme()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(readme)
	direct := regexp.MustCompile(`(\w+)\.(Skip|SkipNow|Skipf)\(`)
	checked := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".cache", ".aagen":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || filepath.Dir(p) == filepath.Join(root, "internal", "testskip") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		checked++
		for i, line := range strings.Split(string(data), "\n") {
			if m := direct.FindStringSubmatch(line); m != nil && m[1] != "testskip" {
				rel, _ := filepath.Rel(root, p)
				t.Errorf("%s:%d: skips directly (%s); use testskip.Skip or testskip.Short", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("only %d Go files under %s: the walk missed the repository", checked, root)
	}
}
