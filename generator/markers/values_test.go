package markers

import (
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestTypedValues: a marker's value is read once into its own Go type, every spelling of a
// marker into the same type, and Find, FindAll and Is look markers up by that type.
func TestTypedValues(t *testing.T) {
	src := `package v1

type Widget struct {
	// +kubebuilder:validation:Minimum=1.5
	// +k8s:maxLength=16
	// +k8s:required
	// +optional=false
	// +k8s:maximum=1000 # k8s.io/gengo's trailing comment
	// +kubebuilder:validation:Enum=a;b
	// +kubebuilder:default:={from: Same}
	// +default=ref(Other)
	// +kubebuilder:validation:items:MaxLength=3
	// +kubebuilder:validation:XValidation:rule="self.size() > 0",reason=FieldValueInvalid,optionalOldSelf=true
	F string
}

// +kubebuilder:resource:path=widgets,scope=Cluster,shortName=wd;wg,categories={all,shop}
// +kubebuilder:printcolumn:name=Size,type=integer,JSONPath=.spec.size,priority=1
// +kubebuilder:printcolumn:name=Phase,type=string,JSONPath=.status.phase
// +aagen:subresource:view:name=summary,type=Summary,update=true
// +kubebuilder:deprecatedversion
type Kind struct{}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "types.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	r := Default()
	fields, diags := r.Parse(fset, OnField, f.Comments[0])
	if len(diags) > 0 {
		t.Fatalf("unexpected diagnostics: %v", diags)
	}
	if v, m, ok := Find[Minimum](fields); !ok || v != 1.5 || m.Pos.Line != 4 {
		t.Errorf("Minimum = %v at %v (found %v), want 1.5 at line 4", v, m.Pos, ok)
	}
	if v, _, ok := Find[MaxLength](fields); !ok || v != 16 {
		t.Errorf("+k8s:maxLength is not a MaxLength 16: %v %v", v, ok)
	}
	if v, _, ok := Find[Maximum](fields); !ok || v != 1000 {
		t.Errorf("+k8s:maximum=1000 # comment is not a Maximum 1000: %v %v", v, ok)
	}
	if !Is[Required](fields) {
		t.Error("+k8s:required is not found as Required")
	}
	if _, _, ok := Find[Optional](fields); !ok || Is[Optional](fields) {
		t.Error("+optional=false: want an Optional that is false")
	}
	if v, _, _ := Find[Enum](fields); !reflect.DeepEqual(v, Enum{"a", "b"}) {
		t.Errorf("Enum = %v", v)
	}
	defaults := FindAll[DefaultValue](fields)
	if len(defaults) != 2 || defaults[0].Value.CodeGenerator || defaults[0].Value.Literal.String() != "{from: Same}" ||
		!defaults[1].Value.CodeGenerator || !defaults[1].Value.Ref {
		t.Errorf("defaults = %+v", defaults)
	}
	if items := FindAll[Items](fields); len(items) != 1 || items[0].Value.Value != MaxLength(3) {
		t.Errorf("items = %+v", items)
	}
	if _, _, ok := Find[SchemaValue](fields); !ok {
		t.Error("no SchemaValue found")
	}
	if r, _, ok := Find[XValidation](fields); !ok || r.Rule != "self.size() > 0" || r.Reason != "FieldValueInvalid" || r.OptionalOldSelf == nil || !*r.OptionalOldSelf {
		t.Errorf("XValidation = %+v", r)
	}

	kind, diags := r.Parse(fset, OnType, f.Comments[1])
	if len(diags) > 0 {
		t.Fatalf("unexpected diagnostics: %v", diags)
	}
	if res, _, _ := Find[Resource](kind); !reflect.DeepEqual(res, Resource{Path: "widgets", Scope: "Cluster", ShortNames: []string{"wd", "wg"}, Categories: []string{"all", "shop"}}) {
		t.Errorf("Resource = %+v", res)
	}
	cols := FindAll[PrintColumn](kind)
	if len(cols) != 2 || cols[0].Value != (PrintColumn{Name: "Size", Type: "integer", JSONPath: ".spec.size", Priority: 1}) || cols[1].Value.Name != "Phase" {
		t.Errorf("columns = %+v", cols)
	}
	if s, _, _ := Find[Subresource](kind); s != (Subresource{Form: "view", Name: "summary", Type: "Summary", Update: true}) {
		t.Errorf("Subresource = %+v", s)
	}
	if d, _, ok := Find[DeprecatedVersion](kind); !ok || d.Warning != "" {
		t.Errorf("DeprecatedVersion = %+v, %v", d, ok)
	}
}

// TestValueErrors: a value that does not parse is an error at the marker, with a fix, and
// the marker is not in the set.
func TestValueErrors(t *testing.T) {
	r := Default()
	for _, c := range []struct {
		text     string
		target   Target
		msg, fix string
	}{
		{"kubebuilder:validation:Minimum=abc", OnField, `"abc" is not a number`, "write a number, e.g. +kubebuilder:validation:Minimum=1"},
		{"k8s:maxLength=-1", OnField, `"-1" is not a non-negative integer`, "write a non-negative integer, e.g. +k8s:maxLength=1"},
		{"kubebuilder:validation:MultipleOf=0", OnField, "0 is not positive", "use a positive number"},
		{"kubebuilder:validation:Pattern=`a(`", OnField, `invalid regular expression "a("`, "RE2"},
		{"kubebuilder:validation:Format=color", OnField, `format "color" is not one a Kubernetes server validates`, "date-time"},
		{"kubebuilder:validation:UniqueItems=true", OnField, "uniqueItems is not allowed", "+listType=set"},
		{"kubebuilder:validation:XValidation:message=x", OnField, "rule is required", `add rule=`},
		{`kubebuilder:validation:XValidation:rule="self.a >"`, OnField, `rule "self.a >" does not parse`, "fix the CEL expression"},
		{"kubebuilder:validation:XValidation:rule=self.a,reason=Bad", OnField, `reason "Bad" is not one of`, "use reason="},
		{"kubebuilder:default={a", OnField, "unclosed '{'", "controller-tools' syntax"},
		{"kubebuilder:printcolumn:name=A,type=string,JSONPath=.a,priority=-1", OnType, "priority=-1 is not an integer >= 0", "use priority=0"},
		{"aagen:subresource:view:name=a,type=A,update=maybe", OnType, `update="maybe"`, "use update=true or leave it out"},
	} {
		m, d, known := r.ParseText(c.text, c.target)
		if !known || d == nil || d.Warning || !strings.Contains(d.Msg, c.msg) || !strings.Contains(d.Fix, c.fix) || m.Parsed != nil {
			t.Errorf("+%s: want error %q with fix %q, got %+v (parsed %v)", c.text, c.msg, c.fix, d, m.Parsed)
			continue
		}
		// The value's problem alone, for the model to name the node: "+<name> on Widget.Size: <msg>".
		if d.ValueMsg == "" || d.Name != m.Def.Name || !strings.Contains(d.ValueMsg, c.msg) || strings.Contains(d.ValueMsg, "marker +") {
			t.Errorf("+%s: ValueMsg = %q, Name = %q", c.text, d.ValueMsg, d.Name)
		}
	}
	src := "package v1\n\ntype W struct {\n\t// +kubebuilder:validation:MaxItems=x\n\tF []string\n}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "types.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	set, diags := Default().Parse(fset, OnField, f.Comments...)
	if len(set) != 0 || len(diags) != 1 || diags[0].Error() != `types.go:4:2: marker +kubebuilder:validation:MaxItems=x: "x" is not a non-negative integer` {
		t.Errorf("want the error at types.go:4:2 and no marker, got %v %v", set, diags)
	}
}

// TestDefinitionsHaveValues: every marker aagen applies itself has a typed value, and every
// spelling of a marker parses into the Go type of the marker it is a spelling of.
func TestDefinitionsHaveValues(t *testing.T) {
	// Markers that client-gen and deepcopy-gen read from the comments themselves.
	readByOthers := []string{"genclient:noVerbs", "genclient:onlyVerbs", "genclient:skipVerbs", "genclient:method", "kubebuilder:object:generate"}
	sample := map[ValueType]string{String: "x", Integer: "1", Number: "1", Boolean: "true", StringList: "a;b", LiteralValue: "1"}
	r := Default()
	typeOf := func(d *Definition) reflect.Type {
		text := d.Name
		switch d.Form {
		case Value:
			text += "=" + sample[d.Type]
		case Args:
			text += ":" + d.Keys[0] + "=x"
		}
		m, diag, known := r.ParseText(text, d.Target&-d.Target)
		if !known || diag != nil && !diag.Warning {
			t.Errorf("+%s: %+v", text, diag)
			return nil
		}
		return reflect.TypeOf(m.Parsed)
	}
	byName := map[string]*Definition{}
	for _, d := range r.Definitions() {
		byName[d.Name] = d
	}
	for _, d := range r.Definitions() {
		applied := d.Status() == "applied" && d.Form != Raw && !strings.HasPrefix(d.Name, ItemsPrefix)
		if applied && d.Parse == nil && !slices.Contains(readByOthers, d.Name) {
			t.Errorf("+%s is applied but has no Parse: give it a value type", d.Name)
		}
		if d.Same == "" {
			continue
		}
		base := byName[d.Same]
		if base == nil {
			t.Errorf("+%s is a spelling of unknown +%s", d.Name, d.Same)
			continue
		}
		if got, want := typeOf(d), typeOf(base); got != want {
			t.Errorf("+%s parses into %v, but +%s into %v", d.Name, got, base.Name, want)
		}
	}
}

// TestApplyToSchema: schema markers apply themselves to a node, or say why they do not fit it.
func TestApplyToSchema(t *testing.T) {
	str, integer := Node{Kind: "string"}, Node{Kind: "integer"}
	obj := Node{Kind: "object", IsStruct: true, Fields: []string{"http", "grpc"}}
	var s Schema
	for _, c := range []struct {
		v    SchemaValue
		node Node
	}{{Minimum(1), integer}, {Maximum(9), integer}, {MaxLength(3), Node{Kind: "string"}}, {Enum{"1", "2"}, integer},
		{ExactlyOneOf{"http", "grpc"}, obj}, {Immutable(true), str}} {
		if p := c.v.ApplyToSchema(&s, c.node); p != nil {
			t.Errorf("%#v: %v", c.v, p)
		}
	}
	if *s.Minimum != 1 || *s.Maximum != 9 || *s.MaxLength != 3 || !reflect.DeepEqual(s.Enum, []any{int64(1), int64(2)}) || len(s.Rules) != 2 ||
		s.Rules[0].Rule != "(has(self.http)?1:0)+(has(self.grpc)?1:0) == 1" || s.Rules[1].Message != "field is immutable" {
		t.Errorf("schema = %+v", s)
	}
	for _, c := range []struct {
		v        SchemaValue
		node     Node
		msg, fix string
	}{
		{Minimum(1), str, "the field is a string, not a number", "use it on an integer or floating-point field"},
		{Minimum(1.5), integer, `the field is an integer and "1.5" is not`, "write an integer"},
		{MaxItems(1), str, "the field is a string", "use it on array fields"},
		{Pattern("a"), integer, "the field is an integer", "use it on a string field"},
		{Enum{"x"}, integer, `enum value "x" is not an integer`, "list values of the field's type"},
		{AtLeastOneOf{"tcp"}, obj, `no field "tcp"`, "http, grpc"},
		{AtMostOneOf{"a"}, str, "the type is not a struct", "put it on a struct type"},
	} {
		var s Schema
		if p := c.v.ApplyToSchema(&s, c.node); p == nil || p.Msg != c.msg || !strings.Contains(p.Fix, c.fix) {
			t.Errorf("%#v on %s: want %q (fix %q), got %+v", c.v, c.node.Kind, c.msg, c.fix, p)
		}
	}
}
