package codegen

import (
	"bytes"
	"context"
	"go/format"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/gengo/v2/types"

	"github.com/aagen-dev/aagen/internal/testskip"
)

const (
	fixtureModule = "example.com/fixture"
	fixtureTypes  = fixtureModule + "/pkg/apis/shop/v1"
	fixtureHeader = "/*\nCopyright The Fixture Authors.\n*/\n"
)

// wantPaths is the complete output for the fixture.
var wantPaths = []string{
	"pkg/apis/shop/v1/zz_generated.deepcopy.go",
	"pkg/apis/shop/v1/zz_generated.model_name.go",
	"pkg/generated/applyconfiguration/internal/internal.go",
	"pkg/generated/applyconfiguration/shop/v1/gadget.go",
	"pkg/generated/applyconfiguration/shop/v1/gadgetspec.go",
	"pkg/generated/applyconfiguration/shop/v1/widget.go",
	"pkg/generated/applyconfiguration/shop/v1/widgetspec.go",
	"pkg/generated/applyconfiguration/shop/v1/widgetstatus.go",
	"pkg/generated/applyconfiguration/utils.go",
	"pkg/generated/clientset/versioned/clientset.go",
	"pkg/generated/clientset/versioned/fake/clientset_generated.go",
	"pkg/generated/clientset/versioned/fake/doc.go",
	"pkg/generated/clientset/versioned/fake/register.go",
	"pkg/generated/clientset/versioned/scheme/doc.go",
	"pkg/generated/clientset/versioned/scheme/register.go",
	"pkg/generated/clientset/versioned/typed/shop/v1/doc.go",
	"pkg/generated/clientset/versioned/typed/shop/v1/fake/doc.go",
	"pkg/generated/clientset/versioned/typed/shop/v1/fake/fake_gadget.go",
	"pkg/generated/clientset/versioned/typed/shop/v1/fake/fake_shop_client.go",
	"pkg/generated/clientset/versioned/typed/shop/v1/fake/fake_widget.go",
	"pkg/generated/clientset/versioned/typed/shop/v1/gadget.go",
	"pkg/generated/clientset/versioned/typed/shop/v1/generated_expansion.go",
	"pkg/generated/clientset/versioned/typed/shop/v1/shop_client.go",
	"pkg/generated/clientset/versioned/typed/shop/v1/widget.go",
	"pkg/generated/informers/externalversions/factory.go",
	"pkg/generated/informers/externalversions/generic.go",
	"pkg/generated/informers/externalversions/internalinterfaces/factory_interfaces.go",
	"pkg/generated/informers/externalversions/shop/interface.go",
	"pkg/generated/informers/externalversions/shop/v1/gadget.go",
	"pkg/generated/informers/externalversions/shop/v1/interface.go",
	"pkg/generated/informers/externalversions/shop/v1/widget.go",
	"pkg/generated/listers/shop/v1/expansion_generated.go",
	"pkg/generated/listers/shop/v1/gadget.go",
	"pkg/generated/listers/shop/v1/widget.go",
	"pkg/generated/openapi/zz_generated.openapi.go",
}

// copyFixture copies testdata/fixture into a fresh directory.
func copyFixture(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join("testdata", "fixture")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func fixtureInput(dir string) Input {
	return Input{
		ModuleDir:  dir,
		ModulePath: fixtureModule,
		Header:     []byte(fixtureHeader),
		// The fixture requires k8s.io/api (see its tools.go), so Scale's schema can be generated.
		ExtraOpenAPIPackages: []string{"k8s.io/api/autoscaling/v1"},
		Packages: []Package{{
			ImportPath:       fixtureTypes,
			Dir:              filepath.Join(dir, "pkg", "apis", "shop", "v1"),
			Group:            "shop.example.com",
			GroupPackageName: "shop",
			Version:          "v1",
			Kinds: []Kind{
				{Name: "Widget", NamespaceScoped: true, HasStatus: true},
				// No +genclient in the fixture: the tag is injected.
				{Name: "Gadget"},
			},
		}},
	}
}

// snapshot records every file under dir with its content and modification time.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		var b []byte
		if !d.IsDir() {
			if b, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		m[p] = info.Mode().String() + " " + info.ModTime().String() + "\n" + string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// isolateTemp points os.TempDir at an empty directory and fails the test if
// Run leaves anything in it.
func isolateTemp(t *testing.T) {
	t.Helper()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Cleanup(func() {
		if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
			t.Errorf("Run left %d entries in the temp dir, e.g. %s", len(entries), entries[0].Name())
		}
	})
}

func toolFor(p string) string {
	switch {
	case strings.HasSuffix(p, "/zz_generated.deepcopy.go"):
		return toolDeepcopy
	case strings.HasPrefix(p, "pkg/generated/openapi/"), strings.HasSuffix(p, "/zz_generated.model_name.go"):
		return toolOpenAPI
	case strings.HasPrefix(p, "pkg/generated/clientset/"):
		return toolClient
	case strings.HasPrefix(p, "pkg/generated/listers/"):
		return toolLister
	case strings.HasPrefix(p, "pkg/generated/informers/"):
		return toolInformer
	case strings.HasPrefix(p, "pkg/generated/applyconfiguration/"):
		return toolApplyConfig
	}
	return ""
}

func paths(files []File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Path)
	}
	return out
}

