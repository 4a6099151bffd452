package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/utils/ptr"
)

// The fuzzed kind: a field of every shape and constraint typedCheck reads, and of some it
// leaves to the CRD's validator.
type fzObj struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              fzSpec   `json:"spec"`
	Status            fzStatus `json:"status,omitempty"`
}

type fzSpec struct {
	Name   string             `json:"name"`
	Code   string             `json:"code,omitempty"`
	Mode   string             `json:"mode,omitempty"`
	Note   string             `json:"note,omitempty"`
	Host   string             `json:"host,omitempty"`
	Size   int32              `json:"size"`
	Ratio  float64            `json:"ratio,omitempty"`
	Count  *int64             `json:"count,omitempty"`
	Ready  bool               `json:"ready"`
	Tags   []string           `json:"tags,omitempty"`
	Ports  []fzPort           `json:"ports,omitempty"`
	Labels map[string]string  `json:"labels,omitempty"`
	Inner  fzInner            `json:"inner"`
	Opt    *fzInner           `json:"opt,omitempty"`
	OptV   fzInner            `json:"optv,omitempty"`
	Any    intstr.IntOrString `json:"any,omitempty"`
	Qty    *resource.Quantity `json:"qty,omitempty"`
	When   *metav1.Time       `json:"when,omitempty"`
	Choice fzChoice           `json:"choice,omitempty"`
	Raw    []byte             `json:"raw,omitempty"`
	// The shapes of the review of 2026-11-28: a Go int (format int32), raw JSON under an
	// object schema, nil list items, nil map values under minProperties, zero optional
	// structs in lists of maps (which dropUnset does not reach), a name an embedded struct
	// shadows (TestTypedCheckShadowedName), a required map, nulls a struct's maxProperties counts.
	N     int                   `json:"n,omitempty"`
	Cfg   runtime.RawExtension  `json:"cfg,omitempty"`
	Items []*fzInner            `json:"items,omitempty"`
	Opts  map[string]*string    `json:"opts,omitempty"`
	G     map[string][]fzHolder `json:"g,omitempty"`
	Label string                `json:"label,omitempty"`
	Req   map[string]string     `json:"req"`
	Nul   fzNullables           `json:"nul,omitempty"`
	Nd    *fzDefaulted          `json:"nd,omitempty"`
	// The second review's: zero timestamps in a list and a map, a required timestamp at the
	// zero instant in another location.
	Times  []metav1.Time          `json:"times,omitempty"`
	Stamps map[string]metav1.Time `json:"stamps,omitempty"`
	Since  metav1.Time            `json:"since"`
}

type fzHolder struct {
	Opt fzChoice `json:"opt,omitempty"`
}

// fzShadowed has a JSON name twice: its own field's and an embedded struct's.
type fzShadowed struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Label             string `json:"label,omitempty"`
	fzBase            `json:",inline"`
}

type fzBase struct {
	Label string `json:"label,omitempty"`
}

func (o *fzShadowed) DeepCopyObject() runtime.Object { c := *o; return &c }

type fzNullables struct {
	A *string `json:"a"`
	B *string `json:"b,omitempty"`
}

type fzDefaulted struct {
	C *string `json:"c"`
}

type fzPort struct {
	Name  string `json:"name"`
	Port  int32  `json:"port"`
	Proto string `json:"proto,omitempty"`
}

type fzInner struct {
	A string `json:"a"`
	B int32  `json:"b,omitempty"`
}

type fzChoice struct {
	X *string `json:"x,omitempty"`
	Y *int32  `json:"y,omitempty"`
}

type fzStatus struct {
	Phase string `json:"phase"`
	Seen  int32  `json:"seen,omitempty"`
}

