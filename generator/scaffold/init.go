package scaffold

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strings"

	"golang.org/x/mod/module"
	"k8s.io/apimachinery/pkg/util/validation"
)

// GoVersion is the go directive of a new project's go.mod.
const GoVersion = "1.26.0"

// DefaultAPIMachineryVersion is the k8s.io/apimachinery version a new project requires when
// the version aagen was built with is unknown.
const DefaultAPIMachineryVersion = "v0.37.2"

// APIMachineryVersion is the k8s.io/apimachinery version this aagen was built with (so a new
// project pins the Kubernetes libraries of aagen's runtime), or DefaultAPIMachineryVersion.
func APIMachineryVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path != "k8s.io/apimachinery" {
				continue
			}
			if d.Replace != nil && strings.HasPrefix(d.Replace.Version, "v") {
				return d.Replace.Version
			}
			if strings.HasPrefix(d.Version, "v") {
				return d.Version
			}
		}
	}
	return DefaultAPIMachineryVersion
}

// InitOptions configure Init.
type InitOptions struct {
	// Dir is the directory of the new project (default "."). It is created if missing and
	// must otherwise be empty, but for dotfiles (.git, .gitignore, ...).
	Dir string
	// Domain is the suffix of the project's API groups, e.g. example.com.
	Domain string
	// Module is the Go module path, e.g. example.com/foo.
	Module string
	// APIMachineryVersion is the k8s.io/apimachinery version go.mod requires (default
	// APIMachineryVersion()).
	APIMachineryVersion string
	// SkipGoMod skips `go mod download` (which checks the requirement and records its
	// checksums in go.sum); tests and offline use. create api and generate run go mod tidy.
	SkipGoMod bool
	// Log receives a line per step; nil discards them.
	Log io.Writer
}

type initData struct {
	Module, Domain, Name, GoVersion, APIMachineryVersion string
}

// Init creates a new project in o.Dir: go.mod, PROJECT, Makefile, README.md, .gitignore and
// the types root pkg/apis/. It writes nothing unless the inputs are valid and the directory
// is empty.
//
// go.mod requires k8s.io/apimachinery (the types import it) at aagen's version. Init does not
// run go mod tidy: with no Go package yet, tidy would drop that requirement. It runs
// `go mod download k8s.io/apimachinery` instead, and create api runs go mod tidy once the
// first types exist.
func Init(ctx context.Context, o InitOptions) error {
	if err := ValidateDomain(o.Domain); err != nil {
		return err
	}
	if err := ValidateModule(o.Module); err != nil {
		return err
	}
	if o.Dir == "" {
		o.Dir = "."
	}
	if o.APIMachineryVersion == "" {
		o.APIMachineryVersion = APIMachineryVersion()
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return err
	}
	if err := checkEmpty(dir); err != nil {
		return err
	}

	data := initData{
		Module:              o.Module,
		Domain:              o.Domain,
		Name:                projectName(o.Module),
		GoVersion:           GoVersion,
		APIMachineryVersion: o.APIMachineryVersion,
	}
	project, err := (&Project{Domain: o.Domain, Repo: o.Module}).marshal()
	if err != nil {
		return err
	}
	files := []file{{ProjectFile, project}, {"pkg/apis/.gitkeep", nil}}
	for _, t := range []struct{ tmpl, path string }{
		{"go.mod", "go.mod"},
		{"Makefile", "Makefile"},
		{"README.md", "README.md"},
	} {
		content, err := render(t.tmpl, data)
		if err != nil {
			return err
		}
		files = append(files, file{t.path, content})
	}
	gitignore, err := render("gitignore", data)
	if err != nil {
		return err
	}
	appendIgnore := false
	if _, err := os.Stat(filepath.Join(dir, ".gitignore")); err == nil {
		appendIgnore = true
	} else {
		files = append(files, file{".gitignore", gitignore})
	}

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeNew(dir, files, o.Log); err != nil {
		return err
	}
	if appendIgnore {
		if err := appendGitignore(filepath.Join(dir, ".gitignore"), gitignore); err != nil {
			return err
		}
		logf(o.Log, "added aagen's entries to the existing .gitignore")
	}
	if !o.SkipGoMod {
		if err := goCmd(ctx, dir, o.Log, "mod", "download", "k8s.io/apimachinery"); err != nil {
			return fmt.Errorf("the project is written, but checking its requirement failed (is the module proxy reachable?): %w", err)
		}
	}
	logf(o.Log, "initialized %s in %s; next: aagen create api --group <group> --version v1alpha1 --kind <Kind>", o.Module, dir)
	return nil
}

// projectName is the last element of the module path that is not a major version suffix.
func projectName(mod string) string {
	prefix, _, ok := module.SplitPathVersion(mod)
	if !ok || prefix == "" {
		prefix = mod
	}
	return path.Base(prefix)
}

// checkEmpty accepts a missing directory or one holding only dotfiles.
func checkEmpty(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cannot initialize a project in %s: %w", dir, err)
	}
	var found []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			found = append(found, e.Name())
		}
	}
	if len(found) > 0 {
		if len(found) > 5 {
			found = append(found[:5], "...")
		}
		return fmt.Errorf("cannot initialize a project in %s: the directory is not empty (%s); use an empty directory or pass --dir", dir, strings.Join(found, ", "))
	}
	return nil
}

func appendGitignore(path string, add []byte) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if strings.Contains(string(old), "/.aagen/") {
		return nil
	}
	var b strings.Builder
	b.Write(old)
	if len(old) > 0 && !strings.HasSuffix(string(old), "\n") {
		b.WriteByte('\n')
	}
	b.WriteString("\n")
	b.Write(add)
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// ValidateDomain checks the domain of init: a lower-case DNS name.
func ValidateDomain(domain string) error {
	if domain == "" {
		return errors.New("--domain is required: the suffix of your API groups, a DNS name you own, e.g. example.com")
	}
	if errs := validation.IsDNS1123Subdomain(domain); len(errs) > 0 {
		return fmt.Errorf("invalid --domain %q: %s (e.g. example.com)", domain, strings.Join(errs, "; "))
	}
	return nil
}

// ValidateModule checks the module path of init.
func ValidateModule(mod string) error {
	if mod == "" {
		return errors.New("--module is required: the Go module path of the new project, e.g. example.com/foo")
	}
	if err := module.CheckImportPath(mod); err != nil {
		return fmt.Errorf("invalid --module: %w", err)
	}
	return nil
}
