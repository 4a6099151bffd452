package typedjson

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"time"
	"unicode"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
	kjson "sigs.k8s.io/json"
)

// The fast decoding: github.com/go-json-experiment/json (the proposed encoding/json/v2)
// decodes a body into a typed object with encoding/json's semantics (its v1 options), in
// about two thirds of the time and half the allocations of sigs.k8s.io/json, the fork of
// encoding/json the serializers use. It is only ever asked for a body that decodes with no
// error of any kind: its options refuse what upstream would accept with a strict decoding
// error (a key that names no field, also in other case; a key given twice), and input it
// might read otherwise than upstream (invalid UTF-8, which upstream replaces). On any error
// Decode resets the object and decodes the body with sigs.k8s.io/json, so every error, and
// every object that comes with one, is upstream's; a body the fast decoding accepts must
// come out as upstream's would, which TestFastDecodingAsUpstream checks on every kind of
// k8s.io/api and on variations of each.
//
// Where the two read Go types differently, the type is not decoded fast (fastDecodable);
// values of type any get sigs.k8s.io/json's reading (integers stay int64).
var fastOptions = jsonv2.JoinOptions(
	jsonv1.DefaultOptionsV1(),
	jsonv2.MatchCaseInsensitiveNames(false),
	jsonv2.RejectUnknownMembers(true),
	jsontext.AllowDuplicateNames(false),
	jsontext.AllowInvalidUTF8(false),
	jsonv2.WithUnmarshalers(jsonv2.UnmarshalFromFunc(decodeAny)),
)

// decodeAny decodes a value of type any as sigs.k8s.io/json does: maps, slices, strings,
// booleans, int64 for integers that fit and float64 for other numbers.
func decodeAny(dec *jsontext.Decoder, v *any) error {
	raw, err := dec.ReadValue()
	if err != nil {
		return err
	}
	return kjson.UnmarshalCaseSensitivePreserveInts(raw, v)
}

var (
	anyType             = reflect.TypeFor[any]()
	numberType          = reflect.TypeFor[json.Number]()
	timeType            = reflect.TypeFor[time.Time]()
	durationType        = reflect.TypeFor[time.Duration]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// fastDecodable reports whether the fast decoding reads JSON into values of type t as
// encoding/json does, as far as the type tells: t and every type it holds are made of
// structs, pointers, slices, arrays, maps with string or text keys, strings, numbers,
// booleans and the empty interface, or decode themselves (UnmarshalJSON or UnmarshalText;
// not time.Time and time.Duration, which v2 reads its own way); no struct field has a JSON
// name encoding/json would not take as given, a tag option other than omitempty, omitzero
// or inline (both read "string" and v2 reads "format", "embed" and "case"), or an
// embedding only encoding/json accepts.
func fastDecodable(t reflect.Type) bool {
	return fastDecodableType(t, map[reflect.Type]bool{})
}

func fastDecodableType(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return true // being checked further up, or checked
	}
	seen[t] = true
	switch t {
	case numberType:
		return false // encoding/json's own string type, a plain string to v2
	case timeType, durationType:
		// v2 reads these itself instead of calling their methods: it unescapes a time's
		// string before parsing it, where time.Time's UnmarshalJSON refuses escapes.
		return false
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return true // decodes itself
	}
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return true
	case reflect.Interface:
		return t == anyType
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return fastDecodableType(t.Elem(), seen)
	case reflect.Map:
		// Not integer keys: v2's legacy reading takes the key "null" as 0, where
		// encoding/json refuses it.
		if k := t.Key(); k.Kind() != reflect.String && !reflect.PointerTo(k).Implements(textUnmarshalerType) {
			return false
		}
		return fastDecodableType(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if !fastDecodableField(t.Field(i), seen) {
				return false
			}
		}
		return true
	default:
		return false // channels, functions, complex numbers: encoding/json refuses them
	}
}

func fastDecodableField(f reflect.StructField, seen map[reflect.Type]bool) bool {
	tag, hasTag := f.Tag.Lookup("json")
	if tag == "-" {
		return true
	}
	if !f.IsExported() && !f.Anonymous {
		return !hasTag // v2 refuses a tag on an unexported field; encoding/json ignores the field
	}
	name, opts, _ := strings.Cut(tag, ",")
	if name != "" && !validV1Name(name) {
		return false // encoding/json uses the Go name instead
	}
	for opt := range strings.SplitSeq(opts, ",") {
		switch opt {
		case "", "omitempty", "omitzero", "inline":
		default:
			return false
		}
	}
	if f.Anonymous && name == "" {
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			if !f.IsExported() {
				return false // encoding/json cannot allocate it
			}
			ft = ft.Elem()
		}
		if ft.Kind() != reflect.Struct {
			return false // v2 wants a name for it
		}
	}
	return fastDecodableType(f.Type, seen)
}

// validV1Name is encoding/json's isValidTag: a tag name it takes as the JSON name.
func validV1Name(s string) bool {
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
