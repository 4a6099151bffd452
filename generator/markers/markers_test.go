package markers

import (
	"go/parser"
	"go/token"
	"reflect"
	"strings"
	"testing"
)

func TestParseForms(t *testing.T) {
	r := Default()
	cases := []struct {
		text   string
		target Target
		name   string
		value  string
		args   map[string]string
		err    string
	}{
		{text: "groupName=shop.example.com", target: OnPackage, name: "groupName", value: "shop.example.com"},
		{text: `groupName="shop.example.com"`, target: OnPackage, name: "groupName", value: "shop.example.com"},
		{text: "genclient", target: OnType, name: "genclient", value: "true"},
		{text: "genclient:nonNamespaced", target: OnType, name: "genclient:nonNamespaced", value: "true"},
		{text: "kubebuilder:object:root=true", target: OnType, name: "kubebuilder:object:root", value: "true"},
		{text: "kubebuilder:object:root=false", target: OnType, name: "kubebuilder:object:root", value: "false"},
		{text: "kubebuilder:resource:path=widgets,scope=Cluster,shortName=wd;wg,categories={all,shop}", target: OnType,
			name: "kubebuilder:resource", args: map[string]string{"path": "widgets", "scope": "Cluster", "shortName": "wd;wg", "categories": "{all,shop}"}},
		{text: "kubebuilder:subresource:status", target: OnType, name: "kubebuilder:subresource:status", value: "true"},
		{text: "kubebuilder:validation:Minimum:=1", target: OnField, name: "kubebuilder:validation:Minimum", value: "1"},
		{text: "kubebuilder:default:={a: b}", target: OnField, name: "kubebuilder:default", value: "{a: b}"},
		{text: "kubebuilder:validation:Pattern=`^a,b$`", target: OnField, name: "kubebuilder:validation:Pattern", value: "^a,b$"},
		{text: "genclient:nonNamspaced", target: OnType, err: `unknown marker "+genclient:nonNamspaced"; did you mean +genclient:nonNamespaced?`},
		{text: "kubebuilder:resource:scop=Cluster", target: OnType, err: `unknown argument "scop" of +kubebuilder:resource (known: path, scope, shortName, categories, singular); did you mean scope?`},
		{text: "groupName", target: OnPackage, err: "needs a value"},
		{text: "genclient=yes", target: OnType, err: "takes no value or =true/=false"},
		{text: "groupName=x.y", target: OnType, err: "belongs on a package, not on a type"},
		{text: "kubebuilder:resource:path={a", target: OnType, err: "unbalanced"},
		{text: "listType=map", target: OnField, name: "listType", value: "map"},
		{text: "listType=sorted", target: OnField, err: `"sorted" is not a value of +listType (it is one of atomic, set, map)`},
		{text: "k8s:listType=sorted", target: OnField, err: `"sorted" is not a value of +k8s:listType`},
		{text: "mapType=merge", target: OnField, err: `"merge" is not a value of +mapType (it is one of atomic, granular)`},
		{text: "structType=atomic", target: OnType, name: "structType", value: "atomic"},
	}
	for _, c := range cases {
		m, d, known := r.ParseText(c.text, c.target)
		if c.err != "" {
			if d == nil || d.Warning || !strings.Contains(d.Msg, c.err) {
				t.Errorf("%s: want error containing %q, got %+v", c.text, c.err, d)
			}
			continue
		}
		if d != nil || !known {
			t.Errorf("%s: unexpected diagnostic %+v (known=%v)", c.text, d, known)
			continue
		}
		if m.Def.Name != c.name || m.Value != c.value || (c.args != nil && !reflect.DeepEqual(m.Args, c.args)) {
			t.Errorf("%s: got %s %q %v", c.text, m.Def.Name, m.Value, m.Args)
		}
	}
}

func TestForeignMarkersPassThrough(t *testing.T) {
	r := Default()
	for _, text := range []string{"listMapKey=type", "listType=atomic", "k8s:deepcopy-gen=package", "k8s:openapi-gen=true", "patchStrategy=merge",
		"k8s:some-future-tool=x", "protobuf.options.(gogoproto.goproto_stringer)=false", "k8s:prerelease-lifecycle-gen:introduced=1.30"} {
		if _, d, _ := r.ParseText(text, OnField); d != nil {
			t.Errorf("%s: want no diagnostic, got %+v", text, d)
		}
	}
}

