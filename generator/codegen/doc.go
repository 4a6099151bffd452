// Package codegen runs k8s.io/code-generator's deepcopy-gen, client-gen,
// lister-gen, informer-gen and applyconfiguration-gen, and kube-openapi's
// openapi-gen, in-process as libraries, and returns their output in memory.
//
// # Pipeline
//
//  1. Validate the Input (Input.complete). Everything that would otherwise
//     reach a klog.Fatal or a panic in code-generator and that the Input can
//     express is rejected here or in step 3, with an error.
//  2. Load once. One gengo parser.Parser loads the types packages plus
//     k8s.io/apimachinery meta/v1, runtime, version, api/resource,
//     util/intstr and Input.ExtraOpenAPIPackages (the openapi extras), and
//     the packages of Input.ReferencedTypes, in a
//     single LoadPackagesWithConfigForTesting call (two `go list` runs inside
//     go/packages: one to resolve the patterns, one to load), then
//     generator.NewContext builds the one universe.
//  3. Inject tags into that universe in memory (see "Tags"), then check it.
//  4. For each generator, in the order deepcopy, openapi (model names, then
//     definitions), models-schema (not a generator, see "Apply schema"),
//     applyconfiguration, client, lister, informer: derive a context from
//     the shared one (a shallow copy with the generator's name systems,
//     canonical order, inputs and file types: what generator.NewContext
//     would build), call its GetTargets with an args struct filled in code
//     (the flags kube_codegen.sh passes), wrap the targets and
//     ExecuteTargets.
//  5. Read the staging tree back into []File, sorted, and delete it.
//
// # One load
//
// A parser cannot build a second universe: parser.NewUniverse skips packages
// it has already processed (Parser.fullyProcessed), so a second
// generator.NewContext on the same parser yields an empty universe. So Run
// calls NewContext once and copies the Context struct for each generator
// (copying keeps the unexported parser, which deepcopy-gen's
// Context.LoadPackages needs). All copies, including each canonical Order,
// are made before the first generator runs. The generators then share one
// Universe map; as far as their source shows they only read it, or add
// entries through the get-or-create lookups Universe.Package and Type. A test (loadPerStep) checks that the
// output is byte-identical to running each generator on its own fresh load,
// the way the standalone tools do. The openapi extras are loaded for every
// generator (they are dependencies of the types packages anyway, except
// autoscaling/v1), but only openapi-gen sees them in Context.Inputs.
//
// # Tags
//
// gengo stores tags as comment lines without the "//". Package tags are read
// from types.Package.Comments: the comments of the package's doc.go only
// (none without a doc.go). Type tags are read from types.Type.CommentLines
// (the doc comment) and, by deepcopy-gen and the client generators, also
// from SecondClosestCommentLines (a comment block separated from the doc
// comment by one blank line); openapi-gen reads only CommentLines.
// Run rewrites, for each types package:
//
//   - Package.Comments (and DocComments, gengo's announced successor): drops
//     user lines for +k8s:deepcopy-gen, +k8s:openapi-gen, +groupName and the
//     client generators' activation tags (+k8s:client-gen etc.), then appends
//     +k8s:deepcopy-gen=package, +k8s:openapi-gen=true, +groupName=<Group>.
//   - Each Kind and its List type: drops type-level +k8s:deepcopy-gen and
//     +k8s:openapi-gen (opt-outs), appends
//     +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
//     unless an interfaces tag already lists it.
//   - Each Kind: drops +genclient, +genclient:nonNamespaced,
//     +genclient:noStatus from both comment fields and appends +genclient,
//     plus +genclient:nonNamespaced if cluster-scoped and +genclient:noStatus
//     if the status subresource is not served. Other +genclient:* tags
//     (method, skipVerbs, ...) are kept.
//   - Every other type: drops all +genclient and +genclient:* tags.
//
// Additions go at the end of CommentLines; openapi-gen skips "+" lines when
// it turns comments into descriptions. Dropping then appending makes the
// rewrite idempotent: a tag the user already wrote is not duplicated.
// +groupGoName is left alone; if present it renames the client's group
// methods.
//
// # Validation
//
// Input.Validation carries the caller's validation and default markers, for the
// types packages and the referenced packages alike, as the tags of the tools
// that implement them (see schematags.go): on struct
// types and fields, kube-openapi's +k8s:validation:<name>=<JSON> tags
// (minimum, maxLength, pattern, cel[i]:rule, ...), and on fields +default,
// +required and +optional (replacing the user's own lines of these three, so
// no tag is doubled). openapi-gen turns them into the definitions; with
// Package.Defaults, +k8s:defaulter-gen=TypeMeta is added to the package
// and defaulter-gen runs after deepcopy-gen, writing zz_generated.defaults.go
// (RegisterDefaults and SetObjectDefaults_<Kind>). openapi-gen at the pinned
// version parses +k8s:validation:enum and :format but never writes them, so
// after the last step patchOpenAPI sets Enum and Format in the property
// schemas of zz_generated.openapi.go (found through GetOpenAPIDefinitions'
// keys), appends DocumentedEnums (the properties whose enum is a +enum
// type's constants without +kubebuilder:validation:Enum: published, not
// checked by the server) and formats the file again. The apply schema of the models-schema
// step is computed before that patch; it has no use for either.
//
// # Stale generated files and packages that do not compile yet
//
// The load uses the build tag ignore_autogenerated (gengo.StdBuildTag, what
// gengo.Execute uses too), so files with //go:build !ignore_autogenerated
// (every deepcopy and openapi file these tools write, and controller-gen's)
// are left out, whatever they contain. gengo's parser fails only on list and
// parse errors; type errors are ignored, so a types package whose register.go
// needs the not yet generated DeepCopyObject loads fine. A stale generated
// file without that build tag is still loaded, and if it defines DeepCopy
// methods deepcopy-gen will not generate them again. The go command runs
// with -mod=readonly (or -mod=vendor) even if GOFLAGS says -mod=mod, so
// loading never rewrites go.mod or go.sum.
//
// # Staging
//
// Targets point into ModuleDir (deepcopy writes next to the types, the
// others under OutputPkg). stagedTarget wraps each generator.Target and
// re-roots Dir() to the same relative path under a temporary directory;
// a target outside ModuleDir is an error. The Go file type of every context
// is replaced by one that refuses paths outside the staging root and a
// second write to the same path. The temporary directory is removed on every
// return, so nothing is left behind on errors either. Generators still read
// (never write) the real tree for hand-written extensions: client-gen and
// lister-gen look for <type>_expansion.go, client-gen for
// scheme/register_custom.go, in their real output directories.
//
// # Headers and formatting
//
// No --go-header-file is passed (so YEAR is never substituted and
// GoBoilerplate never reads a file). stagedTarget.Header replaces gengo's
// "// Code generated by <filepath.Base(os.Args[0])>. DO NOT EDIT." with
// "// Code generated by <tool> via aagen. DO NOT EDIT." and puts
// Input.Header before it (after the //go:build lines of deepcopy and
// openapi files). Files are formatted in-process with goimports' formatter
// and go/format, never with a gofmt binary from PATH (gengo's default), so
// the output is byte-identical across runs and machines.
//
// # Generator arguments
//
// client-gen: clientset "versioned", Groups built directly (one entry per
// group package name with the real group; its own group override then finds
// the same +groupName), apply configurations wired with
// ApplyConfigurationPackage. informer-gen gets the versioned clientset and
// listers packages. openapi-gen's API rule violation report goes to
// Input.ViolationReport or is discarded; violations never fail Run, but
// errors from its rules and generators do. applyconfiguration-gen gets
// --openapi-schema from Input.OpenAPISchema if given, else from the
// models-schema step, unless Input.SkipApplySchema.
//
// # Apply schema
//
// applyconfiguration-gen turns a Swagger 2.0 document of the served kinds
// into the structured-merge-diff schema of applyconfiguration/internal, which
// Extract<Kind> functions and the fake clientset's NewClientset (its type
// converter) need; without one, the fake clientset fails with "no type found
// matching". That document comes from the generated openapi code, which must
// be compiled and run: upstream projects keep a
// pkg/generated/openapi/cmd/models-schema program for it. The models-schema
// step runs the equivalent (k8s.io/kube-aggregator's program with our import
// path, so the same JSON) after deepcopy and openapi have written their
// files, still in the same Run and on the same load:
//
//	go run -mod=mod -modfile=<tmp>/go.mod -overlay=<tmp>/overlay.json -buildvcs=false ./<openapi dir>/zz_aagen_models_schema
//
// in ModuleDir, with GOWORK=off (-modfile is refused in workspace mode) and
// GOFLAGS without -mod, -modfile or -overlay. The overlay maps every file
// staged so far (zz_generated.deepcopy.go and zz_generated.model_name.go in
// the types packages, which need them to compile, and
// zz_generated.openapi.go) to its place in ModuleDir, puts the program's
// main.go in a directory that exists only in the overlay (below the openapi
// package, so an internal element in OutputPkg does not matter), and
// deletes, in the directories it writes to, the files the load left out
// because of the ignore_autogenerated tag (stale generated files under other
// names), so the compiler sees what the generators saw plus what they wrote.
// <tmp>/go.mod and go.sum are copies of the module's: a fresh module requires
// k8s.io/kube-openapi only indirectly and lacks the requirements and
// checksums of the modules that its pkg/common and pkg/validation/spec
// import, and -mod=mod adds them to the copies (from the module cache, or
// the proxy and checksum database), never to the user's files. A vendor
// directory is not used. Nothing is written into ModuleDir.
//
// The program's stdout is the document; it must parse and have definitions.
// Failures (including a types package that does not compile) are errors
// quoting the first 4 KB of the go command's output, with staging paths
// shown as module paths, and a hint. A definition that a served kind
// references but that is missing (a type from a package that is not an
// openapi input, which openapi-gen refers to by its Go name) is reported by
// name instead of applyconfiguration-gen's panic. The types packages reach
// such types only through Input.ReferencedTypes, which openapi-gen defines
// (see referenced.go), unless one opts out with +k8s:openapi-gen=false.
//
// The cost is one go command. With a warm build cache it is about 0.15s
// when the compiled inputs are unchanged (go run caches the executable; the
// cache key includes ModuleDir but not the staging paths) and about 1s when
// the types changed (compile the types and openapi packages, link). With a
// cold build cache it is about 10s (kube-openapi, apimachinery and their
// dependencies), plus downloads if the module cache lacks them.
// Input.SkipApplySchema skips the step. Stats reports it as the step
// "models-schema".
//
// # klog.Fatal
//
// code-generator calls klog.Fatal (and panics) on bad input. Run validates
// what the Input and the loaded packages can get wrong first. As a last
// resort, while Run runs it sets klog.OsExit to a function that panics, and
// recovers that (and any panic) into an error; runs are serialised by a
// mutex because klog.OsExit is process-global. klog still prints the fatal
// message (and, if not logging to stderr, a stack trace) before the error is
// returned; another goroutine calling klog.Fatal during a Run panics instead
// of exiting. Inputs known to still reach klog.Fatal, now as errors:
//
//   - fields deepcopy-gen cannot copy (func, chan, interface{} or other
//     unnamed interface types) or user DeepCopy/DeepCopyInto methods with a
//     wrong signature;
//   - an Input.OpenAPISchema that does not parse or lacks a referenced
//     definition (applyconfiguration-gen). The models-schema step checks
//     its own output for both.
package codegen
