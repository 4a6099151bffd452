package markers

import (
	"encoding/json"
	"strings"
	"testing"
)

func str() *Shape            { return &Shape{Type: "string"} }
func listOf(s *Shape) *Shape { return &Shape{Type: "array", Items: s} }
func obj(props map[string]*Shape) *Shape {
	return &Shape{Type: "object", Properties: props}
}

// TestDefaultsLikeControllerGen reads the defaults of controller-tools' own test types
// with aagen's parser and compares the JSON with the defaults controller-gen writes into
// the CRD for them. Source: github.com/kubernetes-sigs/controller-tools at
// 434758187dddcaf646276fbe2c2ba40ff4e859d5, pkg/crd/testdata/cronjob_types.go (the
// markers, on CronJobSpec's fields named below) and
// pkg/crd/testdata/testdata.kubebuilder.io_cronjobs.yaml (the `default:` of each
// property, converted from YAML to JSON). {from: Same} is Gateway API's
// (sigs.k8s.io/gateway-api apis/v1 AllowedRoutes.Namespaces, a *RouteNamespaces whose
// From is a string), published as `default: {from: Same}` in its Gateway CRD.
func TestDefaultsLikeControllerGen(t *testing.T) {
	rootObject := obj(map[string]*Shape{"nested": obj(map[string]*Shape{"foo": str(), "bar": {Type: "boolean"}})})
	cases := []struct {
		field  string // the field in controller-tools' testdata
		marker string // its value, as written after "+kubebuilder:default=" (or "+default=")
		shape  *Shape
		want   string // the CRD's default as JSON
	}{
		{"defaultedString", `forty-two`, str(), `"forty-two"`},
		{"defaultedSlice", `{a,b}`, listOf(str()), `["a","b"]`},
		{"defaultedObject", `{{nested: {foo: "baz", bar: true}},{nested: {foo: "qux", bar: false}}}`, listOf(rootObject),
			`[{"nested":{"bar":true,"foo":"baz"}},{"nested":{"bar":false,"foo":"qux"}}]`},
		{"defaultedEmptySlice", `{}`, listOf(str()), `[]`},
		{"defaultedEmptyMap", `{}`, &Shape{Type: "object", Values: str()}, `{}`},
		{"defaultedEmptyObject", `{}`, obj(map[string]*Shape{"foo": str(), "bar": str()}), `{}`},
		{"doubleDefaultedString", `"kubebuilder-default"`, str(), `"kubebuilder-default"`},
		{"kubernetesDefaultedString", `"forty-two"`, str(), `"forty-two"`},
		{"kubernetesDefaultedSlice", `["a","b"]`, listOf(str()), `["a","b"]`},
		{"kubernetesDefaultedObject", `[{"nested": {"foo": "baz", "bar": true}},{"nested": {"foo": "qux", "bar": false}}]`, listOf(rootObject),
			`[{"nested":{"bar":true,"foo":"baz"}},{"nested":{"bar":false,"foo":"qux"}}]`},
		{"kubernetesDefaultedEmptySlice", `[]`, listOf(str()), `[]`},
		{"kubernetesDefaultedEmptyMap", `{}`, &Shape{Type: "object", Values: str()}, `{}`},
		{"gateway-api namespaces", `{from: Same}`, obj(map[string]*Shape{"from": str(), "selector": {Type: "object"}}), `{"from":"Same"}`},
	}
	for _, c := range cases {
		lit, err := ParseLiteral(c.marker)
		if err != nil {
			t.Errorf("%s: %s: %v", c.field, c.marker, err)
			continue
		}
		v, err := lit.JSON(c.shape)
		if err != nil {
			t.Errorf("%s: %s: %v", c.field, c.marker, err)
			continue
		}
		got, _ := json.Marshal(v)
		if string(got) != c.want {
			t.Errorf("%s: %s = %s, controller-gen writes %s", c.field, c.marker, got, c.want)
		}
	}
}

