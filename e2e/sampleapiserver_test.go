package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/aagen-dev/aagen/internal/gocmd"
)

// sampleAPIServerVersion is the k8s.io/sample-apiserver whose API the test takes as input:
// the one e2e/tools/sample-apiserver pins, at the k8s.io/* version aagen pins.
const sampleAPIServerVersion = "v0.37.2"

// TestSampleAPIServerLayout takes k8s.io/sample-apiserver's pkg/apis as it ships (its
// internal package wardle, versions v1alpha1 and v1beta1 with hand-written register.go,
// conversion.go and defaults.go, its validation and install packages and its own
// zz_generated files), copied from the Go module cache with only the import path
// rewritten, and serves it with `aagen up`. The user's part is what a user writes: one line
// in hooks.go calling sample-apiserver's validation package, and the registration of its
// BanFlunder admission plugin (copied the same way) in admission.go.
func TestSampleAPIServerLayout(t *testing.T) {
	skipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	src := sampleAPIServerSource(t)
	const module = "example.com/wardle"
	dir := t.TempDir()
	copySample := func(from, to string) {
		copyTree(t, filepath.Join(src, from), filepath.Join(dir, to), func(rel string) bool {
			return !strings.HasSuffix(rel, "_test.go")
		})
	}
	copySample("pkg/apis", "pkg/apis")
	rewriteImports(t, dir, "k8s.io/sample-apiserver/", module+"/")
	writeFile(t, filepath.Join(dir, "go.mod"), "module "+module+"\n\ngo 1.26.0\n\nrequire k8s.io/apimachinery "+sampleAPIServerVersion+"\n")
	goModTidy(t, dir)
	handWritten := []string{"pkg/apis/wardle/register.go", "pkg/apis/wardle/v1alpha1/register.go", "pkg/apis/wardle/v1alpha1/conversion.go",
		"pkg/apis/wardle/v1alpha1/defaults.go", "pkg/apis/wardle/v1beta1/register.go", "pkg/apis/wardle/install/install.go", "pkg/apis/wardle/validation/validation.go"}
	before := readFiles(t, dir, handWritten)

	out := run(t, dir, aagen(t), "generate", "./pkg/apis/...")
	for _, note := range []string{
		"note: replaced pkg/apis/wardle/v1alpha1/zz_generated.conversion.go, written by conversion-gen",
		"note: replaced pkg/apis/wardle/zz_generated.deepcopy.go, written by deepcopy-gen",
	} {
		if !strings.Contains(out, note) {
			t.Errorf("aagen generate does not say %q:\n%s", note, out)
		}
	}
	for path, data := range readFiles(t, dir, handWritten) {
		if !bytes.Equal(data, before[path]) {
			t.Errorf("aagen generate changed the hand-written %s", path)
		}
	}

	// What the user writes: validation through the hooks, BanFlunder through the admission hook.
	edit(t, filepath.Join(dir, "pkg/registry/wardle/flunder/hooks.go"),
		"\tvar errs field.ErrorList\n\treturn errs\n", "\treturn validation.ValidateFlunder(obj)\n",
		"import (\n", "import (\n\t\""+module+"/pkg/apis/wardle/validation\"\n")
	copySample("pkg/admission", "pkg/admission")
	rewriteImports(t, filepath.Join(dir, "pkg/admission"), "k8s.io/sample-apiserver/", module+"/")
	// A plugin of the user's own that gets the generated informers without an initializer.
	if err := os.MkdirAll(filepath.Join(dir, "pkg/admission/plugin/nofischernames"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "pkg/admission/plugin/nofischernames/admission.go"), strings.ReplaceAll(noFischerNamesPlugin, "MODULE", module))
	edit(t, filepath.Join(dir, "pkg/apiserver/admission.go"),
		"func registerAdmissionPlugins(plugins *admission.Plugins) {}", "func registerAdmissionPlugins(plugins *admission.Plugins) {\n\tbanflunder.Register(plugins)\n\tnofischernames.Register(plugins)\n}",
		"PluginInitializer {\n\treturn nil\n}", "PluginInitializer {\n\treturn []admission.PluginInitializer{wardleinitializer.New(informers)}\n}",
		"import (\n", "import (\n\t\""+module+"/pkg/admission/plugin/banflunder\"\n\t\""+module+"/pkg/admission/plugin/nofischernames\"\n\t\""+module+"/pkg/admission/wardleinitializer\"\n")
	goModTidy(t, dir)

	up := startUpPattern(t, dir, "./pkg/apis/...", 20*time.Minute)
	cfg := up.restConfig(t)
	dyn := dynamic.NewForConfigOrDie(cfg)
	const group = "wardle.example.com"
	flunders := func(v string) dynamic.ResourceInterface {
		return dyn.Resource(schema.GroupVersionResource{Group: group, Version: v, Resource: "flunders"}).Namespace("default")
	}
	fischers := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "fischers"})
	obj := func(v, kind, name string, fields map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/" + v, "kind": kind, "metadata": map[string]any{"name": name}}}
		for k, val := range fields {
			u.Object[k] = val
		}
		return u
	}

	// Discovery: both versions served, v1beta1 preferred, Fischer cluster-scoped.
	disc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	groups, err := disc.ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		if g.Name == group && (g.PreferredVersion.Version != "v1beta1" || len(g.Versions) != 2) {
			t.Errorf("group %s: versions %v, preferred %s; want v1beta1 and v1alpha1, v1beta1 preferred", group, g.Versions, g.PreferredVersion.Version)
		}
	}
	resources, err := disc.ServerResourcesForGroupVersion(group + "/v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	scopes := map[string]bool{}
	for _, r := range resources.APIResources {
		scopes[r.Name] = r.Namespaced
	}
	if namespaced, ok := scopes["fischers"]; !ok || namespaced {
		t.Errorf("v1alpha1 fischers: found %v, namespaced %v; want a cluster-scoped resource", ok, namespaced)
	}
	if namespaced, ok := scopes["flunders"]; !ok || !namespaced {
		t.Errorf("v1alpha1 flunders: found %v, namespaced %v; want a namespaced resource", ok, namespaced)
	}

	// A Flunder written in v1alpha1 with a reference: SetDefaults_FlunderSpec sets its
	// referenceType, and sample-apiserver's Convert_ functions turn reference into v1beta1's
	// flunderReference (or fischerReference), through the internal version.
	if _, err := flunders("v1alpha1").Create(ctx, obj("v1alpha1", "Flunder", "referrer", map[string]any{"spec": map[string]any{"reference": "other"}}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := flunders("v1alpha1").Get(ctx, "referrer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rt, _, _ := unstructured.NestedString(got.Object, "spec", "referenceType"); rt != "Flunder" {
		t.Errorf("v1alpha1 referrer: spec.referenceType = %q, want Flunder (set by SetDefaults_FlunderSpec)", rt)
	}
	got, err = flunders("v1beta1").Get(ctx, "referrer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantSpec := map[string]any{"flunderReference": "other", "referenceType": "Flunder"}
	if spec, _, _ := unstructured.NestedMap(got.Object, "spec"); !equalJSON(spec, wantSpec) {
		t.Errorf("referrer read through v1beta1: spec = %v, want %v", spec, wantSpec)
	}
	if _, err := flunders("v1alpha1").Create(ctx, obj("v1alpha1", "Flunder", "fischer-referrer",
		map[string]any{"spec": map[string]any{"reference": "some-fischer", "referenceType": "Fischer"}}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err = flunders("v1beta1").Get(ctx, "fischer-referrer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantSpec = map[string]any{"fischerReference": "some-fischer", "referenceType": "Fischer"}
	if spec, _, _ := unstructured.NestedMap(got.Object, "spec"); !equalJSON(spec, wantSpec) {
		t.Errorf("fischer-referrer read through v1beta1: spec = %v, want %v", spec, wantSpec)
	}

	// sample-apiserver's validation, called from hooks.go.
	_, err = flunders("v1beta1").Create(ctx, obj("v1beta1", "Flunder", "invalid", map[string]any{"spec": map[string]any{"referenceType": "Fischer"}}), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.fischerReference") || !strings.Contains(err.Error(), "cannot be empty if referenceType is Fischer") {
		t.Errorf("a Flunder of referenceType Fischer without fischerReference: err = %v; want 422 Invalid, spec.fischerReference: cannot be empty if referenceType is Fischer", err)
	}

	// Fischer is cluster-scoped: created without a namespace, not found under one.
	if _, err := fischers.Create(ctx, obj("v1alpha1", "Fischer", "strict", map[string]any{"disallowedFlunders": []any{"banned"}}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, _ := httpGet(t, cfg, "/apis/"+group+"/v1alpha1/namespaces/default/fischers/strict"); code != 404 {
		t.Errorf("GET a Fischer under a namespace: %d, want 404", code)
	}

	// BanFlunder, registered through admission.go, reads the Fischers through the generated
	// informers it was handed; its informer sees the new Fischer soon after it was created.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err = flunders("v1beta1").Create(ctx, obj("v1beta1", "Flunder", "banned", nil), metav1.CreateOptions{})
		if apierrors.IsForbidden(err) || time.Now().After(deadline) {
			break
		}
		if err == nil {
			if derr := flunders("v1beta1").Delete(ctx, "banned", metav1.DeleteOptions{}); derr != nil {
				t.Fatal(derr)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "this name may not be used") {
		t.Errorf("creating the Flunder a Fischer disallows: err = %v; want 403 Forbidden from BanFlunder", err)
	}
	if _, err := flunders("v1beta1").Create(ctx, obj("v1beta1", "Flunder", "allowed", nil), metav1.CreateOptions{}); err != nil {
		t.Errorf("creating a Flunder no Fischer disallows: %v", err)
	}
	// The user's own plugin, handed the generated informers through WantsInformers.
	_, err = flunders("v1beta1").Create(ctx, obj("v1beta1", "Flunder", "strict", nil), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "a Fischer is named strict") {
		t.Errorf("creating a Flunder named like a Fischer: err = %v; want 403 Forbidden from NoFischerNames", err)
	}
}

// noFischerNamesPlugin is an admission plugin a user writes: a Flunder may not take a
// Fischer's name. It gets the generated informers through the generated WantsInformers.
const noFischerNamesPlugin = `// Package nofischernames keeps Flunders from taking the names of Fischers.
package nofischernames

import (
	"context"
	"errors"
	"fmt"
	"io"

	"k8s.io/apiserver/pkg/admission"

	"MODULE/pkg/apis/wardle"
	"MODULE/pkg/generated/informers/externalversions"
	listers "MODULE/pkg/generated/listers/wardle/v1alpha1"
)

// Register registers the plugin as NoFischerNames.
func Register(plugins *admission.Plugins) {
	plugins.Register("NoFischerNames", func(io.Reader) (admission.Interface, error) {
		return &plugin{Handler: admission.NewHandler(admission.Create)}, nil
	})
}

type plugin struct {
	*admission.Handler
	fischers listers.FischerLister
}

// SetInformers implements the generated apiserver.WantsInformers.
func (p *plugin) SetInformers(f externalversions.SharedInformerFactory) {
	p.fischers = f.Wardle().V1alpha1().Fischers().Lister()
	p.SetReadyFunc(f.Wardle().V1alpha1().Fischers().Informer().HasSynced)
}

// ValidateInitialization implements admission.InitializationValidator.
func (p *plugin) ValidateInitialization() error {
	if p.fischers == nil {
		return errors.New("no informers")
	}
	return nil
}

// Validate implements admission.ValidationInterface.
func (p *plugin) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if a.GetKind().GroupKind() != wardle.Kind("Flunder") {
		return nil
	}
	if !p.WaitForReady() {
		return admission.NewForbidden(a, errors.New("not yet ready"))
	}
	if _, err := p.fischers.Get(a.GetName()); err == nil {
		return admission.NewForbidden(a, fmt.Errorf("a Fischer is named %s", a.GetName()))
	}
	return nil
}
`

// sampleAPIServerSource returns the directory of k8s.io/sample-apiserver in the Go module
// cache, downloading it through the module proxy if it is not there yet.
func sampleAPIServerSource(t *testing.T) string {
	t.Helper()
	out, err := gocmd.Cmd{Args: []string{"mod", "download", "-json", "k8s.io/sample-apiserver@" + sampleAPIServerVersion}, Dir: filepath.Join(repoRoot(t), "e2e/tools/sample-apiserver")}.Run(context.Background())
	if err != nil {
		t.Fatalf("go mod download k8s.io/sample-apiserver: %v\n%s", err, out)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download k8s.io/sample-apiserver: %v %s\n%s", err, mod.Error, out)
	}
	return mod.Dir
}

// rewriteImports replaces from with to in every Go file under dir (the import path).
func rewriteImports(t *testing.T, dir, from, to string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(p, bytes.ReplaceAll(data, []byte(from), []byte(to)), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// edit replaces, in the file at path, each old string (which must occur) with its new one.
func edit(t *testing.T, path string, oldNew ...string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for i := 0; i < len(oldNew); i += 2 {
		if !strings.Contains(s, oldNew[i]) {
			t.Fatalf("%s does not contain %q:\n%s", path, oldNew[i], s)
		}
		s = strings.Replace(s, oldNew[i], oldNew[i+1], 1)
	}
	writeFile(t, path, s)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFiles(t *testing.T, dir string, rels []string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, rel := range rels {
		data, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		out[rel] = data
	}
	return out
}

// goModTidy runs go mod tidy in dir (modules come from the cache or the module proxy).
func goModTidy(t *testing.T, dir string) {
	t.Helper()
	if _, err := (gocmd.Cmd{Args: []string{"mod", "tidy"}, Dir: dir, Env: append(os.Environ(), "GOFLAGS=-mod=mod")}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// equalJSON reports whether a and b marshal to the same JSON.
func equalJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}
