package registry

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/util/validation/field"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/utils/ptr"
)

// protoWidget has hand-written protobuf methods in the generated code's wire format, with
// field numbers out of declaration order (as a numbers file can keep them).
type protoWidget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              protoWidgetSpec `json:"spec"`
}

type protoWidgetSpec struct {
	Note   string                     `json:"note,omitempty"`
	Tags   []string                   `json:"tags,omitempty"`
	Items  []protoWidgetItem          `json:"items,omitempty"`
	Counts []int32                    `json:"counts,omitempty"`
	Ports  map[string]int32           `json:"ports,omitempty"`
	When   metav1.Time                `json:"when,omitempty"`
	Byname map[string]protoWidgetItem `json:"byname,omitempty"`
}

type protoWidgetItem struct {
	Name string `json:"name,omitempty"`
}

// protoUnmarshals counts the calls of the protobuf decoder of these types.
var protoUnmarshals int

func (w *protoWidget) DeepCopyObject() runtime.Object { c := *w; return &c }

func (w *protoWidget) Unmarshal([]byte) error     { protoUnmarshals++; return nil }
func (s *protoWidgetSpec) Unmarshal([]byte) error { protoUnmarshals++; return nil }
func (s *protoWidgetItem) Unmarshal([]byte) error { protoUnmarshals++; return nil }

func appendMessage(b []byte, num protowire.Number, m protoMarshaler) []byte {
	data, err := m.Marshal()
	if err != nil {
		panic(err)
	}
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), data)
}

func (w *protoWidget) Marshal() ([]byte, error) {
	b := appendMessage(nil, 1, &w.ObjectMeta)
	return appendMessage(b, 2, &w.Spec), nil
}

func (s *protoWidgetSpec) Marshal() ([]byte, error) {
	var b []byte
	for _, it := range s.Items {
		b = appendMessage(b, 7, &it)
	}
	for _, t := range s.Tags {
		b = protowire.AppendString(protowire.AppendTag(b, 2, protowire.BytesType), t)
	}
	if s.Note != "" {
		b = protowire.AppendString(protowire.AppendTag(b, 4, protowire.BytesType), s.Note)
	}
	for _, c := range s.Counts {
		b = protowire.AppendVarint(protowire.AppendTag(b, 9, protowire.VarintType), uint64(c))
	}
	for k, v := range s.Ports {
		var e []byte
		e = protowire.AppendString(protowire.AppendTag(e, 1, protowire.BytesType), k)
		e = protowire.AppendVarint(protowire.AppendTag(e, 2, protowire.VarintType), uint64(v))
		b = protowire.AppendBytes(protowire.AppendTag(b, 3, protowire.BytesType), e)
	}
	b = appendMessage(b, 5, &s.When)
	for k, v := range s.Byname {
		e := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), k)
		e = appendMessage(e, 2, &v)
		b = protowire.AppendBytes(protowire.AppendTag(b, 6, protowire.BytesType), e)
	}
	return b, nil
}

func (it *protoWidgetItem) Marshal() ([]byte, error) {
	if it.Name == "" {
		return nil, nil
	}
	return protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), it.Name), nil
}

// protoBody is the body a protobuf client sends: the "k8s\x00" envelope around a
// runtime.Unknown holding the object.
func protoBody(t *testing.T, w *protoWidget) []byte {
	t.Helper()
	raw, err := w.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	tm := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "example.com/v1")
	tm = protowire.AppendString(protowire.AppendTag(tm, 2, protowire.BytesType), "Widget")
	b := append([]byte("k8s\x00"), protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), tm)...)
	return protowire.AppendBytes(protowire.AppendTag(b, 2, protowire.BytesType), raw)
}

