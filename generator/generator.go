// Package generator runs the aagen pipeline: load the types packages (package load),
// build the API model and check it (package model), produce every file (code-generator
// and kube-openapi in-process through package codegen, aagen's own emitters in package
// emit), then write the tree in one step (package output) and wire the module's go.mod.
//
// Nothing touches the user's tree until every file has been produced; a run that fails
// writes nothing.
//
// generator.go is the pipeline, Generate, one step after the other; cache.go the run
// cache that skips a run when nothing changed; gomod.go the edits of the module's go.mod;
// codegeninput.go (and validationtags.go) the model translated for package codegen;
// conversions.go the conversions conversion-gen cannot write, stubbed and warned about.
package generator

import (
	"context"
	"errors"
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
	"github.com/aagen-dev/aagen/generator/deploycerts"
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
	// Backends are kinds, as <Kind>.<group>, served from the user's backend as if marked
	// +aagen:backend (model.Config.Backends): a published package's kinds, unedited.
	Backends []string
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

// Generate runs the pipeline: each step below is a method of run (or a function) named
// for what it does, in the order they run.
func Generate(ctx context.Context, o Options) (_ *Result, err error) {
	r := newRun(ctx, o)
	if res := r.cached(); res != nil {
		return res, nil
	}
	if err := r.loadPackages(); err != nil {
		return nil, err
	}
	if err := r.buildModel(); err != nil {
		return nil, err
	}
	// From here on, a run that fails puts back go.mod and go.sum as they were before
	// requireScaleAPI.
	restore, err := r.requireScaleAPI()
	defer func() {
		if err != nil {
			restore()
		}
	}()
	if err != nil {
		return nil, err
	}
	if err := r.runCodegen(); err != nil {
		return nil, err
	}
	if err := r.emitGo(); err != nil {
		return nil, err
	}
	certs, err := deployCerts(r.m.ModuleDir, r.res.ServerName, r.o.Deploy)
	if err != nil {
		return nil, err
	}
	if err := r.deploy(certs); err != nil {
		return nil, err
	}
	if err := r.protobuf(); err != nil {
		return nil, err
	}
	if err := r.apiDocs(); err != nil {
		return nil, err
	}
	r.logf("generated %d files (%.1fs)", len(r.files), time.Since(r.generateStart).Seconds())
	if err := r.diff(); err != nil {
		return nil, err
	}
	if o.Verify {
		return r.verify()
	}
	if err := r.apply(); err != nil {
		return nil, err
	}
	if err := r.goMod(); err != nil {
		return nil, err
	}
	r.reportWritten()
	r.record()
	r.logf("done in %.1fs", time.Since(r.start).Seconds())
	return r.res, nil
}

// run is one generate run: its options, with their defaults, and what each step leaves for
// the next ones.
type run struct {
	ctx   context.Context
	o     Options
	start time.Time
	// outDirs are the directories a run writes besides the types packages (which are among
	// its sources).
	outDirs []string
	// src are the sources, listed without type-checking, for the run cache's check and
	// record; srcErr says why they could not be listed.
	src    *load.Sources
	srcErr error

	loaded       *load.Result
	m            *model.Model
	res          *Result
	generatedPkg string
	// generateStart is when the code generators started; generated are their files.
	generateStart time.Time
	generated     []codegen.File
	// files are every file of the run, in the order they are diffed and written.
	files []emit.File
	// change is the applied plan and restoreGoMod puts go.mod and go.sum back as they were
	// before it, for undo.
	change       *output.Change
	restoreGoMod func()
}

// newRun fills in the options' defaults.
func newRun(ctx context.Context, o Options) *run {
	r := &run{ctx: ctx, start: time.Now()}
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
	r.o = o
	r.outDirs = []string{o.GeneratedDir, layout.APIServerDir, layout.RegistryDir, deployDir, emit.APIDocsDir}
	return r
}

// logf writes a progress line to Options.Log.
func (r *run) logf(format string, args ...any) {
	if r.o.Log != nil {
		fmt.Fprintf(r.o.Log, "aagen: "+format+"\n", args...)
	}
}

// report writes warnings to Options.Warn (or Log).
func (r *run) report(warnings ...string) {
	warn := r.o.Warn
	if warn == nil {
		warn = r.o.Log
	}
	if warn != nil {
		for _, w := range warnings {
			fmt.Fprintf(warn, "aagen: %s\n", w)
		}
	}
}

// addWarnings adds a step's warnings to the result's and reports them.
func (r *run) addWarnings(ws []model.Diagnostic) {
	r.res.Warnings = append(r.res.Warnings, ws...)
	r.report(diagnostics(ws)...)
}

// cached returns the result of a run that the run cache (cache.go) finds up to date, after
// printing the warnings it recorded; nil when the run must go on.
func (r *run) cached() *Result {
	r.src, r.srcErr = load.ListSources(r.ctx, r.o.Dir, r.o.Patterns)
	if r.o.Force || r.srcErr != nil {
		return nil
	}
	rec := upToDate(r.src, r.o, r.outDirs)
	if rec == nil {
		return nil
	}
	r.report(rec.Warnings...)
	r.logf("up to date: nothing changed since the last run (--force runs the generators anyway)")
	return &Result{ServerName: rec.ServerName, ModuleDir: r.src.ModuleDir, UpToDate: true}
}

// loadPackages loads the types packages (package load).
func (r *run) loadPackages() error {
	r.logf("loading %s", strings.Join(r.o.Patterns, " "))
	var err error
	r.loaded, err = load.Packages(r.ctx, r.o.Dir, r.o.Patterns)
	return err
}

// buildModel builds the model and reports its warnings (package model).
func (r *run) buildModel() error {
	m, warns, err := model.Build(r.loaded, markers.Default(), model.Config{Backends: r.o.Backends})
	r.report(diagnostics(warns)...)
	if err != nil {
		return err
	}
	r.m = m
	r.res = &Result{Model: m, ModuleDir: m.ModuleDir, Warnings: warns, ServerName: r.o.ServerName}
	if r.res.ServerName == "" {
		r.res.ServerName = m.ServerName()
	}
	r.generatedPkg = m.ModulePath + "/" + r.o.GeneratedDir
	r.logf("model: %s (%.1fs)", summary(m), time.Since(r.start).Seconds())
	return nil
}

// requireScaleAPI makes the module require k8s.io/api when a kind serves /scale: the
// subresource serves autoscaling/v1 Scale, whose OpenAPI definitions the code generators
// load from k8s.io/api. It returns what puts go.mod and go.sum back as they were, for a
// run that fails after it (including its own failure); a no-op without /scale.
func (r *run) requireScaleAPI() (restore func(), err error) {
	if !r.m.HasScale() {
		return func() {}, nil
	}
	restore = snapshotFiles(r.m.ModuleDir, "go.mod", "go.sum")
	return restore, requireK8sAPI(r.ctx, r.m.ModuleDir, !r.o.Verify && !r.o.Runtime.Skip, r.logf)
}

// protobuf renders the protobuf methods of every types package the model says can have them
// (package protobuf; what the encoding makes of each package is model.Version.Protobuf, and
// its warnings are the model's).
func (r *run) protobuf() error {
	files, err := protobuf.Files(r.m, os.ReadFile)
	if err != nil {
		return err
	}
	r.files = append(r.files, files...)
	return nil
}

// runCodegen runs code-generator and openapi-gen (package codegen) on the model's
// translation (codegeninput.go).
func (r *run) runCodegen() error {
	in := codegenInput(r.m, r.generatedPkg)
	// Whether every served package has the protobuf methods decides what the clientset asks for.
	in.PrefersProtobuf = r.m.ServesProtobuf()

	r.generateStart = time.Now()
	r.logf("running code generators (deepcopy, openapi, clientset, listers, informers, apply configurations)")
	files, stats, err := codegen.RunWithStats(r.ctx, in)
	if err != nil {
		var te *codegen.TypeError
		if errors.As(err, &te) {
			return &model.Error{Diags: []model.Diagnostic{typeErrorDiagnostic(r.m, te)}}
		}
		return fmt.Errorf("code generation: %w", err)
	}
	if r.o.Verbose {
		r.logf("  package load %.2fs", stats.Load.Seconds())
		for _, st := range stats.Steps {
			r.logf("  %s %.2fs", st.Tool, st.Duration.Seconds())
		}
	}
	r.generated = files
	for _, f := range files {
		r.files = append(r.files, emit.File{Path: f.Path, Content: f.Content, Owner: emit.Generated})
	}
	return nil
}

// typeErrorDiagnostic puts a code generator's error on a type (openapi-gen's, which names
// neither type nor field) at the field's markers, or the type's declaration, with what the
// generator asks for.
func typeErrorDiagnostic(m *model.Model, te *codegen.TypeError) model.Diagnostic {
	d := model.Diagnostic{
		Msg: fmt.Sprintf("%s refuses %s: %v", te.Tool, te.Name, te.Err),
		Fix: fmt.Sprintf("change the markers or struct tags %s names (a marker such as +patchMergeKey takes one value, the struct tag's); the message is %s's own", te.Tool, te.Tool),
	}
	t := m.Types.Lookup(model.GoType{Pkg: te.Pkg, Name: te.Name})
	if t == nil {
		d.Msg = fmt.Sprintf("%s refuses %s.%s: %v", te.Tool, te.Pkg, te.Name, te.Err)
		return d
	}
	d.Pos = t.Pos
	for _, f := range t.Fields() {
		if te.Field != "" && f.GoName == te.Field {
			d.Msg = fmt.Sprintf("%s refuses field %s.%s: %v", te.Tool, te.Name, te.Field, te.Err)
			d.Pos = f.Pos
			if f.MarkerPos.IsValid() {
				d.Pos = f.MarkerPos
			}
		}
	}
	return d
}

// emitOptions are the options of aagen's emitters.
func (r *run) emitOptions() emit.Options {
	return emit.Options{ServerName: r.res.ServerName, GeneratedPkg: r.generatedPkg}
}

// emitGo renders aagen's own Go files (emit.Go) and the conversion stubs and warnings of
// the conversions conversion-gen could not write (conversions.go).
func (r *run) emitGo() error {
	own, err := emit.Go(r.m, r.emitOptions())
	if err != nil {
		return err
	}
	r.files = append(r.files, own...)
	conv, convWarns, err := conversions(r.m, r.generated)
	if err != nil {
		return err
	}
	r.files = append(r.files, conv...)
	r.addWarnings(convWarns)
	return nil
}

// deploy renders the deploy manifests with the certificate material of deployCerts.
func (r *run) deploy(certs emit.DeployCerts) error {
	files, err := emit.Deploy(r.m, r.emitOptions(), r.o.Deploy, certs)
	if err != nil {
		return err
	}
	r.files = append(r.files, files...)
	return nil
}

// apiDocs renders the API reference (emit.APIDocs).
func (r *run) apiDocs() error {
	docs, err := emit.APIDocs(r.m, r.res.ServerName)
	if err != nil {
		return err
	}
	r.files = append(r.files, docs...)
	return nil
}

// diff compares the run's files with the tree (output.Diff), scanning the output
// directories and the types packages for files to delete.
func (r *run) diff() error {
	scan := slices.Clone(r.outDirs)
	for _, g := range r.m.Groups {
		for _, v := range g.Packages() {
			scan = append(scan, r.m.RelPath(v.Dir))
		}
	}
	plan, err := output.Diff(r.m.ModuleDir, r.files, scan)
	if err != nil {
		return err
	}
	r.res.Plan = plan
	return nil
}

// verify ends a --verify run: a StaleError when the tree is out of date.
func (r *run) verify() (*Result, error) {
	if stale := r.res.Plan.Stale(); len(stale) > 0 {
		return r.res, &StaleError{Paths: stale}
	}
	r.logf("up to date: %d generated files", r.res.Plan.Unchanged)
	return r.res, nil
}

// apply writes the plan (Options.Writer), after forgetting the last run's record. The
// files, the go.mod edit and go mod tidy are one change: should the go.mod edit or tidy
// fail, go.mod, go.sum and every file are put back as they were (undo).
func (r *run) apply() error {
	forget(r.m.ModuleDir)
	r.restoreGoMod = snapshotFiles(r.m.ModuleDir, "go.mod", "go.sum")
	change, err := r.o.Writer.Apply(r.m.ModuleDir, r.res.Plan)
	if err != nil {
		return fmt.Errorf("writing files: %w", err)
	}
	r.change = change
	return nil
}

// undo puts go.mod, go.sum and the files back as they were before apply, returning cause
// with what happened.
func (r *run) undo(cause error) error {
	r.restoreGoMod()
	if uerr := r.change.Undo(); uerr != nil {
		return fmt.Errorf("%w; putting the files back failed too: %v", cause, uerr)
	}
	return fmt.Errorf("%w; the files, go.mod and go.sum are as they were before the run", cause)
}

// goMod makes go.mod reach aagen's runtime (Options.Runtime) and runs go mod tidy when
// go.mod or the files changed; on failure it undoes the run's change.
func (r *run) goMod() error {
	plan := r.res.Plan
	changed, err := r.o.Runtime.apply(r.m.ModuleDir)
	if err != nil {
		return r.undo(fmt.Errorf("editing go.mod: %w", err))
	}
	if !r.o.Runtime.Skip && (changed || len(plan.Write) > 0 || len(plan.Delete) > 0) {
		r.logf("go mod tidy")
		tidy := r.o.GoModTidy
		if tidy == nil {
			tidy = goModTidy
		}
		if err := tidy(r.ctx, r.m.ModuleDir); err != nil {
			return r.undo(err)
		}
	}
	return nil
}

// reportWritten notes the files written by other tools that aagen replaced, and logs what
// the run wrote and deleted.
func (r *run) reportWritten() {
	plan := r.res.Plan
	for _, rp := range plan.Replaced {
		by := "aagen's own"
		if rp.Owner != "aagen" {
			by = rp.Owner + "'s, which aagen runs itself"
		}
		r.report(fmt.Sprintf("note: replaced %s, written by %s, with %s (the file's name is that generator's; aagen never touches files without a \"Code generated ... DO NOT EDIT.\" header)", rp.Path, rp.Tool, by))
	}
	for _, p := range plan.Chmod {
		r.report(fmt.Sprintf("note: made %s readable by its owner only (mode 0600): it holds a private key", p))
	}
	if r.o.Verbose {
		for _, f := range plan.Write {
			r.logf("  wrote %s", f.Path)
		}
		for _, p := range plan.Delete {
			r.logf("  deleted %s", p)
		}
	}
	r.logf("wrote %d, deleted %d, unchanged %d, kept %d user files", len(plan.Write), len(plan.Delete), plan.Unchanged, len(plan.Kept))
}

// record records the run for the run cache (cache.go); a run that cannot be recorded only
// says so.
func (r *run) record() {
	if r.srcErr != nil {
		r.logf("not recording the run (the next one will not be skipped): %v", r.srcErr)
	} else if err := recordRun(r.src, r.o, r.outDirs, r.res, r.files); err != nil {
		r.logf("not recording the run (the next one will not be skipped): %v", err)
	}
}

// deployCerts loads the certificate material the deploy manifests carry from the module,
// creating what is missing (package deploycerts, as emit.DeployCertRequest asks; nothing
// with cert-manager, which issues it in the cluster).
func deployCerts(moduleDir, serverName string, d emit.DeployOptions) (emit.DeployCerts, error) {
	var certs emit.DeployCerts
	req, err := emit.DeployCertRequest(serverName, d)
	if err != nil || req == nil {
		return certs, err
	}
	if certs.Serving, err = deploycerts.Ensure(moduleDir, req.Dir, req.Secret, req.Namespace, req.DNSNames, req.Now); err != nil {
		return certs, err
	}
	if e := req.Etcd; e != nil {
		if certs.Etcd, err = deploycerts.EnsureEtcd(moduleDir, req.Dir, e.Secrets, req.Namespace, e.ClientName, e.DNSNames, req.Now); err != nil {
			return certs, err
		}
	}
	return certs, nil
}

// diagnostics renders each diagnostic as a line with its position.
func diagnostics(ds []model.Diagnostic) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
}

// StaleError lists generated files that are out of date.
type StaleError struct{ Paths []string }

func (e *StaleError) Error() string {
	return fmt.Sprintf("generated files are out of date; run aagen generate:\n\t%s", strings.Join(e.Paths, "\n\t"))
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
