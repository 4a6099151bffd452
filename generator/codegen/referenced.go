package codegen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/gengo/v2/types"

	"github.com/aagen-dev/aagen/internal/gocmd"
)

// Types declared outside the types packages (Input.ReferencedTypes): a field of type
// corev1.PodTemplateSpec, a *metav1.LabelSelector, a struct of another module or of another
// package of the user's module. Their packages are loaded with the types packages, and
// openapi-gen defines exactly the referenced types of each (not all of k8s.io/api/core/v1):
// the package's own +k8s:openapi-gen tag is dropped and each referenced type gets a
// type-level one, unless it opts out with +k8s:openapi-gen=false. Their comments, list-map
// keys and merge strategies (+listType=map, +listMapKey=name, +patchStrategy=merge on
// PodSpec.Containers) reach the definitions as they reach k8s.io/kubernetes'. Model names
// come from the package's +k8s:openapi-model-package (k8s.io/api and apimachinery carry
// one: io.k8s.api.core.v1.PodTemplateSpec); a package of the user's module without one gets
// it injected and a zz_generated.model_name.go, as the types packages do. Types of
// k8s.io/api packages use k8s.io/client-go's apply configurations instead of new ones.

const (
	// tagModelNames marks, in the universe, a package of the module that gets a model
	// package and a zz_generated.model_name.go from aagen (no tool reads it).
	tagModelNames         = "aagen:model-names"
	k8sAPIPrefix          = "k8s.io/api/"
	clientGoApplyConfigs  = "k8s.io/client-go/applyconfigurations/"
	applyConfigTypeSuffix = "ApplyConfiguration"
)

// referencedTypeNames parses Input.ReferencedTypes.
func (in Input) referencedTypeNames() []types.Name {
	var out []types.Name
	for _, s := range in.ReferencedTypes {
		n := types.ParseFullyQualifiedName(s)
		if n.Package != "" && n.Name != "" {
			out = append(out, n)
		}
	}
	return out
}

