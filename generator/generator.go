// Package generator runs the aagen pipeline: load the types packages (package load),
// build the API model and check it (package model), produce every file (code-generator
// and kube-openapi in-process through package codegen, aagen's own emitters in package
// emit), then write the tree in one step (package output) and wire the module's go.mod.
//
// Nothing touches the user's tree until every file has been produced; a run that fails
// writes nothing.
package generator

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aagen-dev/aagen/generator/codegen"
	"github.com/aagen-dev/aagen/generator/emit"
	"github.com/aagen-dev/aagen/generator/layout"
	"github.com/aagen-dev/aagen/generator/load"
	"github.com/aagen-dev/aagen/generator/markers"
	"github.com/aagen-dev/aagen/generator/model"
	"github.com/aagen-dev/aagen/generator/output"
	"github.com/aagen-dev/aagen/generator/protobuf"
)

// Options configure one generate run.
type Options struct {
	// Dir is where patterns are resolved; it must be inside the module holding the types.
	Dir string
	// Patterns are go/packages patterns of the types packages, e.g. ./pkg/apis/...
	Patterns []string
	// ServerName overrides the server's name (default: <module base>-apiserver).
	ServerName string
	// GeneratedDir is the module-relative directory of clients and OpenAPI (default pkg/generated).
	GeneratedDir string
	// Runtime says how the module reaches aagen's runtime (see RuntimeRef).
	Runtime RuntimeRef
	// Deploy configures the deploy manifests.
	Deploy emit.DeployOptions
	// Verify compares instead of writing: the run fails if the tree is out of date.
	Verify bool
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Warn receives warnings about the types (e.g. markers not applied yet); nil means Log.
	Warn io.Writer
	// Verbose adds detail to Log: each generator's time and each file written or deleted.
	Verbose bool
	// Force runs every generator even when nothing changed since the last successful run
	// (see the run cache in cache.go).
	Force bool
	// Writer writes the files of the run; its zero value uses the os package. Tests set
	// its fields to make a rename or a delete fail.
	Writer output.Writer `json:"-"`
	// GoModTidy runs `go mod tidy` in the module directory; nil runs the go command. Tests
	// set it to make tidy fail.
	GoModTidy func(ctx context.Context, dir string) error `json:"-"`
}

// Result describes a finished run.
type Result struct {
	Model      *model.Model
	ServerName string
	// ModuleDir is the module the run generated into.
	ModuleDir string
	// Plan is what the run wrote; nil when the run cache found that nothing changed since
	// the last successful run, so nothing was loaded and no generator ran (Model and
	// Warnings are nil then too: the recorded warnings are printed again).
	Plan     *output.Plan
	Warnings []model.Diagnostic
	// UpToDate is set when the run cache found nothing changed.
	UpToDate bool
}

