// Package typedjson decodes a JSON request body into the typed object of the request's
// kind with one parse of the body.
//
// k8s.io/apimachinery's JSON serializer parses a body twice: once with encoding/json to
// find apiVersion and kind (json.SimpleMetaFactory.Interpret), then again to decode it.
// For a create or an update of a generated kind the handler already names the object to
// decode into (its storage's New), whose TypeMeta receives apiVersion and kind in the same
// parse that fills the rest. Serializer decodes into that object first and reads apiVersion
// and kind from its TypeMeta; when the result is the one upstream's serializer would give
// (the body's kind is the object's, and no key of the body could have been read as
// apiVersion or kind by upstream's case-insensitive first parse but not by the
// case-sensitive decoding) it is returned as it is. In every other case the object is reset
// and upstream's serializer decodes the body, so objects, kinds and errors are always
// upstream's. The one parse is the fast decoding's (fast.go) when the body decodes without
// any error; a body with an error, a strict one included (an unknown or repeated field), is
// parsed again by sigs.k8s.io/json.
package typedjson

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	kjson "sigs.k8s.io/json"
)

// Serializer is upstream's JSON serializer whose Decode parses the body once when it
// decodes into a typed object of a kind the scheme registers.
type Serializer struct {
	*jsonserializer.Serializer
	typer runtime.ObjectTyper
	// decodable are the Go types (struct types, not pointers) whose objects Decode fills in
	// one parse: see decodableType.
	decodable map[reflect.Type]bool
	// fast are the decodable types the fast decoding reads as upstream (fastDecodable).
	fast map[reflect.Type]bool
}

// NewSerializer returns upstream, a JSON (not YAML) serializer of scheme, decoding bodies
// into the scheme's typed objects in one parse.
func NewSerializer(upstream *jsonserializer.Serializer, scheme *runtime.Scheme) *Serializer {
	s := &Serializer{Serializer: upstream, typer: scheme, decodable: map[reflect.Type]bool{}, fast: map[reflect.Type]bool{}}
	for _, t := range scheme.AllKnownTypes() {
		if decodableType(t) {
			s.decodable[t] = true
			s.fast[t] = fastDecodable(t)
		}
	}
	return s
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// decodableType reports whether objects of t can be decoded in one parse with upstream's
// result: t is a struct whose pointer has no UnmarshalJSON, its embedded metav1.TypeMeta
// receives the body's "apiVersion" and "kind" and is what GetObjectKind returns, and no
// other top-level JSON field of t has a name that upstream's case-insensitive reading of
// apiVersion and kind would also match.
func decodableType(t reflect.Type) bool {
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(unmarshalerType) {
		return false
	}
	typeMetaNames := 0
	clash := false
	topLevelJSONNames(t, func(name string) {
		switch {
		case name == "apiVersion" || name == "kind":
			typeMetaNames++
		case strings.EqualFold(name, "apiVersion") || strings.EqualFold(name, "kind"):
			clash = true
		}
	})
	if clash || typeMetaNames != 2 {
		return false
	}
	obj, ok := reflect.New(t).Interface().(runtime.Object)
	if !ok {
		return false
	}
	strictErrs, err := kjson.UnmarshalStrict([]byte(`{"apiVersion":"g.example.com/v9","kind":"K"}`), obj)
	if err != nil || len(strictErrs) > 0 {
		return false
	}
	tm, ok := obj.GetObjectKind().(*metav1.TypeMeta)
	return ok && tm.APIVersion == "g.example.com/v9" && tm.Kind == "K"
}

// topLevelJSONNames calls visit with the JSON name of every field encoding/json decodes at
// the top level of an object of struct type t (the fields of embedded structs without a
// name of their own included).
func topLevelJSONNames(t reflect.Type, visit func(name string)) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				topLevelJSONNames(ft, visit)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		visit(name)
	}
}