// TestLiteralSyntax covers controller-tools' argument syntax (its parse_test.go cases:
// bare and quoted strings, raw strings, numbers, bare and braced lists, nested lists and
// maps) read as the field's type.
func TestLiteralSyntax(t *testing.T) {
	integer, number, boolean := &Shape{Type: "integer"}, &Shape{Type: "number"}, &Shape{Type: "boolean"}
	cases := []struct {
		in    string
		shape *Shape
		want  string
	}{
		{`some string here!`, str(), `"some string here!"`},
		{`"some; string, \nhere"`, str(), `"some; string, \nhere"`},
		{"`some; string, \\nhere`", str(), `"some; string, \\nhere"`},
		{`42`, integer, `42`},
		{`-42`, integer, `-42`},
		{`42`, str(), `"42"`}, // typed by the field: a string field's 42 is "42"
		{`1.5`, number, `1.5`},
		{`true`, boolean, `true`},
		{`true`, str(), `"true"`},
		{`hi;hello;hey y'all`, listOf(str()), `["hi","hello","hey y'all"]`},
		{`{hi,hello,hey y'all}`, listOf(str()), `["hi","hello","hey y'all"]`},
		{`{1;1,2;3,5;8}`, listOf(listOf(integer)), `[[1,1],[2,3],[5,8]]`},
		{`{{1,1},{2,3},{5,8}}`, listOf(listOf(integer)), `[[1,1],[2,3],[5,8]]`},
		{"{formal: hello, `informal`: `hi!`}", &Shape{Type: "object", Values: str()}, `{"formal":"hello","informal":"hi!"}`},
		{`{}`, &Shape{Type: "object", Values: str()}, `{}`},
		// Any-typed values are guessed like controller-tools does.
		{`{text: "abc", len: 3, props: {encoding: ascii, nullsafe: true, tags: {"triple", "in a row"}}}`, nil,
			`{"len":3,"props":{"encoding":"ascii","nullsafe":true,"tags":["triple","in a row"]},"text":"abc"}`},
		{`087bdd`, nil, `"087bdd"`},
		{`0987`, nil, `"0987"`},
		{`100Mi`, nil, `"100Mi"`},
		{`100Mi`, &Shape{Type: "int-or-string"}, `"100Mi"`},
		{`8080`, &Shape{Type: "int-or-string"}, `8080`},
		{`2024-01-15`, nil, `"2024-01-15"`},
		{`sha256:08a7b`, nil, `"sha256:08a7b"`},
	}
	for _, c := range cases {
		lit, err := ParseLiteral(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		v, err := lit.JSON(c.shape)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		got, _ := json.Marshal(v)
		if string(got) != c.want {
			t.Errorf("%s = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestLiteralErrors(t *testing.T) {
	ns := obj(map[string]*Shape{"from": str(), "selector": {Type: "object"}})
	cases := []struct {
		in    string
		shape *Shape
		want  string
	}{
		{`big`, &Shape{Type: "integer"}, "big is not an integer"},
		{`"big"`, &Shape{Type: "integer"}, `"big" is not an integer`},
		{`{form: Same}`, ns, `no field "form" (fields: from, selector); did you mean from?`},
		{`{from: {a: b}}`, ns, `from: {a: b} is not a string`},
		{`{a, b}`, ns, `{a, b} is not an object`},
		{`{{x: 1}, {x: y}}`, listOf(obj(map[string]*Shape{"x": {Type: "integer"}})), `[1].x: y is not an integer`},
		{`{a: b`, ns, "unclosed '{'"},
		{`"abc`, str(), "unterminated string"},
		{`[1,`, listOf(str()), "is not JSON"},
		{`{a: 1, a: 2}`, nil, `map key "a" given twice`},
	}
	for _, c := range cases {
		lit, err := ParseLiteral(c.in)
		if err == nil {
			_, err = lit.JSON(c.shape)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.in, err, c.want)
		}
	}
}

func FuzzParseLiteral(f *testing.F) {
	for _, s := range []string{`{a: {b: c}, d: {1,2}}`, `a;b`, "`x`", `"y\n"`, `{}`, `[1,{"a":2}]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lit, err := ParseLiteral(s)
		if err != nil {
			return
		}
		if _, err := json.Marshal(lit.Guess()); err != nil {
			t.Fatalf("%q: guessed value does not marshal: %v", s, err)
		}
	})
}