func protoWidgetDefs(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
	obj := func(props map[string]spec.Schema) openapicommon.OpenAPIDefinition {
		return openapicommon.OpenAPIDefinition{Schema: spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: props}}}
	}
	str := func(max int64) spec.Schema {
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}, MaxLength: ptr.To(max)}}
	}
	list := func(max int64, items spec.Schema) spec.Schema {
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"array"}, MaxItems: ptr.To(max), Items: &spec.SchemaOrArray{Schema: &items}}}
	}
	item := spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref("com.example.v1.Item")}}
	return map[string]openapicommon.OpenAPIDefinition{
		"com.example.v1.Widget": obj(map[string]spec.Schema{
			"apiVersion": str(100), "kind": str(100),
			"metadata": {SchemaProps: spec.SchemaProps{Ref: ref(defObjectMeta)}},
			"spec":     {SchemaProps: spec.SchemaProps{Ref: ref("com.example.v1.Spec")}},
		}),
		"com.example.v1.Spec": obj(map[string]spec.Schema{
			"note":   str(4),
			"tags":   list(5, str(3)),
			"items":  list(10, item),
			"counts": list(3, spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"integer"}}}),
			"ports": {SchemaProps: spec.SchemaProps{Type: []string{"object"}, MaxProperties: ptr.To[int64](2),
				AdditionalProperties: &spec.SchemaOrBool{Allows: true, Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"integer"}}}}}},
			"when": {SchemaProps: spec.SchemaProps{Type: []string{"string"}, Format: "date-time"}},
			"byname": {SchemaProps: spec.SchemaProps{Type: []string{"object"}, MaxProperties: ptr.To[int64](2),
				AdditionalProperties: &spec.SchemaOrBool{Allows: true, Schema: &item}}},
		}),
		"com.example.v1.Item": obj(map[string]spec.Schema{"name": str(2)}),
	}
}

func protoWidgetREST(t *testing.T) *REST {
	t.Helper()
	gk := schema.GroupKind{Group: "example.com", Kind: "Widget"}
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(gk.WithVersion("v1"), &protoWidget{})
	sv, err := newSchemaValidator(&Schema{Definitions: protoWidgetDefs, Name: "com.example.v1.Widget"})
	if err != nil {
		t.Fatal(err)
	}
	return &REST{groupKind: gk, schemas: &versionedSchemas{scheme: scheme, group: gk.Group, storage: "v1",
		unqualified: "v1", byVersion: map[string]*schemaValidator{"v1": sv}}}
}