func TestPendingMarkerWarns(t *testing.T) {
	_, d, known := Default().ParseText("kubebuilder:validation:XIntOrString", OnField)
	if !known || d == nil || !d.Warning {
		t.Fatalf("want a warning for a recognised, not yet applied marker, got %+v", d)
	}
}

// Validation and default markers are applied: known, without a warning. +optional,
// +required and +default are read by aagen too (and still reach kube-openapi).
func TestValidationMarkersApplied(t *testing.T) {
	r := Default()
	for _, text := range []string{"kubebuilder:validation:Minimum=1", "kubebuilder:validation:Enum=a;b", "kubebuilder:default=3",
		"default=\"x\"", "optional", "required", `kubebuilder:validation:XValidation:rule="self > 0",message="positive"`} {
		m, d, known := r.ParseText(text, OnField)
		if !known || d != nil {
			t.Errorf("%s: known=%v diagnostic %+v", text, known, d)
			continue
		}
		if m.Def.Pending != "" {
			t.Errorf("%s: still pending", text)
		}
	}
}

func TestParseCommentsWithPositions(t *testing.T) {
	src := "package v1\n\n// Widget is a thing.\n// +genclient\n// +genclient:nonNamspaced\ntype Widget struct{}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "types.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	set, diags := Default().Parse(fset, OnType, f.Comments...)
	if !Is[GenClient](set) {
		t.Errorf("genclient not found in %v", set)
	}
	if len(diags) != 1 || diags[0].Pos.Line != 5 || diags[0].Pos.Filename != "types.go" {
		t.Fatalf("want one diagnostic at types.go:5, got %+v", diags)
	}
}

