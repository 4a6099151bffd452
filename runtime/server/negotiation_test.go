package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
)

// plainObject is a type without protobuf marshalling, like the generated API types.
type plainObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (o *plainObject) DeepCopyObject() runtime.Object {
	c := *o
	o.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// plainGV's types have no protobuf marshalling; protoGV's have.
var (
	plainGV = schema.GroupVersion{Group: "plain.example.com", Version: "v1"}
	protoGV = schema.GroupVersion{Group: "proto.example.com", Version: "v1"}
)

// plainAndProtoScheme returns a scheme of plainGV's plainObject and protoGV's Status.
func plainAndProtoScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(plainGV, &plainObject{})
	metav1.AddToGroupVersion(scheme, plainGV)
	scheme.AddKnownTypeWithName(protoGV.WithKind("Status"), &metav1.Status{})
	metav1.AddToGroupVersion(scheme, protoGV)
	return scheme
}

func mediaTypes(ns runtime.NegotiatedSerializer) map[string]bool {
	out := map[string]bool{}
	for _, info := range ns.SupportedMediaTypes() {
		out[info.MediaType] = true
	}
	return out
}

// TestGroupSerializerOffersProtobufOnlyForProtobufTypes checks that a group whose types
// cannot be encoded in protobuf does not offer it (so negotiation falls back to JSON or
// answers 406), and that a group whose types all can keeps it.
func TestGroupSerializerOffersProtobufOnlyForProtobufTypes(t *testing.T) {
	scheme := plainAndProtoScheme()
	codecs := serializer.NewCodecFactory(scheme)
	if !mediaTypes(codecs)[runtime.ContentTypeProtobuf] {
		t.Fatal("the codec factory offers no protobuf; the test assumes it does")
	}

	plain := mediaTypes(groupSerializer(codecs, scheme, []schema.GroupVersion{plainGV}))
	if plain[runtime.ContentTypeProtobuf] {
		t.Error("a group of types without protobuf marshalling offers protobuf")
	}
	for _, want := range []string{runtime.ContentTypeJSON, runtime.ContentTypeYAML} {
		if !plain[want] {
			t.Errorf("a group of types without protobuf marshalling does not offer %s", want)
		}
	}
	// What k8s.io/apiserver's negotiation then answers a client of the plain group.
	plainNS := groupSerializer(codecs, scheme, []schema.GroupVersion{plainGV})
	for accept, want := range map[string]string{
		runtime.ContentTypeProtobuf + ", " + runtime.ContentTypeJSON: runtime.ContentTypeJSON,
		runtime.ContentTypeProtobuf:                                  "", // 406
	} {
		req := httptest.NewRequest(http.MethodGet, "/apis/plain.example.com/v1/plains", nil)
		req.Header.Set("Accept", accept)
		mt, _, err := negotiation.NegotiateOutputMediaType(req, plainNS, negotiation.DefaultEndpointRestrictions)
		switch {
		case want == "" && !notAcceptable(err):
			t.Errorf("Accept: %s on the plain group: %v %v, want 406 Not Acceptable", accept, mt.Accepted.MediaType, err)
		case want != "" && (err != nil || mt.Accepted.MediaType != want):
			t.Errorf("Accept: %s on the plain group: %v %v, want %s", accept, mt.Accepted.MediaType, err, want)
		}
	}
	if !mediaTypes(groupSerializer(codecs, scheme, []schema.GroupVersion{protoGV}))[runtime.ContentTypeProtobuf] {
		t.Error("a group whose types all have protobuf marshalling does not offer protobuf")
	}
	if mediaTypes(groupSerializer(codecs, scheme, []schema.GroupVersion{protoGV, plainGV}))[runtime.ContentTypeProtobuf] {
		t.Error("a group with one version of types without protobuf marshalling offers protobuf")
	}
}

// notAcceptable reports whether err is negotiation's 406 Not Acceptable.
func notAcceptable(err error) bool {
	st, ok := err.(interface{ Status() metav1.Status })
	return ok && st.Status().Code == http.StatusNotAcceptable
}
