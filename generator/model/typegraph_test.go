package model_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/generator/model"
)

// TestTypeGraphReferenced follows kbexample's Worker into k8s.io/api and apimachinery: the
// types its pod template reaches are referenced, those with a schema of their own are not
// followed, and neither the types packages' own types nor the standard library's are
// referenced.
func TestTypeGraphReferenced(t *testing.T) {
	m, _, err := build(t, filepath.Join("..", "..", "testdata", "kbexample"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range m.Types.Referenced() {
		got = append(got, n.Pkg+"."+n.Name)
	}
	for _, want := range []string{
		"k8s.io/api/core/v1.PodTemplateSpec", "k8s.io/api/core/v1.PodSpec", "k8s.io/api/core/v1.Container",
		"k8s.io/api/core/v1.ResourceRequirements", "k8s.io/api/core/v1.Probe",
		"k8s.io/apimachinery/pkg/apis/meta/v1.LabelSelector", "k8s.io/apimachinery/pkg/apis/meta/v1.Time",
		"k8s.io/apimachinery/pkg/util/intstr.IntOrString", "k8s.io/apimachinery/pkg/runtime.RawExtension",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("%s is not referenced", want)
		}
	}
	for _, not := range []string{"time.Time", "example.com/kbexample/api/v1.WorkerSpec"} {
		if slices.Contains(got, not) {
			t.Errorf("%s is referenced", not)
		}
	}
	if tm := m.Types.Lookup(model.GoType{Pkg: "k8s.io/apimachinery/pkg/apis/meta/v1", Name: "Time"}); tm == nil || !tm.OwnSchema || tm.Underlying != nil {
		t.Errorf("metav1.Time: %+v, want a node with its own schema, not followed", tm)
	}
	if pod := m.Types.Lookup(model.GoType{Pkg: "k8s.io/api/core/v1", Name: "PodSpec"}); pod == nil || pod.Origin != model.InKubernetes || pod.Markers != nil || !pod.ProtoMethods {
		t.Errorf("corev1.PodSpec: %+v, want a Kubernetes type with protobuf methods whose markers are not read", pod)
	}
}

// crossPackageModule is a module whose kind's spec holds a struct of another package of the
// module (pkg/common) and one of a second module (example.com/extlib, by a replace), each
// with schema markers of its own.
func crossPackageModule(t *testing.T, extra map[string]string) string {
	files := map[string]string{
		"pkg/apis/shop/v1/doc.go": "// +groupName=shop.example.com\npackage v1\n",
		"pkg/apis/shop/v1/types.go": `package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/extlib/limits"
	"example.com/marina/pkg/common"
)

// +genclient
type Widget struct {
	metav1.TypeMeta   ` + "`json:\",inline\"`" + `
	metav1.ObjectMeta ` + "`json:\"metadata,omitempty\"`" + `
	Spec WidgetSpec ` + "`json:\"spec\"`" + `
}

type WidgetSpec struct {
	Label  common.Label  ` + "`json:\"label\"`" + `
	Limits *limits.Limits ` + "`json:\"limits,omitempty\"`" + `
}

type WidgetList struct {
	metav1.TypeMeta ` + "`json:\",inline\"`" + `
	metav1.ListMeta ` + "`json:\"metadata,omitempty\"`" + `
	Items           []Widget ` + "`json:\"items\"`" + `
}
`,
		"pkg/common/label.go": `package common

// Label names a widget.
// +kubebuilder:validation:XValidation:rule="self.value != 'forbidden'",message="value must not be forbidden"
type Label struct {
	// Value is the label's text.
	// +kubebuilder:validation:MaxLength=3
	// +kubebuilder:validation:Pattern=` + "`^[a-z]+$`" + `
	Value string ` + "`json:\"value\"`" + `
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=2
	Count int32 ` + "`json:\"count,omitempty\"`" + `
	// +kubebuilder:validation:Enum=red;blue
	Color string ` + "`json:\"color,omitempty\"`" + `
}
`,
		"extlib/go.mod": "module example.com/extlib\n\ngo 1.24\n",
		"extlib/limits/limits.go": `package limits

// +kubebuilder:validation:XValidation:rule="self.min <= self.max",message="min must not exceed max"
type Limits struct {
	// +kubebuilder:validation:Minimum=0
	Min int64 ` + "`json:\"min,omitempty\"`" + `
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=50
	Max int64 ` + "`json:\"max,omitempty\"`" + `
	// +kubebuilder:validation:MaxLength=5
	Unit string ` + "`json:\"unit,omitempty\"`" + `
}
`,
	}
	for k, v := range extra {
		files[k] = v
	}
	dir := module(t, files)
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	gomod = append(gomod, []byte("\nrequire example.com/extlib v0.0.0\n\nreplace example.com/extlib => ./extlib\n")...)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), gomod, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestMarkersWhereDeclared: markers apply where the type is declared, as controller-gen
// applies them: on a struct of another package of the module and on one of another module.
func TestMarkersWhereDeclared(t *testing.T) {
	m, warns, err := build(t, crossPackageModule(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	// The structs of other packages have no protobuf methods: the version is JSON-only.
	others, proto := splitProtobuf(warns)
	for _, w := range others {
		t.Errorf("unexpected warning: %s", w)
	}
	if len(proto) != 2 || !strings.Contains(proto[0], "WidgetSpec.Label has type example.com/marina/pkg/common.Label, from package example.com/marina/pkg/common, which has no protobuf methods") ||
		!strings.Contains(proto[1], "WidgetSpec.Limits has type *example.com/extlib/limits.Limits") {
		t.Errorf("protobuf warnings: %q", proto)
	}
	label := m.Types.Lookup(model.GoType{Pkg: "example.com/marina/pkg/common", Name: "Label"})
	if label == nil || label.Origin != model.InModule {
		t.Fatalf("common.Label: %+v", label)
	}
	if label.Doc != "Label names a widget." || label.Field("Value").Doc != "Value is the label's text." {
		t.Errorf("docs: %q, %q", label.Doc, label.Field("Value").Doc)
	}
	if r := label.Validation.Rules; len(r) != 1 || r[0].Message != "value must not be forbidden" {
		t.Errorf("Label rules: %+v", r)
	}
	if v := label.Field("Value").Validation; v.MaxLength == nil || *v.MaxLength != 3 || v.Pattern != "^[a-z]+$" {
		t.Errorf("Label.Value: %+v", v)
	}
	if c := label.Field("Count"); c.Validation.Minimum == nil || *c.Validation.Minimum != 1 || c.Default != "2" {
		t.Errorf("Label.Count: %+v", c.FieldValidation)
	}
	if e := label.Field("Color").Validation.Enum; len(e) != 2 {
		t.Errorf("Label.Color enum: %v", e)
	}
	limits := m.Types.Lookup(model.GoType{Pkg: "example.com/extlib/limits", Name: "Limits"})
	if limits == nil || limits.Origin != model.InDependency {
		t.Fatalf("limits.Limits: %+v", limits)
	}
	if r := limits.Validation.Rules; len(r) != 1 || r[0].Rule != "self.min <= self.max" {
		t.Errorf("Limits rules: %+v", r)
	}
	if mx := limits.Field("Max"); mx.Validation.Maximum == nil || *mx.Validation.Maximum != 100 || mx.Default != "50" {
		t.Errorf("Limits.Max: %+v", mx.FieldValidation)
	}
	if !m.Groups[0].Versions[0].HasDefaults() {
		t.Errorf("v1 reaches defaults in common and limits, but HasDefaults is false")
	}
	var refs []string
	for _, n := range m.Types.Referenced() {
		refs = append(refs, n.Pkg+"."+n.Name)
	}
	for _, want := range []string{"example.com/marina/pkg/common.Label", "example.com/extlib/limits.Limits"} {
		if !slices.Contains(refs, want) {
			t.Errorf("%s is not referenced: %v", want, refs)
		}
	}
}

// TestMarkerErrorsWhereDeclared: a marker that does not fit its field is an error at its
// file:line in the package that declares the type, and a field of such a type that cannot
// be serialised is refused there too, as in the version package itself.
func TestMarkerErrorsWhereDeclared(t *testing.T) {
	_, _, err := build(t, crossPackageModule(t, map[string]string{
		"pkg/common/label.go": `package common

type Label struct {
	// +kubebuilder:validation:MaxLength=3
	Count int32 ` + "`json:\"count\"`" + `
	Values map[int]string ` + "`json:\"values,omitempty\"`" + `
	// +kubebuilder:default=tall
	Size int32 ` + "`json:\"size\"`" + `
}
`,
	}))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"label.go:4:2: +kubebuilder:validation:MaxLength on common.Label.Count",
		"label.go:6:2: field Widget.Spec.Label.Values is a map with int keys",
		"label.go:7:2: +kubebuilder:default on common.Label.Size: default tall does not match the field's type (integer)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// TestMarkerProblemsInDependencies: a marker that does not fit its field in another module
// is a warning at its file:line saying it is not applied (the user cannot fix it here), while
// the same problem in the user's own module stays an error (TestMarkerErrorsWhereDeclared).
func TestMarkerProblemsInDependencies(t *testing.T) {
	m, warns, err := build(t, crossPackageModule(t, map[string]string{
		"extlib/limits/limits.go": `package limits

type Limits struct {
	// +kubebuilder:validation:MaxLength=5
	Min int64 ` + "`json:\"min,omitempty\"`" + `
	// +kubebuilder:validation:Maximum=100
	Max int64 ` + "`json:\"max,omitempty\"`" + `
}
`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, w := range warns {
		all = append(all, w.String())
	}
	want := "limits.go:4:2: warning: +kubebuilder:validation:MaxLength on limits.Limits.Min"
	if !strings.Contains(strings.Join(all, "\n"), want) || !strings.Contains(strings.Join(all, "\n"), "(in module example.com/extlib, a dependency: not applied)") {
		t.Errorf("warnings lack %q naming the module:\n%s", want, strings.Join(all, "\n"))
	}
	limits := m.Types.Lookup(model.GoType{Pkg: "example.com/extlib/limits", Name: "Limits"})
	if v := limits.Field("Min").Validation; v.MaxLength != nil {
		t.Errorf("the refused MaxLength was applied: %+v", v)
	}
	if v := limits.Field("Max").Validation; v.Maximum == nil || *v.Maximum != 100 {
		t.Errorf("the good Maximum next to it was not applied: %+v", v)
	}
}

// TestMarkersOfAPublishedModule: a kind's field of a type from a published module in the
// module cache (Gateway API's ParentReference, required at v1.6.3, not replaced) gets the
// markers its source declares, as controller-gen gives them to a CRD: the named string
// types' MaxLength and Pattern on the fields of those types, and the fields' defaults.
func TestMarkersOfAPublishedModule(t *testing.T) {
	dir := module(t, map[string]string{
		"pkg/apis/shop/v1/doc.go": "// +groupName=shop.example.com\npackage v1\n",
		"pkg/apis/shop/v1/types.go": `package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// +genclient
type Route struct {
	metav1.TypeMeta   ` + "`json:\",inline\"`" + `
	metav1.ObjectMeta ` + "`json:\"metadata,omitempty\"`" + `
	Spec RouteSpec ` + "`json:\"spec\"`" + `
}

type RouteSpec struct {
	Parent gwv1.ParentReference ` + "`json:\"parent\"`" + `
}

type RouteList struct {
	metav1.TypeMeta ` + "`json:\",inline\"`" + `
	metav1.ListMeta ` + "`json:\"metadata,omitempty\"`" + `
	Items           []Route ` + "`json:\"items\"`" + `
}
`,
	})
	// The copied go.mod replaces aagen with ../..: from the temporary module, that is this
	// checkout's absolute path.
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(strings.ReplaceAll(string(gomod), "=> ../..", "=> "+root)), 0o644); err != nil {
		t.Fatal(err)
	}
	get := exec.Command("go", "get", "sigs.k8s.io/gateway-api@v1.6.3")
	get.Dir = dir
	if out, err := get.CombinedOutput(); err != nil {
		t.Fatalf("go get sigs.k8s.io/gateway-api@v1.6.3: %v\n%s", err, out)
	}
	m, warns, err := build(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warns {
		t.Logf("warning: %s", w)
	}
	ref := m.Types.Lookup(model.GoType{Pkg: "sigs.k8s.io/gateway-api/apis/v1", Name: "ParentReference"})
	if ref == nil || ref.Origin != model.InDependency {
		t.Fatalf("gwv1.ParentReference: %+v", ref)
	}
	if g := ref.Field("Group"); g == nil || g.Default != `"gateway.networking.k8s.io"` || g.Validation.MaxLength == nil || *g.Validation.MaxLength != 253 || g.Validation.Pattern == "" {
		t.Errorf("ParentReference.Group: %+v, want the default and Group's MaxLength and Pattern", g)
	}
	if n := ref.Field("Name"); n == nil || n.Validation.MinLength == nil || *n.Validation.MinLength != 1 || n.Validation.MaxLength == nil || *n.Validation.MaxLength != 253 {
		t.Errorf("ParentReference.Name: %+v, want ObjectName's MinLength=1 and MaxLength=253", n)
	}
}

// TestElementConstraintsWarned: a named non-struct type's constraints (an Enum on type
// Protocol string, in another package) reach the fields of that type and the items of a
// list of it; as the values of a map they are not applied yet, which is a warning at the
// field, never silence.
func TestElementConstraintsWarned(t *testing.T) {
	_, warns, err := build(t, crossPackageModule(t, map[string]string{
		"pkg/common/label.go": `package common

// +kubebuilder:validation:Enum=TCP;UDP
type Protocol string

type Label struct {
	One Protocol ` + "`json:\"one,omitempty\"`" + `
	// +optional
	Many []Protocol ` + "`json:\"many,omitempty\"`" + `
	ByName map[string]Protocol ` + "`json:\"byName,omitempty\"`" + `
}
`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, w := range warns {
		all = append(all, w.String())
	}
	got := strings.Join(all, "\n")
	for _, want := range []string{
		"label.go:10:2: warning: field common.Label.ByName: the constraints of type common.Protocol",
		"are not applied to the values of the map yet",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "common.Label.One") || strings.Contains(got, "common.Label.Many") {
		t.Errorf("a field of the type itself, or a list of it, is warned about:\n%s", got)
	}
}

// TestEmbeddedStructRules: a struct that embeds another inline gets the embedded type's CEL
// rules (before its own, recursively), as controller-gen merges the embedded schema into
// the embedding one: Gateway API's BackendRef embeds BackendObjectReference and its rule.
func TestEmbeddedStructRules(t *testing.T) {
	m, _, err := build(t, crossPackageModule(t, map[string]string{
		"pkg/common/ref.go": `package common

// +kubebuilder:validation:XValidation:rule="has(self.port) || self.kind != 'Service'",message="Must have port for Service reference"
type ObjectRef struct {
	Kind string ` + "`json:\"kind\"`" + `
	Port *int32 ` + "`json:\"port,omitempty\"`" + `
}

// +kubebuilder:validation:XValidation:rule="!has(self.weight) || self.weight >= 0",message="weight must not be negative"
type Ref struct {
	ObjectRef ` + "`json:\",inline\"`" + `
	Weight *int32 ` + "`json:\"weight,omitempty\"`" + `
}

type WeightedRef struct {
	Ref ` + "`json:\",inline\"`" + `
	Note string ` + "`json:\"note,omitempty\"`" + `
}
`,
		"pkg/apis/shop/v1/refs.go": `package v1

import "example.com/marina/pkg/common"

type RefHolder struct {
	Refs []common.WeightedRef ` + "`json:\"refs,omitempty\"`" + `
}
`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	rules := func(name string) []string {
		ty := m.Types.Lookup(model.GoType{Pkg: "example.com/marina/pkg/common", Name: name})
		if ty == nil {
			t.Fatalf("common.%s is not in the graph", name)
		}
		var out []string
		for _, r := range ty.Validation.Rules {
			out = append(out, r.Message)
		}
		return out
	}
	for name, want := range map[string][]string{
		"ObjectRef":   {"Must have port for Service reference"},
		"Ref":         {"Must have port for Service reference", "weight must not be negative"},
		"WeightedRef": {"Must have port for Service reference", "weight must not be negative"},
	} {
		if got := rules(name); !slices.Equal(got, want) {
			t.Errorf("common.%s has the rules %q; want %q", name, got, want)
		}
	}
}

// TestListItemsInheritTypeConstraints: the items of a list of a named non-struct type have
// the type's constraints, as controller-gen's CRD has them (Gateway API's []Hostname); the
// field's own +kubebuilder:validation:items: markers win.
func TestListItemsInheritTypeConstraints(t *testing.T) {
	m, warns, err := build(t, crossPackageModule(t, map[string]string{
		"pkg/common/label.go": `package common

// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=8
// +kubebuilder:validation:Pattern=` + "`^[a-z]+$`" + `
type Name string

// +kubebuilder:validation:Enum=GET;PUT
type Method string

type Label struct {
	Methods []Method ` + "`json:\"methods,omitempty\"`" + `
	Names []Name ` + "`json:\"names,omitempty\"`" + `
	// +kubebuilder:validation:items:MaxLength=3
	Short []Name ` + "`json:\"short,omitempty\"`" + `
}
`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warns {
		if strings.Contains(w.String(), "Label.Names") || strings.Contains(w.String(), "Label.Short") || strings.Contains(w.String(), "Label.Methods") {
			t.Errorf("warned about a list whose items have the constraints: %s", w)
		}
	}
	label := m.Types.Lookup(model.GoType{Pkg: "example.com/marina/pkg/common", Name: "Label"})
	if f := label.Field("Methods"); f == nil || f.Items == nil || !slices.Equal(f.Items.Enum, []any{"GET", "PUT"}) {
		t.Errorf("Label.Methods items: %+v; want the enum GET, PUT", f.Items)
	}
	for field, want := range map[string]int64{"Names": 8, "Short": 3} {
		f := label.Field(field)
		if f == nil || f.Items == nil || f.Items.MaxLength == nil || *f.Items.MaxLength != want || f.Items.MinLength == nil || *f.Items.MinLength != 1 || f.Items.Pattern != "^[a-z]+$" {
			t.Errorf("Label.%s items: %+v; want minLength 1, maxLength %d and the pattern", field, f.Items, want)
		}
	}
}

// TestKubernetesTypesKubebuilderMarkers: the kubebuilder markers of Kubernetes' own types
// apply, as controller-gen applies them: metav1.Condition's status enum and type pattern.
func TestKubernetesTypesKubebuilderMarkers(t *testing.T) {
	m, _, err := build(t, crossPackageModule(t, map[string]string{
		"pkg/common/label.go": `package common

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

type Label struct {
	Conditions []metav1.Condition ` + "`json:\"conditions,omitempty\"`" + `
}
`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	cond := m.Types.Lookup(model.GoType{Pkg: "k8s.io/apimachinery/pkg/apis/meta/v1", Name: "Condition"})
	if cond == nil {
		t.Fatal("metav1.Condition is not in the graph")
	}
	if f := cond.Field("Status"); f == nil || !slices.Equal(f.Validation.Enum, []any{"True", "False", "Unknown"}) {
		t.Errorf("Condition.Status: %+v; want the enum True, False, Unknown", f)
	}
	if f := cond.Field("Type"); f == nil || f.Validation.MaxLength == nil || *f.Validation.MaxLength != 316 || f.Validation.Pattern == "" {
		t.Errorf("Condition.Type: %+v; want maxLength 316 and a pattern", f)
	}
	if f := cond.Field("Reason"); f == nil || f.Default != "" {
		t.Errorf("Condition.Reason: %+v; want no default (the +default tags stay openapi-gen's)", f)
	}
}
