package server

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	"github.com/aagen-dev/aagen/runtime/typedjson"
)

// plainObjectList is the list of plainObject.
type plainObjectList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []plainObject `json:"items"`
}

func (l *plainObjectList) DeepCopyObject() runtime.Object {
	c := *l
	c.Items = make([]plainObject, len(l.Items))
	for i := range l.Items {
		c.Items[i] = *l.Items[i].DeepCopyObject().(*plainObject)
	}
	return &c
}

func plainSpec() (Spec, Group, schema.GroupVersion) {
	gv := schema.GroupVersion{Group: "plain.example.com", Version: "v1"}
	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(gv, &plainObject{}, &plainObjectList{})
	metav1.AddToGroupVersion(scheme, gv)
	g := Group{Name: gv.Group, Resources: []Resource{{Plural: "plainobjects", Versions: []ResourceVersion{{Name: gv.Version}}}}}
	return Spec{Name: "t", Scheme: scheme}, g, gv
}

// writeCounter counts the writes an encoder makes.
type writeCounter struct {
	bytes.Buffer
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// The groups' serializer is upstream's for API groups: a JSON list is written item by item
// (streamed, not built whole in memory first), as k8s.io/apiserver's own groups do.
func TestGroupInfoStreamsJSONLists(t *testing.T) {
	spec, g, gv := plainSpec()
	info := newGroupInfo(spec, g, spec.codecs())
	s, ok := runtime.SerializerInfoForMediaType(info.NegotiatedSerializer.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		t.Fatal("no JSON serializer")
	}
	list := &plainObjectList{TypeMeta: metav1.TypeMeta{APIVersion: gv.String(), Kind: "plainObjectList"}}
	for i := range 100 {
		list.Items = append(list.Items, plainObject{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("o-%d", i)}})
	}
	w := &writeCounter{}
	if err := s.Serializer.Encode(list, w); err != nil {
		t.Fatal(err)
	}
	if w.writes < len(list.Items) {
		t.Errorf("a list of %d objects was written in %d writes; want it streamed, one or more writes per item", len(list.Items), w.writes)
	}
	// The serializer of a plain codec factory, the groups' before, writes it at once.
	plain, _ := runtime.SerializerInfoForMediaType(spec.codecs().SupportedMediaTypes(), runtime.ContentTypeJSON)
	w = &writeCounter{}
	if err := plain.Serializer.Encode(list, w); err != nil {
		t.Fatal(err)
	}
	if w.writes != 1 {
		t.Errorf("a plain codec factory wrote the list in %d writes; the comparison in docs/benchmarks.md says one", w.writes)
	}
}

// With the CBORServingAndStorage feature gate on, the groups offer CBOR (KEP-4222), as
// k8s.io/apiserver's own do; off (the default in v0.37), they do not.
func TestGroupInfoOffersCBORWithTheFeatureGate(t *testing.T) {
	spec, g, _ := plainSpec()
	if mediaTypes(newGroupInfo(spec, g, spec.codecs()).NegotiatedSerializer)[runtime.ContentTypeCBOR] {
		t.Error("CBOR offered with the feature gate off")
	}
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.CBORServingAndStorage, true)
	if !mediaTypes(newGroupInfo(spec, g, spec.codecs()).NegotiatedSerializer)[runtime.ContentTypeCBOR] {
		t.Error("CBOR not offered with the feature gate on")
	}
}

// --feature-gates turns upstream's gates on, CBOR among them.
func TestFeatureGatesFlag(t *testing.T) {
	// Restores the gate's value after the test.
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.CBORServingAndStorage, false)
	spec, _, _ := plainSpec()
	o := NewOptions(&spec)
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--feature-gates=CBORServingAndStorage=true"}); err != nil {
		t.Fatal(err)
	}
	if !utilfeature.DefaultFeatureGate.Enabled(features.CBORServingAndStorage) {
		t.Error("--feature-gates=CBORServingAndStorage=true did not turn the gate on")
	}
}

// The groups decode JSON bodies into their typed objects in one parse (package typedjson),
// lenient and strict.
func TestGroupInfoDecodesJSONInOneParse(t *testing.T) {
	spec, g, _ := plainSpec()
	info := newGroupInfo(spec, g, spec.codecs())
	s, ok := runtime.SerializerInfoForMediaType(info.NegotiatedSerializer.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok {
		t.Fatal("no JSON serializer")
	}
	for name, d := range map[string]runtime.Serializer{"Serializer": s.Serializer, "StrictSerializer": s.StrictSerializer} {
		if _, ok := d.(*typedjson.Serializer); !ok {
			t.Errorf("the group's JSON %s is %T, want *typedjson.Serializer", name, d)
		}
	}
}
