package model_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/generator/model"
)

// The shapes of published API packages (openshift/api, k8s.io/metrics, cert-manager,
// kueue, kube-aggregator), each in a small fixture: what they declare is taken as their
// own generators and client-gen take it.

// warningsContaining returns the warnings whose text contains s.
func warningsContaining(warns []model.Diagnostic, s string) []string {
	var out []string
	for _, w := range warns {
		if strings.Contains(w.String(), s) {
			out = append(out, w.String())
		}
	}
	return out
}

// TestGroupNameVariable: openshift/api's route/v1 declares `var GroupName = "..."`; a
// variable initialized with the group is the package's own GroupName as a constant is.
func TestGroupNameVariable(t *testing.T) {
	m, _, err := build(t, module(t, map[string]string{
		"apis/shop/v1/doc.go":   docGo,
		"apis/shop/v1/types.go": goodKind,
		"apis/shop/v1/register.go": "package v1\n\nimport \"k8s.io/apimachinery/pkg/runtime/schema\"\n\n" +
			"var (\n\tGroupName    = \"shop.example.com\"\n\tGroupVersion = schema.GroupVersion{Group: GroupName, Version: \"v1\"}\n)\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if v := m.Groups[0].Versions[0]; !v.Declares("GroupName") {
		t.Errorf("Declared %v; want GroupName (the package's own, so none is generated)", v.Declared)
	}
}

// TestGroupGoName: a group whose first label is not a Go identifier (cert-manager.io) is
// served when +groupGoName names it in Go, as client-gen takes it; without the marker the
// error says to add it (with the name to give), not to rename the group.
func TestGroupGoName(t *testing.T) {
	doc := "// +groupName=cert-manager.example.com\n// +groupGoName=CertManager\npackage v1\n"
	m, _, err := build(t, module(t, map[string]string{"apis/certmanager/v1/doc.go": doc, "apis/certmanager/v1/types.go": goodKind}))
	if err != nil {
		t.Fatal(err)
	}
	if g := m.Groups[0]; g.Name != "cert-manager.example.com" || g.GoName != "CertManager" {
		t.Errorf("group %s, Go name %s; want cert-manager.example.com, CertManager", g.Name, g.GoName)
	}
	m, _, err = build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": goodKind}))
	if err != nil {
		t.Fatal(err)
	}
	if g := m.Groups[0]; g.GoName != "Shop" {
		t.Errorf("Go name %s; want client-gen's default Shop", g.GoName)
	}
	_, _, err = build(t, module(t, map[string]string{"apis/certmanager/v1/doc.go": "// +groupName=cert-manager.example.com\npackage v1\n",
		"apis/certmanager/v1/types.go": goodKind}))
	if err == nil || !strings.Contains(err.Error(), "doc.go:1:1: the first label of group cert-manager.example.com") ||
		!strings.Contains(err.Error(), "fix: add `// +groupGoName=CertManager` to the package comment") || strings.Contains(err.Error(), "choose a group") {
		t.Errorf("want the error at +groupName suggesting +groupGoName=CertManager, got %v", err)
	}
	// Two groups with the same Go name would declare the clientset's ShopV1() twice.
	_, _, err = build(t, module(t, map[string]string{
		"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": goodKind,
		"apis/store/v1/doc.go":   "// +groupName=store.example.com\n// +groupGoName=Shop\npackage v1\n",
		"apis/store/v1/types.go": goodKind}))
	if err == nil || !strings.Contains(err.Error(), "doc.go:2:1: groups shop.example.com and store.example.com have the same Go name Shop in the clientset") {
		t.Errorf("want the clash at the second group's +groupGoName, got %v", err)
	}
	_, _, err = build(t, module(t, map[string]string{"apis/certmanager/v1/doc.go": "// +groupName=cert-manager.example.com\n// +groupGoName=cert-manager\npackage v1\n",
		"apis/certmanager/v1/types.go": goodKind}))
	if err == nil || !strings.Contains(err.Error(), "doc.go:2:1: +groupGoName=cert-manager is not a Go identifier") {
		t.Errorf("want the error at +groupGoName, got %v", err)
	}
}

// TestResourceName: k8s.io/metrics' +resourceName=pods on PodMetrics is the resource the
// server serves (and discovery, roles and docs name); the client's Go names stay
// client-gen's plural of the kind (PodMetricses()). With +kubebuilder:resource:path it must
// agree.
func TestResourceName(t *testing.T) {
	kind := strings.ReplaceAll(goodKind, "Widget", "PodMetrics")
	marked := strings.Replace(kind, "// +genclient\n", "// +genclient\n// +resourceName=pods\n", 1)
	m, _, err := build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": marked}))
	if err != nil {
		t.Fatal(err)
	}
	if k := m.AllKinds()[0]; k.Plural != "pods" || k.ClientPlural != "podmetricses" || k.Singular != "podmetrics" {
		t.Errorf("plural %q, client plural %q, singular %q; want pods, podmetricses, podmetrics", k.Plural, k.ClientPlural, k.Singular)
	}
	m, _, err = build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": kind}))
	if err != nil {
		t.Fatal(err)
	}
	if k := m.AllKinds()[0]; k.Plural != "podmetricses" || k.ClientPlural != k.Plural {
		t.Errorf("without the marker: plural %q, client plural %q", k.Plural, k.ClientPlural)
	}
	conflict := strings.Replace(kind, "// +genclient\n", "// +genclient\n// +resourceName=pods\n// +kubebuilder:resource:path=podmetrics\n", 1)
	_, _, err = build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": conflict}))
	if err == nil || !strings.Contains(err.Error(), "types.go:6:1: PodMetrics has +resourceName=pods but +kubebuilder:resource:path=podmetrics") {
		t.Errorf("want the conflict at +resourceName, got %v", err)
	}
}

// TestReadOnlyKind: a +genclient:readonly kind is served read-only (Resource.ReadOnly),
// with a warning that nothing can create its objects unless a backend serves them; with
// +aagen:backend the backend decides and there is no warning; a /status marker on it is
// refused at the marker.
func TestReadOnlyKind(t *testing.T) {
	ro := strings.Replace(goodKind, "// +genclient\n", "// +genclient\n// +genclient:readonly\n", 1)
	m, warns, err := build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": ro}))
	if err != nil {
		t.Fatal(err)
	}
	k := m.AllKinds()[0]
	if !k.ReadOnly || !k.Resource.ReadOnly || k.HasStatus {
		t.Errorf("kind read-only %v, resource read-only %v, status %v; want read-only and no /status", k.ReadOnly, k.Resource.ReadOnly, k.HasStatus)
	}
	if w := warningsContaining(warns, "types.go:6:1: warning: kind Widget is +genclient:readonly: it is served with get, list and watch only"); len(w) != 1 {
		t.Errorf("want one warning at the marker, got %v", warns)
	} else if !strings.Contains(w[0], "pass `--backend Widget.shop.example.com` to aagen generate for a package you do not edit") {
		t.Errorf("the warning's fix names no --backend for a published package: %q", w[0])
	}
	backend := strings.Replace(strings.Replace(ro, "// +genclient:readonly\n", "// +genclient:readonly\n// +aagen:backend\n", 1),
		"\tStatus WidgetStatus `json:\"status\"`\n", "", 1)
	m, warns, err = build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": backend}))
	if err != nil {
		t.Fatal(err)
	}
	if r := m.AllKinds()[0].Resource; r.ReadOnly || !r.Backend || len(warningsContaining(warns, "readonly")) > 0 {
		t.Errorf("with a backend: read-only %v, backend %v, warnings %v; want the backend's verbs and no warning", r.ReadOnly, r.Backend, warns)
	}
	status := strings.Replace(ro, "// +genclient:readonly\n", "// +genclient:readonly\n// +kubebuilder:subresource:status\n", 1)
	_, _, err = build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": status}))
	if err == nil || !strings.Contains(err.Error(), "types.go:7:1: Widget is +genclient:readonly (served with get, list and watch only) but has the /status subresource") {
		t.Errorf("want the error at +kubebuilder:subresource:status, got %v", err)
	}
}

// TestPrintColumnAbsentField: a printer column whose JSONPath names no field is a warning
// at the marker and the column is kept (a CRD takes it and prints it empty, and OpenShift's
// route CRD ships one); a column type that does not fit an existing field stays an error.
func TestPrintColumnAbsentField(t *testing.T) {
	kind := strings.Replace(goodKind, "// +genclient\n", "// +genclient\n// +kubebuilder:printcolumn:name=Host,type=string,JSONPath=.status.ingress[0].host\n"+
		"// +kubebuilder:printcolumn:name=Size,type=integer,JSONPath=.spec.sise\n", 1)
	m, warns, err := build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": kind}))
	if err != nil {
		t.Fatal(err)
	}
	if cols := m.AllKinds()[0].PrintColumns; len(cols) != 2 || cols[0].JSONPath != ".status.ingress[0].host" || cols[1].JSONPath != ".spec.sise" {
		t.Errorf("columns %+v; want both kept", cols)
	}
	for _, want := range []string{
		`types.go:6:1: warning: +kubebuilder:printcolumn of Widget: JSONPath .status.ingress[0].host: .status (WidgetStatus) has no field "ingress" (its fields: ready); the column "Host" is kept and prints empty`,
		`types.go:7:1: warning: +kubebuilder:printcolumn of Widget: JSONPath .spec.sise: .spec (WidgetSpec) has no field "sise" (its fields: size)`,
	} {
		if w := warningsContaining(warns, want); len(w) != 1 {
			t.Errorf("want the warning %q, got %v", want, warns)
		}
	}
	wrongType := strings.Replace(goodKind, "// +genclient\n", "// +genclient\n// +kubebuilder:printcolumn:name=Size,type=boolean,JSONPath=.spec.size\n", 1)
	_, _, err = build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": wrongType}))
	if err == nil || !strings.Contains(err.Error(), `types.go:6:1: +kubebuilder:printcolumn of Widget: column "Size" has type=boolean`) {
		t.Errorf("want the type mismatch refused, got %v", err)
	}
}

// TestPrintColumnsOfOneName: two printer columns of one name are kept with a warning, as
// kube-apiserver takes them in a CRD and kubectl prints both (Cluster API's MachineDeployment
// has two "Available" columns).
func TestPrintColumnsOfOneName(t *testing.T) {
	kind := strings.Replace(goodKind, "// +genclient\n", "// +genclient\n// +kubebuilder:printcolumn:name=Size,type=integer,JSONPath=.spec.size\n"+
		"// +kubebuilder:printcolumn:name=Size,type=string,JSONPath=.status.ready\n", 1)
	m, warns, err := build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": kind}))
	if err != nil {
		t.Fatal(err)
	}
	if cols := m.AllKinds()[0].PrintColumns; len(cols) != 2 || cols[0].JSONPath != ".spec.size" || cols[1].JSONPath != ".status.ready" {
		t.Errorf("columns %+v; want both kept in order", cols)
	}
	want := `types.go:7:1: warning: Widget has two printer columns named "Size" (the first at line 6): both are kept`
	if w := warningsContaining(warns, want); len(w) != 1 {
		t.Errorf("want the warning %q, got %v", want, warns)
	}
}

// TestPreserveUnknownFieldsOnTypedField: +kubebuilder:pruning:PreserveUnknownFields on a
// field whose Go type keeps only the fields it declares (Cluster API's JSONSchemaProps puts
// it on map, pointer and list fields of the recursive type) is not applied, with a warning
// that says what the server drops; on interface{} values it stays an error (badinput).
func TestPreserveUnknownFieldsOnTypedField(t *testing.T) {
	kind := strings.Replace(goodKind, "type WidgetSpec struct{ Size int32 `json:\"size\"` }",
		"type WidgetSpec struct {\n\tSize int32 `json:\"size\"`\n\t// +kubebuilder:pruning:PreserveUnknownFields\n\tConfig map[string]Config `json:\"config,omitempty\"`\n"+
			"\t// +kubebuilder:pruning:PreserveUnknownFields\n\tObjects []runtime.RawExtension `json:\"objects,omitempty\"`\n}\n\n"+
			"type Config struct {\n\tName string `json:\"name,omitempty\"`\n}\n", 1)
	kind = strings.Replace(kind, `import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"`,
		"import (\n\tmetav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n\t\"k8s.io/apimachinery/pkg/runtime\"\n)", 1)
	m, warns, err := build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": kind}))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.AllKinds()) != 1 {
		t.Fatalf("kinds %v", m.AllKinds())
	}
	for _, w := range warns {
		if strings.Contains(w.Msg, "Objects") {
			t.Errorf("a list of RawExtension keeps any object, as the marker asks; got the warning %q", w)
		}
	}
	// +kubebuilder:validation:EmbeddedResource alone on a typed field stays an error: an
	// embedded object's apiVersion, kind and metadata are not the Go type's to check.
	embedded := strings.Replace(kind, "\t// +kubebuilder:pruning:PreserveUnknownFields\n\tConfig", "\t// +kubebuilder:validation:EmbeddedResource\n\tConfig", 1)
	if _, _, err := build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": embedded})); err == nil ||
		!strings.Contains(err.Error(), "+kubebuilder:validation:EmbeddedResource on WidgetSpec.Config: a field of type map[string]v1.Config keeps only the fields its Go type declares") {
		t.Errorf("want EmbeddedResource on a typed field refused, got %v", err)
	}
	want := `warning: +kubebuilder:pruning:PreserveUnknownFields on WidgetSpec.Config is not applied: a field of type map[string]v1.Config keeps only the fields its Go type declares, and the server drops the rest`
	if w := warningsContaining(warns, want); len(w) != 1 {
		t.Errorf("want the warning %q, got %v", want, warns)
	}
}

// enumKind is goodKind with a +enum string type Shape (Round, Square) as the spec's shape.
func enumKind(typeMarkers, fieldMarkers string) string {
	return strings.Replace(goodKind, "type WidgetSpec struct{ Size int32 `json:\"size\"` }",
		"type WidgetSpec struct {\n\tSize int32 `json:\"size\"`\n"+fieldMarkers+"\tShape Shape `json:\"shape,omitempty\"`\n}\n\n"+
			"// Shape is a shape.\n"+typeMarkers+"type Shape string\n\nconst (\n\tRound  Shape = \"Round\"\n\tSquare Shape = \"Square\"\n)\n", 1)
}

// TestEnumMerged: kueue puts +enum (kube-openapi: the type's constants are the enum) next to
// +kubebuilder:validation:Enum with the same values; the two are one enum, published and
// checked. +enum (or +k8s:enum) alone is a documented enum: published, not checked.
// Different values are an error at the Enum marker naming both lists.
func TestEnumMerged(t *testing.T) {
	for name, c := range map[string]struct {
		src        string
		documented bool
	}{
		"on the type":        {enumKind("// +enum\n// +kubebuilder:validation:Enum=Square;Round\n", ""), false},
		"on the field":       {enumKind("// +enum\n", "\t// +kubebuilder:validation:Enum=Round;Square\n"), false},
		"+enum alone":        {enumKind("// +enum\n", ""), true},
		"+k8s:enum alone":    {enumKind("// +k8s:enum\n", ""), true},
		"+k8s:enum and Enum": {enumKind("// +k8s:enum\n", "\t// +kubebuilder:validation:Enum=Round;Square\n"), false},
	} {
		src := c.src
		t.Run(name, func(t *testing.T) {
			m, _, err := build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": src}))
			if err != nil {
				t.Fatal(err)
			}
			f := m.Types.Lookup(model.GoType{Pkg: m.Groups[0].Versions[0].ImportPath, Name: "WidgetSpec"}).Field("Shape")
			var got []string
			for _, e := range f.Validation.Enum {
				got = append(got, e.(string))
			}
			slices.Sort(got)
			if !f.OpenAPIEnum || !slices.Equal(got, []string{"Round", "Square"}) {
				t.Errorf("OpenAPIEnum %v, enum %v; want one enum Round, Square", f.OpenAPIEnum, got)
			}
			if f.DocumentedEnum != c.documented {
				t.Errorf("DocumentedEnum %v; want %v (documentation only without +kubebuilder:validation:Enum)", f.DocumentedEnum, c.documented)
			}
		})
	}
	_, _, err := build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo,
		"apis/shop/v1/types.go": enumKind("// +enum\n", "\t// +kubebuilder:validation:Enum=Round;Oval\n")}))
	if err == nil || !strings.Contains(err.Error(), "types.go:15:2: +kubebuilder:validation:Enum on WidgetSpec.Shape allows Oval;Round, but Shape is +enum (types.go:20) with the constants Round;Square") {
		t.Errorf("want the contradiction at the field's Enum marker, got %v", err)
	}
}