// TestProtobufBodyLimits checks that a protobuf (and a CBOR) body is refused for the size
// limits a JSON body of the same object is refused for, with the same errors, without the
// protobuf decoder (the types' Unmarshal) ever running: a 2.8 MB protobuf body can hold 1.4
// million empty list entries, which cost seconds to decode and compute managed fields of.
func TestProtobufBodyLimits(t *testing.T) {
	r := protoWidgetREST(t)
	many := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("k%d", i)] = "v"
		}
		return m
	}
	cases := map[string]struct {
		w    protoWidget
		want string // a substring of the errors; "" for none
	}{
		"within limits": {protoWidget{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"a": "b"}},
			Spec: protoWidgetSpec{Note: "abcd", Tags: []string{"a"}, Items: []protoWidgetItem{{Name: "x"}, {}}, Counts: []int32{1, 2, 3},
				Ports: map[string]int32{"a": 1}, Byname: map[string]protoWidgetItem{"a": {Name: "x"}}}}, ""},
		"empty list entries": {protoWidget{ObjectMeta: metav1.ObjectMeta{Name: "a"},
			Spec: protoWidgetSpec{Items: make([]protoWidgetItem, 200000)}}, "spec.items: Too many: 200000: must have at most 10 items"},
		"long strings": {protoWidget{ObjectMeta: metav1.ObjectMeta{Name: "a"},
			Spec: protoWidgetSpec{Note: "abcde", Tags: []string{"abcd"}, Items: []protoWidgetItem{{Name: "xyz"}}}}, "spec.note: Too long"},
		"numbers":          {protoWidget{Spec: protoWidgetSpec{Counts: []int32{1, 2, 3, 4}}}, "spec.counts: Too many: 4"},
		"map":              {protoWidget{Spec: protoWidgetSpec{Ports: map[string]int32{"a": 1, "b": 2, "c": 3}}}, "spec.ports: Too many: 3"},
		"map of objects":   {protoWidget{Spec: protoWidgetSpec{Byname: map[string]protoWidgetItem{"a": {Name: "long"}, "b": {}, "c": {}}}}, "spec.byname: Too many: 3"},
		"bad labels":       {protoWidget{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"-x": "v"}}}, "metadata.labels"},
		"many annotations": {protoWidget{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: many(50000)}}, "metadata.annotations"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			jsonBody, err := json.Marshal(&c.w)
			if err != nil {
				t.Fatal(err)
			}
			opts := InspectOptions{Limits: true}
			want := r.InspectBody("v1", jsonBody, FormatJSON, opts)
			if got := want.OverLimits.ToAggregate(); (got == nil) != (c.want == "") || got != nil && !strings.Contains(got.Error(), c.want) {
				t.Fatalf("JSON body: got %v, want %q", got, c.want)
			}
			protoUnmarshals = 0
			got := r.InspectBody("v1", protoBody(t, &c.w), FormatProtobuf, opts)
			if protoUnmarshals != 0 {
				t.Errorf("the protobuf decoder ran %d times", protoUnmarshals)
			}
			if g, w := fmt.Sprint(sortedErrors(got.OverLimits)), fmt.Sprint(sortedErrors(want.OverLimits)); g != w {
				t.Errorf("protobuf body: got\n%s\nwant (as JSON)\n%s", g, w)
			}
			if got.Name != want.Name {
				t.Errorf("protobuf body: name %q, want %q", got.Name, want.Name)
			}
			cborBody, err := direct.Marshal(&c.w)
			if err != nil {
				t.Fatal(err)
			}
			got = r.InspectBody("v1", cborBody, FormatCBOR, opts)
			if g, w := fmt.Sprint(sortedErrors(got.OverLimits)), fmt.Sprint(sortedErrors(want.OverLimits)); g != w {
				t.Errorf("CBOR body: got\n%s\nwant (as JSON)\n%s", g, w)
			}
		})
	}
}

func sortedErrors(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	slices.Sort(out)
	return out
}

// TestProtoFieldsMatchDeclaredNumbers checks the probing of field numbers against the
// numbers k8s.io/api declares in its protobuf tags, over every struct reachable from a
// Pod and a Deployment (go-to-protobuf's wire format, which aagen's generated code
// writes too).
func TestProtoFieldsMatchDeclaredNumbers(t *testing.T) {
	seen := map[reflect.Type]bool{}
	checked := 0
	var walk func(rt reflect.Type)
	walk = func(rt reflect.Type) {
		for rt.Kind() == reflect.Pointer || rt.Kind() == reflect.Slice || rt.Kind() == reflect.Map {
			rt = rt.Elem()
		}
		if rt.Kind() != reflect.Struct || seen[rt] {
			return
		}
		seen[rt] = true
		fields := protoFieldsOf(rt)
		if fields == nil {
			return
		}
		for i := range rt.NumField() {
			sf := rt.Field(i)
			tag := sf.Tag.Get("protobuf")
			if tag == "" || !sf.IsExported() {
				continue
			}
			parts := strings.Split(tag, ",")
			num, err := strconv.Atoi(parts[1])
			if err != nil {
				t.Fatalf("%s.%s: tag %q", rt, sf.Name, tag)
			}
			f, ok := fields[protowire.Number(num)]
			if !ok || f.typ != sf.Type {
				t.Errorf("%s.%s: declared number %d, probed %+v", rt, sf.Name, num, f)
			}
			checked++
			walk(sf.Type)
		}
	}
	walk(reflect.TypeFor[corev1.Pod]())
	walk(reflect.TypeFor[appsv1.Deployment]())
	if checked < 300 {
		t.Errorf("checked %d fields; want the hundreds of a pod and a deployment", checked)
	}
	t.Logf("%d fields of %d types", checked, len(seen))
}
