package codegen

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/tools/go/packages"
	acargs "k8s.io/code-generator/cmd/applyconfiguration-gen/args"
	acgen "k8s.io/code-generator/cmd/applyconfiguration-gen/generators"
	clientargs "k8s.io/code-generator/cmd/client-gen/args"
	clientgen "k8s.io/code-generator/cmd/client-gen/generators"
	clientgentypes "k8s.io/code-generator/cmd/client-gen/types"
	conversionargs "k8s.io/code-generator/cmd/conversion-gen/args"
	conversiongen "k8s.io/code-generator/cmd/conversion-gen/generators"
	deepcopyargs "k8s.io/code-generator/cmd/deepcopy-gen/args"
	deepcopygen "k8s.io/code-generator/cmd/deepcopy-gen/generators"
	defaulterargs "k8s.io/code-generator/cmd/defaulter-gen/args"
	defaultergen "k8s.io/code-generator/cmd/defaulter-gen/generators"
	informerargs "k8s.io/code-generator/cmd/informer-gen/args"
	informergen "k8s.io/code-generator/cmd/informer-gen/generators"
	listerargs "k8s.io/code-generator/cmd/lister-gen/args"
	listergen "k8s.io/code-generator/cmd/lister-gen/generators"
	genutil "k8s.io/code-generator/pkg/util"
	"k8s.io/gengo/v2"
	"k8s.io/gengo/v2/generator"
	"k8s.io/gengo/v2/namer"
	"k8s.io/gengo/v2/parser"
	"k8s.io/klog/v2"
	openapiargs "k8s.io/kube-openapi/cmd/openapi-gen/args"
	openapigen "k8s.io/kube-openapi/pkg/generators"
)

type runOptions struct {
	// loadPerStep gives every generator its own parser and universe, the way
	// the standalone tools run. Tests use it to show that sharing one load
	// changes nothing.
	loadPerStep bool
}

// step is one generator: its name systems, the packages it sees as inputs
// (Context.Inputs) and its GetTargets; or, if action is set, a step that
// runs no generator (models-schema). Every step is in the one list steps
// returns, in order; a step that applies only sometimes says when.
type step struct {
	tool string
	// when, if set, says when the step applies; applies is whether it does
	// for this Input. Steps that do not apply are left out of the run.
	when          string
	applies       bool
	nameSystems   namer.NameSystems
	defaultSystem string
	inputs        []string
	targets       func(*generator.Context) ([]generator.Target, error)
	action        func(context.Context) error
}

func run(ctx context.Context, in Input, opts runOptions) (files []File, stats Stats, err error) {
	start := time.Now()
	in, err = in.complete()
	if err != nil {
		return nil, stats, err
	}
	if err := ctx.Err(); err != nil {
		return nil, stats, err
	}

	// klog.OsExit is process-global: one Run at a time.
	runMu.Lock()
	defer runMu.Unlock()
	defer trapFatal()()

	tmp, err := os.MkdirTemp("", "aagen-codegen-")
	if err != nil {
		return nil, stats, fmt.Errorf("codegen: %w", err)
	}
	defer os.RemoveAll(tmp)
	root := filepath.Join(tmp, "out") // mirrors ModuleDir
	schemaPath := ""
	var schemaAction func(context.Context) error
	switch {
	case len(in.OpenAPISchema) > 0: // the caller's schema wins
		schemaPath = filepath.Join(tmp, "openapi-schema.json")
		if err := os.WriteFile(schemaPath, in.OpenAPISchema, 0o600); err != nil {
			return nil, stats, fmt.Errorf("codegen: %w", err)
		}
	case !in.SkipApplySchema:
		// Written by the models-schema step, before applyconfiguration-gen
		// reads it in its GetTargets.
		schemaPath = filepath.Join(tmp, "openapi-schema.json")
		schemaAction = func(ctx context.Context) error {
			return modelsSchema(ctx, in, root, filepath.Join(tmp, "models-schema"), schemaPath)
		}
	}

	steps, err := in.steps(ctx, schemaPath, schemaAction)
	if err != nil {
		return nil, stats, err
	}

	// One load, one universe; every generator gets a shallow copy of the
	// context with its own name systems, order, inputs and file types. All
	// copies are made before any generator runs, so no generator's order
	// sees types another one may have added to the shared universe.
	contexts := make([]*generator.Context, len(steps))
	if !opts.loadPerStep {
		t0 := time.Now()
		base, err := load(in)
		if err != nil {
			return nil, stats, err
		}
		for i, st := range steps {
			if st.action == nil {
				contexts[i] = st.context(base)
			}
		}
		stats.Load = time.Since(t0)
	}

	goFile := newStagedGoFile(root)
	for i, st := range steps {
		if err := ctx.Err(); err != nil {
			return nil, stats, err
		}
		t0 := time.Now()
		if st.action != nil {
			if err := st.action(ctx); err != nil {
				return nil, stats, err
			}
			stats.Steps = append(stats.Steps, StepStat{Tool: st.tool, Duration: time.Since(t0)})
			continue
		}
		c := contexts[i]
		if opts.loadPerStep {
			base, err := load(in)
			if err != nil {
				return nil, stats, err
			}
			c = st.context(base)
		}
		goFile.tool = st.tool
		c.FileTypes = map[string]generator.FileType{generator.GoFileType: goFile}

		var targets []generator.Target
		if err := guard(st.tool, "GetTargets", func() (err error) {
			targets, err = st.targets(c)
			return err
		}); err != nil {
			return nil, stats, err
		}
		// openapi-gen registers its own file type for the API violation
		// report (stdout or a file); send the report to a writer instead.
		for name := range c.FileTypes {
			if name != generator.GoFileType {
				c.FileTypes[name] = reportFile{w: in.violationReport()}
			}
		}
		staged, err := stage(targets, in.ModuleDir, root, st.tool, in.Header)
		if err != nil {
			return nil, stats, fmt.Errorf("codegen: %w", err)
		}
		if err := guard(st.tool, "ExecuteTargets", func() error { return c.ExecuteTargets(staged) }); err != nil {
			return nil, stats, err
		}
		stats.Steps = append(stats.Steps, StepStat{Tool: st.tool, Duration: time.Since(t0)})
	}

	files, err = readBack(root)
	if err != nil {
		return nil, stats, err
	}
	if files, err = patchOpenAPI(files, in); err != nil {
		return nil, stats, err
	}
	stats.Total = time.Since(start)
	return files, stats, nil
}