// TestBuiltinGroupWarned: a package declaring a group kube-apiserver serves itself
// (apiregistration.k8s.io, and every group of k8s.io/api from client-go's scheme) is
// warned at its +groupName: its APIService would take the group over.
func TestBuiltinGroupWarned(t *testing.T) {
	for _, group := range []string{"apiregistration.k8s.io", "networking.k8s.io", "apiextensions.k8s.io"} {
		_, warns, err := build(t, module(t, map[string]string{"apis/shop/v1/doc.go": "// +groupName=" + group + "\npackage v1\n", "apis/shop/v1/types.go": goodKind}))
		if err != nil {
			t.Fatal(err)
		}
		if w := warningsContaining(warns, "doc.go:1:1: warning: group "+group+" is served by kube-apiserver itself"); len(w) != 1 {
			t.Errorf("%s: want one warning at +groupName, got %v", group, warns)
		}
	}
	_, warns, err := build(t, module(t, map[string]string{"apis/shop/v1/doc.go": "// +groupName=metrics.k8s.io\npackage v1\n", "apis/shop/v1/types.go": goodKind}))
	if err != nil {
		t.Fatal(err)
	}
	if w := warningsContaining(warns, "kube-apiserver itself"); len(w) > 0 {
		t.Errorf("metrics.k8s.io is served by an aggregated server (metrics-server), not kube-apiserver: %v", w)
	}
}