// Decode implements runtime.Decoder. into must be a zero object of a decodable type
// registered in the scheme for the one parse; anything else is upstream's Decode.
func (s *Serializer) Decode(data []byte, defaultGVK *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if into == nil {
		return s.Serializer.Decode(data, defaultGVK, into)
	}
	ptr := reflect.ValueOf(into)
	if ptr.Kind() != reflect.Pointer || ptr.IsNil() || !s.decodable[ptr.Type().Elem()] || !ptr.Elem().IsZero() {
		return s.Serializer.Decode(data, defaultGVK, into)
	}
	types, _, err := s.typer.ObjectKinds(into)
	if err != nil || len(types) == 0 {
		return s.Serializer.Decode(data, defaultGVK, into)
	}
	upstream := func() (runtime.Object, *schema.GroupVersionKind, error) {
		ptr.Elem().SetZero()
		return s.Serializer.Decode(data, defaultGVK, into)
	}
	// The fast decoding succeeds only where upstream's strict decoding would have no error
	// (see fastOptions); otherwise the object is reset and decoded again.
	var strictErrs []error
	if !s.fast[ptr.Type().Elem()] || jsonv2.Unmarshal(data, into, fastOptions) != nil {
		ptr.Elem().SetZero()
		// Strict decoding fills the object exactly as the lenient one does, and its
		// errors also tell which keys matched no field: one of them could be a key
		// upstream's first parse reads as apiVersion or kind ("Kind", or one that was
		// sent twice).
		strictErrs, err = kjson.UnmarshalStrict(data, into)
		if err != nil || mayNameTypeMeta(strictErrs) {
			return upstream()
		}
	}
	tm := into.GetObjectKind().(*metav1.TypeMeta) // decodableType checked it
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil {
		return upstream()
	}
	// The defaults of upstream's Decode, in its order: the request's, then into's kind.
	actual := gv.WithKind(tm.Kind)
	if defaultGVK != nil {
		actual = gvkWithDefaults(actual, *defaultGVK)
	}
	actual = gvkWithDefaults(actual, types[0])
	if !slices.Contains(types, actual) {
		// Another kind or version than into's: upstream creates that object or refuses it.
		return upstream()
	}
	if s.IsStrict() && len(strictErrs) > 0 {
		return into, &actual, runtime.NewStrictDecodingError(strictErrs)
	}
	return into, &actual, nil
}

// mayNameTypeMeta reports whether a strict decoding error could be about a top-level key
// upstream reads as apiVersion or kind: a key equal to either but for case (Unicode simple
// folding, as encoding/json's), a duplicate of either, or an error without a field path.
func mayNameTypeMeta(strictErrs []error) bool {
	for _, e := range strictErrs {
		fe, ok := e.(kjson.FieldError)
		if !ok {
			return true
		}
		p := fe.FieldPath()
		if strings.EqualFold(p, "apiVersion") || strings.EqualFold(p, "kind") {
			return true
		}
	}
	return false
}

// gvkWithDefaults is k8s.io/apimachinery/pkg/runtime/serializer/json's (unexported there):
// the kind, and the version when the group is empty or the default's, from defaultGVK.
func gvkWithDefaults(actual, defaultGVK schema.GroupVersionKind) schema.GroupVersionKind {
	if len(actual.Kind) == 0 {
		actual.Kind = defaultGVK.Kind
	}
	if len(actual.Version) == 0 && len(actual.Group) == 0 {
		actual.Group = defaultGVK.Group
		actual.Version = defaultGVK.Version
	}
	if len(actual.Version) == 0 && actual.Group == defaultGVK.Group {
		actual.Version = defaultGVK.Version
	}
	return actual
}

// NegotiatedSerializer returns ns with its JSON serializers (lenient and strict) decoding
// in one parse (NewSerializer); every other media type and encoder is ns's.
func NegotiatedSerializer(ns runtime.NegotiatedSerializer, scheme *runtime.Scheme) runtime.NegotiatedSerializer {
	infos := slices.Clone(ns.SupportedMediaTypes())
	for i, info := range infos {
		if info.MediaType != runtime.ContentTypeJSON {
			continue
		}
		if js, ok := info.Serializer.(*jsonserializer.Serializer); ok {
			infos[i].Serializer = NewSerializer(js, scheme)
		}
		if js, ok := info.StrictSerializer.(*jsonserializer.Serializer); ok {
			infos[i].StrictSerializer = NewSerializer(js, scheme)
		}
	}
	return negotiated{NegotiatedSerializer: ns, mediaTypes: infos}
}

// negotiated is a NegotiatedSerializer with its media types replaced.
type negotiated struct {
	runtime.NegotiatedSerializer
	mediaTypes []runtime.SerializerInfo
}

// SupportedMediaTypes returns the media types with the one-parse JSON serializers.
func (n negotiated) SupportedMediaTypes() []runtime.SerializerInfo { return n.mediaTypes }
