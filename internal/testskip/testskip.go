// Package testskip skips tests in a way CI can hold to account. Outside CI a skip is a
// skip; under CI (the environment variable CI set to a true value, as .ci/run and most CI
// systems do) a skip fails the test unless its reason is listed in the "Test skips"
// section of the repository's README.md, so that nothing CI runs is dropped silently.
package testskip

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Section is the README heading whose list holds the reasons a skip is allowed under CI.
const Section = "## Test skips"

// Skip skips t with reason. Under CI it fails t instead unless reason is one of the
// README's allowed skips.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if !InCI() {
		t.Skip(reason)
		return
	}
	allowed, err := AllowedReasons()
	if err != nil {
		t.Fatalf("skip %q under CI: %v", reason, err)
		return
	}
	skipListed(t, reason, allowed)
}

// skipListed skips t if reason is in allowed and fails it otherwise.
func skipListed(t testing.TB, reason string, allowed []string) {
	t.Helper()
	for _, a := range allowed {
		if a == reason {
			t.Skip(reason + " (allowed under CI: README.md, " + Section + ")")
			return
		}
	}
	t.Fatalf("skip under CI: %q is not an allowed skip; CI must run every test (install what it needs or "+
		"run without -short), or list the reason in README.md under %q", reason, Section)
}

// Short skips t with reason when the tests run with -short (Skip's rules apply).
func Short(t testing.TB, reason string) {
	t.Helper()
	if testing.Short() {
		Skip(t, reason)
	}
}

// InCI reports whether the environment variable CI holds a true value.
func InCI() bool {
	v, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && v
}

// AllowedReasons reads the README's Section: every list item's first `code span` is a
// reason a skip may give under CI.
func AllowedReasons() ([]string, error) {
	readme, err := findReadme()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(readme)
	if err != nil {
		return nil, fmt.Errorf("reading the allowed skips: %w", err)
	}
	if !bytes.Contains(data, []byte("\n"+Section+"\n")) {
		return nil, fmt.Errorf("%s has no %q section listing the allowed skips", readme, Section)
	}
	return ParseReasons(data), nil
}

// ParseReasons returns the first `code span` of each list item ("- ") of Section in a
// README's text.
func ParseReasons(readme []byte) []string {
	var reasons []string
	in := false
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			in = strings.TrimSpace(line) == Section
			continue
		}
		if !in || !strings.HasPrefix(line, "- `") {
			continue
		}
		if reason, _, ok := strings.Cut(strings.TrimPrefix(line, "- `"), "`"); ok && reason != "" {
			reasons = append(reasons, reason)
		}
	}
	return reasons
}

// findReadme looks for the module root's README.md from the working directory (a test's
// package directory) upwards.
func findReadme() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/aagen-dev/aagen\n") {
			return filepath.Join(dir, "README.md"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no aagen go.mod above the working directory, so no README.md listing the allowed skips")
		}
		dir = parent
	}
}