// ownProtobuf is gogo protobuf's methods as k8s.io/api v0.37's and k8s.io/metrics'
// generated.pb.go declares them (no ProtoMessage), for type T.
func ownProtobuf(typ string) string {
	return strings.ReplaceAll(`
func (m *TYPE) Reset()                                     { *m = TYPE{} }
func (m *TYPE) String() string                             { return "" }
func (m *TYPE) Marshal() ([]byte, error)                   { return nil, nil }
func (m *TYPE) MarshalTo(b []byte) (int, error)            { return 0, nil }
func (m *TYPE) MarshalToSizedBuffer(b []byte) (int, error) { return 0, nil }
func (m *TYPE) Size() int                                  { return 0 }
func (m *TYPE) Unmarshal(b []byte) error                   { return nil }
`, "TYPE", typ)
}

// TestOwnGogoProtobuf: a types package whose kinds have protobuf methods of their own
// (k8s.io/metrics' generated.pb.go) is served in protobuf with them: no "JSON and YAML
// only" warning, and aagen writes no methods of its own.
func TestOwnGogoProtobuf(t *testing.T) {
	m, warns, err := build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": goodKind,
		"apis/shop/v1/generated.pb.go": "package v1\n" + ownProtobuf("Widget") + ownProtobuf("WidgetList")}))
	if err != nil {
		t.Fatal(err)
	}
	if _, proto := splitProtobuf(warns); len(proto) > 0 {
		t.Errorf("protobuf warnings for a package with its own methods: %v", proto)
	}
	pb := m.Groups[0].Versions[0].Protobuf
	if !pb.Own || !pb.Encodes() || pb.Generates() || !m.ServesProtobuf() {
		t.Errorf("Own %v, Encodes %v, Generates %v, ServesProtobuf %v; want its own methods, served in protobuf", pb.Own, pb.Encodes(), pb.Generates(), m.ServesProtobuf())
	}
	// Without Unmarshal the package cannot be decoded: the warning stays, and is true.
	partial := strings.ReplaceAll(ownProtobuf("Widget")+ownProtobuf("WidgetList"), "Unmarshal(", "unmarshal(")
	_, warns, err = build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": goodKind,
		"apis/shop/v1/generated.pb.go": "package v1\n" + partial}))
	if err != nil {
		t.Fatal(err)
	}
	if _, proto := splitProtobuf(warns); len(proto) == 0 || !strings.Contains(proto[0], "JSON and YAML only") {
		t.Errorf("want the JSON-only warning for methods the serializer cannot decode with, got %v", proto)
	}
}

