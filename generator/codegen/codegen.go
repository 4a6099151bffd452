package codegen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aagen-dev/aagen/generator/layout"
)

// Kind is one kind of a types package: served, or unserved (a version that only
// converts, or an internal package's hub).
type Kind struct {
	// Name is the Go type name, e.g. "Widget". Its list type is Name+"List".
	Name string
	// NamespaceScoped is false for cluster-scoped kinds; they get
	// +genclient:nonNamespaced.
	NamespaceScoped bool
	// HasStatus says the status subresource is served: the client gets
	// UpdateStatus/ApplyStatus. Otherwise +genclient:noStatus is injected.
	HasStatus bool
	// Plural is the resource name, e.g. "widgets". Empty means the plural
	// code-generator derives from Name; another value becomes a plural
	// exception for client-gen, lister-gen and informer-gen.
	Plural string
	// ResourceName is the resource name in URLs and GroupVersionResources when it is not
	// Plural (client-gen's +resourceName, injected on the kind): the clients' Go names
	// then follow Plural and the requests this name. Empty means Plural.
	ResourceName string
	// Unserved kinds (+kubebuilder:unservedversion) get deepcopy, OpenAPI and
	// conversions but no client, lister, informer or apply configuration.
	Unserved bool
	// ClientMethods are extra client methods, each the value of a client-gen
	// +genclient:method tag injected on the kind (the imperative subresources).
	ClientMethods []string
}

// Package is one group-version types package.
type Package struct {
	ImportPath string // e.g. example.com/foo/pkg/apis/shop/v1
	Dir        string // absolute directory of ImportPath
	Group      string // e.g. shop.example.com (the +groupName)
	// GroupPackageName is the parent directory name, e.g. "shop". client-gen
	// uses it for its layout, lister-gen, informer-gen and
	// applyconfiguration-gen take it from the import path, so the two must agree.
	GroupPackageName string
	// GroupGoName is the group's name in the Go identifiers of the generated clients
	// (CertManagerV1() for cert-manager.io), injected as +groupGoName; empty means
	// client-gen's default, the group's first label capitalized, which must then be a Go
	// identifier.
	GroupGoName string
	Version     string // e.g. v1; must be the last element of ImportPath
	// Internal marks the group's internal (unversioned) package, as in
	// k8s.io/sample-apiserver: Version is empty, its types are a hub other
	// packages convert to (ConvertTo), and it gets deepcopy only (no OpenAPI,
	// no clients: it is never served nor serialized).
	Internal bool
	Kinds    []Kind
	// ConvertTo is the import path of the storage (hub) version package this
	// package's kinds convert to, or empty. conversion-gen then writes
	// zz_generated.conversion.go here (+k8s:conversion-gen=<ConvertTo> is
	// injected), converting in both directions between the types of the same
	// name; ConvertTo must be one of Packages.
	ConvertTo string
	// SelfConverted are types of the package conversion-gen leaves alone
	// (+k8s:conversion-gen=false is injected): kinds that convert themselves to and from
	// their hub (controller-runtime's ConvertTo and ConvertFrom), their lists, and the
	// types only they reach.
	SelfConverted []string
	// Defaults runs defaulter-gen for the package (a field of a type it declares or
	// reaches has a +default tag, or it declares SetDefaults_ functions): it writes
	// zz_generated.defaults.go with RegisterDefaults.
	Defaults bool
	// Objects are types other than kinds and lists that are runtime.Objects
	// (bodies and answers of subresources): deepcopy-gen writes DeepCopyObject
	// for them.
	Objects []string
}

// served reports whether p serves at least one kind (and so gets clients).
func (p Package) served() bool {
	return !p.Internal && slices.ContainsFunc(p.Kinds, func(k Kind) bool { return !k.Unserved })
}

