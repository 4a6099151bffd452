package scaffold

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	gengonamer "k8s.io/gengo/v2/namer"
	gengotypes "k8s.io/gengo/v2/types"
)

var (
	// groupRE is stricter than a DNS label: the group names the directory pkg/apis/<group>,
	// which names Go packages, and the clientset's Go identifiers.
	groupRE   = regexp.MustCompile(`^[a-z][a-z0-9]*$`)
	versionRE = regexp.MustCompile(`^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$`)
	kindRE    = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	// reserved are the names aagen generates in every types package (zz_generated.register.go).
	reserved = []string{"GroupName", "SchemeGroupVersion", "Kind", "Resource", "AddToScheme"}
)

// APIOptions configure CreateAPI.
type APIOptions struct {
	// Dir is a directory of the project (default "."); PROJECT is looked up from there.
	Dir string
	// Group is the short group name; the API group is <Group>.<domain of PROJECT>.
	Group string
	// Version is the API version, e.g. v1, v1beta1, v2alpha1.
	Version string
	// Kind is the kind, an UpperCamelCase Go identifier.
	Kind string
	// Plural is the resource name (default: the lower-case plural of Kind).
	Plural string
	// ClusterScoped makes the kind cluster-scoped instead of namespaced.
	ClusterScoped bool
	// Status adds a Status with conditions, served as the /status subresource.
	Status bool
	// Scale adds replicas and a selector, served as the /scale subresource; it implies Status.
	Scale bool
	// SkipGoMod skips go mod tidy after writing the types (tests and offline use).
	SkipGoMod bool
	// Log receives a line per step; nil discards them.
	Log io.Writer
}

type apiData struct {
	Version, GroupName, Kind, Plural string
	ClusterScoped, Status, Scale     bool
}

// DefaultPlural is the resource name aagen derives from a kind (as aagen generate does).
func DefaultPlural(kind string) string {
	return gengonamer.NewAllLowercasePluralNamer(nil).Name(&gengotypes.Type{Name: gengotypes.Name{Name: kind}})
}

// ValidateAPI checks the group, version, kind and plural of create api.
func ValidateAPI(group, version, kind, plural string) error {
	var errs []string
	switch {
	case group == "":
		errs = append(errs, "--group is required, e.g. --group ships")
	case len(validation.IsDNS1123Label(group)) > 0:
		errs = append(errs, fmt.Sprintf("invalid --group %q: %s", group, strings.Join(validation.IsDNS1123Label(group), "; ")))
	case !groupRE.MatchString(group):
		errs = append(errs, fmt.Sprintf("invalid --group %q: it names the directory pkg/apis/%s and Go identifiers of the clientset, so use lower-case letters and digits, starting with a letter (no '-')", group, group))
	}
	switch {
	case version == "":
		errs = append(errs, "--version is required, e.g. --version v1alpha1")
	case !versionRE.MatchString(version):
		errs = append(errs, fmt.Sprintf("invalid --version %q: a Kubernetes API version is v<N>, v<N>alpha<M> or v<N>beta<M>, e.g. v1, v1beta1, v2alpha1", version))
	}
	switch {
	case kind == "":
		errs = append(errs, "--kind is required, e.g. --kind Frigate")
	case !kindRE.MatchString(kind):
		errs = append(errs, fmt.Sprintf("invalid --kind %q: use an UpperCamelCase Go identifier (letters and digits, starting with an upper-case letter), e.g. Frigate", kind))
	case slices.Contains(reserved, kind):
		errs = append(errs, fmt.Sprintf("invalid --kind %q: aagen generates %s in every types package (zz_generated.register.go); choose another name", kind, kind))
	case len(validation.IsDNS1035Label(strings.ToLower(kind))) > 0:
		errs = append(errs, fmt.Sprintf("invalid --kind %q: its lower-case form is the resource's singular name: %s", kind, strings.Join(validation.IsDNS1035Label(strings.ToLower(kind)), "; ")))
	}
	if plural != "" {
		if msgs := validation.IsDNS1035Label(plural); len(msgs) > 0 {
			errs = append(errs, fmt.Sprintf("invalid --plural %q: resource names are lower-case letters, digits and '-', starting with a letter: %s", plural, strings.Join(msgs, "; ")))
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "\n"))
	}
	return nil
}