// TestDefaultWithoutOmitEmpty: openshift/api and kueue default scalar fields without
// omitempty; they are defaulted as fields with it are (defaulter-gen, when the field holds
// its zero value), where aagen refused them before. A non-pointer struct takes the empty
// default {} (its fields' defaults always apply, which is all {} asks) with nothing
// generated; any other default there is a warning at the marker, and the field keeps its
// other constraints.
func TestDefaultWithoutOmitEmpty(t *testing.T) {
	kind := strings.Replace(goodKind, "type WidgetSpec struct{ Size int32 `json:\"size\"` }", `type WidgetSpec struct {
	// +kubebuilder:default=3
	Size int32 `+"`json:\"size\"`"+`
	// +kubebuilder:default=Wood
	Material string `+"`json:\"material\"`"+`
	// +kubebuilder:default={}
	Inner Inner `+"`json:\"inner\"`"+`
	// +kubebuilder:default={mode: Fast}
	// +kubebuilder:validation:MinProperties=1
	Other Inner `+"`json:\"other\"`"+`
}

type Inner struct {
	// +kubebuilder:default=Slow
	Mode string `+"`json:\"mode,omitempty\"`"+`
}`, 1)
	m, warns, err := build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": kind}))
	if err != nil {
		t.Fatal(err)
	}
	v := m.Groups[0].Versions[0]
	spec := m.Types.Lookup(model.GoType{Pkg: v.ImportPath, Name: "WidgetSpec"})
	if f := spec.Field("Size"); f.Default != "3" || f.Required == nil || *f.Required {
		t.Errorf("Size default %q, required %v; want 3, optional (a body may leave it out, as from a CRD)", f.Default, f.Required)
	}
	if d := spec.Field("Material").Default; d != `"Wood"` {
		t.Errorf("Material default %q, want \"Wood\"", d)
	}
	if f := spec.Field("Inner"); f.Default != "" || f.Required == nil || *f.Required || len(warningsContaining(warns, "Inner")) > 0 {
		t.Errorf("Inner: default %q, required %v, warnings %v; want {} taken with nothing to generate, optional", f.Default, f.Required, warns)
	}
	if w := warningsContaining(warns, "types.go:20:2: warning: +kubebuilder:default on WidgetSpec.Other: not applied: a non-pointer struct field is never unset"); len(w) != 1 {
		t.Errorf("want the warning at Other's default, got %v", warns)
	}
	if f := spec.Field("Other"); f.Validation.MinProperties == nil {
		t.Error("Other lost its other constraints with the default it cannot take")
	}
	if !v.HasDefaults() {
		t.Error("the version has defaults: defaulter-gen must run")
	}
}