func TestRun(t *testing.T) {
	isolateTemp(t)
	dir := copyFixture(t)
	before := snapshot(t, dir)

	files, stats, err := RunWithStats(context.Background(), fixtureInput(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first run: load %v, total %v, steps %v", stats.Load, stats.Total, stats.Steps)

	if got := paths(files); !slices.Equal(got, wantPaths) {
		t.Errorf("paths:\ngot  %q\nwant %q", got, wantPaths)
	}
	const buildTag = "//go:build !ignore_autogenerated\n// +build !ignore_autogenerated\n\n"
	argv0 := filepath.Base(os.Args[0])
	for _, f := range files {
		tool := toolFor(f.Path)
		rest := f.Content
		if tool == toolDeepcopy || tool == toolOpenAPI {
			var ok bool
			if rest, ok = bytes.CutPrefix(rest, []byte(buildTag)); !ok {
				t.Errorf("%s: does not start with the build tag", f.Path)
			}
		}
		wantHead := fixtureHeader + "\n" + generatedBy(tool) + "\n"
		if !bytes.HasPrefix(rest, []byte(wantHead)) {
			t.Errorf("%s: header:\n%s\nwant prefix:\n%s", f.Path, firstLines(f.Content, 10), wantHead)
		}
		if bytes.Contains(f.Content, []byte("Code generated by "+argv0)) {
			t.Errorf("%s: names the test binary", f.Path)
		}
		if formatted, err := format.Source(f.Content); err != nil || !bytes.Equal(formatted, f.Content) {
			t.Errorf("%s: not gofmt-clean (err %v)", f.Path, err)
		}
	}

	// Injected tags had their effect: Widget gets status verbs, Gadget (no
	// +genclient in the source) gets a cluster-scoped client without them.
	content := map[string]string{}
	for _, f := range files {
		content[f.Path] = string(f.Content)
	}
	typed := "pkg/generated/clientset/versioned/typed/shop/v1/"
	for _, c := range []struct{ file, want string }{
		{typed + "widget.go", "UpdateStatus(ctx context.Context, widget *shopv1.Widget"},
		{typed + "widget.go", "ApplyStatus(ctx context.Context, widget *"},
		{typed + "shop_client.go", "func (c *ShopV1Client) Gadgets() GadgetInterface"},
		{typed + "shop_client.go", "func (c *ShopV1Client) Widgets(namespace string) WidgetInterface"},
		{typed + "shop_client.go", "features provided by the shop.example.com group"},
		{"pkg/apis/shop/v1/zz_generated.deepcopy.go", "func (in *GadgetList) DeepCopyObject() runtime.Object"},
		{"pkg/generated/openapi/zz_generated.openapi.go", `Description: "Widget is a namespaced thing with a status.",`},
		{"pkg/generated/openapi/zz_generated.openapi.go", "schema_k8sio_api_autoscaling_v1_Scale(ref)"},
		{"pkg/generated/openapi/zz_generated.openapi.go", "intstr.IntOrString{}.OpenAPIModelName():"},
	} {
		if !strings.Contains(content[c.file], c.want) {
			t.Errorf("%s does not contain %q", c.file, c.want)
		}
	}
	if strings.Contains(content[typed+"gadget.go"], "UpdateStatus") {
		t.Errorf("gadget client has UpdateStatus despite HasStatus=false")
	}

	// The models-schema step fed applyconfiguration-gen: the apply schema is
	// embedded and Extract functions exist.
	apply := "pkg/generated/applyconfiguration/"
	for _, c := range []struct{ file, want string }{
		{apply + "internal/internal.go", "- name: com.example.fixture.pkg.apis.shop.v1.Widget\n"},
		{apply + "internal/internal.go", "- name: com.example.fixture.pkg.apis.shop.v1.GadgetSpec\n"},
		{apply + "internal/internal.go", "- name: io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta\n"},
		{apply + "shop/v1/widget.go", "func ExtractWidget(widget *shopv1.Widget, fieldManager string) (*WidgetApplyConfiguration, error)"},
		{apply + "shop/v1/widget.go", "func ExtractWidgetStatus("},
		{apply + "shop/v1/gadget.go", "func ExtractGadget(gadget *shopv1.Gadget, fieldManager string) (*GadgetApplyConfiguration, error)"},
	} {
		if !strings.Contains(content[c.file], c.want) {
			t.Errorf("%s does not contain %q", c.file, c.want)
		}
	}
	var tools []string
	for _, st := range stats.Steps {
		tools = append(tools, st.Tool)
	}
	if want := []string{toolDeepcopy, toolOpenAPI, toolOpenAPI, toolModelsSchema, toolApplyConfig, toolClient, toolLister, toolInformer}; !slices.Equal(tools, want) {
		t.Errorf("steps %q, want %q", tools, want)
	}

	again, err := Run(context.Background(), fixtureInput(dir))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(files, again) {
		t.Errorf("second run differs")
	}
	if after := snapshot(t, dir); !reflect.DeepEqual(before, after) {
		t.Errorf("Run changed the module directory")
	}
	// Like a fresh module, the fixture requires k8s.io/kube-openapi only
	// indirectly and not the modules its pkg/common and pkg/validation/spec
	// import, which the models-schema program needs: the step resolved them
	// in a copy of go.mod and go.sum (the snapshot shows the originals are
	// untouched).
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"github.com/emicklei/go-restful/v3", "github.com/go-openapi/jsonreference"} {
		if bytes.Contains(mod, []byte(m)) {
			t.Errorf("fixture go.mod requires %s; the test no longer shows that missing requirements are resolved", m)
		}
	}
}

func firstLines(b []byte, n int) string {
	lines := strings.SplitN(string(b), "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// outputModule writes the output into a copy of the fixture, plus extra
// files (path relative to the module: content), and makes the module
// complete with go mod tidy. It returns the module directory and the go
// command.
func outputModule(t *testing.T, extra map[string]string) (dir, goBin string) {
	t.Helper()
	testskip.Short(t, "builds client-go")
	goBin, err := exec.LookPath("go")
	if err != nil {
		testskip.Skip(t, "go not on PATH")
	}
	dir = copyFixture(t)
	files, err := Run(context.Background(), fixtureInput(dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sortedKeys(extra) {
		files = append(files, File{Path: name, Content: []byte(extra[name])})
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The generated code needs client-go and kube-openapi. Offer tidy the
	// parent module's checksums (a superset, same versions) so that it does
	// not have to ask the checksum database.
	parentSum, err := os.ReadFile(filepath.Join("..", "..", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), append(sum, parentSum...), 0o644); err != nil {
		t.Fatal(err)
	}
	goCmd(t, dir, goBin, "mod", "tidy")
	return dir, goBin
}

func goCmd(t *testing.T, dir, goBin string, args ...string) {
	t.Helper()
	cmd := exec.Command(goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestRunOutputCompiles builds and vets the output in a copy of the fixture.
// The fixture's register.go needs DeepCopyObject, so the types package itself
// only compiles with the generated deepcopy.
func TestRunOutputCompiles(t *testing.T) {
	dir, goBin := outputModule(t, nil)
	goCmd(t, dir, goBin, "build", "./...")
	goCmd(t, dir, goBin, "vet", "./...")
}

// fakeClientsetTest exercises the generated fake clientset. NewClientset
// converts every object with the apply schema's type converter: with an
// empty schema (no models-schema step) it fails with "no type found
// matching: com.example.fixture.pkg.apis.shop.v1.Widget".
const fakeClientsetTest = `package fakecheck

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shopv1 "example.com/fixture/pkg/apis/shop/v1"
	applyv1 "example.com/fixture/pkg/generated/applyconfiguration/shop/v1"
	"example.com/fixture/pkg/generated/clientset/versioned/fake"
)

func TestFakeClientset(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(
		&shopv1.Widget{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}, Spec: shopv1.WidgetSpec{Size: 1, Colors: []string{"red"}}},
		&shopv1.Gadget{ObjectMeta: metav1.ObjectMeta{Name: "g"}, Spec: shopv1.GadgetSpec{Owner: "me"}},
	)
	widgets := cs.ShopV1().Widgets("ns")
	if _, err := widgets.Create(ctx, &shopv1.Widget{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}, Spec: shopv1.WidgetSpec{Size: 2}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("Create: %v", err)
	}
	a, err := widgets.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if a.Spec.Size != 1 || len(a.Spec.Colors) != 1 {
		t.Errorf("Get: spec %+v", a.Spec)
	}
	list, err := widgets.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(list.Items) != 2 {
		t.Errorf("List: %d widgets, want 2", len(list.Items))
	}
	gadgets, err := cs.ShopV1().Gadgets().List(ctx, metav1.ListOptions{})
	if err != nil || len(gadgets.Items) != 1 || gadgets.Items[0].Spec.Owner != "me" {
		t.Errorf("Gadgets().List: %v, %+v", err, gadgets)
	}

	// Server-side apply and Extract use the same schema.
	applied, err := widgets.Apply(ctx, applyv1.Widget("c", "ns").WithSpec(applyv1.WidgetSpec().WithSize(3)), metav1.ApplyOptions{FieldManager: "tester"})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if applied.Spec.Size != 3 {
		t.Errorf("Apply: spec %+v", applied.Spec)
	}
	extracted, err := applyv1.ExtractWidget(applied, "tester")
	if err != nil {
		t.Fatalf("ExtractWidget: %v", err)
	}
	if extracted.Spec == nil || extracted.Spec.Size == nil || *extracted.Spec.Size != 3 {
		t.Errorf("ExtractWidget: %+v", extracted)
	}
}
`

// TestRunFakeClientset runs a test of the generated fake clientset
// (NewClientset, Create, Get, List, Apply, Extract) in a copy of the fixture.
func TestRunFakeClientset(t *testing.T) {
	dir, goBin := outputModule(t, map[string]string{"pkg/fakecheck/fake_test.go": fakeClientsetTest})
	goCmd(t, dir, goBin, "test", "-count=1", "./pkg/fakecheck/")
}

func TestRunIgnoresStaleGeneratedFiles(t *testing.T) {
	isolateTemp(t)
	dir := copyFixture(t)
	clean, err := Run(context.Background(), fixtureInput(dir))
	if err != nil {
		t.Fatal(err)
	}
	// What a previous run could have left behind: types that no longer
	// exist, methods that clash, and a syntax error.
	stale := `//go:build !ignore_autogenerated
// +build !ignore_autogenerated

// Code generated by deepcopy-gen. DO NOT EDIT.

package v1

import "k8s.io/apimachinery/pkg/runtime"

func (in *Widget) DeepCopyInto(out *Widget) { out.Removed = in.Removed }

func (in *Sprocket) DeepCopyObject() runtime.Object { return in }

func (in *Widget) DeepCopyInto(out *Widget) {}

this is not Go
`
	if err := os.WriteFile(filepath.Join(dir, "pkg", "apis", "shop", "v1", deepcopyFileName), []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	// Stale generated files under other names, left out of the load by the
	// same build tag: the models-schema step must not compile them either
	// (they clash with the generated methods and functions).
	staleElsewhere := map[string]string{
		"pkg/apis/shop/v1/zz_generated.old.go":       "//go:build !ignore_autogenerated\n\npackage v1\n\nimport \"k8s.io/apimachinery/pkg/runtime\"\n\nfunc (in *Widget) DeepCopyObject() runtime.Object { return in }\n",
		"pkg/generated/openapi/openapi_generated.go": "//go:build !ignore_autogenerated\n\npackage openapi\n\nfunc GetOpenAPIDefinitions() {}\n",
	}
	for name, content := range staleElsewhere {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, err := Run(context.Background(), fixtureInput(dir))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(files, clean) {
		t.Errorf("output with a stale deepcopy file differs from the clean output")
	}
}

// TestRunSharedLoadMatchesSeparateLoads shows that sharing one load and
// universe between the generators gives the same bytes as giving each its
// own, as the standalone tools do.
func TestRunSharedLoadMatchesSeparateLoads(t *testing.T) {
	testskip.Short(t, "loads six times")
	dir := copyFixture(t)
	shared, _, err := run(context.Background(), fixtureInput(dir), runOptions{})
	if err != nil {
		t.Fatal(err)
	}
	separate, _, err := run(context.Background(), fixtureInput(dir), runOptions{loadPerStep: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(shared), paths(separate); !slices.Equal(got, want) {
		t.Fatalf("paths differ:\nshared   %q\nseparate %q", got, want)
	}
	for i := range shared {
		if !bytes.Equal(shared[i].Content, separate[i].Content) {
			t.Errorf("%s differs between shared and separate loads", shared[i].Path)
		}
	}
}

func TestRunViolationReport(t *testing.T) {
	dir := copyFixture(t)
	in := fixtureInput(dir)
	in.SkipApplySchema = true
	var report bytes.Buffer
	in.ViolationReport = &report
	if _, err := Run(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	// The fixture's own types follow the API rules; apimachinery's do not.
	if want := "API rule violation: names_match,k8s.io/apimachinery/pkg/util/intstr,IntOrString,IntVal\n"; !strings.Contains(report.String(), want) {
		t.Errorf("report does not contain %q:\n%s", want, report.String())
	}
	if strings.Contains(report.String(), fixtureTypes) {
		t.Errorf("unexpected violations in the fixture:\n%s", report.String())
	}
}

func TestRunInvalidInput(t *testing.T) {
	dir := copyFixture(t)
	for _, c := range []struct {
		name   string
		modify func(*Input)
		want   string
	}{
		{"relative module dir", func(in *Input) { in.ModuleDir = "fixture" }, "not an absolute path"},
		{"no module path", func(in *Input) { in.ModulePath = "" }, "ModulePath is empty"},
		{"no packages", func(in *Input) { in.Packages = nil }, "no types packages"},
		{"output outside module", func(in *Input) { in.OutputPkg = "example.com/other" }, "not inside module"},
		{"header not a comment", func(in *Input) { in.Header = []byte("Copyright me\n") }, "Go comments only"},
		{"version not last element", func(in *Input) { in.Packages[0].Version = "v2" }, "last element of the import path"},
		{"group package name", func(in *Input) { in.Packages[0].GroupPackageName = "store" }, "parent directory"},
		{"hyphenated first group label", func(in *Input) { in.Packages[0].Group = "my-shop.example.com" }, "first label is a Go identifier"},
		{"core group", func(in *Input) { in.Packages[0].Group = "" }, "not a lower-case DNS subdomain"},
		{"wrong dir", func(in *Input) { in.Packages[0].Dir = dir }, "Dir"},
		{"duplicate kind", func(in *Input) { in.Packages[0].Kinds = append(in.Packages[0].Kinds, Kind{Name: "Widget"}) }, `kind "Widget" listed twice`},
		{"kind is another kind's list", func(in *Input) { in.Packages[0].Kinds = append(in.Packages[0].Kinds, Kind{Name: "WidgetList"}) }, "list type of kind"},
		{"unexported kind", func(in *Input) { in.Packages[0].Kinds[0].Name = "widget" }, "exported Go identifier"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := fixtureInput(dir)
			in.Packages[0].Kinds = slices.Clone(in.Packages[0].Kinds)
			c.modify(&in)
			_, err := Run(context.Background(), in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// TestRunUnknownKind exercises the checks made on the loaded universe.
func TestRunUnknownKind(t *testing.T) {
	isolateTemp(t)
	in := fixtureInput(copyFixture(t))
	in.Packages[0].Kinds = append(in.Packages[0].Kinds, Kind{Name: "WidgetSpec"}, Kind{Name: "Sprocket"})
	_, err := Run(context.Background(), in)
	for _, want := range []string{
		"type Sprocket not found",
		"type WidgetSpec does not embed k8s.io/apimachinery/pkg/apis/meta/v1.TypeMeta",
		"type WidgetSpecList not found",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to contain %q", err, want)
		}
	}
}

// TestRunSkipApplySchema: without the models-schema step the apply schema is
// empty and there are no Extract functions; everything else is the same.
func TestRunSkipApplySchema(t *testing.T) {
	isolateTemp(t)
	dir := copyFixture(t)
	in := fixtureInput(dir)
	in.SkipApplySchema = true
	skipped, stats, err := RunWithStats(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range stats.Steps {
		if st.Tool == toolModelsSchema {
			t.Errorf("models-schema step ran")
		}
	}
	full, err := Run(context.Background(), fixtureInput(dir))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(skipped), paths(full); !slices.Equal(got, want) {
		t.Fatalf("paths differ:\nskipped %q\nfull    %q", got, want)
	}
	for i, f := range skipped {
		differs := !bytes.Equal(f.Content, full[i].Content)
		wantDiffer := strings.HasPrefix(f.Path, "pkg/generated/applyconfiguration/internal/") ||
			f.Path == "pkg/generated/applyconfiguration/shop/v1/widget.go" ||
			f.Path == "pkg/generated/applyconfiguration/shop/v1/gadget.go"
		if differs != wantDiffer {
			t.Errorf("%s: differs %v, want %v", f.Path, differs, wantDiffer)
		}
		if strings.HasPrefix(f.Path, "pkg/generated/applyconfiguration/") &&
			(bytes.Contains(f.Content, []byte("func Extract")) || bytes.Contains(f.Content, []byte("com.example.fixture.pkg.apis.shop.v1.Widget"))) {
			t.Errorf("%s: has Extract functions or schema entries despite SkipApplySchema", f.Path)
		}
	}
}

// TestRunModelsSchemaCompileError: a types package that does not compile
// even with the generated files fails the models-schema step with the go
// command's output and a hint, and leaves nothing behind.
func TestRunModelsSchemaCompileError(t *testing.T) {
	isolateTemp(t)
	dir := copyFixture(t)
	broken := "package v1\n\nvar _ = notDefinedAnywhere\n"
	if err := os.WriteFile(filepath.Join(dir, "pkg", "apis", "shop", "v1", "broken.go"), []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	_, err := Run(context.Background(), fixtureInput(dir))
	for _, want := range []string{"codegen: models-schema: go run", "undefined: notDefinedAnywhere", "hint:", "SkipApplySchema"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to contain %q", err, want)
		}
	}
	if after := snapshot(t, dir); !reflect.DeepEqual(before, after) {
		t.Errorf("Run changed the module directory")
	}
	// The same package is fine when the step is skipped: the load ignores
	// type errors.
	in := fixtureInput(dir)
	in.SkipApplySchema = true
	if _, err := Run(context.Background(), in); err != nil {
		t.Errorf("with SkipApplySchema: %v", err)
	}
}

// TestRunModelsSchemaMissingDefinition: a served type that uses a type whose
// package has no OpenAPI definitions is reported with the missing names
// instead of applyconfiguration-gen's panic.
func TestRunModelsSchemaMissingDefinition(t *testing.T) {
	dir := copyFixture(t)
	typesGo := filepath.Join(dir, "pkg", "apis", "shop", "v1", "types.go")
	b, err := os.ReadFile(typesGo)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("\tOwner string `json:\"owner,omitempty\"`\n"),
		[]byte("\tOwner string `json:\"owner,omitempty\"`\n\t// Scale is borrowed.\n\t// +optional\n\tScale *autoscalingv1.ScaleSpec `json:\"scale,omitempty\"`\n"), 1)
	b = bytes.Replace(b, []byte("import (\n"), []byte("import (\n\tautoscalingv1 \"k8s.io/api/autoscaling/v1\"\n"), 1)
	if err := os.WriteFile(typesGo, b, 0o644); err != nil {
		t.Fatal(err)
	}
	in := fixtureInput(dir)
	in.ExtraOpenAPIPackages = nil
	_, err = Run(context.Background(), in)
	for _, want := range []string{
		// openapi-gen refers to types outside its inputs by Go name.
		"\n  k8s.io/api/autoscaling/v1.ScaleSpec (referenced by com.example.fixture.pkg.apis.shop.v1.GadgetSpec)\n",
		"hint: aagen defines every type the served kinds reach",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to contain %q", err, want)
		}
	}
	// With the package's definitions it works.
	if _, err := Run(context.Background(), fixtureInput(dir)); err != nil {
		t.Errorf("with k8s.io/api/autoscaling/v1 definitions: %v", err)
	}
	// As it does when the type is referenced (what the generator passes, from
	// load.ReferencedTypes): openapi-gen then defines that type of the package, not all
	// of them, and the apply configurations use client-go's.
	in.ReferencedTypes = []string{"k8s.io/api/autoscaling/v1.ScaleSpec"}
	files, err := Run(context.Background(), in)
	if err != nil {
		t.Fatalf("with ScaleSpec referenced: %v", err)
	}
	defs := fileContent(t, files, "pkg/generated/openapi/zz_generated.openapi.go")
	if !strings.Contains(defs, "autoscalingv1.ScaleSpec{}.OpenAPIModelName(): ") || strings.Contains(defs, "autoscalingv1.ScaleStatus{}") {
		t.Errorf("openapi definitions: want ScaleSpec's and not ScaleStatus's (not referenced)")
	}
	ac := fileContent(t, files, "pkg/generated/applyconfiguration/shop/v1/gadgetspec.go")
	if !strings.Contains(ac, `"k8s.io/client-go/applyconfigurations/autoscaling/v1"`) || !strings.Contains(ac, "*autoscalingv1.ScaleSpecApplyConfiguration") {
		t.Errorf("GadgetSpec's apply configuration does not use client-go's ScaleSpecApplyConfiguration:\n%s", ac)
	}
}

// fileContent returns the content of the file at path among files, failing the test without it.
func fileContent(t *testing.T, files []File, path string) string {
	t.Helper()
	for _, f := range files {
		if f.Path == path {
			return string(f.Content)
		}
	}
	t.Fatalf("no file %s among %d", path, len(files))
	return ""
}

func TestSchemaGoEnv(t *testing.T) {
	t.Setenv("GOFLAGS", "-mod=vendor -tags=foo --modfile=/x/go.mod -overlay=/y.json -modcacherw")
	t.Setenv("GOWORK", "/z/go.work")
	env := schemaGoEnv()
	var got []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOFLAGS=") || strings.HasPrefix(kv, "GOWORK=") {
			got = append(got, kv)
		}
	}
	if want := []string{"GOFLAGS=-tags=foo -modcacherw", "GOWORK=off"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestRunKlogFatalBecomesError drives applyconfiguration-gen into its
// klog.Fatalf with an unparsable schema: Run must return, not exit, and
// clean up. It also shows that a caller's OpenAPISchema wins over the
// models-schema step, whose output would parse.
func TestRunKlogFatalBecomesError(t *testing.T) {
	isolateTemp(t)
	in := fixtureInput(copyFixture(t))
	in.OpenAPISchema = []byte("{not json")
	_, err := Run(context.Background(), in)
	if err == nil || !strings.Contains(err.Error(), "applyconfiguration-gen GetTargets: Failed build type models") ||
		!strings.Contains(err.Error(), "failed to unmarshal typeModels JSON") || !strings.Contains(err.Error(), "(klog.Fatal, exit status 255") {
		t.Fatalf("err = %v, want applyconfiguration-gen's klog.Fatal, with its reason, as an error", err)
	}
}

func TestRunCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, fixtureInput(copyFixture(t))); err != context.Canceled {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestInjectTags(t *testing.T) {
	const pkgPath = "example.com/m/pkg/apis/shop/v1"
	u := types.Universe{}
	p := u.Package(pkgPath)
	p.Comments = []string{"Package v1 is the v1 API.", "+groupName=old.example.com", "+k8s:deepcopy-gen=false", "+k8s:client-gen=false"}
	widget := u.Type(types.Name{Package: pkgPath, Name: "Widget"})
	widget.SecondClosestCommentLines = []string{"+genclient", "+genclient:method=Scale,verb=get,subresource=scale"}
	widget.CommentLines = []string{"Widget is a widget.", "+genclient:noStatus", "+k8s:openapi-gen=false"}
	list := u.Type(types.Name{Package: pkgPath, Name: "WidgetList"})
	list.CommentLines = []string{"+k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object"}
	helper := u.Type(types.Name{Package: pkgPath, Name: "Helper"})
	helper.CommentLines = []string{"Helper helps.", "+genclient", "+genclient:nonNamespaced", "+k8s:deepcopy-gen=false"}
	// A kind whose DeepCopyObject is hand-written (prometheus-operator's): no interfaces tag,
	// or deepcopy-gen would declare the method a second time.
	gadget := u.Type(types.Name{Package: pkgPath, Name: "Gadget"})
	gadget.CommentLines = []string{"Gadget copies itself."}
	gadget.Methods = map[string]*types.Type{"DeepCopyObject": {Kind: types.Func}}

	in := Input{Packages: []Package{{ImportPath: pkgPath, Group: "shop.example.com", Kinds: []Kind{{Name: "Widget"}, {Name: "Gadget", NamespaceScoped: true, HasStatus: true}}}}}
	injectTags(u, in)
	check := func() {
		t.Helper()
		for _, c := range []struct {
			name      string
			got, want []string
		}{
			{"package", p.Comments, []string{"Package v1 is the v1 API.", "+k8s:deepcopy-gen=package", "+k8s:openapi-gen=true", "+groupName=shop.example.com", "+k8s:openapi-model-package=com.example.m.pkg.apis.shop.v1"}},
			{"package doc", p.DocComments, []string{"+k8s:deepcopy-gen=package", "+k8s:openapi-gen=true", "+groupName=shop.example.com", "+k8s:openapi-model-package=com.example.m.pkg.apis.shop.v1"}},
			{"widget second", widget.SecondClosestCommentLines, []string{"+genclient:method=Scale,verb=get,subresource=scale"}},
			{"widget", widget.CommentLines, []string{"Widget is a widget.", "+k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object", "+genclient", "+genclient:nonNamespaced", "+genclient:noStatus"}},
			{"list", list.CommentLines, []string{"+k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object"}},
			{"helper", helper.CommentLines, []string{"Helper helps.", "+k8s:deepcopy-gen=false"}},
			{"gadget", gadget.CommentLines, []string{"Gadget copies itself.", "+genclient"}},
		} {
			if !slices.Equal(c.got, c.want) {
				t.Errorf("%s:\ngot  %q\nwant %q", c.name, c.got, c.want)
			}
		}
	}
	check()
	injectTags(u, in) // idempotent
	check()
}

// TestRunReferencedModulePackage: a served type uses a struct of another package of the
// module, which has no OpenAPI tags at all. openapi-gen defines it under the package's
// REST-friendly model name, which a zz_generated.model_name.go in that package provides,
// as it does for the types packages, and the apply schema compiles.
func TestRunReferencedModulePackage(t *testing.T) {
	dir := copyFixture(t)
	shared := filepath.Join(dir, "pkg", "shared")
	if err := os.MkdirAll(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	src := "package shared\n\n// Address is where a gadget ships to.\ntype Address struct {\n\t// Street is the street.\n\tStreet string `json:\"street\"`\n}\n"
	if err := os.WriteFile(filepath.Join(shared, "shared.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	typesGo := filepath.Join(dir, "pkg", "apis", "shop", "v1", "types.go")
	b, err := os.ReadFile(typesGo)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("\tOwner string `json:\"owner,omitempty\"`\n"),
		[]byte("\tOwner string `json:\"owner,omitempty\"`\n\t// ShipTo is the address.\n\t// +optional\n\tShipTo *shared.Address `json:\"shipTo,omitempty\"`\n"), 1)
	b = bytes.Replace(b, []byte("import (\n"), []byte("import (\n\t\"example.com/fixture/pkg/shared\"\n"), 1)
	if err := os.WriteFile(typesGo, b, 0o644); err != nil {
		t.Fatal(err)
	}
	in := fixtureInput(dir)
	in.ReferencedTypes = []string{fixtureModule + "/pkg/shared.Address"}
	files, err := Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	names := fileContent(t, files, "pkg/shared/zz_generated.model_name.go")
	if !strings.Contains(names, `return "com.example.fixture.pkg.shared.Address"`) {
		t.Errorf("pkg/shared/zz_generated.model_name.go:\n%s", names)
	}
	defs := fileContent(t, files, "pkg/generated/openapi/zz_generated.openapi.go")
	if !strings.Contains(defs, "shared.Address{}.OpenAPIModelName(): ") || !strings.Contains(defs, "Street is the street.") {
		t.Errorf("openapi definitions lack shared.Address")
	}
}

// TestRunHidesShadowedFields: a struct that inlines another with a field of the same JSON
// name as one of its own (prometheus-operator's ProbeSpec and HTTPConfig) gets one property
// of that name in its definition, as encoding/json has one field (Input.Validation's
// Shadowed); a struct that inlines the same struct without a clash keeps the inlined field.
// Without the hiding the definitions have one key twice and the models-schema step, which
// compiles them, fails. The other generators' output is the same with and without it.
func TestRunHidesShadowedFields(t *testing.T) {
	isolateTemp(t)
	dir := copyFixture(t)
	src := "package v1\n\n" +
		"// Probe has an authorization of its own and inlines HTTPConfig's.\ntype Probe struct {\n\tAuthorization string `json:\"authorization,omitempty\"`\n\tHTTPConfig `json:\",inline\"`\n}\n\n" +
		"// HTTPConfig is inlined by Probe and Endpoint.\ntype HTTPConfig struct {\n\tProxy string `json:\"proxy,omitempty\"`\n\t// Authorization of the connection.\n\tAuthorization *string `json:\"authorization,omitempty\"`\n}\n\n" +
		"// Endpoint inlines HTTPConfig without a clash.\ntype Endpoint struct {\n\tPort int32 `json:\"port\"`\n\tHTTPConfig `json:\",inline\"`\n}\n\n" +
		// The same through an inline pointer: Window hides the note *Schedule brings in.
		"// Window has a note of its own and inlines a pointer to Schedule.\ntype Window struct {\n\tNote string `json:\"note,omitempty\"`\n\t*Schedule `json:\",inline\"`\n}\n\n" +
		"// Schedule is inlined by Window.\ntype Schedule struct {\n\tStart string `json:\"start,omitempty\"`\n\t// Note on the schedule.\n\tNote *string `json:\"note,omitempty\"`\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "pkg", "apis", "shop", "v1", "probe.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	in := fixtureInput(dir)
	in.Validation = map[string][]TypeValidation{fixtureTypes: {{Name: "Probe", Shadowed: [][]string{{"HTTPConfig", "Authorization"}}},
		{Name: "Window", Shadowed: [][]string{{"Schedule", "Note"}}}}}
	hidden, err := Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	openapi := string(fileNamed(t, hidden, "pkg/generated/openapi/zz_generated.openapi.go"))
	definition := func(fn string) string {
		start := strings.Index(openapi, "func "+fn+"(")
		if start < 0 {
			t.Fatalf("no %s in the definitions", fn)
		}
		end := strings.Index(openapi[start:], "\n}\n")
		return openapi[start : start+end]
	}
	if probe := definition("schema_pkg_apis_shop_v1_Probe"); strings.Count(probe, `"authorization": {`) != 1 || !strings.Contains(probe, `"proxy": {`) {
		t.Errorf("Probe's definition wants one authorization and the proxy:\n%s", probe)
	}
	if endpoint := definition("schema_pkg_apis_shop_v1_Endpoint"); strings.Count(endpoint, `"authorization": {`) != 1 || !strings.Contains(endpoint, "Authorization of the connection.") {
		t.Errorf("Endpoint's definition wants HTTPConfig's authorization:\n%s", endpoint)
	}
	if window := definition("schema_pkg_apis_shop_v1_Window"); strings.Count(window, `"note": {`) != 1 || !strings.Contains(window, `"start": {`) || strings.Contains(window, "Note on the schedule.") {
		t.Errorf("Window's definition wants its own note and the start:\n%s", window)
	}
	if schedule := definition("schema_pkg_apis_shop_v1_Schedule"); !strings.Contains(schedule, "Note on the schedule.") {
		t.Errorf("Schedule's own definition wants its note:\n%s", schedule)
	}

	plain := fixtureInput(dir)
	plain.SkipApplySchema, in.SkipApplySchema = true, true
	if _, err := Run(context.Background(), fixtureInput(dir)); err == nil || !strings.Contains(err.Error(), "models-schema") {
		t.Errorf("without the hiding, want the models-schema step to fail on a key written twice, got %v", err)
	}
	without, err := Run(context.Background(), plain)
	if err != nil {
		t.Fatal(err)
	}
	with, err := Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := paths(with), paths(without); !slices.Equal(got, want) {
		t.Fatalf("paths differ:\nwith    %q\nwithout %q", got, want)
	}
	for i, f := range with {
		if f.Path != "pkg/generated/openapi/zz_generated.openapi.go" && !bytes.Equal(f.Content, without[i].Content) {
			t.Errorf("%s differs with the hiding", f.Path)
		}
	}
}

// fileNamed returns the content of the file at p among files.
func fileNamed(t *testing.T, files []File, p string) []byte {
	t.Helper()
	for _, f := range files {
		if f.Path == p {
			return f.Content
		}
	}
	t.Fatalf("no file %s among %q", p, paths(files))
	return nil
}
