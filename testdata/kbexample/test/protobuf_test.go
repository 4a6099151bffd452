// Package test holds the kbexample project's own hand-written tests (aagen does not
// generate or touch it).
package test

import (
	"math/rand"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	webappv1 "example.com/kbexample/api/v1"
	webappv1beta1 "example.com/kbexample/api/v1beta1"
)

// protoMessage is what aagen's zz_generated.protobuf.go gives every kind and list.
type protoMessage interface {
	runtime.Object
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// TestProtobufRoundTrip fills every kind and list of both versions with random values
// (apimachinery's fuzzer) and checks typed -> protobuf -> typed gives the value back.
func TestProtobufRoundTrip(t *testing.T) {
	objects := []func() protoMessage{
		func() protoMessage { return &webappv1.Gift{} },
		func() protoMessage { return &webappv1.GiftList{} },
		func() protoMessage { return &webappv1.Guestbook{} },
		func() protoMessage { return &webappv1.GuestbookList{} },
		func() protoMessage { return &webappv1.Visitor{} },
		func() protoMessage { return &webappv1.VisitorList{} },
		func() protoMessage { return &webappv1.Worker{} },
		func() protoMessage { return &webappv1.WorkerList{} },
		func() protoMessage { return &webappv1beta1.Guestbook{} },
		func() protoMessage { return &webappv1beta1.GuestbookList{} },
		func() protoMessage { return &webappv1beta1.Visitor{} },
		func() protoMessage { return &webappv1beta1.VisitorList{} },
	}
	// The fuzzer fills RawExtensions with objects it encodes: metav1's, registered here.
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	codecs := serializer.NewCodecFactory(scheme)
	for seed := int64(0); seed < 50; seed++ {
		f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), codecs).NilChance(0.2).NumElements(0, 3)
		for _, newObj := range objects {
			in := newObj()
			f.Fill(in)
			data, err := in.Marshal()
			if err != nil {
				t.Fatalf("seed %d: marshal %T: %v", seed, in, err)
			}
			out := newObj()
			if err := out.Unmarshal(data); err != nil {
				t.Fatalf("seed %d: unmarshal %T: %v", seed, in, err)
			}
			// apiVersion and kind travel in protobuf's envelope, not in the message.
			in.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
			if !apiequality.Semantic.DeepEqual(in, out) {
				t.Fatalf("seed %d: %T changed in the round trip:\nbefore: %#v\nafter:  %#v", seed, in, in, out)
			}
		}
	}
}