func TestList(t *testing.T) {
	for in, want := range map[string][]string{"a;b": {"a", "b"}, "{a,b}": {"a", "b"}, "a": {"a"}, "": nil, "a;;b;": {"a", "b"}, `a;"";"b"`: {"a", "", "b"}, `{a,""}`: {"a", ""},
		// Quoted items, first and last among them (prometheus-operator's
		// Enum="OnNamespace";"OnNamespaceExceptForAlertmanagerNamespace";"None"), and separators
		// and escaped quotes inside quotes.
		`"a";"b";"c"`: {"a", "b", "c"}, `"a;b";c`: {"a;b", "c"}, `{"a,b",c}`: {"a,b", "c"}, `"a\"b";c`: {`a"b`, "c"}, "`a;b`;c": {"a;b", "c"}} {
		if got := List(in); !reflect.DeepEqual(got, want) {
			t.Errorf("List(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestQuotedListMarker parses a list-valued marker whose text starts and ends with a quote
// (each item quoted): every item is a value of its own, not one quoted value.
func TestQuotedListMarker(t *testing.T) {
	m, d, known := Default().ParseText(`kubebuilder:validation:Enum="OnNamespace";"OnNamespaceExceptForAlertmanagerNamespace";"None"`, OnField)
	if !known || d != nil {
		t.Fatalf("known %v, diagnostic %v", known, d)
	}
	v, err := m.Def.Parse(m)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Enum{"OnNamespace", "OnNamespaceExceptForAlertmanagerNamespace", "None"}); !reflect.DeepEqual(v, want) {
		t.Errorf("Enum = %#v, want %#v", v, want)
	}
}

func FuzzParseText(f *testing.F) {
	for _, s := range []string{"groupName=a.b", "kubebuilder:resource:path=x,scope={a,\"b\"}", "genclient:method=Foo,verb=get", "kubebuilder:printcolumn:name=\"A,B\",type=string"} {
		f.Add(s)
	}
	r := Default()
	f.Fuzz(func(t *testing.T, s string) {
		for _, target := range []Target{OnPackage, OnType, OnField} {
			m, d, known := r.ParseText(s, target)
			if known && m.Def == nil {
				t.Fatalf("known marker without definition: %q", s)
			}
			if d != nil && d.Msg == "" {
				t.Fatalf("empty diagnostic for %q", s)
			}
		}
	})
}

// TestForeignNearMissWarns checks that a typo of a marker aagen reads outside its own
// prefixes is reported (as a warning: other tools' markers pass through).
func TestForeignNearMissWarns(t *testing.T) {
	r := Default()
	for text, want := range map[string]string{"optinal": "+optional", "requried": "+required", "defualt=3": "+default"} {
		_, d, known := r.ParseText(text, OnField)
		if known || d == nil || !d.Warning || !strings.Contains(d.Msg, "did you mean "+want+"?") {
			t.Errorf("%s: want a warning naming %s, got %+v known=%v", text, want, d, known)
		}
	}
}

// TestEveryControllerGenMarker: every marker controller-gen registers (controller-tools
// 434758187dddcaf646276fbe2c2ba40ff4e859d5: pkg/crd/markers, pkg/rbac, pkg/webhook,
// pkg/deepcopy, pkg/applyconfiguration), used as its documentation shows, is known:
// applied, ignored, or a warning, never an error.
func TestEveryControllerGenMarker(t *testing.T) {
	r := Default()
	cases := []struct {
		text   string
		target Target
	}{
		{"groupName=shop.example.com", OnPackage}, {"versionName=v1", OnPackage}, {"kubebuilder:skip", OnPackage},
		{"kubebuilder:skipversion", OnPackage}, {"kubebuilder:skipversion", OnType},
		{"kubebuilder:validation:Required", OnPackage}, {"kubebuilder:validation:Optional", OnPackage},
		{"kubebuilder:object:generate=true", OnPackage}, {"kubebuilder:object:generate=false", OnType}, {"kubebuilder:object:root=true", OnType},
		{"kubebuilder:ac:generate=true", OnPackage}, {"kubebuilder:ac:generate=false", OnType}, {"kubebuilder:ac:output:package=applyconfiguration", OnPackage},
		{"kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch", OnPackage},
		{"kubebuilder:rbac:groups=\"\",resources=pods,verbs=get,namespace=x", OnType},
		{"kubebuilder:webhook:path=/mutate,mutating=true,failurePolicy=fail,sideEffects=None,groups=apps,resources=deployments,verbs=create;update,versions=v1,name=m.example.com,admissionReviewVersions=v1", OnPackage},
		{"kubebuilder:webhookconfiguration:mutating=true,name=x", OnPackage},
		{"kubebuilder:metadata:annotations=\"a=b\";\"c=d\",labels=\"e=f\"", OnType},
		{"kubebuilder:printcolumn:name=Age,type=date,JSONPath=`.metadata.creationTimestamp`", OnType},
		{"kubebuilder:resource:path=widgets,scope=Cluster,shortName=wd,categories=all,singular=widget", OnType},
		{"kubebuilder:subresource:status", OnType},
		{"kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector", OnType},
		{"kubebuilder:storageversion", OnType}, {"kubebuilder:unservedversion", OnType},
		{"kubebuilder:deprecatedversion:warning=\"old\"", OnType}, {"kubebuilder:deprecatedversion", OnType},
		{"kubebuilder:selectablefield:JSONPath=`.spec.x`", OnType},
		{"kubebuilder:validation:ExactlyOneOf=a;b", OnType}, {"kubebuilder:validation:AtMostOneOf=a;b", OnType},
		{"kubebuilder:validation:AtLeastOneOf=a;b", OnType}, {"k8s:enum", OnType}, {"enum", OnType},
		{"kubebuilder:title=Spec", OnType}, {"kubebuilder:title=\"A title\"", OnField},
		{"kubebuilder:externalDocs:url=\"https://example.com\",description=\"x\"", OnField},
		{"kubebuilder:example={a, b}", OnField}, {"kubebuilder:default={from: Same}", OnField}, {"default=\"x\"", OnField},
		{"nullable", OnField}, {"required", OnField}, {"optional", OnField}, {"k8s:required", OnField}, {"k8s:optional", OnField},
		{"k8s:immutable", OnField}, {"kubebuilder:validation:Schemaless", OnField},
		{"kubebuilder:validation:EmbeddedResource", OnField}, {"kubebuilder:pruning:PreserveUnknownFields", OnField},
		{"kubebuilder:pruning:PreserveUnknownFields", OnType},
		{"listType=map", OnField}, {"listMapKey=name", OnField}, {"mapType=granular", OnField}, {"structType=atomic", OnType},
		{"k8s:listType=map", OnField}, {"k8s:listMapKey=name", OnField},
		{"kubebuilder:validation:XValidation:rule=\"self.a == self.b\",message=\"equal\"", OnType},
	}
	for _, n := range []string{"Maximum=1", "Minimum:=1", "ExclusiveMaximum=true", "ExclusiveMinimum", "MultipleOf=2", "MinProperties=1",
		"MaxProperties=2", "MaxLength=3", "MinLength=1", "Pattern=`^a$`", "MaxItems=3", "MinItems=1", "UniqueItems=false", "Enum=a;b",
		"Format=date-time", "Type=string", "XPreserveUnknownFields", "XEmbeddedResource", "XIntOrString", "XValidation:rule=\"self > 0\""} {
		for _, target := range []Target{OnField, OnType} {
			cases = append(cases, struct {
				text   string
				target Target
			}{"kubebuilder:validation:" + n, target}, struct {
				text   string
				target Target
			}{"kubebuilder:validation:items:" + n, target})
		}
	}
	for _, c := range cases {
		_, d, known := r.ParseText(c.text, c.target)
		if !known || d != nil && !d.Warning {
			t.Errorf("+%s on a %s: known=%v, %+v", c.text, c.target, known, d)
		}
	}
	// A misspelling is still an error with the near-miss hint.
	if _, d, _ := r.ParseText("kubebuilder:validation:Minimun:=1", OnField); d == nil || d.Warning || !strings.Contains(d.Msg, "did you mean +kubebuilder:validation:Minimum?") {
		t.Errorf("misspelled Minimum:=1: %+v", d)
	}
}

// TestUnknownToolMarkers: an unknown marker under controller-gen's prefix is a warning, as
// controller-gen ignores markers it does not know (a published package's
// +kubebuilder:validation:OneOf, prometheus-operator's Rule), unless it is a typo of a known
// marker; under aagen's and code-generator's own prefixes it stays an error.
func TestUnknownToolMarkers(t *testing.T) {
	r := Default()
	cases := []struct {
		text    string
		warning bool
		msg     string
	}{
		{"kubebuilder:validation:OneOf=Record,Alert", true,
			`unknown marker "+kubebuilder:validation:OneOf" is ignored, as controller-gen ignores markers it does not know: nothing checks it; did you mean +kubebuilder:validation:AtLeastOneOf, +kubebuilder:validation:AtMostOneOf or +kubebuilder:validation:ExactlyOneOf?`},
		{"kubebuilder:validation:Precision=3", true, `unknown marker "+kubebuilder:validation:Precision" is ignored`},
		{"kubebuilder:validation:Minimun=1", false, `unknown marker "+kubebuilder:validation:Minimun"; did you mean +kubebuilder:validation:Minimum?`},
		{"kubebuilder:validation:maximum=1", false, `unknown marker "+kubebuilder:validation:maximum"; did you mean +kubebuilder:validation:Maximum?`},
		{"aagen:backends", false, `unknown marker "+aagen:backends"`},
		{"aagen:somethingelse", false, `unknown marker "+aagen:somethingelse"`},
		{"genclient:someday", false, `unknown marker "+genclient:someday"`},
	}
	// A marker of controller-gen's where controller-gen does not read it (Katib's
	// +kubebuilder:subresource:status in a package's doc comment) is ignored with a warning,
	// as controller-gen ignores it; one of aagen's own in the wrong place stays an error.
	for _, c := range []struct {
		text    string
		target  Target
		warning bool
		msg     string
	}{
		{"kubebuilder:subresource:status", OnPackage, true, "marker +kubebuilder:subresource:status: +kubebuilder:subresource:status belongs on a type, not on a package: it is ignored here, as controller-gen ignores it"},
		{"kubebuilder:validation:Minimum=1", OnPackage, true, "belongs on a type or field, not on a package: it is ignored here"},
		{"groupName=x.y", OnType, false, "+groupName belongs on a package, not on a type; move it"},
		{"aagen:backend", OnField, false, "+aagen:backend belongs on a type, not on a field; move it"},
	} {
		_, d, known := r.ParseText(c.text, c.target)
		if known == c.warning || d == nil || d.Warning != c.warning || !strings.Contains(d.Msg, c.msg) {
			t.Errorf("%s on a %s: want a diagnostic (warning %v) containing %q, got %+v (known %v)", c.text, c.target, c.warning, c.msg, d, known)
		}
	}
	for _, c := range cases {
		_, d, known := r.ParseText(c.text, OnType)
		if known || d == nil || d.Warning != c.warning || !strings.Contains(d.Msg, c.msg) {
			t.Errorf("%s: want a diagnostic (warning %v) containing %q, got %+v (known %v)", c.text, c.warning, c.msg, d, known)
		}
	}
}