// Generate runs the pipeline.
func Generate(ctx context.Context, o Options) (_ *Result, err error) {
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, "aagen: "+format+"\n", args...)
		}
	}
	start := time.Now()
	if o.Dir == "" {
		o.Dir = "."
	}
	if o.GeneratedDir == "" {
		o.GeneratedDir = layout.GeneratedDir
	}
	o.GeneratedDir = path.Clean(filepath.ToSlash(o.GeneratedDir))
	deployDir := o.Deploy.Dir
	if deployDir == "" {
		deployDir = layout.DeployDir
	}
	if o.Deploy.GoVersion == "" {
		o.Deploy.GoVersion = goMinor()
	}
	// The directories a run writes besides the types packages (which are among its sources).
	outDirs := []string{o.GeneratedDir, layout.APIServerDir, layout.RegistryDir, deployDir, emit.APIDocsDir}
	warn := o.Warn
	if warn == nil {
		warn = o.Log
	}
	report := func(warnings ...string) {
		if warn != nil {
			for _, w := range warnings {
				fmt.Fprintf(warn, "aagen: %s\n", w)
			}
		}
	}
	// The sources, listed without type-checking, serve the run cache's check and record.
	src, srcErr := load.ListSources(ctx, o.Dir, o.Patterns)
	if !o.Force && srcErr == nil {
		if rec := upToDate(src, o, outDirs); rec != nil {
			report(rec.Warnings...)
			logf("up to date: nothing changed since the last run (--force runs the generators anyway)")
			return &Result{ServerName: rec.ServerName, ModuleDir: src.ModuleDir, UpToDate: true}, nil
		}
	}

	logf("loading %s", strings.Join(o.Patterns, " "))
	loaded, err := load.Packages(ctx, o.Dir, o.Patterns)
	if err != nil {
		return nil, err
	}
	m, warns, err := model.Build(loaded, markers.Default())
	report(diagnostics(warns)...)
	if err != nil {
		return nil, err
	}
	res := &Result{Model: m, ModuleDir: m.ModuleDir, Warnings: warns, ServerName: o.ServerName}
	if res.ServerName == "" {
		res.ServerName = m.ServerName()
	}
	generatedPkg := m.ModulePath + "/" + o.GeneratedDir
	logf("model: %s (%.1fs)", summary(m), time.Since(start).Seconds())

	scan := slices.Clone(outDirs)
	for _, g := range m.Groups {
		for _, v := range g.Packages() {
			scan = append(scan, m.RelPath(v.Dir))
		}
	}

	if m.HasScale() {
		// The /scale subresource serves autoscaling/v1 Scale, whose OpenAPI definitions the
		// code generators load from k8s.io/api: the module must require it first. Should the
		// run fail after that, go.mod and go.sum are put back as they were.
		restore := snapshotFiles(m.ModuleDir, "go.mod", "go.sum")
		defer func() {
			if err != nil {
				restore()
			}
		}()
		if err := requireK8sAPI(ctx, m.ModuleDir, !o.Verify && !o.Runtime.Skip, logf); err != nil {
			return nil, err
		}
	}

	in := codegenInput(m, generatedPkg)
	// Whether every served package has the protobuf methods decides what the clientset asks for.
	in.PrefersProtobuf = m.ServesProtobuf()

	t := time.Now()
	logf("running code generators (deepcopy, openapi, clientset, listers, informers, apply configurations)")
	files, stats, err := codegen.RunWithStats(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("code generation: %w", err)
	}
	if o.Verbose {
		logf("  package load %.2fs", stats.Load.Seconds())
		for _, st := range stats.Steps {
			logf("  %s %.2fs", st.Tool, st.Duration.Seconds())
		}
	}
	var all []emit.File
	for _, f := range files {
		all = append(all, emit.File{Path: f.Path, Content: f.Content, Owner: emit.Generated})
	}
	own, err := emit.Go(m, emit.Options{ServerName: res.ServerName, GeneratedPkg: generatedPkg})
	if err != nil {
		return nil, err
	}
	all = append(all, own...)
	conv, convWarns, err := conversions(m, files)
	if err != nil {
		return nil, err
	}
	all = append(all, conv...)
	res.Warnings = append(res.Warnings, convWarns...)
	report(diagnostics(convWarns)...)
	deploy, err := emit.Deploy(m, emit.Options{ServerName: res.ServerName, GeneratedPkg: generatedPkg}, o.Deploy)
	if err != nil {
		return nil, err
	}
	all = append(all, deploy...)
	proto, err := protobuf.Files(m, os.ReadFile)
	if err != nil {
		return nil, err
	}
	all = append(all, proto...)
	apiDocs, err := emit.APIDocs(m, res.ServerName)
	if err != nil {
		return nil, err
	}
	all = append(all, apiDocs...)
	logf("generated %d files (%.1fs)", len(all), time.Since(t).Seconds())

	plan, err := output.Diff(m.ModuleDir, all, scan)
	if err != nil {
		return nil, err
	}
	res.Plan = plan
	if o.Verify {
		if stale := plan.Stale(); len(stale) > 0 {
			return res, &StaleError{Paths: stale}
		}
		logf("up to date: %d generated files", plan.Unchanged)
		return res, nil
	}
	forget(m.ModuleDir)
	// The files, the go.mod edit and go mod tidy are one change: should the go.mod edit or
	// tidy fail, go.mod, go.sum and every file are put back as they were.
	restoreGoMod := snapshotFiles(m.ModuleDir, "go.mod", "go.sum")
	change, err := o.Writer.Apply(m.ModuleDir, plan)
	if err != nil {
		return nil, fmt.Errorf("writing files: %w", err)
	}
	undo := func(cause error) error {
		restoreGoMod()
		if uerr := change.Undo(); uerr != nil {
			return fmt.Errorf("%w; putting the files back failed too: %v", cause, uerr)
		}
		return fmt.Errorf("%w; the files, go.mod and go.sum are as they were before the run", cause)
	}
	changed, err := o.Runtime.apply(m.ModuleDir)
	if err != nil {
		return nil, undo(fmt.Errorf("editing go.mod: %w", err))
	}
	if !o.Runtime.Skip && (changed || len(plan.Write) > 0 || len(plan.Delete) > 0) {
		logf("go mod tidy")
		tidy := o.GoModTidy
		if tidy == nil {
			tidy = goModTidy
		}
		if err := tidy(ctx, m.ModuleDir); err != nil {
			return nil, undo(err)
		}
	}
	for _, r := range plan.Replaced {
		report(fmt.Sprintf("note: replaced %s, written by %s, with aagen's own (aagen runs %s itself; it never touches files without a generator's header)", r.Path, r.Tool, r.Tool))
	}
	if o.Verbose {
		for _, f := range plan.Write {
			logf("  wrote %s", f.Path)
		}
		for _, p := range plan.Delete {
			logf("  deleted %s", p)
		}
	}
	logf("wrote %d, deleted %d, unchanged %d, kept %d user files", len(plan.Write), len(plan.Delete), plan.Unchanged, len(plan.Kept))
	if srcErr != nil {
		logf("not recording the run (the next one will not be skipped): %v", srcErr)
	} else if err := recordRun(src, o, outDirs, res, all); err != nil {
		logf("not recording the run (the next one will not be skipped): %v", err)
	}
	logf("done in %.1fs", time.Since(start).Seconds())
	return res, nil
}

