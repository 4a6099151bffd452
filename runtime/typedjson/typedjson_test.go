package typedjson

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
)

var gv = schema.GroupVersion{Group: "shop.example.com", Version: "v1"}

type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              widgetSpec `json:"spec"`
}

type widgetSpec struct {
	Size  int               `json:"size"`
	Tags  map[string]string `json:"tags,omitempty"`
	Extra any               `json:"extra,omitempty"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// gadget is another kind of the same group.
type gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Color             string `json:"color"`
}

func (g *gadget) DeepCopyObject() runtime.Object { out := *g; return &out }

// shouting has a top-level field upstream's case-insensitive reading of kind also matches.
type shouting struct {
	metav1.TypeMeta `json:",inline"`
	Loud            string `json:"KIND"`
}

func (s *shouting) DeepCopyObject() runtime.Object { out := *s; return &out }

// selfDecoding decodes itself.
type selfDecoding struct {
	metav1.TypeMeta `json:",inline"`
}

func (s *selfDecoding) DeepCopyObject() runtime.Object { out := *s; return &out }
func (s *selfDecoding) UnmarshalJSON([]byte) error     { return nil }

func scheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(gv.WithKind("Widget"), &widget{})
	s.AddKnownTypeWithName(gv.WithKind("Gadget"), &gadget{})
	s.AddKnownTypeWithName(gv.WithKind("Shouting"), &shouting{})
	s.AddKnownTypeWithName(gv.WithKind("SelfDecoding"), &selfDecoding{})
	metav1.AddToGroupVersion(s, gv)
	return s
}

// countingMeta is upstream's MetaFactory, counting its parses of a body.
type countingMeta struct{ parses *atomic.Int32 }

func (m countingMeta) Interpret(data []byte) (*schema.GroupVersionKind, error) {
	m.parses.Add(1)
	return jsonserializer.DefaultMetaFactory.Interpret(data)
}

// result is what a Decode returned, comparable across decoders.
type result struct {
	objType string
	obj     string
	gvk     string
	err     string
	into    string
}

func describe(obj runtime.Object, gvk *schema.GroupVersionKind, err error, into runtime.Object) result {
	var r result
	if obj != nil {
		r.objType = reflect.TypeOf(obj).String()
		data, _ := json.Marshal(obj)
		r.obj = string(data)
	}
	if gvk != nil {
		r.gvk = gvk.String()
	}
	if err != nil {
		r.err = fmt.Sprintf("%T %v", err, err)
	}
	data, _ := json.Marshal(into)
	r.into = string(data)
	return r
}

// Every body decodes to what upstream's serializer returns (object, its type, kind, error
// and what is left in into), lenient and strict; the bodies upstream and one parse agree on
// are decoded without upstream's first parse, the others with it.
func TestDecodeAsUpstream(t *testing.T) {
	s := scheme(t)
	widgetGVK := gv.WithKind("Widget")
	cases := []struct {
		name     string
		body     string
		into     func() runtime.Object
		def      *schema.GroupVersionKind
		oneParse bool
	}{
		{"apiVersion and kind of into", `{"apiVersion":"shop.example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":3,"tags":{"a":"b"},"extra":{"n":12345678901234}}}`, newWidget, &widgetGVK, true},
		{"no apiVersion or kind: the request's", `{"metadata":{"name":"w"},"spec":{"size":3}}`, newWidget, &widgetGVK, true},
		{"no apiVersion or kind and no default: into's", `{"spec":{"size":3}}`, newWidget, nil, true},
		{"kind only", `{"kind":"Widget","spec":{"size":3}}`, newWidget, nil, true},
		{"unknown fields", `{"apiVersion":"shop.example.com/v1","kind":"Widget","spec":{"size":3,"bogus":1},"other":2}`, newWidget, &widgetGVK, true},
		{"a duplicate field but apiVersion and kind", `{"apiVersion":"shop.example.com/v1","kind":"Widget","spec":{"size":3,"size":4}}`, newWidget, &widgetGVK, true},
		{"another kind of the scheme", `{"apiVersion":"shop.example.com/v1","kind":"Gadget","color":"red"}`, newWidget, &widgetGVK, false},
		{"a kind the scheme does not have", `{"apiVersion":"shop.example.com/v1","kind":"Nope"}`, newWidget, &widgetGVK, false},
		{"another version", `{"apiVersion":"shop.example.com/v2","kind":"Widget"}`, newWidget, &widgetGVK, false},
		{"another group without a version", `{"apiVersion":"other.example.com/","kind":"Widget"}`, newWidget, &widgetGVK, false},
		{"a malformed apiVersion", `{"apiVersion":"a/b/c","kind":"Widget"}`, newWidget, &widgetGVK, false},
		{"kind in other case", `{"apiVersion":"shop.example.com/v1","Kind":"Gadget","color":"red"}`, newWidget, &widgetGVK, false},
		{"apiVersion in other case", `{"APIVERSION":"shop.example.com/v2","kind":"Widget"}`, newWidget, &widgetGVK, false},
		{"kind with a Kelvin sign", `{"apiVersion":"shop.example.com/v1","` + "\u212a" + `ind":"Gadget"}`, newWidget, &widgetGVK, false},
		{"apiVersion with a long s", `{"apiVer` + "\u017f" + `ion":"shop.example.com/v2","kind":"Widget"}`, newWidget, &widgetGVK, false},
		{"an escaped kind in other case", `{"apiVersion":"shop.example.com/v1","\u004bind":"Gadget"}`, newWidget, &widgetGVK, false},
		{"kind twice", `{"apiVersion":"shop.example.com/v1","kind":"Gadget","kind":"Widget"}`, newWidget, &widgetGVK, false},
		{"kind not a string", `{"apiVersion":"shop.example.com/v1","kind":5}`, newWidget, &widgetGVK, false},
		{"a field of the wrong type", `{"apiVersion":"shop.example.com/v1","kind":"Widget","spec":{"size":"three"}}`, newWidget, &widgetGVK, false},
		{"not JSON", `{"apiVersion":`, newWidget, &widgetGVK, false},
		{"not an object", `[1,2]`, newWidget, &widgetGVK, false},
		{"null", `null`, newWidget, &widgetGVK, true},
		{"into not empty", `{"spec":{"tags":{"c":"d"}}}`, func() runtime.Object {
			return &widget{Spec: widgetSpec{Size: 7, Tags: map[string]string{"a": "b"}}}
		}, &widgetGVK, false},
		{"into of a type with a field named KIND", `{"apiVersion":"shop.example.com/v1","kind":"Shouting","KIND":"x"}`, func() runtime.Object { return &shouting{} }, nil, false},
		{"into decoding itself", `{"apiVersion":"shop.example.com/v1","kind":"SelfDecoding"}`, func() runtime.Object { return &selfDecoding{} }, nil, false},
		{"no into", `{"apiVersion":"shop.example.com/v1","kind":"Widget"}`, func() runtime.Object { return nil }, nil, false},
	}
	for _, strict := range []bool{false, true} {
		opts := jsonserializer.SerializerOptions{Strict: strict}
		reference := jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, s, s, opts)
		var parses atomic.Int32
		ours := NewSerializer(jsonserializer.NewSerializerWithOptions(countingMeta{&parses}, s, s, opts), s)
		for _, c := range cases {
			t.Run(fmt.Sprintf("strict=%v/%s", strict, c.name), func(t *testing.T) {
				want := decode(reference, []byte(c.body), c.def, c.into())
				parses.Store(0)
				got := decode(ours, []byte(c.body), c.def, c.into())
				if got != want {
					t.Errorf("body %s:\ngot  %+v\nwant %+v", c.body, got, want)
				}
				if n := parses.Load(); c.oneParse != (n == 0) {
					t.Errorf("body %s: %d parses for apiVersion and kind, one parse expected: %v", c.body, n, c.oneParse)
				}
			})
		}
	}
}

func newWidget() runtime.Object { return &widget{} }

func decode(d runtime.Decoder, body []byte, def *schema.GroupVersionKind, into runtime.Object) result {
	obj, gvk, err := d.Decode(body, def, into)
	return describe(obj, gvk, err, into)
}

// A strict decoding of a body with unknown fields returns the object and upstream's strict
// decoding error, in one parse.
func TestDecodeStrictErrorsInOneParse(t *testing.T) {
	s := scheme(t)
	var parses atomic.Int32
	ours := NewSerializer(jsonserializer.NewSerializerWithOptions(countingMeta{&parses}, s, s, jsonserializer.SerializerOptions{Strict: true}), s)
	into := &widget{}
	obj, gvk, err := ours.Decode([]byte(`{"apiVersion":"shop.example.com/v1","kind":"Widget","spec":{"size":3,"bogus":1}}`), nil, into)
	if !runtime.IsStrictDecodingError(err) || err.Error() != `strict decoding error: unknown field "spec.bogus"` {
		t.Fatalf("error %v, want the strict decoding error of spec.bogus", err)
	}
	if obj != into || into.Spec.Size != 3 || *gvk != gv.WithKind("Widget") || parses.Load() != 0 {
		t.Errorf("got %#v %v after %d parses for the kind, want into with size 3, Widget, none", obj, gvk, parses.Load())
	}
}

func TestDecodableTypes(t *testing.T) {
	for _, c := range []struct {
		obj  runtime.Object
		want bool
	}{
		{&widget{}, true},
		{&metav1.Status{}, true},
		{&shouting{}, false},
		{&selfDecoding{}, false},
		{&runtime.Unknown{}, false},
	} {
		if got := decodableType(reflect.TypeOf(c.obj).Elem()); got != c.want {
			t.Errorf("decodableType(%T) = %v, want %v", c.obj, got, c.want)
		}
	}
}

// The negotiated serializer replaces the JSON media type's decoders only.
func TestNegotiatedSerializerReplacesJSONDecoders(t *testing.T) {
	s := scheme(t)
	codecs := serializer.NewCodecFactory(s)
	ns := NegotiatedSerializer(codecs, s)
	before := codecs.SupportedMediaTypes()
	after := ns.SupportedMediaTypes()
	if len(after) != len(before) {
		t.Fatalf("%d media types, want %d", len(after), len(before))
	}
	for i, info := range after {
		if info.MediaType != runtime.ContentTypeJSON {
			if !reflect.DeepEqual(info, before[i]) {
				t.Errorf("%s changed", info.MediaType)
			}
			continue
		}
		for name, d := range map[string]runtime.Serializer{"Serializer": info.Serializer, "StrictSerializer": info.StrictSerializer} {
			if _, ok := d.(*Serializer); !ok {
				t.Errorf("JSON %s is %T, want *typedjson.Serializer", name, d)
			}
		}
		if info.Serializer.(*Serializer).IsStrict() || !info.StrictSerializer.(*Serializer).IsStrict() {
			t.Error("the strict and lenient JSON serializers are swapped")
		}
		if info.PrettySerializer != before[i].PrettySerializer || info.StreamSerializer != before[i].StreamSerializer {
			t.Error("JSON's encoders changed")
		}
	}
}
