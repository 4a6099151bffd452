package cluster

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path"
	"path/filepath"

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

// ImageTarball writes an image of one layer holding binary at /<its name>, with that
// binary and args as its entrypoint, for linux/amd64, tagged ref, as a tarball that
// `ctr images import` takes; no registry is involved.
func ImageTarball(t T, ref, binary, out string, args ...string) {
	t.Helper()
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Base(binary)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: base, Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromReader(bytes.NewReader(buf.Bytes()))
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
	cf.Config.Entrypoint = append([]string{"/" + base}, args...)
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