func (o *fzObj) DeepCopyObject() runtime.Object {
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	out := &fzObj{}
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

// fzDefs are fzObj's definitions in openapi-gen's shape, with the kubebuilder markers'
// constraints, and a CEL rule on the spec.
func fzDefs(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
	str := func(p spec.SchemaProps) spec.Schema { p.Type = []string{"string"}; return spec.Schema{SchemaProps: p} }
	i32 := func(p spec.SchemaProps) spec.Schema {
		p.Type, p.Format = []string{"integer"}, "int32"
		return spec.Schema{SchemaProps: p}
	}
	obj := func(req []string, props map[string]spec.Schema) spec.Schema {
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, Required: req, Properties: props}}
	}
	refTo := func(name string, p spec.SchemaProps) spec.Schema {
		p.Ref = ref(name)
		return spec.Schema{SchemaProps: p}
	}
	listType := func(s spec.Schema, t string, keys ...string) spec.Schema {
		s.Extensions = spec.Extensions{"x-kubernetes-list-type": t}
		if len(keys) > 0 {
			s.Extensions["x-kubernetes-list-map-keys"] = keys
		}
		return s
	}
	withDefault := func(s spec.Schema, d any) spec.Schema { s.Default = d; return s }
	nullableStr := str(spec.SchemaProps{Nullable: true})
	timeRef := spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref("io.k8s.apimachinery.pkg.apis.meta.v1.Time")}}
	specDef := obj([]string{"name", "size", "ready", "inner", "req", "since"}, map[string]spec.Schema{
		"times":  {SchemaProps: spec.SchemaProps{Type: []string{"array"}, Items: &spec.SchemaOrArray{Schema: &timeRef}}},
		"stamps": {SchemaProps: spec.SchemaProps{Type: []string{"object"}, MinProperties: ptr.To[int64](1), AdditionalProperties: &spec.SchemaOrBool{Allows: true, Schema: &timeRef}}},
		"since":  timeRef,
		"n":      i32(spec.SchemaProps{}),
		"cfg":    {SchemaProps: spec.SchemaProps{Ref: ref(defRawExtension)}},
		"items":  {SchemaProps: spec.SchemaProps{Type: []string{"array"}, Items: &spec.SchemaOrArray{Schema: ptr.To(refTo("com.example.v1.Inner", spec.SchemaProps{}))}}},
		"opts": {SchemaProps: spec.SchemaProps{Type: []string{"object"}, MinProperties: ptr.To[int64](1),
			AdditionalProperties: &spec.SchemaOrBool{Allows: true, Schema: ptr.To(str(spec.SchemaProps{}))}}},
		"g": {SchemaProps: spec.SchemaProps{Type: []string{"object"}, AdditionalProperties: &spec.SchemaOrBool{Allows: true, Schema: &spec.Schema{
			SchemaProps: spec.SchemaProps{Type: []string{"array"}, Items: &spec.SchemaOrArray{Schema: ptr.To(refTo("com.example.v1.Holder", spec.SchemaProps{}))}}}}}},
		"req": {SchemaProps: spec.SchemaProps{Type: []string{"object"},
			AdditionalProperties: &spec.SchemaOrBool{Allows: true, Schema: ptr.To(str(spec.SchemaProps{}))}}},
		"nul": {SchemaProps: spec.SchemaProps{Type: []string{"object"}, MaxProperties: ptr.To[int64](1), Properties: map[string]spec.Schema{
			"a": nullableStr, "b": withDefault(str(spec.SchemaProps{}), "d")}}},
		"nd": {SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: map[string]spec.Schema{
			"c": withDefault(str(spec.SchemaProps{}), "d")}}},

		"name":  str(spec.SchemaProps{}),
		"code":  str(spec.SchemaProps{Pattern: `^[a-z]{1,3}$`, MaxLength: ptr.To[int64](3)}),
		"mode":  str(spec.SchemaProps{Enum: []any{"a", "b"}}),
		"note":  str(spec.SchemaProps{MaxLength: ptr.To[int64](4), MinLength: ptr.To[int64](2)}),
		"host":  str(spec.SchemaProps{Format: "hostname"}),
		"size":  i32(spec.SchemaProps{Minimum: ptr.To[float64](1), Maximum: ptr.To[float64](5)}),
		"ratio": {SchemaProps: spec.SchemaProps{Type: []string{"number"}, Format: "double", Minimum: ptr.To[float64](0), Maximum: ptr.To[float64](1), ExclusiveMaximum: true}},
		"count": {SchemaProps: spec.SchemaProps{Type: []string{"integer"}, Format: "int64", Minimum: ptr.To[float64](-2), ExclusiveMinimum: true, Maximum: ptr.To[float64](2)}},
		"ready": {SchemaProps: spec.SchemaProps{Type: []string{"boolean"}}},
		"tags": listType(spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"array"}, MaxItems: ptr.To[int64](3),
			Items: &spec.SchemaOrArray{Schema: ptr.To(str(spec.SchemaProps{MaxLength: ptr.To[int64](2)}))}}}, "set"),
		"ports": listType(spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"array"}, MinItems: ptr.To[int64](1),
			Items: &spec.SchemaOrArray{Schema: ptr.To(refTo("com.example.v1.Port", spec.SchemaProps{}))}}}, "map", "name"),
		"labels": {SchemaProps: spec.SchemaProps{Type: []string{"object"}, MaxProperties: ptr.To[int64](2),
			AdditionalProperties: &spec.SchemaOrBool{Allows: true, Schema: ptr.To(str(spec.SchemaProps{Pattern: `^v`}))}}},
		"inner":  withDefault(refTo("com.example.v1.Inner", spec.SchemaProps{}), map[string]any{}),
		"opt":    refTo("com.example.v1.Inner", spec.SchemaProps{}),
		"optv":   withDefault(refTo("com.example.v1.Inner", spec.SchemaProps{}), map[string]any{}),
		"any":    {SchemaProps: spec.SchemaProps{Ref: ref(defIntOrString)}},
		"qty":    {SchemaProps: spec.SchemaProps{Ref: ref(defQuantity)}},
		"when":   {SchemaProps: spec.SchemaProps{Ref: ref("io.k8s.apimachinery.pkg.apis.meta.v1.Time")}},
		"choice": withDefault(refTo("com.example.v1.Choice", spec.SchemaProps{MinProperties: ptr.To[int64](1), MaxProperties: ptr.To[int64](1)}), map[string]any{}),
		"raw":    str(spec.SchemaProps{Format: "byte"}),
	})
	specDef.Extensions = spec.Extensions{"x-kubernetes-validations": []any{map[string]any{"rule": "self.size != 4", "message": "not four"}}}
	return map[string]openapicommon.OpenAPIDefinition{
		"com.example.v1.Fz": {Schema: obj(nil, map[string]spec.Schema{
			"apiVersion": str(spec.SchemaProps{}),
			"kind":       str(spec.SchemaProps{}),
			"metadata":   withDefault(refTo(defObjectMeta, spec.SchemaProps{}), map[string]any{}),
			"spec":       withDefault(refTo("com.example.v1.FzSpec", spec.SchemaProps{}), map[string]any{}),
			"status":     withDefault(refTo("com.example.v1.FzStatus", spec.SchemaProps{}), map[string]any{}),
		})},
		"com.example.v1.FzSpec": {Schema: specDef},
		"com.example.v1.Port": {Schema: obj([]string{"name", "port"}, map[string]spec.Schema{
			"name":  str(spec.SchemaProps{}),
			"port":  i32(spec.SchemaProps{Minimum: ptr.To[float64](1)}),
			"proto": withDefault(str(spec.SchemaProps{Enum: []any{"TCP", "UDP"}}), "TCP"),
		})},
		"com.example.v1.Inner": {Schema: obj([]string{"a"}, map[string]spec.Schema{
			"a": str(spec.SchemaProps{}),
			"b": withDefault(i32(spec.SchemaProps{Maximum: ptr.To[float64](9)}), 3),
		})},
		"com.example.v1.Holder": {Schema: obj(nil, map[string]spec.Schema{
			"opt": withDefault(refTo("com.example.v1.Choice", spec.SchemaProps{MinProperties: ptr.To[int64](1)}), map[string]any{}),
		})},
		"com.example.v1.Choice": {Schema: obj(nil, map[string]spec.Schema{
			"x": str(spec.SchemaProps{}),
			"y": i32(spec.SchemaProps{}),
		})},
		"com.example.v1.FzStatus": {Schema: obj([]string{"phase"}, map[string]spec.Schema{
			"phase": str(spec.SchemaProps{Enum: []any{"X", "Y"}}),
			"seen":  i32(spec.SchemaProps{Minimum: ptr.To[float64](0)}),
		})},
		"io.k8s.apimachinery.pkg.apis.meta.v1.Time": {Schema: spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}, Format: "date-time"}}},
	}
}

