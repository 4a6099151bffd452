package model_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/generator/load"
	"github.com/aagen-dev/aagen/generator/markers"
	"github.com/aagen-dev/aagen/generator/model"
)

func exampleDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.Abs("../../testdata/example")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// module writes a throwaway module with the example's go.mod and go.sum plus files.
func module(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(exampleDir(t), f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func build(t *testing.T, dir string) (*model.Model, []model.Diagnostic, error) {
	t.Helper()
	return buildWith(t, dir, model.Config{})
}

// buildWith builds the model of the module at dir with cfg.
func buildWith(t *testing.T, dir string, cfg model.Config) (*model.Model, []model.Diagnostic, error) {
	t.Helper()
	res, err := load.Packages(context.Background(), dir, []string{"./..."})
	if err != nil {
		return nil, nil, err
	}
	return model.Build(res, markers.Default(), cfg)
}

// splitProtobuf separates the warnings about fields the protobuf encoding cannot carry from
// the others.
func splitProtobuf(warns []model.Diagnostic) (others, proto []string) {
	for _, w := range warns {
		if strings.Contains(w.Msg, "no protobuf for package ") {
			proto = append(proto, w.String())
		} else {
			others = append(others, w.String())
		}
	}
	return others, proto
}

func TestExample(t *testing.T) {
	m, warns, err := build(t, exampleDir(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) > 0 {
		t.Errorf("unexpected warnings: %v", warns)
	}
	if m.ModulePath != "example.com/marina" || m.ServerName() != "marina-apiserver" {
		t.Errorf("module %s, server %s", m.ModulePath, m.ServerName())
	}
	if len(m.Groups) != 1 || m.Groups[0].Name != "marina.example.com" || m.Groups[0].PackageName != "marina" {
		t.Fatalf("groups: %+v", m.Groups)
	}
	v := m.Groups[0].Versions[0]
	if v.Name != "v1alpha1" || v.ImportPath != "example.com/marina/pkg/apis/marina/v1alpha1" || len(v.Kinds) != 4 {
		t.Fatalf("version: %+v", v)
	}
	boat, dock, fleet := v.Kinds[0], v.Kinds[1], v.Kinds[3]
	if occ := v.Kinds[2]; occ.Name != "DockOccupancy" || !occ.Backend || !occ.Resource.Backend || occ.HasStatus || boat.Resource.Backend {
		t.Errorf("DockOccupancy (+aagen:backend): %+v", occ)
	}
	check := func(k *model.Kind, name, plural string, namespaced, status bool, short string, spec string) {
		t.Helper()
		if k.Name != name || k.Plural != plural || k.Singular != strings.ToLower(name) || k.NamespaceScoped != namespaced ||
			k.HasStatus != status || strings.Join(k.ShortNames, ",") != short || strings.Join(k.Categories, ",") != "marina" ||
			strings.Join(k.SpecFields, ",") != spec || k.ListName != name+"List" {
			t.Errorf("kind %+v", k)
		}
		if !strings.HasSuffix(k.Pos.Filename, "types.go") || k.Pos.Line == 0 {
			t.Errorf("kind %s has no position: %v", name, k.Pos)
		}
	}
	check(boat, "Boat", "boats", true, true, "bt", "Spec")
	check(dock, "Dock", "docks", false, false, "dk", "Spec")
	check(fleet, "Fleet", "fleets", true, true, "fl", "Spec")

	// Protobuf is a fact of the model: every struct the kinds reach gets a message, with each
	// field's encoding (metav1.ObjectMeta's own methods, a string, an int32).
	if !v.Protobuf.Generates() || !m.ServesProtobuf() {
		t.Fatalf("protobuf: %+v", v.Protobuf)
	}
	var boatMsg *model.ProtoMessage
	for _, msg := range v.Protobuf.Messages {
		if msg.Name == "Boat" {
			boatMsg = msg
		}
	}
	if boatMsg == nil || len(v.Protobuf.Messages) < 2*len(v.Kinds) {
		t.Fatalf("protobuf messages: %d, Boat %v", len(v.Protobuf.Messages), boatMsg)
	}
	if f := boatMsg.Fields[0]; f.GoName != "ObjectMeta" || f.Value.Encoding != model.EncMessage || f.Value.Type.Name.Name != "ObjectMeta" || f.ProtoName != "metadata" {
		t.Errorf("Boat's first protobuf field: %+v", f)
	}

	wantCols := []model.PrintColumn{
		{Name: "Dock", Type: "string", JSONPath: ".spec.dock"},
		{Name: "Length", Type: "integer", JSONPath: ".spec.lengthMeters", Description: "Length overall, in metres."},
		{Name: "Phase", Type: "string", JSONPath: ".status.phase"},
		{Name: "Berth", Type: "integer", JSONPath: ".status.berth", Priority: 1},
	}
	if !reflect.DeepEqual(boat.PrintColumns, wantCols) {
		t.Errorf("Boat columns:\n got %+v\nwant %+v", boat.PrintColumns, wantCols)
	}
	wantSel := []model.FieldPath{{JSONPath: ".spec.dock", Steps: []model.FieldStep{{GoName: "Spec"}, {GoName: "Dock"}}, Leaf: "string", LeafBasic: "string"}}
	if !reflect.DeepEqual(boat.SelectableFields, wantSel) || boat.Scale != nil {
		t.Errorf("Boat selectable fields %+v, scale %+v", boat.SelectableFields, boat.Scale)
	}
	if len(dock.PrintColumns) != 1 || dock.PrintColumns[0].JSONPath != ".spec.berths" {
		t.Errorf("Dock columns %+v", dock.PrintColumns)
	}
	wantScale := &model.Scale{
		SpecReplicas: model.FieldPath{JSONPath: ".spec.replicas", Steps: []model.FieldStep{{GoName: "Spec"}, {GoName: "Replicas", Pointer: true}},
			Leaf: "integer", LeafBasic: "int32"},
		StatusReplicas: model.FieldPath{JSONPath: ".status.replicas", Steps: []model.FieldStep{{GoName: "Status"}, {GoName: "Replicas"}},
			Leaf: "integer", LeafBasic: "int32"},
		Selector: &model.FieldPath{JSONPath: ".status.selector", Steps: []model.FieldStep{{GoName: "Status"}, {GoName: "Selector"}},
			Leaf: "string", LeafBasic: "string"},
	}
	if !reflect.DeepEqual(fleet.Scale, wantScale) {
		t.Errorf("Fleet scale:\n got %+v\nwant %+v", fleet.Scale, wantScale)
	}
	if !m.HasScale() {
		t.Error("HasScale is false")
	}
	// The type graph carries list semantics (+listType, +listMapKey) from the field's markers.
	status := m.Types.Lookup(model.GoType{Pkg: v.ImportPath, Name: "BoatStatus"})
	if c := status.Field("Conditions"); c == nil || c.ListType != "map" || len(c.ListMapKeys) != 1 || c.ListMapKeys[0] != "type" || c.Doc != "Conditions are the latest observations of the boat's state." {
		t.Errorf("BoatStatus.Conditions in the type graph: %+v", c)
	}
}

const docGo = "// +groupName=shop.example.com\npackage v1\n"

const goodKind = `package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +genclient
type Widget struct {
	metav1.TypeMeta   ` + "`json:\",inline\"`" + `
	metav1.ObjectMeta ` + "`json:\"metadata,omitempty\"`" + `
	Spec   WidgetSpec   ` + "`json:\"spec\"`" + `
	Status WidgetStatus ` + "`json:\"status\"`" + `
}

type WidgetSpec struct{ Size int32 ` + "`json:\"size\"`" + ` }
type WidgetStatus struct{ Ready bool ` + "`json:\"ready\"`" + ` }

type WidgetList struct {
	metav1.TypeMeta ` + "`json:\",inline\"`" + `
	metav1.ListMeta ` + "`json:\"metadata,omitempty\"`" + `
	Items []Widget  ` + "`json:\"items\"`" + `
}
`

func TestKinds(t *testing.T) {
	m, _, err := build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": goodKind}))
	if err != nil {
		t.Fatal(err)
	}
	k := m.AllKinds()[0]
	if k.Plural != "widgets" || !k.HasStatus || !k.NamespaceScoped {
		t.Errorf("%+v", k)
	}
}

// TestErrors checks that bad input gets an error at the right place that says how to fix it.
func TestErrors(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  []string // substrings: file:line and message
	}{
		{"missing groupName", map[string]string{"apis/shop/v1/doc.go": "package v1\n", "apis/shop/v1/types.go": goodKind},
			[]string{"doc.go:1:1: package example.com/marina/apis/shop/v1 has API kinds (Widget) but no +groupName", "fix: add `// +groupName=<group>`"}},
		{"misspelled marker", map[string]string{"apis/shop/v1/doc.go": docGo,
			"apis/shop/v1/types.go": strings.Replace(goodKind, "// +genclient\n", "// +genclient\n// +genclient:nonNamspaced\n", 1)},
			[]string{"types.go:6:1: unknown marker \"+genclient:nonNamspaced\"; did you mean +genclient:nonNamespaced?"}},
		{"missing list", map[string]string{"apis/shop/v1/doc.go": docGo,
			"apis/shop/v1/types.go": strings.Replace(goodKind, "type WidgetList struct", "type WidgetCollection struct", 1)},
			[]string{"types.go:6:6: kind Widget has no list type WidgetList"}},
		{"missing TypeMeta", map[string]string{"apis/shop/v1/doc.go": docGo,
			"apis/shop/v1/types.go": strings.Replace(goodKind, "\tmetav1.TypeMeta   `json:\",inline\"`\n", "", 1)},
			[]string{"types.go:6:6: kind Widget does not embed metav1.TypeMeta"}},
		{"bad group", map[string]string{"apis/shop/v1/doc.go": "// +groupName=Shop\npackage v1\n", "apis/shop/v1/types.go": goodKind},
			[]string{"doc.go:1:1: +groupName=Shop is not a valid API group name"}},
		{"bad version", map[string]string{"apis/shop/stable/doc.go": strings.Replace(docGo, "package v1", "package stable", 1),
			"apis/shop/stable/types.go": strings.Replace(goodKind, "package v1", "package stable", 1)},
			[]string{`package name "stable" is not a Kubernetes API version`}},
		{"unexported json field", map[string]string{"apis/shop/v1/doc.go": docGo,
			"apis/shop/v1/types.go": strings.Replace(goodKind, "\tSpec   WidgetSpec", "\tsecret string `json:\"secret\"`\n\tSpec   WidgetSpec", 1)},
			[]string{"types.go:9:2: field Widget.secret is unexported but has json tag"}},
		{"own register", map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": goodKind,
			"apis/shop/v1/register.go": "package v1\n\nconst GroupName = \"other.example.com\"\n"},
			[]string{"register.go:3:7: package v1 declares GroupName, but not as a string constant or variable initialized to \"shop.example.com\", its +groupName",
				"fix: declare `const GroupName = \"shop.example.com\"` (or `var GroupName = \"shop.example.com\"`"}},
		{"own register, var of another group", map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": goodKind,
			"apis/shop/v1/register.go": "package v1\n\nvar GroupName = \"other.example.com\"\n"},
			[]string{"register.go:3:5: package v1 declares GroupName, but not as a string constant or variable initialized to \"shop.example.com\""}},
		{"scope conflict", map[string]string{"apis/shop/v1/doc.go": docGo,
			"apis/shop/v1/types.go": strings.Replace(goodKind, "// +genclient\n", "// +genclient\n// +genclient:nonNamespaced\n// +kubebuilder:resource:scope=Namespaced\n", 1)},
			[]string{"types.go:7:1: Widget is +genclient:nonNamespaced but +kubebuilder:resource says scope=Namespaced"}},
		{"status marker without field", map[string]string{"apis/shop/v1/doc.go": docGo,
			"apis/shop/v1/types.go": strings.Replace(strings.Replace(goodKind, "\tStatus WidgetStatus `json:\"status\"`\n", "", 1), "// +genclient\n", "// +genclient\n// +kubebuilder:subresource:status\n", 1)},
			[]string{"has +kubebuilder:subresource:status but no Status field"}},
		{"does not compile", map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": goodKind + "\nvar x int = \"s\"\n"},
			[]string{"the types packages do not compile", "types.go:22:13: cannot use"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := build(t, module(t, c.files))
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}