// CreateAPI adds a kind to the project: pkg/apis/<group>/<version>/<kind>_types.go, the
// package's doc.go with +groupName when the package is new, and an entry in PROJECT; then
// it runs go mod tidy. It refuses to overwrite the types file or to declare a kind the
// package already has.
func CreateAPI(ctx context.Context, o APIOptions) error {
	if err := ValidateAPI(o.Group, o.Version, o.Kind, o.Plural); err != nil {
		return err
	}
	if o.Scale {
		o.Status = true
	}
	if o.Plural == "" {
		o.Plural = DefaultPlural(o.Kind)
		if msgs := validation.IsDNS1035Label(o.Plural); len(msgs) > 0 {
			return fmt.Errorf("the plural %q of kind %s is not a valid resource name (%s): pass --plural", o.Plural, o.Kind, strings.Join(msgs, "; "))
		}
	}
	if o.Dir == "" {
		o.Dir = "."
	}
	root, err := findProject(o.Dir)
	if err != nil {
		return err
	}
	project, err := ReadProject(filepath.Join(root, ProjectFile))
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return fmt.Errorf("%s has a %s file but no go.mod: %w", root, ProjectFile, err)
	}
	res := Resource{
		Group:      o.Group,
		Domain:     project.Domain,
		Version:    o.Version,
		Kind:       o.Kind,
		Plural:     o.Plural,
		Path:       project.Repo + "/pkg/apis/" + o.Group + "/" + o.Version,
		Namespaced: !o.ClusterScoped,
		Status:     o.Status,
		Scale:      o.Scale,
	}
	groupName := res.GroupName()
	if msgs := validation.IsDNS1123Subdomain(groupName); len(msgs) > 0 {
		return fmt.Errorf("API group %q (--group %s, domain %s) is not a valid DNS name: %s", groupName, o.Group, project.Domain, strings.Join(msgs, "; "))
	}

	pkgRel := path.Join("pkg/apis", o.Group, o.Version)
	pkgDir := filepath.Join(root, filepath.FromSlash(pkgRel))
	typesRel := path.Join(pkgRel, strings.ToLower(o.Kind)+"_types.go")
	typesAbs := filepath.Join(root, filepath.FromSlash(typesRel))
	if _, err := os.Lstat(typesAbs); err == nil {
		return fmt.Errorf("%s already exists; refusing to overwrite it (remove it first to start the kind %s over)", typesAbs, o.Kind)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	existing, err := scanPackage(pkgDir)
	if err != nil {
		return err
	}
	if existing.pkgName != "" && existing.pkgName != o.Version {
		return fmt.Errorf("%s holds package %s (%s), not %s: a version's package is named after the version", pkgDir, existing.pkgName, existing.pkgNameFile, o.Version)
	}
	if existing.groupName != "" && existing.groupName != groupName {
		return fmt.Errorf("%s declares +groupName=%s, not %s", existing.groupNameFile, existing.groupName, groupName)
	}
	for _, name := range []string{o.Kind, o.Kind + "Spec", o.Kind + "Status", o.Kind + "List"} {
		if pos, ok := existing.types[name]; ok {
			return fmt.Errorf("kind %s already exists in %s: %s declares type %s; refusing to declare it again", o.Kind, pkgDir, pos, name)
		}
	}
	for _, r := range project.Resources {
		if r.GroupName() == groupName && r.Plural == o.Plural && r.Kind != o.Kind {
			return fmt.Errorf("kind %s of group %s (%s, in %s) already has the resource name %q: pass another --plural", r.Kind, groupName, r.Version, ProjectFile, o.Plural)
		}
	}

	data := apiData{
		Version: o.Version, GroupName: groupName, Kind: o.Kind, Plural: o.Plural,
		ClusterScoped: o.ClusterScoped, Status: o.Status, Scale: o.Scale,
	}
	var files []file
	docRel := path.Join(pkgRel, "doc.go")
	if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(docRel))); errors.Is(err, os.ErrNotExist) && existing.groupName == "" {
		doc, err := renderGo("doc.go", data)
		if err != nil {
			return err
		}
		files = append(files, file{docRel, doc})
	}
	types, err := renderGo("types.go", data)
	if err != nil {
		return err
	}
	files = append(files, file{typesRel, types})
	// A sample object, as kubebuilder writes one, unless the user has one of that name.
	sampleRel := path.Join("config/samples", strings.ReplaceAll(o.Group, ".", "_")+"_"+o.Version+"_"+strings.ToLower(o.Kind)+".yaml")
	if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(sampleRel))); errors.Is(err, os.ErrNotExist) {
		sample, err := render("sample.yaml", struct {
			apiData
			Path, Name string
		}{data, sampleRel, strings.ToLower(o.Kind)})
		if err != nil {
			return err
		}
		files = append(files, file{sampleRel, sample})
	}
	if err := writeNew(root, files, o.Log); err != nil {
		return err
	}

	// Record the kind, replacing a stale entry for the same group, version and kind (its
	// types file was deleted, or the check above would have failed).
	project.Resources = slices.DeleteFunc(project.Resources, func(r Resource) bool {
		return r.GroupName() == groupName && r.Version == o.Version && r.Kind == o.Kind
	})
	project.Resources = append(project.Resources, res)
	if err := writeProject(root, project); err != nil {
		return err
	}
	logf(o.Log, "recorded %s %s/%s (%s) in %s", o.Kind, groupName, o.Version, o.Plural, ProjectFile)

	if !o.SkipGoMod {
		if err := goCmd(ctx, root, o.Log, "mod", "tidy"); err != nil {
			return fmt.Errorf("the kind is written, but %w", err)
		}
	}
	logf(o.Log, "next: edit %s, then run aagen generate ./pkg/apis/... (make generate)", typesRel)
	return nil
}

// pkgInfo is what an existing types package already declares.
type pkgInfo struct {
	pkgName, pkgNameFile     string
	groupName, groupNameFile string
	types                    map[string]string // type name -> file:line
}

// scanPackage parses the Go files of dir (a missing dir is an empty package).
func scanPackage(dir string) (*pkgInfo, error) {
	info := &pkgInfo{types: map[string]string{}}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return info, nil
	}
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		p := filepath.Join(dir, name)
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("cannot check the existing package %s: %w", dir, err)
		}
		if info.pkgName == "" {
			info.pkgName, info.pkgNameFile = f.Name.Name, p
		}
		if f.Doc != nil && info.groupName == "" {
			for _, c := range f.Doc.List {
				text := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
				if v, ok := strings.CutPrefix(text, "+groupName="); ok {
					info.groupName, info.groupNameFile = strings.TrimSpace(v), p
				}
			}
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				info.types[ts.Name.Name] = fset.Position(ts.Pos()).String()
			}
		}
	}
	return info, nil
}
