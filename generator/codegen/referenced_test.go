package codegen

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClientGoDirDownloadFails: when client-go's module cannot be downloaded, the
// generation fails with the cause and a fix instead of leaving out the apply configurations
// of k8s.io/api types (output that would depend on the network).
func TestClientGoDirDownloadFails(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/m\n\ngo 1.24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOFLAGS", "-mod=mod")
	// A version no module cache holds: the download must go to the (unreachable) proxy.
	_, err := clientGoDir(context.Background(), Input{ModuleDir: dir}, "/cache/mod/k8s.io/api@v0.0.1-aagen-test")
	if err == nil || !strings.Contains(err.Error(), "downloading k8s.io/client-go@v0.0.1-aagen-test") ||
		!strings.Contains(err.Error(), "fix: make the Go module proxy reachable") {
		t.Fatalf("want a download error with a fix, got %v", err)
	}

	got, err := clientGoDir(context.Background(), Input{ModuleDir: dir}, "/src/m/vendor/k8s.io/api")
	if err != nil || got != filepath.FromSlash("/src/m/vendor/k8s.io/client-go") {
		t.Errorf("vendored: %q, %v", got, err)
	}
	if got, err := clientGoDir(context.Background(), Input{ModuleDir: dir}, "/src/api"); got != "" || err != nil {
		t.Errorf("a k8s.io/api without a version (replaced by a directory): %q, %v; want none and no error", got, err)
	}
}
