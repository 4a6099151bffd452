package registry

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
)

// A protobuf body is read for its size limits without decoding it into the Go type: a
// body of 2.8 MB can hold 1.4 million empty list entries, and decoding allocates a Go
// value for each (hundreds of MB) before anything can count them. protoValue reads the
// wire format into the generic shape JSON decoding gives (maps, lists, strings), with one
// small placeholder for every other value, so the limits are checked by the same code,
// with the same messages, as a JSON body's.
//
// The field numbers of a type are not in its Go declaration (aagen keeps them in
// zz_generated.protobuf-numbers.txt): protoFieldsOf finds them once per type by
// marshalling a value with one field set at a time and seeing which field number appears.

// protoMarshaler is what the generated protobuf methods (and apimachinery's) provide.
type protoMarshaler interface{ Marshal() ([]byte, error) }

var protoMarshalerType = reflect.TypeFor[protoMarshaler]()

// protoLeaf stands for a value that holds no size limit (a number, a boolean, a time, a
// quantity): present, not null, and of no type overLimits looks into.
type protoLeaf struct{}

// protoField is a field of a Go struct as it appears on the wire.
type protoField struct {
	name   string // JSON name; "" for an inlined (embedded) struct
	inline bool
	typ    reflect.Type
}

// protoFieldsCache holds protoFieldsOf's answer by type (map[protowire.Number]protoField,
// nil when the type has no protobuf methods of its own).
var protoFieldsCache sync.Map

// protoFieldsOf returns the field numbers of t, a struct type whose pointer has protobuf
// methods, or nil.
func protoFieldsOf(t reflect.Type) map[protowire.Number]protoField {
	if v, ok := protoFieldsCache.Load(t); ok {
		return v.(map[protowire.Number]protoField)
	}
	out := probeProtoFields(t)
	protoFieldsCache.Store(t, out)
	return out
}

func probeProtoFields(t reflect.Type) map[protowire.Number]protoField {
	if t.Kind() != reflect.Struct || !reflect.PointerTo(t).Implements(protoMarshalerType) || ownJSON(t) {
		return nil
	}
	zero, ok := func() (m map[protowire.Number][]byte, ok bool) {
		defer func() {
			if recover() != nil {
				m, ok = nil, false
			}
		}()
		return protoFieldBytes(reflect.New(t))
	}()
	if !ok {
		return nil
	}
	out := map[protowire.Number]protoField{}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		inline := name == "" && (sf.Anonymous || strings.Contains(sf.Tag.Get("json"), ",inline"))
		if name == "" && !inline {
			name = sf.Name
		}
		probed, ok := probeField(t, i)
		if !ok {
			continue
		}
		var found []protowire.Number
		for num, b := range probed {
			if !bytes.Equal(b, zero[num]) {
				found = append(found, num)
			}
		}
		if len(found) == 1 {
			out[found[0]] = protoField{name: name, inline: inline, typ: sf.Type}
		}
	}
	return out
}

// probeField marshals a value of t with field i set, by field number. A field that
// cannot be probed (its Marshal fails or panics) is left out: the body is read as if it
// did not hold it, and validation after decoding answers for it.
func probeField(t reflect.Type, i int) (fields map[protowire.Number][]byte, ok bool) {
	defer func() {
		if recover() != nil {
			fields, ok = nil, false
		}
	}()
	v := reflect.New(t)
	if !setProbe(v.Elem().Field(i)) {
		return nil, false
	}
	return protoFieldBytes(v)
}

// protoFieldBytes marshals v (a pointer) and returns the bytes of each field number.
func protoFieldBytes(v reflect.Value) (map[protowire.Number][]byte, bool) {
	b, err := v.Interface().(protoMarshaler).Marshal()
	if err != nil {
		return nil, false
	}
	out := map[protowire.Number][]byte{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, false
		}
		out[num] = append(out[num], b[:n+m]...)
		b = b[n+m:]
	}
	return out, true
}

// setProbe sets v to a value that marshals differently from its zero value.
func setProbe(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		v.SetString("a")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		setProbe(s.Index(0))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.Zero(v.Type().Key()), reflect.Zero(v.Type().Elem()))
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		setProbe(p.Elem())
		v.Set(p)
	case reflect.Struct:
		if ownJSON(v.Type()) {
			for _, lit := range []string{`"2001-02-03T04:05:06Z"`, `"1"`, `1`, `"1s"`} {
				if json.Unmarshal([]byte(lit), v.Addr().Interface()) == nil {
					return true
				}
			}
			return false
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && setProbe(v.Field(i)) {
				return true
			}
		}
		return false
	default:
		return false
	}
	return true
}