// fuzzer draws values at and around every constraint's boundaries: a value that breaks
// its constraint (or is a zero value a required field may not hold) one time in
// invalidOdds, so that a good share of the objects is wholly valid.
type fuzzer struct{ r *rand.Rand }

const invalidOdds = 40

func (f fuzzer) pick(n int) int { return f.r.IntN(n) }

// choose returns one of valid, or one time in invalidOdds one of invalid.
func choose[T any](f fuzzer, valid, invalid []T) T {
	if len(invalid) > 0 && f.pick(invalidOdds) == 0 {
		return invalid[f.pick(len(invalid))]
	}
	return valid[f.pick(len(valid))]
}

func (f fuzzer) inner() fzInner {
	return fzInner{A: choose(f, []string{"a", "long value"}, []string{""}), B: choose(f, []int32{0, 3, 9}, []int32{10})}
}

func (f fuzzer) object() *fzObj {
	o := &fzObj{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Fz"}, ObjectMeta: metav1.ObjectMeta{Name: "fz", Namespace: "ns"}}
	s := &o.Spec
	s.Name = choose(f, []string{"n", "name"}, []string{""})
	s.Code = choose(f, []string{"", "a", "abc"}, []string{"abcd", "A", "a1"})
	s.Mode = choose(f, []string{"", "a", "b"}, []string{"c"})
	s.Note = choose(f, []string{"", "xy", "xyzw", "ééé"}, []string{"x", "xyzwv", "ééééé", "é"})
	s.Host = choose(f, []string{"", "example.com", "a.b-c.d"}, []string{"-bad-", "a..b", "ex ample.com"})
	s.Size = choose(f, []int32{1, 3, 5}, []int32{0, 4, 6, -1})
	s.Ratio = choose(f, []float64{0, 0.5, 0.999}, []float64{1, -0.1})
	if f.pick(2) == 0 {
		s.Count = ptr.To(choose(f, []int64{-1, 0, 2}, []int64{-3, -2, 3}))
	}
	s.Ready = choose(f, []bool{true}, []bool{false})
	for range f.pick(4) {
		s.Tags = append(s.Tags, choose(f, []string{"", "a", "ab", "b"}, []string{"abc"}))
	}
	if f.pick(3) == 0 {
		s.Tags = []string{}
	}
	for i := range f.pick(4) {
		s.Ports = append(s.Ports, fzPort{Name: choose(f, []string{fmt.Sprint("p", i)}, []string{"", "p0"}), Port: choose(f, []int32{1, 80}, []int32{0}),
			Proto: choose(f, []string{"", "TCP", "UDP"}, []string{"SCTP"})})
	}
	if f.pick(4) == 0 {
		s.Ports = []fzPort{}
	}
	if n := f.pick(4); n > 0 {
		s.Labels = map[string]string{}
		for i := range n {
			s.Labels[fmt.Sprint("k", i)] = choose(f, []string{"v", "vv"}, []string{"", "x"})
		}
	}
	s.Inner = f.inner()
	if f.pick(2) == 0 {
		s.Opt = ptr.To(f.inner())
	}
	if f.pick(2) == 0 {
		s.OptV = f.inner()
	}
	s.Any = choose(f, []intstr.IntOrString{{}, intstr.FromInt32(3), intstr.FromString("x"), intstr.FromString("")}, []intstr.IntOrString{{Type: 2}})
	if f.pick(3) == 0 {
		s.Qty = ptr.To(resource.MustParse(choose(f, []string{"1", "100m", "2Gi"}, nil)))
	}
	if f.pick(3) == 0 {
		s.When = &metav1.Time{Time: time.Unix(1_700_000_000, 0)}
	}
	switch choose(f, []int{1, 2}, []int{0, 3}) {
	case 1:
		s.Choice.X = ptr.To(choose(f, []string{"", "x"}, nil))
	case 2:
		s.Choice.Y = ptr.To(int32(f.pick(2)))
	case 3:
		s.Choice.X, s.Choice.Y = ptr.To("x"), ptr.To(int32(1))
	}
	if f.pick(3) == 0 {
		s.Raw = []byte("raw")
	}
	s.N = choose(f, []int{0, 5, math.MaxInt32}, []int{math.MaxInt32 + 1, math.MinInt32 - 1})
	s.Cfg.Raw = choose(f, [][]byte{nil, []byte(`{}`), []byte(`{"a":1}`)},
		[][]byte{[]byte(`5`), []byte(`"s"`), []byte(`null`), {}, []byte(` `), []byte(`{} 5`), []byte(`{"a":1e400}`), []byte(` {}`)})
	now := metav1.NewTime(time.Unix(1_700_000_000, 0))
	if f.pick(3) == 0 {
		s.Times = []metav1.Time{choose(f, []metav1.Time{now}, []metav1.Time{{}})}
	}
	if f.pick(3) == 0 {
		s.Stamps = map[string]metav1.Time{"a": choose(f, []metav1.Time{now}, []metav1.Time{{}})}
	}
	s.Since = choose(f, []metav1.Time{now}, []metav1.Time{{}, metav1.NewTime(time.Time{}.Local())})
	for range f.pick(3) {
		s.Items = append(s.Items, choose(f, []*fzInner{{A: "a"}}, []*fzInner{nil}))
	}
	if f.pick(3) == 0 {
		s.Opts = map[string]*string{"a": choose(f, []*string{ptr.To("x"), ptr.To("")}, []*string{nil})}
	}
	if f.pick(3) == 0 {
		s.G = map[string][]fzHolder{"x": {choose(f, []fzHolder{{Opt: fzChoice{X: ptr.To("x")}}}, []fzHolder{{}})}}
	}
	s.Req = choose(f, []map[string]string{{"a": "v"}}, []map[string]string{nil, {}, {"a": ""}})
	switch choose(f, []int{0, 1, 2}, []int{3}) {
	case 1:
		s.Nul.A = ptr.To("a")
	case 2:
		s.Nul.A, s.Nul.B = ptr.To("a"), ptr.To("b")
	case 3:
		s.Nul.B = ptr.To("b") // a's null counts: two properties
	}
	if f.pick(3) == 0 {
		s.Nd = choose(f, []*fzDefaulted{{C: ptr.To("c")}}, []*fzDefaulted{{}})
	}
	if f.pick(2) == 0 {
		o.Status = fzStatus{Phase: choose(f, []string{"X", "Y"}, []string{"", "Z"}), Seen: choose(f, []int32{0, 1}, []int32{-1})}
	}
	return o
}

// context returns a request's context as the handlers make it: nothing read, or a body
// read with some of the required fields and optional objects that hold zero values left
// out of it, or a patch's.
func (f fuzzer) context(o *fzObj) context.Context {
	ctx := context.Background()
	if f.pick(3) == 0 {
		return ctx
	}
	var fields, objects [][]string
	maybe := func(zero bool, path ...string) {
		if zero && f.pick(2) == 0 {
			fields = append(fields, path)
		}
	}
	s := o.Spec
	maybe(s.Name == "", "spec", "name")
	maybe(s.Size == 0, "spec", "size")
	maybe(!s.Ready, "spec", "ready")
	maybe(s.Inner.A == "", "spec", "inner", "a")
	maybe(s.Inner == fzInner{} || s.Inner == fzInner{B: 3}, "spec", "inner")
	maybe(len(s.Req) == 0 || s.Req["a"] == "", "spec", "req")
	maybe(s.Since.IsZero(), "spec", "since")
	maybe(o.Status.Phase == "", "status", "phase")
	for i, p := range s.Ports {
		maybe(p.Name == "", "spec", "ports", fmt.Sprint(i), "name")
		maybe(p.Port == 0, "spec", "ports", fmt.Sprint(i), "port")
	}
	if s.OptV.A == "" && f.pick(2) == 0 {
		objects = append(objects, []string{"spec", "optv"})
	}
	return WithBodyRead(WithAbsentObjects(WithAbsentFields(ctx, fields), objects))
}

// TestTypedCheckNeverAcceptsWhatTheCRDRefuses draws objects at and past the boundaries of
// every constraint and checks that the registry's answer with typed checks is the
// answer of k8s.io/apiextensions-apiserver's validator alone (SchemaValidationCRD), on
// create, update and /status update: the typed check skips the CRD's validator only for
// objects it would have found nothing in. It also checks that the typed check does decide
// a good share of them, so that the comparison is not vacuous.
func TestTypedCheckNeverAcceptsWhatTheCRDRefuses(t *testing.T) {
	s := &Schema{Definitions: fzDefs, Name: "com.example.v1.Fz"}
	typed, err := newSchemaValidator(s)
	if err != nil {
		t.Fatal(err)
	}
	crd, err := newSchemaValidator(s)
	if err != nil {
		t.Fatal(err)
	}
	crd.crdOnly = true
	typed.statusSubresource, crd.statusSubresource = true, true
	f := fuzzer{rand.New(rand.NewPCG(1, 2))}
	const n = 20000
	var certain, refused int
	for i := range n {
		o := f.object()
		var old *fzObj
		if i%3 != 0 {
			old = f.object()
		}
		status := old != nil && i%5 == 0
		ctx := f.context(o)
		var oldObj runtime.Object
		if old != nil {
			oldObj = old
		}
		if typed.certain(ctx, o) {
			certain++
		}
		got := typed.check(ctx, o, oldObj, status)
		want := crd.check(ctx, o, oldObj, status)
		if len(want) > 0 {
			refused++
		}
		g, w := errorStrings(got), errorStrings(want)
		slices.Sort(g)
		slices.Sort(w)
		if !slices.Equal(g, w) {
			b, _ := json.Marshal(o)
			t.Fatalf("object %d (update %v, status %v): with the typed check:\n%s\nthe CRD's validator alone:\n%s\nobject: %s",
				i, old != nil, status, g, w, b)
		}
	}
	t.Logf("%d objects: %d certainly valid by the typed check, %d refused", n, certain, refused)
	if certain < n/20 || refused < n/5 {
		t.Fatalf("the fuzzer is one-sided: %d of %d certainly valid, %d refused", certain, n, refused)
	}
}

// TestTypedCheckDecides checks the typed check on hand-picked objects: it says valid
// where every constraint holds, and not certain at a value past each one.
func TestTypedCheckDecides(t *testing.T) {
	v, err := newSchemaValidator(&Schema{Definitions: fzDefs, Name: "com.example.v1.Fz"})
	if err != nil {
		t.Fatal(err)
	}
	valid := func() *fzObj {
		return &fzObj{Spec: fzSpec{Name: "n", Code: "ab", Mode: "a", Note: "éé", Size: 5, Ratio: 0.5, Count: ptr.To[int64](2), Ready: true,
			Tags: []string{"a", "b"}, Ports: []fzPort{{Name: "http", Port: 80}, {Name: "grpc", Port: 1}}, Labels: map[string]string{"a": "v"},
			Inner: fzInner{A: "a"}, Opt: &fzInner{A: "x", B: 9}, Any: intstr.FromInt32(1), Qty: ptr.To(resource.MustParse("1Gi")),
			When: &metav1.Time{Time: time.Now()}, Choice: fzChoice{X: ptr.To("x")}, Raw: []byte{1},
			Req: map[string]string{"a": "v"}, Nul: fzNullables{A: ptr.To("a")}, Cfg: runtime.RawExtension{Raw: []byte(`{}`)},
			Since: metav1.NewTime(time.Unix(1_700_000_000, 0))},
			Status: fzStatus{Phase: "X"}}
	}
	if !v.certain(context.Background(), valid()) {
		t.Fatal("a valid object is not certainly valid")
	}
	for name, change := range map[string]func(o *fzObj){
		"pattern":               func(o *fzObj) { o.Spec.Code = "A" },
		"maxLength":             func(o *fzObj) { o.Spec.Code = "abcd" },
		"minLength in runes":    func(o *fzObj) { o.Spec.Note = "é" },
		"enum":                  func(o *fzObj) { o.Spec.Mode = "c" },
		"maximum":               func(o *fzObj) { o.Spec.Size = 6 },
		"exclusive maximum":     func(o *fzObj) { o.Spec.Ratio = 1 },
		"exclusive minimum":     func(o *fzObj) { o.Spec.Count = ptr.To[int64](-2) },
		"required zero int":     func(o *fzObj) { o.Spec.Size = 0 },
		"required false":        func(o *fzObj) { o.Spec.Ready = false },
		"required empty string": func(o *fzObj) { o.Spec.Name = "" },
		"required struct of defaults": func(o *fzObj) {
			o.Spec.Inner = fzInner{B: 3}
		},
		"set duplicate":                               func(o *fzObj) { o.Spec.Tags = []string{"a", "a"} },
		"set item maxLength":                          func(o *fzObj) { o.Spec.Tags = []string{"abc"} },
		"map key duplicate":                           func(o *fzObj) { o.Spec.Ports[1].Name = "http" },
		"map key empty":                               func(o *fzObj) { o.Spec.Ports[1].Name = "" },
		"item minimum":                                func(o *fzObj) { o.Spec.Ports[0].Port = 0 },
		"maxProperties of a map":                      func(o *fzObj) { o.Spec.Labels = map[string]string{"a": "v", "b": "v", "c": "v"} },
		"map value pattern":                           func(o *fzObj) { o.Spec.Labels["a"] = "x" },
		"maxProperties of a union":                    func(o *fzObj) { o.Spec.Choice.Y = ptr.To[int32](1) },
		"minProperties of a union":                    func(o *fzObj) { o.Spec.Choice = fzChoice{} }, // read with absences: see below
		"pointer struct's maximum":                    func(o *fzObj) { o.Spec.Opt.B = 10 },
		"string format":                               func(o *fzObj) { o.Spec.Host = "-bad-" },
		"valid string format":                         func(o *fzObj) { o.Spec.Host = "example.com" }, // stays valid: checked below
		"status enum":                                 func(o *fzObj) { o.Status.Phase = "Z" },
		"int beyond int32":                            func(o *fzObj) { o.Spec.N = math.MaxInt32 + 1 },
		"raw JSON not an object":                      func(o *fzObj) { o.Spec.Cfg.Raw = []byte(`5`) },
		"null list item":                              func(o *fzObj) { o.Spec.Items = []*fzInner{nil} },
		"pruned nulls under minProperties":            func(o *fzObj) { o.Spec.Opts = map[string]*string{"a": nil} },
		"required map of zeros":                       func(o *fzObj) { o.Spec.Req = map[string]string{"a": ""} },
		"null with a default":                         func(o *fzObj) { o.Spec.Nd = &fzDefaulted{} },
		"nullable null counted":                       func(o *fzObj) { o.Spec.Nul = fzNullables{B: ptr.To("b")} },
		"zero struct dropUnset does not reach":        func(o *fzObj) { o.Spec.G = map[string][]fzHolder{"x": {{}}} },
		"zero time in a list":                         func(o *fzObj) { o.Spec.Times = []metav1.Time{{}} },
		"pruned zero time under minProperties":        func(o *fzObj) { o.Spec.Stamps = map[string]metav1.Time{"a": {}} },
		"required time at the zero instant elsewhere": func(o *fzObj) { o.Spec.Since = metav1.NewTime(time.Time{}.Local()) },
		"raw JSON the converter cannot read":          func(o *fzObj) { o.Spec.Cfg.Raw = []byte(`{} 5`) },
		"raw JSON number beyond float64":              func(o *fzObj) { o.Spec.Cfg.Raw = []byte(`{"a":1e400}`) },
		"raw JSON with a leading blank":               func(o *fzObj) { o.Spec.Cfg.Raw = []byte(` {}`) },
		"int-or-string of no known type":              func(o *fzObj) { o.Spec.Any = intstr.IntOrString{Type: 2} },
		"int-or-string's string":                      func(o *fzObj) {}, // stays valid: checked below
	} {
		o := valid()
		change(o)
		ctx := context.Background()
		if name == "minProperties of a union" {
			// A request's absences keep a zero optional struct in the object the schema
			// sees (dropAbsent may put it back), so its minProperties applies.
			ctx = WithAbsentFields(ctx, [][]string{{"spec", "choice", "x"}})
		}
		got := v.certain(ctx, o)
		if want := name == "int-or-string's string" || name == "valid string format"; got != want {
			t.Errorf("%s: certain = %v, want %v", name, got, want)
		}
	}
	if typedCheckFor(v.structural, reflect.TypeFor[fzObj](), true) == nil {
		t.Error("the fuzzed kind compiled to no check")
	}
}

// TestTypedCheckShadowedName checks that a property two Go fields name (a field and an
// embedded struct's field) is not vouched for: which one the unstructured form holds is
// the converter's to say, and with "toolong" in either the CRD's validator may refuse it.
func TestTypedCheckShadowedName(t *testing.T) {
	defs := func(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
		return map[string]openapicommon.OpenAPIDefinition{"com.example.v1.Shadowed": {Schema: spec.Schema{SchemaProps: spec.SchemaProps{
			Type: []string{"object"},
			Properties: map[string]spec.Schema{
				"apiVersion": {SchemaProps: spec.SchemaProps{Type: []string{"string"}}},
				"kind":       {SchemaProps: spec.SchemaProps{Type: []string{"string"}}},
				"metadata":   {SchemaProps: spec.SchemaProps{Ref: ref(defObjectMeta)}},
				"label":      {SchemaProps: spec.SchemaProps{Type: []string{"string"}, MaxLength: ptr.To[int64](2)}},
			}}}}}
	}
	v, err := newSchemaValidator(&Schema{Definitions: defs, Name: "com.example.v1.Shadowed"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []*fzShadowed{{Label: "ok"}, {Label: "ok", fzBase: fzBase{Label: "toolong"}}, {Label: "toolong", fzBase: fzBase{Label: "ok"}}} {
		if v.certain(context.Background(), o) {
			t.Errorf("%+v: vouched for, with a name two fields share", o)
		}
	}
	if errs := v.check(context.Background(), &fzShadowed{Label: "ok", fzBase: fzBase{Label: "toolong"}}, nil, false); len(errs) == 0 {
		t.Error("the CRD's validator took the embedded struct's \"toolong\": the case does not show what the typed check guards against")
	}
}

// Kinds of shapes no generated type has but a hand-written one may (TestTypedCheckOddShapes).
type (
	oddOutside struct {
		metav1.TypeMeta `json:",inline"`
		A               string `json:"a,omitempty"`
		B               string `json:"b,omitempty"` // not in the schema, yet counted
	}
	oddUnexported struct {
		metav1.TypeMeta `json:",inline"`
		A               string `json:"a,omitempty"`
		b               string
	}
	oddFarTime struct {
		metav1.TypeMeta `json:",inline"`
		T               metav1.Time `json:"t,omitempty"`
	}
	oddFloatBound struct {
		metav1.TypeMeta `json:",inline"`
		F               float32 `json:"f,omitempty"`
	}
	oddMapOfStrings struct {
		metav1.TypeMeta `json:",inline"`
		L               []string `json:"l,omitempty"`
	}
	oddRawList struct {
		metav1.TypeMeta `json:",inline"`
		L               []runtime.RawExtension `json:"l,omitempty"`
	}
	oddNoProperties struct {
		metav1.TypeMeta `json:",inline"`
		E               struct{} `json:"e"`
	}
	oddOmitZero struct {
		metav1.TypeMeta `json:",inline"`
		Z               alwaysZero `json:"z,omitzero"`
	}
)

// alwaysZero calls itself zero whatever it holds: omitzero leaves it out.
type alwaysZero struct {
	V string `json:"v,omitempty"`
}

func (alwaysZero) IsZero() bool { return true }

func (o *oddRawList) DeepCopyObject() runtime.Object      { c := *o; return &c }
func (o *oddNoProperties) DeepCopyObject() runtime.Object { c := *o; return &c }
func (o *oddOmitZero) DeepCopyObject() runtime.Object     { c := *o; return &c }

func (o *oddOutside) DeepCopyObject() runtime.Object      { c := *o; return &c }
func (o *oddUnexported) DeepCopyObject() runtime.Object   { c := *o; return &c }
func (o *oddFarTime) DeepCopyObject() runtime.Object      { c := *o; return &c }
func (o *oddFloatBound) DeepCopyObject() runtime.Object   { c := *o; return &c }
func (o *oddMapOfStrings) DeepCopyObject() runtime.Object { c := *o; return &c }

// TestTypedCheckOddShapes checks shapes no generated type has but a hand-written one may:
// each is refused by the CRD's validator, and the typed check must not vouch for it.
func TestTypedCheckOddShapes(t *testing.T) {
	str := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}
	for _, c := range []struct {
		name  string
		props spec.SchemaProps
		ext   spec.Extensions
		obj   runtime.Object
	}{
		{"maxProperties counts a field outside the schema", spec.SchemaProps{MaxProperties: ptr.To[int64](1), Properties: map[string]spec.Schema{"a": str}}, nil,
			&oddOutside{A: "x", B: "y"}},
		{"maxProperties counts an unexported field", spec.SchemaProps{MaxProperties: ptr.To[int64](1), Properties: map[string]spec.Schema{"a": str}}, nil,
			&oddUnexported{A: "x", b: "y"}},
		{"a year past 9999 is no date-time", spec.SchemaProps{Properties: map[string]spec.Schema{"t": {SchemaProps: spec.SchemaProps{Type: []string{"string"}, Format: "date-time"}}}}, nil,
			&oddFarTime{T: metav1.NewTime(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))}},
		{"a bound beyond float32 under format float", spec.SchemaProps{Properties: map[string]spec.Schema{"f": {SchemaProps: spec.SchemaProps{Type: []string{"number"}, Format: "float", Maximum: ptr.To(1e39)}}}}, nil,
			&oddFloatBound{F: 1}},
		{"a map-list of strings", spec.SchemaProps{Properties: map[string]spec.Schema{"l": {SchemaProps: spec.SchemaProps{Type: []string{"array"}, Items: &spec.SchemaOrArray{Schema: &str}},
			VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": []any{"name"}}}}}}, nil,
			&oddMapOfStrings{L: []string{"a"}}},
		{"a raw null in a list", spec.SchemaProps{Properties: map[string]spec.Schema{"l": {SchemaProps: spec.SchemaProps{Type: []string{"array"},
			Items: &spec.SchemaOrArray{Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}}, VendorExtensible: spec.VendorExtensible{
				Extensions: spec.Extensions{"x-kubernetes-preserve-unknown-fields": true}}}}}}}}, nil,
			&oddRawList{L: []runtime.RawExtension{{Raw: []byte("null")}}}},
		{"minProperties without a property the Go type holds", spec.SchemaProps{Properties: map[string]spec.Schema{"e": {SchemaProps: spec.SchemaProps{Type: []string{"object"},
			MinProperties: ptr.To[int64](1)}}}}, nil, &oddNoProperties{}},
		{"a required field its own IsZero leaves out", spec.SchemaProps{Required: []string{"z"}, Properties: map[string]spec.Schema{"z": {SchemaProps: spec.SchemaProps{Type: []string{"object"},
			Properties: map[string]spec.Schema{"v": str}}}}}, nil, &oddOmitZero{Z: alwaysZero{V: "x"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			props := c.props
			props.Type = []string{"object"}
			defs := func(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
				return map[string]openapicommon.OpenAPIDefinition{"com.example.v1.Odd": {Schema: spec.Schema{SchemaProps: props}}}
			}
			typed, err := newSchemaValidator(&Schema{Definitions: defs, Name: "com.example.v1.Odd"})
			if err != nil {
				t.Fatal(err)
			}
			crd, err := newSchemaValidator(&Schema{Definitions: defs, Name: "com.example.v1.Odd", Validation: SchemaValidationCRD})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			want := crd.check(ctx, c.obj, nil, false)
			if len(want) == 0 {
				t.Fatal("the CRD's validator takes it: the case shows nothing")
			}
			if typed.certain(ctx, c.obj) {
				t.Error("vouched for")
			}
			if got := typed.check(ctx, c.obj, nil, false); !slices.Equal(errorStrings(got), errorStrings(want)) {
				t.Errorf("with the typed check: %v; the CRD's validator alone: %v", got, want)
			}
		})
	}
}
