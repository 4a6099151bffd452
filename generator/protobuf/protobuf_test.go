package protobuf

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/aagen-dev/aagen/generator/load"
	"github.com/aagen-dev/aagen/generator/model"
	"github.com/aagen-dev/aagen/generator/protonum"
)

var updateProtoShape = flag.Bool("update", false, "rewrite internal/protoshape's generated files")

// protoShapeRoots are the types of internal/protoshape the emitter starts from.
var protoShapeRoots = []string{"Deployment", "DeploymentList", "ResourceRequirements", "ConfigMap", "ConfigMapList", "PodDNSConfig", "PodSecurityContext", "Gauge"}

func loadPackage(t *testing.T, dir string) *packages.Package {
	t.Helper()
	cfg := &packages.Config{
		Dir:        dir,
		Mode:       packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedImports,
		BuildFlags: []string{"-tags=" + load.BuildTag},
	}
	pkgs, err := packages.Load(cfg, ".")
	if err != nil {
		t.Fatal(err)
	}
	// Dependencies type-check with errors under the tag that leaves out generated files
	// (apimachinery's deepcopy); only the package's own errors matter, as in package load.
	if len(pkgs) != 1 || len(pkgs[0].Errors) > 0 {
		t.Fatalf("loading %s: %d packages: %v", dir, len(pkgs), pkgs)
	}
	return pkgs[0]
}

// analyse is what model.Build computes for a version: the package's protobuf messages
// reachable from roots, or the fields that keep it JSON-only.
func analyse(t *testing.T, p *packages.Package, roots ...string) *model.Protobuf {
	t.Helper()
	pb, err := model.ProtobufOf(model.TypeGraph([]*packages.Package{p}), p.PkgPath, roots)
	if err != nil {
		t.Fatal(err)
	}
	return pb
}

// render analyses roots of p and renders them: the output, the warnings and the error.
func render(t *testing.T, p *packages.Package, roots []string, old []byte, numbersFile string) (*Output, []model.Diagnostic, error) {
	t.Helper()
	pb := analyse(t, p, roots...)
	out, err := Package(pb, old, numbersFile)
	return out, pb.Unsupported, err
}

