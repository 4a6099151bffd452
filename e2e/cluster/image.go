package cluster

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/aagen-dev/aagen/internal/gocmd"
)

// StaticBinary builds the main package pkg of this module with cgo off into dir, so that
// an image of that one file runs anywhere.
func StaticBinary(t T, pkg, dir string) string {
	t.Helper()
	out := filepath.Join(dir, path.Base(pkg))
	env := append(os.Environ(), "CGO_ENABLED=0")
	if _, err := (gocmd.Cmd{Args: []string{"build", "-o", out, pkg}, Dir: RepoRoot(t), Env: env}).Run(context.Background()); err != nil {
		t.Fatalf("building %s: %v", pkg, err)
	}
	return out
}

// ImageTarball writes an image of one layer holding binary at the absolute path inImage,
// with that path and args as its entrypoint and the usual PATH (a Pod's command names the
// binary alone, as with etcd's images), for linux/amd64, tagged ref, as a tarball that
// `ctr images import` takes; no registry is involved.
func ImageTarball(t T, ref, binary, inImage, out string, args ...string) {
	t.Helper()
	if !path.IsAbs(inImage) {
		t.Fatalf("ImageTarball: %q is not an absolute path", inImage)
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	// The directories above the binary first, as image builders write them.
	var dirs []string
	for d := path.Dir(inImage); d != "/"; d = path.Dir(d) {
		dirs = append([]string{d}, dirs...)
	}
	for _, d := range dirs {
		if err := tw.WriteHeader(&tar.Header{Name: d[1:] + "/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: inImage[1:], Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	// LayerFromOpener, not LayerFromReader: the latter buffers into a temporary file it
	// never removes.
	layerData := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerData)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Entrypoint = append([]string{inImage}, args...)
	cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(out, tag, img); err != nil {
		t.Fatal(err)
	}
}

// DockerfileBuild is the `go build` of a Dockerfile's build stage: the environment
// assignments before `go` (CGO_ENABLED=0), the build flags, the output path the Dockerfile
// names (-o) and the main package.
type DockerfileBuild struct {
	Env     []string
	Flags   []string
	Output  string
	Package string
}

// ParseDockerfileBuild finds the one `RUN [VAR=value ...] go build ...` line of the
// Dockerfile at path and splits it into a DockerfileBuild; it fails when there is none, more
// than one, or the line has shell syntax beyond words (the images built here must be the
// Dockerfile's build, not an approximation).
func ParseDockerfileBuild(t T, path string) DockerfileBuild {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var builds []DockerfileBuild
	for i, line := range strings.Split(string(data), "\n") {
		words := strings.Fields(line)
		if len(words) < 3 || words[0] != "RUN" {
			continue
		}
		words = words[1:]
		var b DockerfileBuild
		for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
			b.Env = append(b.Env, words[0])
			words = words[1:]
		}
		if len(words) < 2 || words[0] != "go" || words[1] != "build" {
			continue
		}
		words = words[2:]
		for j := 0; j < len(words); j++ {
			w := words[j]
			switch {
			case strings.ContainsAny(w, `&|;$'"\`+"`"):
				t.Fatalf("%s:%d: the go build line has shell syntax (%q); the e2e build takes plain words only", path, i+1, w)
			case w == "-o" && j+1 < len(words):
				b.Output = words[j+1]
				j++
			case strings.HasPrefix(w, "-"):
				b.Flags = append(b.Flags, w)
			case b.Package == "":
				b.Package = w
			default:
				t.Fatalf("%s:%d: the go build line names more than one package (%s, %s)", path, i+1, b.Package, w)
			}
		}
		if b.Package == "" || b.Output == "" {
			t.Fatalf("%s:%d: the go build line has no package or no -o", path, i+1)
		}
		builds = append(builds, b)
	}
	if len(builds) != 1 {
		t.Fatalf("%s: %d `RUN ... go build` lines, want one (the build stage's)", path, len(builds))
	}
	return builds[0]
}

// BuildLikeDockerfile builds the project in dir the way its Dockerfile's build stage does
// (same environment, flags and package; the output into outDir under the Dockerfile's file
// name) and returns the binary's path.
func BuildLikeDockerfile(t T, dir, outDir string) string {
	t.Helper()
	b := ParseDockerfileBuild(t, filepath.Join(dir, "Dockerfile"))
	out := filepath.Join(outDir, path.Base(b.Output))
	args := append(append([]string{"build"}, b.Flags...), "-o", out, b.Package)
	if _, err := (gocmd.Cmd{Args: args, Dir: dir, Env: append(os.Environ(), b.Env...)}).Run(context.Background()); err != nil {
		t.Fatalf("go %s (the Dockerfile's build) in %s: %v", strings.Join(args, " "), dir, err)
	}
	return out
}

// BuildSettingsMismatch reports how the build settings Go recorded in binary
// (debug/buildinfo) differ from b's: each environment assignment of b (CGO_ENABLED, GOOS,
// ...) and each flag (-trimpath, -ldflags=...); nil when they agree, so that a binary built
// here is known to be the one the Dockerfile builds.
func BuildSettingsMismatch(binary string, b DockerfileBuild) error {
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("%s: no Go build information: %w", binary, err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	var diffs []string
	for _, e := range b.Env {
		k, v, _ := strings.Cut(e, "=")
		if got, ok := settings[k]; !ok || got != v {
			diffs = append(diffs, fmt.Sprintf("%s=%q where the Dockerfile has %s", k, got, e))
		}
	}
	for _, f := range b.Flags {
		k, v, hasValue := strings.Cut(f, "=")
		if !hasValue {
			v = "true"
		}
		got, recorded := settings[k]
		if k == "-ldflags" && !recorded && settings["-trimpath"] == "true" {
			// Go does not record -ldflags under -trimpath (go.dev/issue/52372): check
			// their effect on the binary instead.
			if err := ldflagsEffect(binary, v); err != nil {
				diffs = append(diffs, err.Error())
			}
			continue
		}
		if got != v {
			diffs = append(diffs, fmt.Sprintf("%s=%q where the Dockerfile has %s", k, got, f))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%s was built with %s", binary, strings.Join(diffs, ", "))
	}
	return nil
}

// ldflagsEffect checks the linker flags ldflags left their mark on binary: -s (no symbol
// table) and -w (no DWARF) are the ones it can check; any other flag is an error, not
// something passed over.
func ldflagsEffect(binary, ldflags string) error {
	f, err := elf.Open(binary)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, flag := range strings.Fields(ldflags) {
		switch flag {
		case "-s":
			if f.Section(".symtab") != nil {
				return fmt.Errorf("-ldflags has -s but the binary has a symbol table")
			}
		case "-w":
			if f.Section(".debug_info") != nil {
				return fmt.Errorf("-ldflags has -w but the binary has DWARF")
			}
		default:
			return fmt.Errorf("-ldflags %s: Go does not record it under -trimpath and its effect is not checked here", flag)
		}
	}
	return nil
}