// referencedPackages are the packages of the referenced types that openapi-gen defines
// only in part: neither types packages nor openapi extras (which it defines whole), sorted.
func (in Input) referencedPackages() []string {
	skip := map[string]bool{}
	for _, p := range slices.Concat(in.typesPackages(), openAPIExtraPackages, in.ExtraOpenAPIPackages) {
		skip[p] = true
	}
	var out []string
	for _, n := range in.referencedTypeNames() {
		if !skip[n.Package] {
			out = append(out, n.Package)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// modulePackages are the referenced packages inside the user's module without a
// +k8s:openapi-model-package tag of their own: they get one and a zz_generated.model_name.go.
func (in Input) modulePackages(u types.Universe) []string {
	var out []string
	for _, p := range in.referencedPackages() {
		pkg := u[p]
		if _, inModule := relImportPath(in.ModulePath, p); !inModule || pkg == nil {
			continue
		}
		// Before injectReferenced: without a model package; after: marked by it.
		hasOwn := slices.ContainsFunc(pkg.Comments, func(l string) bool { return tagName(l) == tagModelPackage })
		marked := slices.ContainsFunc(pkg.Comments, func(l string) bool { return tagName(l) == tagModelNames })
		if !hasOwn || marked {
			out = append(out, p)
		}
	}
	return out
}

// injectReferenced tags the referenced types for openapi-gen (see above).
func injectReferenced(u types.Universe, in Input) {
	wanted := map[string]map[string]bool{}
	for _, n := range in.referencedTypeNames() {
		if wanted[n.Package] == nil {
			wanted[n.Package] = map[string]bool{}
		}
		wanted[n.Package][n.Name] = true
	}
	inModule := map[string]bool{}
	for _, p := range in.modulePackages(u) {
		inModule[p] = true
	}
	for _, path := range in.referencedPackages() {
		p := u[path]
		if p == nil {
			continue // not loaded: checkSchemaRefs names the missing definitions
		}
		var pkgTags []string
		if inModule[path] {
			pkgTags = append(pkgTags, "+"+tagModelPackage+"="+restFriendlyName(path), "+"+tagModelNames)
		}
		p.Comments = rewriteTags(p.Comments, dropNames(tagOpenAPI), pkgTags...)
		p.DocComments = rewriteTags(p.DocComments, dropNames(tagOpenAPI), pkgTags...)
		for name, t := range p.Types {
			optOut := slices.ContainsFunc(t.CommentLines, func(l string) bool {
				return tagName(l) == tagOpenAPI && tagValue(l) == "false"
			})
			var add []string
			if wanted[path][name] && !optOut {
				add = append(add, "+"+tagOpenAPI+"=true")
			}
			t.CommentLines = rewriteTags(t.CommentLines, func(n, l string) bool { return n == tagOpenAPI && !optOut }, add...)
		}
	}
}

// externalApplyConfigurations maps the referenced struct types of k8s.io/api packages to
// k8s.io/client-go's apply configuration packages, for those client-go has one for
// (k8s.io/api/core/v1.Container: k8s.io/client-go/applyconfigurations/core/v1, whose
// ContainerApplyConfiguration the generated builders then use). client-go is taken at the
// version of the k8s.io/api the types were loaded from (the two are released together),
// from the vendor directory or the module cache (go mod download, which needs the module
// proxy only if it is not there yet), whether or not the module requires client-go yet, so
// that the output does not depend on what go.mod holds before the generated clients do.
// Types client-go has no apply configuration for, or a k8s.io/api whose version cannot be
// told (replaced by a directory), are used as they are. A client-go that cannot be
// downloaded is an error: the output would otherwise depend on the network.
func externalApplyConfigurations(ctx context.Context, in Input, u types.Universe) (map[types.Name]string, error) {
	ext := map[types.Name]string{}
	roots := map[string]string{} // k8s.io/api directory -> client-go's directory ("" unknown)
	for _, n := range in.referencedTypeNames() {
		rest, ok := strings.CutPrefix(n.Package, k8sAPIPrefix)
		if !ok || u.Type(n).Kind != types.Struct || u[n.Package] == nil || u[n.Package].Dir == "" {
			continue
		}
		apiRoot := strings.TrimSuffix(filepath.ToSlash(u[n.Package].Dir), "/"+rest)
		clientGo, seen := roots[apiRoot]
		if !seen {
			var err error
			if clientGo, err = clientGoDir(ctx, in, apiRoot); err != nil {
				return nil, err
			}
			roots[apiRoot] = clientGo
		}
		if clientGo == "" {
			continue
		}
		dir := filepath.Join(clientGo, "applyconfigurations", filepath.FromSlash(rest))
		// client-go names each apply configuration's file after its type, in lower case.
		src, err := os.ReadFile(filepath.Join(dir, strings.ToLower(n.Name)+".go"))
		if err == nil && bytes.Contains(src, []byte("type "+n.Name+applyConfigTypeSuffix+" struct")) {
			ext[n] = clientGoApplyConfigs + rest
		}
	}
	return ext, nil
}

// clientGoDir returns the directory of k8s.io/client-go that goes with the k8s.io/api in
// apiRoot (slash-separated): vendor/k8s.io/client-go next to a vendored k8s.io/api, else
// k8s.io/client-go@<version> of the module cache, downloaded if needed. "" when the
// version cannot be told (k8s.io/api replaced by a directory); an error when the download
// fails.
func clientGoDir(ctx context.Context, in Input, apiRoot string) (string, error) {
	if prefix, ok := strings.CutSuffix(apiRoot, "/vendor/k8s.io/api"); ok {
		return filepath.FromSlash(prefix + "/vendor/k8s.io/client-go"), nil
	}
	_, version, ok := strings.Cut(path.Base(apiRoot), "@")
	if !ok || !strings.HasSuffix(path.Dir(apiRoot), "/k8s.io") {
		return "", nil
	}
	out, err := gocmd.Cmd{Args: []string{"mod", "download", "-json", "k8s.io/client-go@" + version}, Dir: in.ModuleDir, Env: goEnv(in.ModuleDir)}.Run(ctx)
	var mod struct{ Dir, Error string }
	_ = json.Unmarshal(out, &mod) // go mod download -json reports its own failure in Error
	if err != nil || mod.Dir == "" {
		why := mod.Error
		if why == "" && err != nil {
			why = err.Error()
			if ge, ok := errors.AsType[*gocmd.Error](err); ok && len(bytes.TrimSpace(ge.Stderr)) > 0 {
				why = strings.TrimSpace(string(ge.Stderr))
			}
		}
		return "", fmt.Errorf("codegen: downloading k8s.io/client-go@%s, whose apply configurations the generated ones use for the k8s.io/api types your API references: %s\n\tfix: make the Go module proxy reachable (GOPROXY), or run `go mod download k8s.io/client-go@%s` in %s", version, why, version, in.ModuleDir)
	}
	return mod.Dir, nil
}