// TestJSONNameTwiceThroughInline: prometheus-operator's ProbeSpec has an authorization field
// and inlines HTTPConfig, which has one too. Go's encoding/json reads and writes only the
// shallower one, so the deeper one is hidden: a warning at the inline field names both with
// their file:line, and the struct records the hidden field's path for the schema
// (Type.Shadowed). Two of one name at one depth (two inlined structs with a proxy field) are
// an error, as encoding/json then reads and writes neither. A struct inlined without a clash
// hides nothing.
func TestJSONNameTwiceThroughInline(t *testing.T) {
	types := "package v1\n\nimport metav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n\n" +
		"// +genclient\ntype Widget struct {\n\tmetav1.TypeMeta   `json:\",inline\"`\n\tmetav1.ObjectMeta `json:\"metadata,omitempty\"`\n\tSpec WidgetSpec `json:\"spec\"`\n}\n\n" +
		"type WidgetSpec struct {\n\tAuthorization string `json:\"authorization,omitempty\"`\n\tHTTPConfig `json:\",inline\"`\n}\n\n" +
		"type HTTPConfig struct {\n\tProxy string `json:\"proxy,omitempty\"`\n\tAuthorization string `json:\"authorization,omitempty\"`\n}\n\n" +
		"type WidgetList struct {\n\tmetav1.TypeMeta `json:\",inline\"`\n\tmetav1.ListMeta `json:\"metadata,omitempty\"`\n\tItems []Widget `json:\"items\"`\n}\n"
	m, warns, err := build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": types}))
	if err != nil {
		t.Fatal(err)
	}
	want := `types.go:14:2: warning: WidgetSpec: Authorization (types.go:19) through the inline HTTPConfig is hidden by Authorization (types.go:13), which has the same JSON name "authorization" and is shallower`
	if w := warningsContaining(warns, want); len(w) != 1 {
		t.Errorf("want the warning %q, got %v", want, warns)
	}
	spec := m.Types.Lookup(model.GoType{Pkg: "example.com/marina/apis/shop/v1", Name: "WidgetSpec"})
	if spec == nil || !reflect.DeepEqual(spec.Shadowed, [][]string{{"HTTPConfig", "Authorization"}}) {
		t.Fatalf("WidgetSpec's hidden fields: %v; want [[HTTPConfig Authorization]]", spec)
	}
	if hc := m.Types.Lookup(model.GoType{Pkg: "example.com/marina/apis/shop/v1", Name: "HTTPConfig"}); hc == nil || hc.Shadowed != nil {
		t.Errorf("HTTPConfig hides nothing of its own: %v", hc)
	}

	twoAtOneDepth := strings.Replace(types, "\tAuthorization string `json:\"authorization,omitempty\"`\n\tHTTPConfig `json:\",inline\"`\n",
		"\tHTTPConfig `json:\",inline\"`\n\tProxyConfig `json:\",inline\"`\n", 1) +
		"\ntype ProxyConfig struct {\n\tProxy string `json:\"proxy,omitempty\"`\n}\n"
	_, _, err = build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": twoAtOneDepth}))
	want = `WidgetSpec has two fields with the JSON name "proxy" at one depth, Proxy (types.go:18) through the inline HTTPConfig and Proxy (types.go:29) through the inline ProxyConfig: Go's encoding/json reads and writes neither`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("want an error containing\n%s\ngot %v", want, err)
	}

	ok := strings.Replace(types, "Authorization string `json:\"authorization,omitempty\"`\n\tHTTPConfig", "Token string `json:\"token,omitempty\"`\n\tHTTPConfig", 1)
	m, _, err = build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": ok}))
	if err != nil {
		t.Fatalf("an inline struct without a clash: %v", err)
	}
	if spec := m.Types.Lookup(model.GoType{Pkg: "example.com/marina/apis/shop/v1", Name: "WidgetSpec"}); spec == nil || spec.Shadowed != nil {
		t.Errorf("nothing is hidden without a clash: %v", spec)
	}
}