// TestProtobufShapeGolden generates internal/protoshape's protobuf methods and numbers and
// compares them with the committed files, which protoshape's tests compare with k8s.io/api.
func TestProtobufShapeGolden(t *testing.T) {
	dir := filepath.Join("..", "..", "internal", "protoshape")
	p := loadPackage(t, dir)
	numbersPath := filepath.Join(dir, protonum.FileName)
	old, err := os.ReadFile(numbersPath)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out, diags, err := render(t, p, protoShapeRoots, old, "internal/protoshape/"+protonum.FileName)
	if err != nil {
		t.Fatal(err)
	}
	if len(diags) > 0 {
		t.Fatalf("unexpected warnings: %v", diags)
	}
	for name, content := range map[string][]byte{FileName: out.Go, protonum.FileName: out.Numbers, IDLFileName: out.Proto} {
		file := filepath.Join(dir, name)
		if *updateProtoShape {
			if err := os.WriteFile(file, content, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, content) {
			t.Errorf("%s is stale: run go test ./generator/protobuf -run TestProtobufShapeGolden -update", file)
		}
	}
	// The numbers come from the tags: DeploymentSpec's ProgressDeadlineSeconds is 9 (8 unused).
	if !strings.Contains(string(out.Numbers), "  ProgressDeadlineSeconds: 9\n") {
		t.Errorf("numbers file lacks ProgressDeadlineSeconds: 9:\n%s", out.Numbers)
	}
}

// TestProtobufUnsupported: a field the encoding cannot carry gives a warning at its
// file:line naming the field and why, and no output for the package.
func TestProtobufUnsupported(t *testing.T) {
	p := loadPackage(t, filepath.Join("testdata", "protobad"))
	for root, want := range map[string]string{
		"Anything":       "types.go:13:2: warning: no protobuf for package github.com/aagen-dev/aagen/generator/protobuf/testdata/protobad: Anything.Values has type map[string]any, an interface, which has no protobuf encoding",
		"Clock":          "types.go:17:2: warning: no protobuf for package github.com/aagen-dev/aagen/generator/protobuf/testdata/protobad: Clock.When has type time.Time, from package time, which has no protobuf methods",
		"Nested":         "types.go:25:2: warning: no protobuf for package github.com/aagen-dev/aagen/generator/protobuf/testdata/protobad: Wrapper.Matrix has type [][]string, a slice inside a slice or map",
		"Pointers":       "Pointers.Items has type []*Fine, a pointer in a slice or map",
		"PointerToSlice": "PointerToSlice.Names has type *[]string, a pointer to a slice",
		"Anonymous":      "Anonymous.Point has type struct{X int32}, an anonymous struct",
		"Stringer":       "Stringer already declares String, which the protobuf methods would redeclare",
		"TwoStringers":   "Stringer already declares String, which the protobuf methods would redeclare",
		"MapOfSlices":    "MapOfSlices.Extra has type map[string][]string, a slice inside a slice or map",
	} {
		out, diags, err := render(t, p, []string{root}, nil, "numbers.txt")
		if err != nil {
			t.Fatalf("%s: %v", root, err)
		}
		if out != nil || len(diags) != 1 {
			t.Fatalf("%s: want one warning and no output, got output %v and %v", root, out != nil, diags)
		}
		if got := diags[0].String(); !strings.Contains(got, want) || !strings.Contains(got, "fix: the package's kinds are served in JSON and YAML only") {
			t.Errorf("%s: warning\n%s\nwant it to contain\n%s", root, got, want)
		}
	}
}

// TestProtobufNumberConflict: two fields with one tag number are an error at the field.
func TestProtobufNumberConflict(t *testing.T) {
	p := loadPackage(t, filepath.Join("testdata", "protobad"))
	_, _, err := render(t, p, []string{"Twice"}, nil, "numbers.txt")
	if err == nil || !strings.Contains(err.Error(), "types.go:30:2: Twice.B and Twice.A have the same protobuf tag number 1") {
		t.Fatalf("want the conflict at types.go:30, got %v", err)
	}
}

// TestProtobufNumbersKept: numbers come from the file an earlier run wrote; a field added
// between two others gets the next number, a removed one stays reserved, and the generated
// code writes the fields in number order.
func TestProtobufNumbersKept(t *testing.T) {
	p := loadPackage(t, filepath.Join("testdata", "protobad"))
	old := "Fine:\n  ObjectMeta: 1\n  First: 2\n  Second: 3\n  Gone: 4\n"
	out, diags, err := render(t, p, []string{"Fine"}, []byte(old), "numbers.txt")
	if err != nil || len(diags) > 0 {
		t.Fatal(err, diags)
	}
	want := "Fine:\n  ObjectMeta: 1\n  First: 2\n  Second: 3\n  Added: 5\n  reserved: 4\n"
	if !strings.HasSuffix(string(out.Numbers), want) {
		t.Errorf("numbers:\n%s\nwant them to end with\n%s", out.Numbers, want)
	}
	// Size and Unmarshal know Added as field 5 (key 0x28), written after Second (key 0x18).
	src := string(out.Go)
	added, second := strings.Index(src, "dAtA[i] = 0x28"), strings.Index(src, "dAtA[i] = 0x18")
	if !strings.Contains(src, "case 5:") || added < 0 || second < 0 || added > second {
		t.Errorf("Added is not field 5 written last (backwards: first) in:\n%s", src)
	}
}

// TestProtobufAliases: fields whose types are aliases encode as the types they name.
func TestProtobufAliases(t *testing.T) {
	p := loadPackage(t, filepath.Join("testdata", "protobad"))
	out, diags, err := render(t, p, []string{"Aliased"}, nil, "numbers.txt")
	if err != nil || len(diags) > 0 {
		t.Fatal(err, diags)
	}
	for _, want := range []string{"func (m *Fine) Unmarshal(", "m.Items = append(m.Items, Fine{})", "m.Name = string(raw)"} {
		if !strings.Contains(string(out.Go), want) {
			t.Errorf("generated code lacks %q", want)
		}
	}
}

// TestProtobufOwnMethods: a package whose types already have the methods (go-to-protobuf's
// generated.pb.go) gets no file and no warning.
func TestProtobufOwnMethods(t *testing.T) {
	p := loadPackage(t, filepath.Join("testdata", "protoown"))
	out, diags, err := render(t, p, []string{"Own"}, nil, "numbers.txt")
	if err != nil || len(diags) > 0 || out != nil {
		t.Fatalf("want nothing, got output %v, warning %v, error %v", out != nil, diags, err)
	}
}

// TestProtobufReportsEveryField: every field the encoding cannot carry is reported in one
// run, also in the structs a root reaches, so a user fixes them all at once.
func TestProtobufReportsEveryField(t *testing.T) {
	p := loadPackage(t, filepath.Join("testdata", "protobad"))
	out, diags, err := render(t, p, []string{"Several"}, nil, "numbers.txt")
	if err != nil || out != nil {
		t.Fatalf("want warnings and no output, got output %v, error %v", out != nil, err)
	}
	var got []string
	for _, d := range diags {
		got = append(got, d.Msg)
	}
	for i, want := range []string{"Several.When has type time.Time", "Several.Size has the name of a protobuf method", "Wrapper.Matrix has type [][]string"} {
		if i >= len(got) || !strings.Contains(got[i], want) {
			t.Errorf("warning %d: want it to contain %q, got %q", i, want, got)
		}
	}
	if len(got) != 3 {
		t.Errorf("%d warnings, want 3: %q", len(got), got)
	}
}