// recordRun records a successful run for the run cache (see cache.go).
func recordRun(src *load.Sources, o Options, outDirs []string, res *Result, written []emit.File) error {
	var owned []string
	for _, f := range written {
		owned = append(owned, f.Path)
	}
	files, err := runFiles(src, outDirs, owned)
	if err != nil {
		return err
	}
	return record(src.ModuleDir, o, res.ServerName, diagnostics(res.Warnings), files)
}

// diagnostics renders each diagnostic as a line with its position.
func diagnostics(ds []model.Diagnostic) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
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

// conversions finds, in the conversions conversion-gen wrote, the functions it could not
// write (fields that differ between a version and its storage version). It creates the
// version's user-owned conversion.go with stubs for them when the file does not exist yet,
// and warns about each one either way: the server does not build until they are written.
func conversions(m *model.Model, files []codegen.File) ([]emit.File, []model.Diagnostic, error) {
	var out []emit.File
	var warns []model.Diagnostic
	for _, g := range m.Groups {
		for _, v := range g.Versions {
			if v.ConvertTo == nil {
				continue
			}
			rel := m.RelPath(v.Dir)
			var generated []byte
			for _, f := range files {
				if f.Path == path.Join(rel, "zz_generated.conversion.go") {
					generated = f.Content
				}
			}
			if generated == nil {
				continue
			}
			missing, err := emit.MissingConversions(v, generated)
			if err != nil || len(missing) == 0 {
				if err != nil {
					return nil, nil, err
				}
				continue
			}
			userFile := path.Join(rel, emit.ConversionFileName)
			fix := "write them in " + userFile + " (yours; each starts from the generated autoConvert_ function)"
			if _, err := os.Stat(filepath.Join(m.ModuleDir, filepath.FromSlash(userFile))); os.IsNotExist(err) {
				f, err := emit.ConversionFile(m, v, missing)
				if err != nil {
					return nil, nil, err
				}
				out = append(out, f)
				fix = "this run created " + userFile + " with a stub for each: convert the fields named there and delete each " + emit.ConversionTODO + " line"
			}
			for _, mc := range missing {
				msg := fmt.Sprintf("%s: conversion-gen cannot write %s", v.GroupVersion(), mc.Name)
				if len(mc.Fields) > 0 {
					msg += " (" + strings.Join(mc.Fields, "; ") + ")"
				}
				msg += "; the server does not build until it is written by hand"
				pos, fix := v.Pos, fix
				if mc.Stub.IsValid() {
					// The stub is there but unfinished: point at its TODO line.
					pos = mc.Stub
					msg = fmt.Sprintf("%s: %s is still the stub aagen created", v.GroupVersion(), mc.Name)
					if len(mc.Fields) > 0 {
						msg += " (" + strings.Join(mc.Fields, "; ") + ")"
					}
					msg += "; the server does not build until it is written"
					fix = "convert the fields named above the line, then delete the " + emit.ConversionTODO + " line"
				}
				warns = append(warns, model.Diagnostic{Pos: pos, Warning: true, Msg: msg, Fix: fix})
			}
		}
	}
	return out, warns, nil
}

