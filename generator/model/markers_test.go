package model_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/generator/model"
)

// TestControllerGenMarkers builds a types package written for controller-gen
// (generator/testdata/controllergen, generated whole by generator's TestControllerGenStyle): its
// marker syntax (+name:=value, literal defaults typed by the field), markers aagen
// applies (oneOf rules, +k8s:immutable, k8s.io/api's +k8s:required and +k8s:maxLength),
// and CRD-only, RBAC and webhook markers, which are accepted without an error.
func TestControllerGenMarkers(t *testing.T) {
	files := map[string]string{}
	for _, f := range []string{"doc.go", "types.go"} {
		data, err := os.ReadFile(filepath.Join("../testdata/controllergen/pkg/apis/shop/v1", f))
		if err != nil {
			t.Fatal(err)
		}
		files["pkg/apis/shop/v1/"+f] = string(data)
	}
	dir := module(t, files)
	m, warns, err := build(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	others, proto := splitProtobuf(warns)
	for _, w := range others {
		t.Errorf("unexpected warning: %s", w)
	}
	v := m.Groups[0].Versions[0]
	// WidgetSpec.Size cannot coexist with the protobuf method Size: the package is JSON-only.
	if len(proto) != 1 || !strings.Contains(proto[0], "types.go:30:2: warning: no protobuf for package example.com/marina/pkg/apis/shop/v1: WidgetSpec.Size has the name of a protobuf method") ||
		v.Protobuf.Encodes() || m.ServesProtobuf() {
		t.Errorf("protobuf warnings %q, Encodes %v", proto, v.Protobuf.Encodes())
	}
	spec := m.Types.Lookup(model.GoType{Pkg: v.ImportPath, Name: "WidgetSpec"})
	if spec == nil {
		t.Fatalf("no WidgetSpec in the type graph")
	}
	if r := spec.Validation.Rules; len(r) != 1 || r[0].Rule != "(has(self.http)?1:0)+(has(self.grpc)?1:0) == 1" ||
		r[0].Message != "exactly one of the fields in [http grpc] must be set" {
		t.Errorf("ExactlyOneOf: rules %+v", r)
	}
	fields := map[string]model.FieldValidation{}
	for _, f := range spec.Fields() {
		fields[f.JSONName] = f.FieldValidation
	}
	for name, want := range map[string]string{"size": "3", "name": `"forty-two"`, "namespaces": `{"from":"Same"}`,
		"ports": `[{"name":"a","port":80},{"name":"b","port":443}]`} {
		if got := fields[name].Default; got != want {
			t.Errorf("default of %s = %s, want %s", name, got, want)
		}
	}
	if mn := fields["size"].Validation.Minimum; mn == nil || *mn != 1 {
		t.Errorf("size: Minimum:=1 not applied: %v", mn)
	}
	if ml := fields["name"].Validation.MaxLength; ml == nil || *ml != 16 {
		t.Errorf("name: +k8s:maxLength not applied: %v", ml)
	}
	if r := fields["name"].Validation.Rules; len(r) != 1 || r[0].Rule != "self == oldSelf" || r[0].Message != "field is immutable" {
		t.Errorf("name: +k8s:immutable: %+v", r)
	}
	if it := fields["tags"].Items; it == nil || it.MaxLength == nil || *it.MaxLength != 8 || it.Pattern != "^[a-z]+$" {
		t.Errorf("tags: items markers not applied: %+v", it)
	}
	if r := fields["owner"].Required; r == nil || !*r {
		t.Errorf("owner: +k8s:required not applied")
	}
}

// TestMarkersWarnings: markers recognised but not applied warn at their position.
func TestMarkersWarnings(t *testing.T) {
	dir := module(t, map[string]string{
		"pkg/apis/shop/v1/doc.go": "// +groupName=shop.example.com\n// +kubebuilder:validation:Required\npackage v1\n",
		"pkg/apis/shop/v1/types.go": `package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +genclient
type Widget struct {
	metav1.TypeMeta   ` + "`json:\",inline\"`" + `
	metav1.ObjectMeta ` + "`json:\"metadata,omitempty\"`" + `
	Spec WidgetSpec ` + "`json:\"spec\"`" + `
	// +kubebuilder:default={phase: Pending}
	Status WidgetStatus ` + "`json:\"status,omitempty\"`" + `
}

type WidgetStatus struct {
	Phase string ` + "`json:\"phase,omitempty\"`" + `
}

type WidgetList struct {
	metav1.TypeMeta ` + "`json:\",inline\"`" + `
	metav1.ListMeta ` + "`json:\"metadata,omitempty\"`" + `
	Items           []Widget ` + "`json:\"items\"`" + `
}

type WidgetSpec struct {
	// +kubebuilder:validation:items:Enum=a;b
	Tags []string ` + "`json:\"tags,omitempty\"`" + `
}
`,
	})
	_, warns, err := build(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, w := range warns {
		msgs = append(msgs, w.String())
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{"doc.go:2:1: warning: +kubebuilder:validation:Required on a package", "types.go:25:2: warning: marker +kubebuilder:validation:items:Enum is recognised but not applied yet",
		// Gateway API defaults its status like this; a CRD would, a Go struct field cannot be.
		"types.go:10:2: warning: +kubebuilder:default on Widget.Status: not applied: a non-pointer struct field is never unset"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
}

// TestSchemaMarkerErrors: a schema marker that does not fit its field is an error at the
// marker naming the field (ApplyToSchema's problem); +required and +optional, in any
// spelling, are accepted on an embedded field as controller-gen does (Gateway API has an
// +optional above its inline BackendRef), while a constraint there is an error.
func TestSchemaMarkerErrors(t *testing.T) {
	dir := module(t, map[string]string{
		"pkg/apis/shop/v1/doc.go": "// +groupName=shop.example.com\npackage v1\n",
		"pkg/apis/shop/v1/types.go": `package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +genclient
type Widget struct {
	metav1.TypeMeta   ` + "`json:\",inline\"`" + `
	metav1.ObjectMeta ` + "`json:\"metadata,omitempty\"`" + `
	Spec WidgetSpec ` + "`json:\"spec\"`" + `
}

type WidgetList struct {
	metav1.TypeMeta ` + "`json:\",inline\"`" + `
	metav1.ListMeta ` + "`json:\"metadata,omitempty\"`" + `
	Items           []Widget ` + "`json:\"items\"`" + `
}

type Common struct {
	Color string ` + "`json:\"color,omitempty\"`" + `
}

type Other struct {
	Shape string ` + "`json:\"shape,omitempty\"`" + `
}

type WidgetSpec struct {
	// +optional
	// +kubebuilder:validation:Optional
	Common ` + "`json:\",inline\"`" + `
	// +k8s:maxLength=3
	Other ` + "`json:\",inline\"`" + `
	// +kubebuilder:validation:Minimum=1
	Name string ` + "`json:\"name,omitempty\"`" + `
	// +kubebuilder:validation:items:MaxLength=3
	Count int32 ` + "`json:\"count,omitempty\"`" + `
	// +kubebuilder:validation:MaxLength=x
	Label string ` + "`json:\"label,omitempty\"`" + `
	// +kubebuilder:validation:items:MaxLength=3
	Third ` + "`json:\",inline\"`" + `
}

type Third struct {
	Names []string ` + "`json:\"names,omitempty\"`" + `
}
`,
	})
	_, _, err := build(t, dir)
	if err == nil {
		t.Fatal("want errors")
	}
	got := err.Error()
	for _, want := range []string{
		"types.go:30:2: validation markers on field WidgetSpec.Other, which has no JSON name of its own",
		"types.go:32:2: +kubebuilder:validation:Minimum on WidgetSpec.Name: the field is a string, not a number\n\tfix: use it on an integer or floating-point field, or remove it",
		"types.go:34:2: +kubebuilder:validation:items:MaxLength on WidgetSpec.Count: the field is not a list",
		"types.go:36:2: +kubebuilder:validation:MaxLength on WidgetSpec.Label: \"x\" is not a non-negative integer\n\tfix: write a non-negative integer, e.g. +kubebuilder:validation:MaxLength=1",
		"types.go:38:2: validation markers on field WidgetSpec.Third, which has no JSON name of its own",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "WidgetSpec.Common") || strings.Count(got, "types.go:") != 5 {
		t.Errorf("want exactly the five errors above:\n%s", got)
	}
}