// protoObject reads a protobuf body (the "k8s\x00" envelope around a runtime.Unknown)
// of the Go type t into the shape JSON decoding gives. ok is false when the body is not
// such an envelope or does not parse: the decoder answers for it.
func protoObject(body []byte, t reflect.Type) (obj map[string]any, ok bool) {
	raw, ok := protoEnvelopeRaw(body)
	if !ok {
		return nil, false
	}
	v, ok := protoMessage(raw, t)
	if !ok {
		return nil, false
	}
	m, _ := v.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m, true
}

// protoEnvelope is the magic number that starts Kubernetes' protobuf encoding.
var protoEnvelope = []byte{0x6b, 0x38, 0x73, 0x00}

// protoEnvelopeRaw returns the raw field (2) of the runtime.Unknown in body.
func protoEnvelopeRaw(body []byte) ([]byte, bool) {
	b, ok := bytes.CutPrefix(body, protoEnvelope)
	if !ok {
		return nil, false
	}
	var raw []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		if num == 2 && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil, false
			}
			raw, b = v, b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return nil, false
		}
		b = b[m:]
	}
	return raw, true
}

// protoMessage reads b, a message of struct type t, as a map (nil when empty), or as a
// leaf when t has no protobuf methods of its own.
func protoMessage(b []byte, t reflect.Type) (any, bool) {
	fields := protoFieldsOf(t)
	if fields == nil {
		return protoLeaf{}, true
	}
	var m map[string]any
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		f, known := fields[num]
		if !known || typ != protowire.BytesType {
			// Unknown fields are the decoder's to refuse; scalars hold no size limit.
			k := protowire.ConsumeFieldValue(num, typ, b)
			if k < 0 {
				return nil, false
			}
			if known {
				if m == nil {
					m = map[string]any{}
				}
				if f.typ.Kind() == reflect.Slice {
					l, _ := m[f.name].([]any)
					m[f.name] = append(l, protoLeaf{})
				} else {
					m[f.name] = protoLeaf{}
				}
			}
			b = b[k:]
			continue
		}
		data, k := protowire.ConsumeBytes(b)
		if k < 0 {
			return nil, false
		}
		b = b[k:]
		if m == nil {
			m = map[string]any{}
		}
		ft := f.typ
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8:
			l, _ := m[f.name].([]any)
			et := ft.Elem()
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if isProtoScalar(et) {
				// A packed list of numbers or booleans: one entry per value.
				for len(data) > 0 {
					var k int
					switch et.Kind() {
					case reflect.Float32:
						_, k = protowire.ConsumeFixed32(data)
					case reflect.Float64:
						_, k = protowire.ConsumeFixed64(data)
					default:
						_, k = protowire.ConsumeVarint(data)
					}
					if k < 0 {
						return nil, false
					}
					l, data = append(l, protoLeaf{}), data[k:]
				}
				m[f.name] = l
				continue
			}
			v, ok := protoValue(data, et)
			if !ok {
				return nil, false
			}
			m[f.name] = append(l, v)
		case ft.Kind() == reflect.Map:
			key, val, ok := protoMapEntry(data, ft.Elem())
			if !ok {
				return nil, false
			}
			mm, _ := m[f.name].(map[string]any)
			if mm == nil {
				mm = map[string]any{}
				m[f.name] = mm
			}
			mm[key] = val
		case f.inline:
			v, ok := protoValue(data, ft)
			if !ok {
				return nil, false
			}
			if inner, _ := v.(map[string]any); inner != nil {
				for k, x := range inner {
					m[k] = x
				}
			}
		default:
			v, ok := protoValue(data, ft)
			if !ok {
				return nil, false
			}
			m[f.name] = v
		}
	}
	return m, true
}

// protoValue reads data, the bytes of a length-delimited value of type t.
func protoValue(data []byte, t reflect.Type) (any, bool) {
	switch t.Kind() {
	case reflect.String:
		return string(data), true
	case reflect.Struct:
		return protoMessage(data, t)
	default:
		return protoLeaf{}, true
	}
}

// protoMapEntry reads a map entry (key 1, value 2) whose values are of type t.
func protoMapEntry(b []byte, t reflect.Type) (string, any, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var key string
	var val any = protoLeaf{}
	if t.Kind() == reflect.String {
		val = ""
	} else if t.Kind() == reflect.Struct {
		val = nil // an absent message value decodes as its zero value: an empty object
		if protoFieldsOf(t) == nil {
			val = protoLeaf{}
		}
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", nil, false
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == 1 || num == 2) {
			data, k := protowire.ConsumeBytes(b)
			if k < 0 {
				return "", nil, false
			}
			b = b[k:]
			if num == 1 {
				key = string(data)
				continue
			}
			v, ok := protoValue(data, t)
			if !ok {
				return "", nil, false
			}
			val = v
			continue
		}
		k := protowire.ConsumeFieldValue(num, typ, b)
		if k < 0 {
			return "", nil, false
		}
		b = b[k:]
	}
	if val == nil {
		val = map[string]any(nil)
	}
	return key, val, true
}

func isProtoScalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return false
}