// load runs the one gengo package load: the types packages plus the extra
// openapi packages, with the ignore_autogenerated build tag, from ModuleDir.
// It then builds the universe, injects the tags and checks the result.
func load(in Input) (*generator.Context, error) {
	var c *generator.Context
	err := guard("gengo", "load", func() error {
		p := parser.NewWithOptions(parser.Options{BuildTags: []string{gengo.StdBuildTag}})
		// LoadPackagesWithConfigForTesting is the only entry point that takes
		// a directory (it honours Dir and Env only); the others resolve
		// patterns against the process working directory.
		cfg := &packages.Config{Dir: in.ModuleDir, Env: goEnv(in.ModuleDir)}
		if err := p.LoadPackagesWithConfigForTesting(cfg, in.loadPatterns()...); err != nil {
			return fmt.Errorf("codegen: loading packages: %w", err)
		}
		var err error
		if c, err = generator.NewContext(p, nil, ""); err != nil {
			return fmt.Errorf("codegen: building the gengo universe: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	injectTags(c.Universe, in)
	injectValidation(c.Universe, in)
	injectReferenced(c.Universe, in)
	hideShadowed(c.Universe, in) // last: it copies structs the injections above tag
	if err := checkUniverse(c.Universe, in); err != nil {
		return nil, fmt.Errorf("codegen: %w", err)
	}
	return c, nil
}

// context derives a generator context from the shared one, the way
// generator.NewContext would build it for this step's name systems.
func (st step) context(base *generator.Context) *generator.Context {
	c := *base // shares Universe and the (unexported) parser
	c.Namers = maps.Clone(st.nameSystems)
	c.Inputs = slices.Clone(st.inputs)
	c.Order = nil
	if n, ok := st.nameSystems[st.defaultSystem]; ok {
		orderer := namer.Orderer{Namer: n}
		c.Order = orderer.OrderUniverse(c.Universe)
	}
	c.FileTypes = nil // set per run
	return &c
}

func (in Input) typesPackages() []string {
	var out []string
	for _, p := range in.Packages {
		out = append(out, p.ImportPath)
	}
	return out // sorted by complete
}

// externalPackages are the types packages other than internal ones: those
// openapi-gen describes.
func (in Input) externalPackages() []string {
	var out []string
	for _, p := range in.Packages {
		if !p.Internal {
			out = append(out, p.ImportPath)
		}
	}
	return out
}

// servedPackages are the types packages that serve a kind: the inputs of the
// client, lister, informer and apply configuration generators.
func (in Input) servedPackages() []string {
	var out []string
	for _, p := range in.Packages {
		if p.served() {
			out = append(out, p.ImportPath)
		}
	}
	return out
}

// conversionPackages are the types packages that convert to a storage version.
func (in Input) conversionPackages() []string {
	var out []string
	for _, p := range in.Packages {
		if p.ConvertTo != "" {
			out = append(out, p.ImportPath)
		}
	}
	return out
}

func (in Input) loadPatterns() []string {
	pats := slices.Concat(in.typesPackages(), openAPIExtraPackages, in.ExtraOpenAPIPackages, in.referencedPackages())
	if len(in.conversionPackages()) > 0 {
		// conversion-gen's peer packages, loaded here so that its own FindPackages and
		// LoadPackages find them in the one load instead of resolving them from the
		// process's working directory.
		pats = append(pats, conversionPeerPackages...)
	}
	return pats
}

// conversionPeerPackages are conversion-gen's default base peer directories.
var conversionPeerPackages = []string{"k8s.io/apimachinery/pkg/conversion"}

func (in Input) violationReport() io.Writer {
	if in.ViolationReport == nil {
		return io.Discard
	}
	return in.ViolationReport
}

// steps configures the six generators like kube_codegen.sh does, but through
// their args structs instead of flags. No GoHeaderFile is set, so
// gengo.GoBoilerplate never reads a file (no klog.Fatal there); the license
// header is added by stagedTarget. schemaPath, if not empty, is the
// --openapi-schema of applyconfiguration-gen; schema, if not nil, writes it
// and runs as the models-schema step, after the openapi steps (whose output
// it compiles) and before applyconfiguration-gen.
func (in Input) steps(ctx context.Context, schemaPath string, schema func(context.Context) error) ([]step, error) {
	types := in.typesPackages()
	external := in.externalPackages()
	served := in.servedPackages()
	all := slices.Concat(external, openAPIExtraPackages, in.ExtraOpenAPIPackages, in.referencedPackages())
	slices.Sort(all)
	out := in.OutputPkg
	applyPkg := path.Join(out, applyConfigDirName)

	da := deepcopyargs.New()
	da.OutputFile = deepcopyFileName

	oa := openapiargs.New()
	oa.OutputPkg = path.Join(out, "openapi")
	oa.OutputDir = in.dirOf(oa.OutputPkg)
	oa.OutputFile = openAPIFileName
	oa.OutputModelNameFile = modelNameFileName
	openAPIHeader, err := gengo.GoBoilerplate("", gengo.StdBuildTag, gengo.StdGeneratedBy)
	if err != nil {
		return nil, err
	}

	aa := acargs.New()
	aa.OutputPkg = applyPkg
	aa.OutputDir = in.dirOf(aa.OutputPkg)
	aa.OpenAPISchemaFilePath = schemaPath

	ca := clientargs.New()
	ca.OutputPkg = path.Join(out, "clientset")
	ca.OutputDir = in.dirOf(ca.OutputPkg)
	ca.ClientsetName = clientsetName
	ca.Groups = in.clientGroups()
	ca.ApplyConfigurationPackage = applyPkg
	plurals := in.pluralExceptions()
	ca.PluralExceptions = plurals
	ca.PrefersProtobuf = in.PrefersProtobuf

	la := listerargs.New()
	la.OutputPkg = path.Join(out, "listers")
	la.OutputDir = in.dirOf(la.OutputPkg)
	la.PluralExceptions = plurals

	ia := informerargs.New()
	ia.OutputPkg = path.Join(out, "informers")
	ia.OutputDir = in.dirOf(ia.OutputPkg)
	ia.VersionedClientSetPackage = path.Join(out, "clientset", clientsetName)
	ia.ListersPackage = la.OutputPkg
	ia.PluralExceptions = plurals

	cva := conversionargs.New()
	cva.OutputFile = conversionFileName
	converted := in.conversionPackages()

	dfa := defaulterargs.New()
	dfa.OutputFile = defaultsFileName
	defaulted := in.defaulterPackages()

	for tool, v := range map[string]interface{ Validate() error }{
		toolDeepcopy: da, toolDefaulter: dfa, toolOpenAPI: oa, toolApplyConfig: aa, toolClient: ca, toolLister: la, toolInformer: ia, toolConversion: cva,
	} {
		if err := v.Validate(); err != nil {
			return nil, fmt.Errorf("codegen: %s arguments: %w", tool, err)
		}
	}
	// Plural exceptions are empty: nothing for PluralExceptionListToMapOrDie to die on.
	steps := []step{
		{
			tool: toolDeepcopy, nameSystems: deepcopygen.NameSystems(), defaultSystem: deepcopygen.DefaultNameSystem(),
			inputs:  types,
			targets: func(c *generator.Context) ([]generator.Target, error) { return deepcopygen.GetTargets(c, da), nil },
		},
		{
			tool: toolDefaulter, nameSystems: defaultergen.NameSystems(), defaultSystem: defaultergen.DefaultNameSystem(),
			when:    "a types package has defaults (+kubebuilder:default, +default)",
			applies: len(defaulted) > 0,
			inputs:  defaulted,
			targets: func(c *generator.Context) ([]generator.Target, error) { return defaultergen.GetTargets(c, dfa), nil },
		},
		{
			// OpenAPIModelName methods, so that the scheme and the definitions
			// agree on REST-friendly names (and kinds get their GVK extension).
			tool: toolOpenAPI, nameSystems: openapigen.NameSystems(), defaultSystem: openapigen.DefaultNameSystem(),
			inputs: external,
			targets: func(c *generator.Context) ([]generator.Target, error) {
				// and the referenced packages of the module that get a model package injected
				c.Inputs = slices.Concat(c.Inputs, in.modulePackages(c.Universe))
				return openapigen.GetModelNameTargets(c, oa, openAPIHeader), nil
			},
		},
		{
			tool: toolOpenAPI, nameSystems: openapigen.NameSystems(), defaultSystem: openapigen.DefaultNameSystem(),
			inputs: all,
			targets: func(c *generator.Context) ([]generator.Target, error) {
				return openapigen.GetOpenAPITargets(c, oa, openAPIHeader), nil
			},
		},
		{
			tool: toolModelsSchema, action: schema,
			when:    "the caller compiles the OpenAPI schema that apply configurations need",
			applies: schema != nil,
		},
		{
			tool: toolApplyConfig, nameSystems: acgen.NameSystems(), defaultSystem: acgen.DefaultNameSystem(),
			inputs: served,
			targets: func(c *generator.Context) ([]generator.Target, error) {
				ext, err := externalApplyConfigurations(ctx, in, c.Universe)
				if err != nil {
					return nil, err
				}
				maps.Copy(aa.ExternalApplyConfigurations, ext)
				return acgen.GetTargets(c, aa), nil
			},
		},
		{
			tool: toolClient, nameSystems: clientgen.NameSystems(genutil.PluralExceptionListToMapOrDie(ca.PluralExceptions)),
			defaultSystem: clientgen.DefaultNameSystem(),
			inputs:        served,
			targets:       func(c *generator.Context) ([]generator.Target, error) { return clientgen.GetTargets(c, ca), nil },
		},
		{
			tool: toolLister, nameSystems: listergen.NameSystems(genutil.PluralExceptionListToMapOrDie(la.PluralExceptions)),
			defaultSystem: listergen.DefaultNameSystem(),
			inputs:        served,
			targets:       func(c *generator.Context) ([]generator.Target, error) { return listergen.GetTargets(c, la), nil },
		},
		{
			tool: toolInformer, nameSystems: informergen.NameSystems(genutil.PluralExceptionListToMapOrDie(ia.PluralExceptions)),
			defaultSystem: informergen.DefaultNameSystem(),
			inputs:        served,
			targets:       func(c *generator.Context) ([]generator.Target, error) { return informergen.GetTargets(c, ia), nil },
		},
		{
			// Conversions between each non-storage version and its storage version
			// (+k8s:conversion-gen injected). Last: the models-schema step compiles the
			// types packages with what is staged so far, and the conversions need
			// zz_generated.register.go (localSchemeBuilder), which aagen emits later, and
			// may call functions the user has yet to write.
			tool: toolConversion, nameSystems: conversiongen.NameSystems(), defaultSystem: conversiongen.DefaultNameSystem(),
			when:    "a kind is served in a version other than its storage version",
			applies: len(converted) > 0,
			inputs:  converted,
			targets: func(c *generator.Context) ([]generator.Target, error) { return conversiongen.GetTargets(c, cva), nil },
		},
	}
	return slices.DeleteFunc(steps, func(st step) bool { return st.when != "" && !st.applies }), nil
}

// clientGroups builds client-gen's Groups the way its --input-base/--input
// flags would (one entry per group package name, sorted, versions in input
// order), but with the real group name, which client-gen would otherwise take
// from the +groupName we inject anyway.
func (in Input) clientGroups() []clientgentypes.GroupVersions {
	var groups []clientgentypes.GroupVersions
	idx := map[string]int{}
	pkgs := slices.Clone(in.Packages)
	slices.SortStableFunc(pkgs, func(a, b Package) int { return strings.Compare(a.GroupPackageName, b.GroupPackageName) })
	for _, p := range pkgs {
		if !p.served() {
			continue
		}
		i, ok := idx[p.GroupPackageName]
		if !ok {
			i = len(groups)
			idx[p.GroupPackageName] = i
			groups = append(groups, clientgentypes.GroupVersions{
				PackageName: p.GroupPackageName,
				Group:       clientgentypes.Group(p.Group),
			})
		}
		groups[i].Versions = append(groups[i].Versions, clientgentypes.PackageVersion{
			Version: clientgentypes.Version(p.Version),
			Package: p.ImportPath,
		})
	}
	return groups
}

// goEnv is the process environment with the -mod flag pinned so that go list
// never rewrites the user's go.mod or go.sum: -mod=mod (from the environment
// or from go env -w) is replaced by the go command's own default.
func goEnv(moduleDir string) []string {
	var flags []string
	hasMod := false
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if strings.HasPrefix(strings.TrimLeft(f, "-"), "mod=") {
			if strings.TrimLeft(f, "-") == "mod=mod" {
				continue
			}
			hasMod = true
		}
		flags = append(flags, f)
	}
	if !hasMod {
		mode := "-mod=readonly"
		if _, err := os.Stat(filepath.Join(moduleDir, "vendor", "modules.txt")); err == nil {
			mode = "-mod=vendor"
		}
		flags = append(flags, mode)
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOFLAGS=") })
	return append(env, "GOFLAGS="+strings.Join(flags, " "))
}

// klog.Fatal inside code-generator would end the process. While Run runs,
// klog.OsExit panics with fatalExit instead, and guard turns that (and any
// other panic, e.g. from MustParseClientGenTags) into an error.
var runMu sync.Mutex

type fatalExit int

// klogged holds what code-generator logged through klog during the current Run (under
// runMu): its chatter (conversion-gen reports every non-conversion function of a package as
// "Malformed function") stays out of the user's terminal, and a klog.Fatal's reason goes
// into the error instead.
var klogged bytes.Buffer

func trapFatal() (restore func()) {
	prev := klog.OsExit
	klog.OsExit = func(code int) { panic(fatalExit(code)) }
	klogged.Reset()
	// klog's flags are its only way to keep every severity off stderr (4 is above FATAL).
	flags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(flags)
	_ = flags.Set("stderrthreshold", "4")
	klog.LogToStderr(false)
	klog.SetOutput(&klogged)
	return func() {
		klog.Flush()
		klog.OsExit = prev
		klog.SetOutput(os.Stderr)
		_ = flags.Set("stderrthreshold", "ERROR")
		klog.LogToStderr(true)
	}
}

// fatalReason is the last FATAL line klog logged, without its header.
func fatalReason() string {
	klog.Flush()
	var reason string
	for _, line := range strings.Split(klogged.String(), "\n") {
		if strings.HasPrefix(line, "F") {
			if _, msg, ok := strings.Cut(line, "] "); ok {
				reason = msg
			}
		}
	}
	if reason == "" {
		return "no reason logged"
	}
	return reason
}

func guard(tool, phase string, fn func() error) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if code, ok := r.(fatalExit); ok {
			err = fmt.Errorf("codegen: %s %s: %s (klog.Fatal, exit status %d, instead of an error)", tool, phase, fatalReason(), int(code))
			return
		}
		err = fmt.Errorf("codegen: %s %s: panic: %v", tool, phase, r)
	}()
	return fn()
}

// pluralExceptions lists "Kind:Plural" for every kind, so that the generators
// use the kind's resource name. gengo's namers return an exception as given,
// with only its first letter changed (DockOccupancies() in the clientset,
// dockoccupancies in URLs), so the plural carries the kind's capitals: see
// camelPlural.
func (in Input) pluralExceptions() []string {
	var out []string
	for _, p := range in.Packages {
		for _, k := range p.Kinds {
			if k.Plural != "" {
				out = append(out, k.Name+":"+camelPlural(k.Name, k.Plural))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// camelPlural spells the lower-case resource name plural with the capitals of
// kind where the two agree letter for letter: DockOccupancy and
// dockoccupancies give DockOccupancies.
func camelPlural(kind, plural string) string {
	n := 0
	for n < len(kind) && n < len(plural) && strings.EqualFold(kind[n:n+1], plural[n:n+1]) {
		n++
	}
	return kind[:n] + plural[n:]
}
