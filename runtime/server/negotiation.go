package server

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/aagen-dev/aagen/runtime/typedjson"
)

// protobufMarshaller is what the protobuf serializer needs of an object to encode it
// (k8s.io/apimachinery/pkg/runtime/serializer/protobuf encodes objects that have Marshal,
// or the faster runtime.ProtobufMarshaller methods, which come with it in generated code).
type protobufMarshaller interface {
	Marshal() ([]byte, error)
}

// groupSerializer returns the serializer a group's endpoints negotiate responses with.
//
// It offers protobuf only when every type the group's versions register can be encoded
// in protobuf. Otherwise protobuf is left out of the media types it offers, so that
// negotiation works as kube-apiserver's does for a custom resource: a client that accepts
// protobuf or JSON (what Kubernetes' own clients send) gets JSON, and one that accepts
// only protobuf gets 406 Not Acceptable, for gets, lists, watches and subresources alike.
// Offering protobuf for types that cannot be encoded in it would instead pick protobuf
// and then fail to encode: 406 on a get or list and a watch that closes at its first
// event.
//
// When generated types gain protobuf marshalling, the check passes and the group offers
// protobuf with no other change.
func groupSerializer(codecs runtime.NegotiatedSerializer, scheme *runtime.Scheme, versions []schema.GroupVersion) runtime.NegotiatedSerializer {
	if allProtobuf(scheme, versions) {
		return codecs
	}
	return withoutMediaType{NegotiatedSerializer: codecs, mediaType: runtime.ContentTypeProtobuf}
}

// allProtobuf reports whether every type registered for versions can be encoded in and
// decoded from protobuf (the same check as the storage's).
func allProtobuf(scheme *runtime.Scheme, versions []schema.GroupVersion) bool {
	return len(withoutProtobuf(scheme, versions)) == 0
}

// withoutMediaType is a NegotiatedSerializer that does not offer one media type.
type withoutMediaType struct {
	runtime.NegotiatedSerializer
	mediaType string
}

// SupportedMediaTypes returns the wrapped serializer's media types but mediaType.
func (s withoutMediaType) SupportedMediaTypes() []runtime.SerializerInfo {
	all := s.NegotiatedSerializer.SupportedMediaTypes()
	out := make([]runtime.SerializerInfo, 0, len(all))
	for _, info := range all {
		if info.MediaType != s.mediaType {
			out = append(out, info)
		}
	}
	return out
}

// groupVersions returns the group's versions.
func (g Group) groupVersions() []schema.GroupVersion {
	var out []schema.GroupVersion
	seen := map[string]bool{}
	for _, r := range g.Resources {
		for _, v := range r.Versions {
			if !seen[v.Name] {
				seen[v.Name] = true
				out = append(out, schema.GroupVersion{Group: g.Name, Version: v.Name})
			}
		}
	}
	return out
}

// newGroupInfo returns the APIGroupInfo of g with upstream's serializer for API groups
// (NewDefaultAPIGroupInfo's: lists streamed item by item in JSON and protobuf, and CBOR
// when the CBORServingAndStorage feature gate is on), narrowed by groupSerializer, with
// JSON bodies decoded into the typed object in one parse (package typedjson).
func newGroupInfo(spec Spec, g Group, codecs serializer.CodecFactory) genericapiserver.APIGroupInfo {
	info := genericapiserver.NewDefaultAPIGroupInfo(g.Name, spec.Scheme, metav1.ParameterCodec, codecs)
	info.NegotiatedSerializer = typedjson.NegotiatedSerializer(groupSerializer(info.NegotiatedSerializer, spec.Scheme, g.groupVersions()), spec.Scheme)
	return info
}