// Input is everything Run needs. Nothing else (no tags in the user's files
// besides what is described in doc.go, no flags, no os.Args) changes the output.
type Input struct {
	ModuleDir  string // absolute path of the user's module root (contains go.mod)
	ModulePath string // module path
	Packages   []Package
	// OutputPkg is the import path root for clients and openapi.
	// Default ModulePath+"/pkg/generated". It must lie inside the module.
	OutputPkg string
	// Header is license boilerplate put at the top of every file (may be
	// empty). It must consist of Go comments only. It is copied verbatim: YEAR
	// is not replaced.
	Header []byte

	// ViolationReport, if set, receives openapi-gen's API rule violation
	// report ("API rule violation: rule,package,type,field" lines). Violations
	// never fail Run. Nil discards the report.
	ViolationReport io.Writer
	// OpenAPISchema optionally holds a Swagger 2.0 JSON document with the
	// definitions of the served kinds (as produced by a models-schema program
	// that imports the generated openapi package). It is passed to
	// applyconfiguration-gen as --openapi-schema, which then embeds the
	// structured-merge-diff schema in applyconfiguration/internal and
	// generates Extract functions. Empty: Run computes the document itself
	// in the models-schema step (see doc.go, "Apply schema"), unless
	// SkipApplySchema is set. A non-empty OpenAPISchema wins over both.
	OpenAPISchema []byte
	// SkipApplySchema skips the models-schema step: applyconfiguration/internal
	// then holds an empty schema, there are no Extract<Kind> functions, and
	// the fake clientset's NewClientset fails on the served kinds ("no type
	// found matching"). The step runs the go command (`go run` of a small
	// program that imports the generated openapi package): with a warm build
	// cache about 0.15s if nothing changed and 1s if the types did, about
	// 10s with a cold one, and it may download modules. Meant for tests and
	// callers that only need the other files quickly.
	SkipApplySchema bool
	// ExtraOpenAPIPackages are further packages whose types openapi-gen
	// defines, e.g. k8s.io/api/autoscaling/v1 for a /scale subresource. The
	// user's module must require their modules.
	ExtraOpenAPIPackages []string
	// ReferencedTypes are the types declared outside the types packages that their
	// types reach, directly or not, as fully qualified names
	// ("k8s.io/api/core/v1.PodTemplateSpec"; the generator takes them from
	// load.ReferencedTypes). Their packages are loaded too, openapi-gen defines these
	// types, and those of k8s.io/api use k8s.io/client-go's apply configurations
	// (see referenced.go). Types of the openapi extras may be listed; they change nothing.
	ReferencedTypes []string
	// Validation holds the validation and default tags of struct types by the import path
	// of their package: the types packages' and the referenced packages' alike (see
	// schematags.go). Types and packages missing from the universe are skipped.
	Validation map[string][]TypeValidation
	// PrefersProtobuf makes the generated clientset (and so the informers, which list
	// and watch through it) ask for protobuf with a JSON fallback, as Kubernetes' own
	// components do: client-gen's --prefers-protobuf. Each request then sends
	// "Accept: application/vnd.kubernetes.protobuf,application/json" and encodes its body in
	// protobuf, unless the rest.Config names a ContentType or AcceptContentTypes. Set it only
	// when every served type has the protobuf methods (zz_generated.protobuf.go): the client
	// encodes request bodies with them.
	PrefersProtobuf bool
}

// File is a generated file.
type File struct {
	Path    string // relative to Input.ModuleDir, slash-separated
	Content []byte // final, gofmt'ed
}

// Stats describes one Run, for logging and benchmarks.
type Stats struct {
	Load  time.Duration // the single gengo package load, universe and tag injection
	Steps []StepStat    // one per step, in execution order
	Total time.Duration
}

// StepStat is the time one generator took (GetTargets and ExecuteTargets),
// or the models-schema step (Tool "models-schema": building and running the
// program that prints the apply schema).
type StepStat struct {
	Tool     string
	Duration time.Duration
}

// Run generates, for the types packages of in:
//
//   - zz_generated.deepcopy.go in each types package,
//   - <OutputPkg>/openapi/zz_generated.openapi.go (GetOpenAPIDefinitions for
//     the types packages and k8s.io/apimachinery meta/v1, runtime, version,
//     api/resource, util/intstr and Input.ExtraOpenAPIPackages),
//   - <OutputPkg>/clientset/versioned (with fake),
//   - <OutputPkg>/listers,
//   - <OutputPkg>/informers/externalversions,
//   - <OutputPkg>/applyconfiguration, with the structured-merge-diff schema
//     of the generated openapi definitions and Extract functions (see
//     doc.go, "Apply schema").
//
// It returns the files sorted by path and writes nothing under ModuleDir.
// Runs are serialised within a process (see doc.go, "klog.Fatal"). ctx is
// checked before the load and between steps, and cancelling it kills the go
// command of the models-schema step; neither the load nor a running
// generator can be interrupted.
func Run(ctx context.Context, in Input) ([]File, error) {
	files, _, err := run(ctx, in, runOptions{})
	return files, err
}

// RunWithStats is Run that also reports where the time went.
func RunWithStats(ctx context.Context, in Input) ([]File, Stats, error) {
	return run(ctx, in, runOptions{})
}

