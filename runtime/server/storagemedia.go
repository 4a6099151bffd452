package server

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// protobufUnmarshaller is what the protobuf serializer needs of an object to decode into it
// (k8s.io/apimachinery/pkg/runtime/serializer/protobuf's unmarshaler).
type protobufUnmarshaller interface {
	Reset()
	Unmarshal([]byte) error
}

// storageMediaTypeFlag names the flag in messages.
const storageMediaTypeFlag = "--storage-media-type"

// storageMedia is what the storage codec is built from: the scheme, the versions objects
// are stored in, and the media type objects are written in.
type storageMedia struct {
	scheme   *runtime.Scheme
	versions []schema.GroupVersion
	// applied is the media type applyStorageMediaType set when it had to clear the flag's
	// field (CBOR).
	applied string
}

// withoutProtobuf returns the Go types registered for versions that the protobuf serializer
// cannot encode or decode (they lack Marshal, or Reset and Unmarshal), as
// "group/version Kind (Go type)", sorted. Generated types have the methods when aagen
// emitted zz_generated.protobuf.go for their package.
func withoutProtobuf(scheme *runtime.Scheme, versions []schema.GroupVersion) []string {
	marshaller := reflect.TypeFor[protobufMarshaller]()
	unmarshaller := reflect.TypeFor[protobufUnmarshaller]()
	var out []string
	for _, gv := range versions {
		for kind, t := range scheme.KnownTypes(gv) {
			p := reflect.PointerTo(t)
			if !p.Implements(marshaller) || !p.Implements(unmarshaller) {
				out = append(out, fmt.Sprintf("%s %s (%s)", gv, kind, t))
			}
		}
	}
	sort.Strings(out)
	return out
}

// defaultMediaType is protobuf when every stored type can be written in protobuf, else JSON.
func (s storageMedia) defaultMediaType() string {
	if len(withoutProtobuf(s.scheme, s.versions)) == 0 {
		return runtime.ContentTypeProtobuf
	}
	return runtime.ContentTypeJSON
}

// check returns why objects cannot be stored as mediaType, or nil.
func (s storageMedia) check(mediaType string) error {
	switch mediaType {
	case runtime.ContentTypeJSON:
		return nil
	case runtime.ContentTypeProtobuf:
		if missing := withoutProtobuf(s.scheme, s.versions); len(missing) > 0 {
			more := ""
			if len(missing) > 3 {
				more = fmt.Sprintf(" and %d more", len(missing)-3)
				missing = missing[:3]
			}
			return fmt.Errorf("%s=%s: %s%s cannot be stored as protobuf: the type lacks the protobuf methods (Marshal, Unmarshal, Reset) of zz_generated.protobuf.go; regenerate with aagen generate, or store as JSON with %s=%s",
				storageMediaTypeFlag, mediaType, strings.Join(missing, ", "), more, storageMediaTypeFlag, runtime.ContentTypeJSON)
		}
		return nil
	case runtime.ContentTypeCBOR:
		if !utilfeature.DefaultFeatureGate.Enabled(features.CBORServingAndStorage) {
			return fmt.Errorf("%s=%s: CBOR storage is alpha in k8s.io/apiserver and needs --feature-gates=%s=true; add that flag or store as %s or %s",
				storageMediaTypeFlag, mediaType, features.CBORServingAndStorage, runtime.ContentTypeProtobuf, runtime.ContentTypeJSON)
		}
		return nil
	default:
		return fmt.Errorf("%s=%s: this server stores objects as %s or %s (or %s with --feature-gates=%s=true); use one of those",
			storageMediaTypeFlag, mediaType, runtime.ContentTypeProtobuf, runtime.ContentTypeJSON, runtime.ContentTypeCBOR, features.CBORServingAndStorage)
	}
}

// codec returns the storage codec for mediaType: built as CodecFactory.LegacyCodec is (it
// converts to the storage versions on write and to the internal version on read), but it
// writes mediaType and reads with the universal deserializer, which recognizes JSON, YAML
// and protobuf (and CBOR when its gate is on) by their bytes. So objects stored before a
// change of media type stay readable, and their next write stores them in the new one.
func (s storageMedia) codec(mediaType string) (runtime.Codec, error) {
	if err := s.check(mediaType); err != nil {
		return nil, err
	}
	var opts []serializer.CodecFactoryOptionsMutator
	if utilfeature.DefaultFeatureGate.Enabled(features.CBORServingAndStorage) {
		opts = append(opts, serializer.WithSerializer(cbor.NewSerializerInfo))
	}
	codecs := serializer.NewCodecFactory(s.scheme, opts...)
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), mediaType)
	if !ok {
		return nil, fmt.Errorf("%s=%s: no serializer for this media type", storageMediaTypeFlag, mediaType)
	}
	return codecs.CodecForVersions(info.Serializer, codecs.UniversalDeserializer(), schema.GroupVersions(s.versions), runtime.InternalGroupVersioner), nil
}

// validateStorageMediaType checks --storage-media-type. k8s.io/apiserver's flag is
// accepted by every server built on RecommendedOptions, but only kube-apiserver's storage
// factory reads it; a generated server builds its storage codec from it itself
// (applyStorageMediaType).
func (o *Options) validateStorageMediaType() error {
	if o.Recommended.Etcd == nil {
		return nil
	}
	mt := o.Recommended.Etcd.DefaultStorageMediaType
	if mt == "" {
		return nil
	}
	return o.storage.check(mt)
}

// applyStorageMediaType sets the storage codec for --storage-media-type (the default,
// set by NewOptions, is protobuf when every stored type has the protobuf methods, else
// JSON).
func (o *Options) applyStorageMediaType() error {
	etcd := o.Recommended.Etcd
	if etcd == nil {
		return nil
	}
	mt := etcd.DefaultStorageMediaType
	if mt == "" {
		mt = o.storage.applied // CBOR, applied before
	}
	if mt == "" {
		mt = o.storage.defaultMediaType()
	}
	c, err := o.storage.codec(mt)
	if err != nil {
		return err
	}
	etcd.StorageConfig.Codec = newInterningCodec(c)
	if mt == runtime.ContentTypeCBOR {
		// k8s.io/apiserver's EtcdOptions.Validate knows only kube-apiserver's storage media
		// types (JSON, YAML, protobuf); the codec is set, so the field has done its work
		// (applied remembers it for a later call).
		o.storage.applied = mt
		etcd.DefaultStorageMediaType = ""
	}
	return nil
}
