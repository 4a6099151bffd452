package cluster

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/internal/gocmd"
)

// The example's Dockerfile (created once by aagen from templates/deploy/Dockerfile.tmpl)
// builds a static, trimmed, stripped binary of its server command; the deploy tests build
// the image from exactly that line.
func TestParseDockerfileBuildOfExample(t *testing.T) {
	got := ParseDockerfileBuild(t, filepath.Join("..", "..", "testdata", "example", "Dockerfile"))
	want := DockerfileBuild{Env: []string{"CGO_ENABLED=0"}, Flags: []string{"-trimpath", "-ldflags=-s"},
		Output: "/out/marina-apiserver", Package: "./cmd/marina-apiserver"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the example Dockerfile's build: %+v, want %+v", got, want)
	}
}

// A binary built by BuildLikeDockerfile carries the Dockerfile's settings, and
// CheckBuildSettings tells a binary built otherwise apart.
func TestBuildLikeDockerfileAgreesWithDockerfile(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":            "module example.com/hello\n\ngo 1.24\n",
		"cmd/hello/main.go": "package main\n\nfunc main() {}\n",
		"Dockerfile":        "FROM golang AS build\nRUN CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /out/hello ./cmd/hello\n",
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := ParseDockerfileBuild(t, filepath.Join(dir, "Dockerfile"))
	bin := BuildLikeDockerfile(t, dir, t.TempDir())
	if err := BuildSettingsMismatch(bin, b); err != nil {
		t.Error(err)
	}
	err := BuildSettingsMismatch(bin, DockerfileBuild{Env: []string{"CGO_ENABLED=1"}, Flags: []string{"-trimpath", "-race"}})
	if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED") || !strings.Contains(err.Error(), "-race") || strings.Contains(err.Error(), "-trimpath") {
		t.Errorf("against other settings (cgo on, -race): %v, want CGO_ENABLED and -race named, -trimpath not", err)
	}
	// Without -s the symbol table stays, which the Dockerfile's -ldflags=-s rules out.
	unstripped := filepath.Join(t.TempDir(), "hello")
	if _, err := (gocmd.Cmd{Args: []string{"build", "-trimpath", "-o", unstripped, "./cmd/hello"}, Dir: dir, Env: append(os.Environ(), "CGO_ENABLED=0")}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := BuildSettingsMismatch(unstripped, b); err == nil || !strings.Contains(err.Error(), "symbol table") {
		t.Errorf("a binary built without -ldflags=-s: %v, want the symbol table named", err)
	}
}