// Tools that write files, as named in the "Code generated by" line.
const (
	toolDeepcopy       = "deepcopy-gen"
	toolOpenAPI        = "openapi-gen"
	toolApplyConfig    = "applyconfiguration-gen"
	toolClient         = "client-gen"
	toolLister         = "lister-gen"
	toolInformer       = "informer-gen"
	toolConversion     = "conversion-gen"
	conversionFileName = "zz_generated.conversion.go"
	deepcopyFileName   = "zz_generated.deepcopy.go"
	modelNameFileName  = "zz_generated.model_name.go"
	openAPIFileName    = "zz_generated.openapi.go"
	clientsetName      = "versioned"
	applyConfigDirName = "applyconfiguration"
)

// openAPIExtraPackages are loaded and fed to openapi-gen besides the types
// packages: what kube_codegen.sh's gen_openapi always adds, plus intstr.
// Only k8s.io/apimachinery, which every types package requires, is needed.
var openAPIExtraPackages = []string{
	"k8s.io/apimachinery/pkg/apis/meta/v1",
	"k8s.io/apimachinery/pkg/runtime",
	"k8s.io/apimachinery/pkg/version",
	"k8s.io/apimachinery/pkg/api/resource",
	"k8s.io/apimachinery/pkg/util/intstr",
}

