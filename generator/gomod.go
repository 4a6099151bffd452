package generator

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	"golang.org/x/mod/modfile"

	"github.com/aagen-dev/aagen/generator/load"
	"github.com/aagen-dev/aagen/internal/gocmd"
	"github.com/aagen-dev/aagen/runtime/atomicfile"
)

// ModulePath is the module path of aagen, whose runtime/ generated servers import.
const ModulePath = "github.com/aagen-dev/aagen"

// placeholderVersion is the version required when a replace directive supplies the code.
const placeholderVersion = "v0.0.0-00010101000000-000000000000"

// RuntimeRef says how a generated module reaches aagen's runtime: a local checkout
// through a replace directive (the default: this module is not published), or a
// published version.
type RuntimeRef struct {
	// Replace is the directory of an aagen checkout. Empty means the checkout this binary
	// was built from.
	Replace string
	// Version, when set, requires that published version instead of a replace.
	Version string
	// Skip leaves go.mod alone.
	Skip bool
}

// apply edits the module's go.mod; it reports whether it changed.
func (r RuntimeRef) apply(moduleDir string) (bool, error) {
	if r.Skip {
		return false, nil
	}
	gomod := filepath.Join(moduleDir, "go.mod")
	data, err := os.ReadFile(gomod)
	if err != nil {
		return false, err
	}
	f, err := modfile.Parse(gomod, data, nil)
	if err != nil {
		return false, err
	}
	if f.Module != nil && f.Module.Mod.Path == ModulePath {
		return false, nil
	}
	if r.Version != "" {
		if err := f.AddRequire(ModulePath, r.Version); err != nil {
			return false, err
		}
		if err := f.DropReplace(ModulePath, ""); err != nil {
			return false, err
		}
	} else {
		dir := r.Replace
		if dir == "" {
			if dir, err = SourceDir(); err != nil {
				return false, err
			}
		}
		target, err := replacePath(moduleDir, dir)
		if err != nil {
			return false, err
		}
		if err := f.AddRequire(ModulePath, placeholderVersion); err != nil {
			return false, err
		}
		if err := f.AddReplace(ModulePath, "", target, ""); err != nil {
			return false, err
		}
	}
	f.Cleanup()
	out, err := f.Format()
	if err != nil {
		return false, err
	}
	if bytes.Equal(out, data) {
		return false, nil
	}
	return true, writeFile(gomod, out)
}

// replacePath is dir relative to moduleDir when moduleDir lies inside dir (so a checked-in
// example keeps working wherever the checkout is), else absolute.
func replacePath(moduleDir, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(abs, "go.mod")); err != nil {
		return "", fmt.Errorf("aagen checkout %s has no go.mod: pass --aagen-replace=<checkout> or --aagen-version=<version>", abs)
	}
	if rel, err := filepath.Rel(abs, moduleDir); err == nil && !strings.HasPrefix(rel, "..") {
		back, err := filepath.Rel(moduleDir, abs)
		if err == nil {
			return filepath.ToSlash(back), nil
		}
	}
	return abs, nil
}

// SourceDir is the root of the aagen checkout this binary was built from.
func SourceDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", fmt.Errorf("cannot tell where the aagen checkout is (binary built with -trimpath?): pass --aagen-replace=<checkout> or --aagen-version=<version>")
	}
	dir := filepath.Dir(filepath.Dir(file))
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("the aagen checkout this binary was built from (%s) is gone: pass --aagen-replace=<checkout> or --aagen-version=<version>", dir)
	}
	return dir, nil
}

func goModTidy(ctx context.Context, dir string) error {
	_, err := gocmd.Cmd{Args: []string{"mod", "tidy"}, Dir: dir}.Run(ctx)
	return err
}

func writeFile(path string, data []byte) error {
	return atomicfile.WriteFile(path, data, 0o644)
}

// ModuleRoot returns the root directory of the module containing dir.
func ModuleRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	root, _, err := load.FindModule(abs)
	return root, err
}

// scalePackage holds autoscaling/v1 Scale, which /scale subresources serve.
const scalePackage = "k8s.io/api/autoscaling/v1"

// requireK8sAPI makes sure the module requires k8s.io/api, so that scalePackage loads. When
// it does not and write is set, it runs go get k8s.io/api at the version of the module's
// k8s.io/apimachinery (they are released together) or, without one, at the version aagen
// was built with. Otherwise it fails saying what to run.
func requireK8sAPI(ctx context.Context, moduleDir string, write bool, logf func(string, ...any)) error {
	gomod := filepath.Join(moduleDir, "go.mod")
	data, err := os.ReadFile(gomod)
	if err != nil {
		return err
	}
	f, err := modfile.Parse(gomod, data, nil)
	if err != nil {
		return err
	}
	version := ""
	for _, r := range f.Require {
		switch r.Mod.Path {
		case "k8s.io/api":
			return nil
		case "k8s.io/apimachinery":
			version = r.Mod.Version
		}
	}
	if version == "" {
		if info, ok := debug.ReadBuildInfo(); ok {
			for _, d := range info.Deps {
				if d.Path == "k8s.io/api" {
					version = d.Version
				}
			}
		}
	}
	if version == "" || version == "(devel)" {
		version = "latest"
	}
	get := "go get k8s.io/api@" + version
	why := "a /scale subresource serves autoscaling/v1 Scale from k8s.io/api, which " + gomod + " does not require"
	if !write {
		return fmt.Errorf("%s: run `%s` in %s", why, get, moduleDir)
	}
	logf("%s (%s)", get, strings.TrimPrefix(why, "a "))
	if _, err := (gocmd.Cmd{Args: []string{"get", "k8s.io/api@" + version}, Dir: moduleDir}).Run(ctx); err != nil {
		return fmt.Errorf("%s, and `%s` failed: %v\nadd the requirement yourself (go get k8s.io/api@<the version of k8s.io/apimachinery>) and run aagen again",
			why, get, err)
	}
	return nil
}

// snapshotFiles reads the module-relative files and returns a function that writes them
// back (and removes those that did not exist).
func snapshotFiles(moduleDir string, names ...string) func() {
	saved := map[string][]byte{}
	for _, n := range names {
		if data, err := os.ReadFile(filepath.Join(moduleDir, n)); err == nil {
			saved[n] = data
		}
	}
	return func() {
		for _, n := range names {
			p := filepath.Join(moduleDir, n)
			if data, ok := saved[n]; ok {
				if cur, err := os.ReadFile(p); err != nil || !bytes.Equal(cur, data) {
					_ = os.WriteFile(p, data, 0o644)
				}
			} else {
				_ = os.Remove(p)
			}
		}
	}
}