// StaleError lists generated files that are out of date.
type StaleError struct{ Paths []string }

func (e *StaleError) Error() string {
	return fmt.Sprintf("generated files are out of date; run aagen generate:\n\t%s", strings.Join(e.Paths, "\n\t"))
}

func codegenInput(m *model.Model, generatedPkg string) codegen.Input {
	in := codegen.Input{ModuleDir: m.ModuleDir, ModulePath: m.ModulePath, OutputPkg: generatedPkg, Validation: validationTags(m.Types)}
	for _, n := range m.Types.Referenced() {
		in.ReferencedTypes = append(in.ReferencedTypes, n.Pkg+"."+n.Name)
	}
	if m.HasScale() {
		in.ExtraOpenAPIPackages = []string{scalePackage}
	}
	for _, g := range m.Groups {
		for _, v := range g.Versions {
			p := codegen.Package{ImportPath: v.ImportPath, Dir: v.Dir, Group: g.Name, GroupPackageName: g.PackageName, Version: v.Name}
			p.Defaults = v.HasDefaults()
			if v.ConvertTo != nil {
				p.ConvertTo = v.ConvertTo.ImportPath
			}
			for _, k := range v.Kinds {
				p.Kinds = append(p.Kinds, codegen.Kind{Name: k.Name, NamespaceScoped: k.NamespaceScoped, HasStatus: k.HasStatus, Plural: k.Plural, Unserved: k.Unserved,
					ClientMethods: clientMethods(k)})
			}
			p.Objects = v.SubresourceTypes()
			in.Packages = append(in.Packages, p)
		}
		if v := g.Internal; v != nil {
			p := codegen.Package{ImportPath: v.ImportPath, Dir: v.Dir, Group: g.Name, GroupPackageName: g.PackageName, Internal: true}
			for _, k := range v.Kinds {
				p.Kinds = append(p.Kinds, codegen.Kind{Name: k.Name, NamespaceScoped: k.NamespaceScoped, HasStatus: k.HasStatus, Plural: k.Plural, Unserved: true})
			}
			in.Packages = append(in.Packages, p)
		}
	}
	return in
}

func summary(m *model.Model) string {
	var parts []string
	for _, g := range m.Groups {
		for _, v := range g.Versions {
			var kinds []string
			for _, k := range v.Kinds {
				kinds = append(kinds, k.Name)
			}
			sort.Strings(kinds)
			parts = append(parts, fmt.Sprintf("%s/%s [%s]", g.Name, v.Name, strings.Join(kinds, ", ")))
		}
	}
	return strings.Join(parts, "; ")
}

// goMinor is the Go version of this toolchain as "1.N", for the Dockerfile.
func goMinor() string {
	v := strings.TrimPrefix(runtime.Version(), "go")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) >= 2 {
		return parts[0] + "." + parts[1]
	}
	return v
}