var (
	// A DNS subdomain whose first label is a lower-case Go identifier:
	// client-gen turns the first label into Go names (ShopV1()).
	groupRE   = regexp.MustCompile(`^[a-z][a-z0-9]*(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	versionRE = regexp.MustCompile(`^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$`)
	pkgNameRE = regexp.MustCompile(`^[a-z][a-z0-9]*$`)
	// A DNS subdomain, for a group with a GroupGoName of its own.
	dnsGroupRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	goNameRE   = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	kindRE     = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
)

// complete validates in and returns a normalised copy: defaults filled in,
// paths cleaned, packages and kinds sorted so that the output does not depend
// on their order.
func (in Input) complete() (Input, error) {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if in.ModulePath == "" {
		fail("ModulePath is empty")
	}
	if !filepath.IsAbs(in.ModuleDir) {
		fail("ModuleDir %q is not an absolute path", in.ModuleDir)
	} else {
		in.ModuleDir = filepath.Clean(in.ModuleDir)
		if _, err := os.Stat(filepath.Join(in.ModuleDir, "go.mod")); err != nil {
			fail("ModuleDir %s has no go.mod: %v", in.ModuleDir, err)
		}
	}
	if in.OutputPkg == "" {
		in.OutputPkg = path.Join(in.ModulePath, layout.GeneratedDir)
	}
	in.OutputPkg = path.Clean(in.OutputPkg)
	if _, ok := relImportPath(in.ModulePath, in.OutputPkg); !ok {
		fail("OutputPkg %q is not inside module %q", in.OutputPkg, in.ModulePath)
	}
	if err := checkHeader(in.Header); err != nil {
		errs = append(errs, err)
	}
	if len(in.Packages) == 0 {
		fail("no types packages")
	}

	pkgs := make([]Package, len(in.Packages))
	copy(pkgs, in.Packages)
	slices.SortFunc(pkgs, func(a, b Package) int { return strings.Compare(a.ImportPath, b.ImportPath) })
	groupOfPkgName := map[string]string{}
	pkgNameOfGroup := map[string]string{}
	seenGV := map[string]string{}
	for i := range pkgs {
		p := &pkgs[i]
		where := p.ImportPath
		rel, ok := relImportPath(in.ModulePath, p.ImportPath)
		if !ok || rel == "." {
			fail("package %q: not inside module %q", where, in.ModulePath)
			continue
		}
		if i > 0 && pkgs[i-1].ImportPath == p.ImportPath {
			fail("package %q: listed twice", where)
			continue
		}
		if filepath.IsAbs(in.ModuleDir) {
			want := filepath.Join(in.ModuleDir, filepath.FromSlash(rel))
			if !filepath.IsAbs(p.Dir) || filepath.Clean(p.Dir) != want {
				fail("package %q: Dir %q, want %q", where, p.Dir, want)
			}
			p.Dir = want
		}
		switch {
		case p.GroupGoName == "" && !groupRE.MatchString(p.Group):
			fail("package %q: group %q is not a lower-case DNS subdomain whose first label is a Go identifier ([a-z][a-z0-9]*), and there is no GroupGoName", where, p.Group)
		case p.GroupGoName != "" && !dnsGroupRE.MatchString(p.Group):
			fail("package %q: group %q is not a lower-case DNS subdomain", where, p.Group)
		case p.GroupGoName != "" && !goNameRE.MatchString(p.GroupGoName):
			fail("package %q: GroupGoName %q is not an exported Go identifier ([A-Z][A-Za-z0-9]*)", where, p.GroupGoName)
		}
		switch {
		case p.Internal:
			if p.Version != "" {
				fail("package %q: an internal package has no version, got %q", where, p.Version)
			}
			if path.Base(p.ImportPath) != p.GroupPackageName {
				fail("package %q: an internal package is the group's directory %q", where, p.GroupPackageName)
			}
		case !versionRE.MatchString(p.Version):
			fail("package %q: version %q is not a Kubernetes API version like v1, v1beta1, v2alpha3", where, p.Version)
		case path.Base(p.ImportPath) != p.Version:
			fail("package %q: version %q must be the last element of the import path", where, p.Version)
		}
		if !pkgNameRE.MatchString(p.GroupPackageName) {
			fail("package %q: group package name %q is not [a-z][a-z0-9]*", where, p.GroupPackageName)
		}
		if !p.Internal && path.Base(path.Dir(p.ImportPath)) != p.GroupPackageName {
			fail("package %q: group package name %q must be the parent directory of the version directory (lister-gen, informer-gen and applyconfiguration-gen derive it from the import path)", where, p.GroupPackageName)
		}
		if g, ok := groupOfPkgName[p.GroupPackageName]; ok && g != p.Group {
			fail("package %q: group package name %q is used for groups %q and %q", where, p.GroupPackageName, g, p.Group)
		}
		if n, ok := pkgNameOfGroup[p.Group]; ok && n != p.GroupPackageName {
			fail("package %q: group %q has group package names %q and %q", where, p.Group, n, p.GroupPackageName)
		}
		groupOfPkgName[p.GroupPackageName] = p.Group
		pkgNameOfGroup[p.Group] = p.GroupPackageName
		gv := p.Group + "/" + p.Version
		if other, ok := seenGV[gv]; ok {
			fail("package %q: group version %s is also served by %q", where, gv, other)
		}
		seenGV[gv] = p.ImportPath

		kinds := make([]Kind, len(p.Kinds))
		copy(kinds, p.Kinds)
		slices.SortFunc(kinds, func(a, b Kind) int { return strings.Compare(a.Name, b.Name) })
		names := map[string]bool{}
		for _, k := range kinds {
			names[k.Name] = true
		}
		for j, k := range kinds {
			if !kindRE.MatchString(k.Name) {
				fail("package %q: kind %q is not an exported Go identifier of letters and digits", where, k.Name)
			}
			if j > 0 && kinds[j-1].Name == k.Name {
				fail("package %q: kind %q listed twice", where, k.Name)
			}
			if names[k.Name+"List"] {
				fail("package %q: kind %q is also the list type of kind %q", where, k.Name+"List", k.Name)
			}
		}
		p.Kinds = kinds
	}
	for _, p := range pkgs {
		if p.ConvertTo == "" {
			continue
		}
		i := slices.IndexFunc(pkgs, func(q Package) bool { return q.ImportPath == p.ConvertTo })
		switch {
		case i < 0:
			fail("package %q: ConvertTo %q is not one of the types packages", p.ImportPath, p.ConvertTo)
		case pkgs[i].Group != p.Group || p.ConvertTo == p.ImportPath:
			fail("package %q: ConvertTo %q is not another version of group %q", p.ImportPath, p.ConvertTo, p.Group)
		}
	}
	in.Packages = pkgs
	if len(errs) > 0 {
		return in, fmt.Errorf("codegen: invalid input: %w", errors.Join(errs...))
	}
	return in, nil
}

// relImportPath returns p relative to module path mod ("." for mod itself).
func relImportPath(mod, p string) (string, bool) {
	if mod == "" || p == "" {
		return "", false
	}
	if p == mod {
		return ".", true
	}
	if rest, ok := strings.CutPrefix(p, mod+"/"); ok && rest != "" && path.Clean(rest) == rest && !strings.HasPrefix(rest, "../") {
		return rest, true
	}
	return "", false
}

// dirOf returns the directory of import path p, which must be inside the module.
func (in Input) dirOf(p string) string {
	rel, _ := relImportPath(in.ModulePath, p)
	return filepath.Join(in.ModuleDir, filepath.FromSlash(rel))
}

// checkHeader makes sure h is only Go comments, so it can go above the
// package clause (and below a //go:build line) of every file.
func checkHeader(h []byte) error {
	if len(bytes.TrimSpace(h)) == 0 {
		return nil
	}
	if bytes.Contains(h, []byte("\x00")) {
		return errors.New("header contains a NUL byte")
	}
	src := append(append(append([]byte{}, h...), '\n'), "package p\n"...)
	if _, err := parser.ParseFile(token.NewFileSet(), "header.go", src, parser.PackageClauseOnly|parser.ParseComments); err != nil {
		return fmt.Errorf("header must consist of Go comments only: %v", err)
	}
	return nil
}
