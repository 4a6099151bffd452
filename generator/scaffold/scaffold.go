// Package scaffold starts a user's project and adds kinds to it: `aagen init` (Init) writes
// a new Go module ready for aagen (go.mod, Makefile, README.md, .gitignore, PROJECT and the
// pkg/apis types root), `aagen create api` (CreateAPI) writes the Go types of a new kind,
// marked for aagen generate.
//
// The files come from the text templates in templates/scaffold. Every file scaffold writes is
// the user's from then on: nothing here overwrites an existing file.
package scaffold

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/format"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"

	"github.com/aagen-dev/aagen/internal/gocmd"
	"github.com/aagen-dev/aagen/runtime/atomicfile"
	"github.com/aagen-dev/aagen/templates"
)

// ProjectFile is the name of the file, at the root of the project, that records the
// project's domain, module and kinds (in the spirit of kubebuilder's PROJECT).
const ProjectFile = "PROJECT"

const projectHeader = "# Written by aagen init and aagen create api: the project's domain, module and kinds.\n"

// Project is the content of the PROJECT file.
type Project struct {
	// Domain is the suffix of the project's API groups: create api --group g serves g.<domain>.
	Domain string `json:"domain"`
	// Repo is the Go module path of the project.
	Repo string `json:"repo"`
	// Resources are the kinds added with create api, in order.
	Resources []Resource `json:"resources,omitempty"`
}

// Resource is one kind recorded in PROJECT.
type Resource struct {
	// Group is the short group name (the first label of the API group).
	Group string `json:"group"`
	// Domain is the rest of the API group.
	Domain  string `json:"domain"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	Plural  string `json:"plural"`
	// Path is the import path of the types package.
	Path       string `json:"path"`
	Namespaced bool   `json:"namespaced"`
	Status     bool   `json:"status,omitempty"`
	Scale      bool   `json:"scale,omitempty"`
}

// GroupName is the resource's API group, <group>.<domain>.
func (r Resource) GroupName() string { return r.Group + "." + r.Domain }

// ReadProject reads the PROJECT file at path.
func ReadProject(path string) (*Project, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p Project
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if p.Domain == "" || p.Repo == "" {
		return nil, fmt.Errorf("%s: domain and repo must be set", path)
	}
	return &p, nil
}

func (p *Project) marshal() ([]byte, error) {
	data, err := yaml.Marshal(p)
	if err != nil {
		return nil, err
	}
	return append([]byte(projectHeader), data...), nil
}

// findProject looks for PROJECT in dir and its parents; it returns the project root.
func findProject(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; {
		if _, err := os.Stat(filepath.Join(d, ProjectFile)); err == nil {
			return d, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no %s file in %s or its parents: run aagen create api in a project made with aagen init", ProjectFile, abs)
		}
		d = parent
	}
}

// render executes the template templates/scaffold/<name>.tmpl.
func render(name string, data any) ([]byte, error) {
	t, err := template.New(name+".tmpl").Option("missingkey=error").ParseFS(templates.Scaffold, "scaffold/"+name+".tmpl")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("rendering %s: %w", name, err)
	}
	return buf.Bytes(), nil
}

// renderGo executes a template of a Go file and gofmts the result.
func renderGo(name string, data any) ([]byte, error) {
	src, err := render(name, data)
	if err != nil {
		return nil, err
	}
	out, err := format.Source(src)
	if err != nil {
		return nil, fmt.Errorf("internal error: template %s does not render valid Go: %w\n%s", name, err, src)
	}
	return out, nil
}

// file is one file to write, relative to the project root (slash-separated).
type file struct {
	path    string
	content []byte
}

// writeNew creates each file; none may exist. It checks them all before writing any.
func writeNew(root string, files []file, log io.Writer) error {
	for _, f := range files {
		abs := filepath.Join(root, filepath.FromSlash(f.path))
		if _, err := os.Lstat(abs); err == nil {
			return fmt.Errorf("%s already exists; refusing to overwrite it", abs)
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	for _, f := range files {
		abs := filepath.Join(root, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return err
		}
		// O_EXCL: never clobber, even a file that appeared since the check.
		w, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		_, err = w.Write(f.content)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		logf(log, "wrote %s", f.path)
	}
	return nil
}

// writeProject rewrites PROJECT (it is aagen's record; users rarely edit it).
func writeProject(root string, p *Project) error {
	data, err := p.marshal()
	if err != nil {
		return err
	}
	path := filepath.Join(root, ProjectFile)
	return atomicfile.WriteFile(path, data, 0o644)
}

// goCmd runs the go command in dir.
func goCmd(ctx context.Context, dir string, log io.Writer, args ...string) error {
	logf(log, "go %s", strings.Join(args, " "))
	_, err := gocmd.Cmd{Args: args, Dir: dir}.Run(ctx)
	return err
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, "aagen: "+format+"\n", args...)
	}
}