// TestRequiredAndOptionalSpellings: a field marked required and optional in two spelling
// families is read as controller-gen reads it (the kubebuilder spelling wins, k8s.io/api's
// IngressPortStatus.Error is +optional and +kubebuilder:validation:Required), with a
// warning; two markers of one family contradict each other and are an error. An embedded
// struct whose json tag names nothing (k8s.io/api's `LocalObjectReference `json:""“) is
// inline, as encoding/json reads it; an embedded string type is not.
func TestRequiredAndOptionalSpellings(t *testing.T) {
	kind := func(spec string) string {
		return "package v1\n\nimport metav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n\n" +
			"// +genclient\ntype Widget struct {\n\tmetav1.TypeMeta   `json:\",inline\"`\n\tmetav1.ObjectMeta `json:\"metadata,omitempty\"`\n\tSpec WidgetSpec `json:\"spec\"`\n}\n\n" +
			"type WidgetSpec struct {\n" + spec + "}\n\n" +
			"type Ref struct {\n\tName string `json:\"name,omitempty\"`\n}\n\ntype Label string\n\n" +
			"type WidgetList struct {\n\tmetav1.TypeMeta `json:\",inline\"`\n\tmetav1.ListMeta `json:\"metadata,omitempty\"`\n\tItems []Widget `json:\"items\"`\n}\n"
	}
	m, warns, err := build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": kind(
		"\t// +optional\n\t// +kubebuilder:validation:Required\n\tError *string `json:\"error,omitempty\"`\n" +
			"\t// +kubebuilder:validation:Optional\n\t// +required\n\tNote string `json:\"note\"`\n" +
			"\tRef `json:\"\"`\n")}))
	if err != nil {
		t.Fatal(err)
	}
	spec := m.Types.Lookup(model.GoType{Pkg: m.Groups[0].Versions[0].ImportPath, Name: "WidgetSpec"})
	if f := spec.Field("Error"); f.Required == nil || !*f.Required {
		t.Errorf("Error: required %v; want required (+kubebuilder:validation:Required wins over +optional)", f.Required)
	}
	if f := spec.Field("Note"); f.Required == nil || *f.Required {
		t.Errorf("Note: required %v; want optional (+kubebuilder:validation:Optional wins over +required)", f.Required)
	}
	if w := warningsContaining(warns, "+kubebuilder:validation:Required wins, as in controller-gen's CRD"); len(w) != 1 || !strings.Contains(w[0], "types.go:13:2: warning: field WidgetSpec.Error is +kubebuilder:validation:Required and +optional") {
		t.Errorf("want one warning at Error (types.go:13:2) that +kubebuilder:validation:Required wins, got %v", warns)
	}
	_, _, err = build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": kind(
		"\t// +optional\n\t// +required\n\tError *string `json:\"error,omitempty\"`\n")}))
	if err == nil || !strings.Contains(err.Error(), "types.go:14:2: field WidgetSpec.Error is marked both required and optional") {
		t.Errorf("+optional and +required: want an error, got %v", err)
	}
	_, _, err = build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": kind("\tLabel `json:\"\"`\n")}))
	if err == nil || !strings.Contains(err.Error(), `embedded field Widget.Spec.Label has no json tag; its fields would be serialised under "Label"`) {
		t.Errorf("an embedded string type without a json name: want an error, got %v", err)
	}
}
