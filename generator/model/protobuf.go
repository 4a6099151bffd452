package model

import (
	"fmt"
	"go/token"
	"slices"
	"strconv"
	"strings"
)

// ProtoMethodNames are the methods a type needs to be encoded and decoded by
// k8s.io/apimachinery's protobuf serializer: those go-to-protobuf writes, and aagen too.
var ProtoMethodNames = []string{"Reset", "ProtoMessage", "String", "Marshal", "MarshalTo", "MarshalToSizedBuffer", "Size", "Unmarshal"}

// Protobuf is what the protobuf encoding (k8s.io/api's wire format, as go-to-protobuf writes
// it) makes of one types package (Version.Protobuf): the messages its kinds, their lists
// and its subresources' bodies and answers need, with each field's encoding; or the fields it
// cannot carry, which leave the package served in JSON and YAML only; or nothing to write,
// when the types declare the methods themselves.
type Protobuf struct {
	// Pkg and PkgName are the package's import path and Go name.
	Pkg, PkgName string
	// Own is set when every root type has protobuf methods of its own (a package with
	// go-to-protobuf's generated.pb.go, as k8s.io/api and k8s.io/metrics have): those
	// k8s.io/apimachinery's protobuf serializer calls (see OwnProtobuf). The package has
	// protobuf, and aagen writes none.
	Own bool
	// Messages are the structs that get the methods, in the order they are reached from the
	// roots (nil when Own or Unsupported).
	Messages []*ProtoMessage
	// Unsupported are warnings, one per type or field the encoding cannot carry, at its
	// file:line with the fix; when there are any, the package has no protobuf methods.
	Unsupported []Diagnostic
}

// Encodes reports whether the package's types have the protobuf methods: their own, or
// those aagen writes.
func (p *Protobuf) Encodes() bool { return p != nil && len(p.Unsupported) == 0 }

// Generates reports whether aagen writes the package's protobuf methods.
func (p *Protobuf) Generates() bool { return p.Encodes() && !p.Own && len(p.Messages) > 0 }

// ProtoMessage is one struct of the package encoded as a protobuf message.
type ProtoMessage struct {
	// Name is the Go type's (and the message's) name.
	Name string
	// Fields are the encoded fields, in declaration order.
	Fields []*ProtoField
}

// ProtoField is one field of a message.
type ProtoField struct {
	// GoName is the Go field name; Tag its protobuf struct tag ("" without one), which
	// names its number; ProtoName its name in generated.proto (the name= of the tag, else
	// its JSON name, else its Go name).
	GoName, Tag, ProtoName string
	Pos                    token.Position
	// Type is the field's Go type.
	Type *TypeExpr
	// Pointer, Repeated and Map say how the value is held: behind a pointer, as a slice
	// (one value per element), or as a map whose entries are Key and Value.
	Pointer, Repeated, Map bool
	Value, Key             ProtoValue
}

// ProtoEncoding is how one value (a field, a slice element, a map key or value) is encoded.
type ProtoEncoding uint8

const (
	EncString  ProtoEncoding = iota // length-delimited UTF-8
	EncBytes                        // length-delimited ([]byte)
	EncBool                         // varint 0 or 1
	EncVarint                       // varint of the value converted to uint64 (ints sign-extended)
	EncDouble                       // fixed64 (float64)
	EncFloat                        // fixed32 (float32)
	EncMessage                      // length-delimited, the type's own methods
)

// WireType is the protobuf wire type of the encoding.
func (e ProtoEncoding) WireType() int {
	switch e {
	case EncBool, EncVarint:
		return 0
	case EncDouble:
		return 1
	case EncFloat:
		return 5
	}
	return 2
}

// ProtoValue is one encoded value and its Go type.
type ProtoValue struct {
	Encoding ProtoEncoding
	// Type is the value's Go type (a named type, a basic type, or a bytes slice).
	Type *TypeExpr
	// Basic is the basic type underneath a scalar (EncVarint: "int32", "uint64", ...).
	Basic string
}

// ProtobufOf analyses the structs of package pkg of the graph reachable from the named
// root types, and every struct of the package they reach.
func ProtobufOf(g *Types, pkg string, roots []string) (*Protobuf, error) {
	a := &protoAnalysis{g: g, pb: &Protobuf{Pkg: pkg}, byName: map[string]*ProtoMessage{}}
	var types []*Type
	for _, r := range roots {
		t := g.Lookup(GoType{Pkg: pkg, Name: r})
		if t == nil {
			return nil, fmt.Errorf("protobuf: %s has no type %s", pkg, r)
		}
		a.pb.PkgName = t.PkgName
		types = append(types, t)
	}
	if ownMethods(types) {
		// go-to-protobuf's generated.pb.go (or the user) already gives every type its
		// methods: nothing to write, nothing to warn about.
		a.pb.Own = true
		return a.pb, nil
	}
	for _, t := range types {
		a.add(t)
	}
	if len(a.pb.Unsupported) > 0 {
		a.pb.Messages = nil
	}
	return a.pb, nil
}

// protobuf computes Version.Protobuf for every types package, adding its warnings.
func (b *builder) protobuf(m *Model) {
	for _, g := range m.Groups {
		for _, v := range g.Packages() {
			var roots []string
			for _, k := range v.Kinds {
				roots = append(roots, k.Name, k.ListName)
			}
			// The bodies and answers of imperative subresources are registered too: the
			// server offers protobuf for a group only when every registered type has it.
			roots = append(roots, v.SubresourceTypes()...)
			pb, err := ProtobufOf(m.Types, v.ImportPath, roots)
			if err != nil {
				b.errorf(v.Pos, "", "%v", err)
				continue
			}
			v.Protobuf = pb
			b.diags = append(b.diags, pb.Unsupported...)
		}
	}
}

// ServesProtobuf reports whether every served types package has the protobuf methods
// (the internal packages are never encoded): the generated clientset then asks for protobuf.
func (m *Model) ServesProtobuf() bool {
	for _, g := range m.Groups {
		for _, v := range g.Versions {
			if !v.Protobuf.Encodes() {
				return false
			}
		}
	}
	return len(m.Groups) > 0
}

type protoAnalysis struct {
	g      *Types
	pb     *Protobuf
	byName map[string]*ProtoMessage // nil for a type the encoding cannot carry
}

// add analyses a struct of the package and every struct of the package it reaches,
// recording in Unsupported each type and field the encoding does not support.
func (a *protoAnalysis) add(t *Type) {
	name := t.Name.Name
	if _, done := a.byName[name]; done {
		return
	}
	a.byName[name] = nil // analysed once, however many fields reach it: one warning each
	decl := t.Decl()
	if decl == nil || decl.Kind != ExprStruct {
		a.unsupported(t.Pos, name, "is not a struct")
		return
	}
	if existing := declaredProtoMethods(t); len(existing) > 0 {
		a.unsupportedFix(t.Pos, name, fmt.Sprintf("already declares %s, which the protobuf methods would redeclare", strings.Join(existing, ", ")),
			"remove or rename those methods")
		return
	}
	msg := &ProtoMessage{Name: name}
	a.byName[name] = msg
	a.pb.Messages = append(a.pb.Messages, msg)
	var reach []*Type
	for _, v := range decl.Fields {
		if !v.Exported || v.Tag.Get("json") == "-" || v.ProtobufTag == "-" {
			continue
		}
		if v.Embedded && v.Type.IsNamed(metav1Path, "TypeMeta") {
			continue // apiVersion and kind travel in the envelope (runtime.Unknown)
		}
		if slices.Contains(ProtoMethodNames, v.GoName) {
			json := v.JSONName
			if json == "" {
				json = v.GoName
			}
			a.unsupportedFix(v.Pos, name+"."+v.GoName, fmt.Sprintf("has the name of a protobuf method (%s), which the type cannot then declare", strings.Join(ProtoMethodNames, ", ")),
				fmt.Sprintf("rename the Go field (its JSON name %q can stay)", json))
			continue
		}
		f := &ProtoField{GoName: v.GoName, Tag: v.ProtobufTag, Pos: v.Pos, Type: v.Type, ProtoName: protoFieldName(v)}
		fail := func(why string) {
			a.unsupported(v.Pos, name+"."+v.GoName, fmt.Sprintf("has type %s, %s", v.Type.StringIn(a.pb.Pkg), why))
		}
		e := v.Type
		if e.Kind == ExprPointer {
			f.Pointer = true
			e = e.Elem
		}
		switch u := a.underlying(e); {
		case u != nil && u.Kind == ExprSlice:
			if a.isByte(u.Elem) {
				if f.Pointer {
					fail("a pointer to bytes, which protobuf cannot tell from bytes")
					continue
				}
				f.Value = ProtoValue{Encoding: EncBytes, Type: e}
				break
			}
			if f.Pointer {
				fail("a pointer to a slice, which protobuf cannot tell from the slice")
				continue
			}
			f.Repeated = true
			val, why := a.value(u.Elem)
			if why != "" {
				fail(why)
				continue
			}
			if val.Encoding == EncBytes {
				fail("a slice of bytes slices, which go-to-protobuf wraps in a message type of its own")
				continue
			}
			f.Value = val
		case u != nil && u.Kind == ExprMap:
			if f.Pointer {
				fail("a pointer to a map, which protobuf cannot tell from the map")
				continue
			}
			f.Map = true
			key, why := a.value(u.Key)
			if why != "" || key.Encoding != EncString {
				fail("a map whose key is not a string")
				continue
			}
			val, why := a.value(u.Elem)
			if why != "" {
				fail(why)
				continue
			}
			f.Key, f.Value = key, val
		default:
			val, why := a.value(e)
			if why != "" {
				fail(why)
				continue
			}
			f.Value = val
		}
		if f.Value.Encoding == EncMessage && f.Value.Type.Kind == ExprNamed && f.Value.Type.Name.Pkg == a.pb.Pkg {
			if rt := a.g.Lookup(f.Value.Type.Name); rt != nil {
				reach = append(reach, rt)
			}
		}
		msg.Fields = append(msg.Fields, f)
	}
	for _, rt := range reach {
		a.add(rt)
	}
}

// underlying is what e is declared as: the declaration of a named type (nil when the graph
// does not hold it), else e.
func (a *protoAnalysis) underlying(e *TypeExpr) *TypeExpr {
	if e == nil || e.Kind != ExprNamed {
		return e
	}
	if t := a.g.Lookup(e.Name); t != nil {
		return t.Decl()
	}
	return nil
}

// isByte reports whether e is byte (uint8), or a type declared as byte.
func (a *protoAnalysis) isByte(e *TypeExpr) bool {
	u := a.underlying(e)
	return u != nil && u.Kind == ExprBasic && u.Basic == "uint8"
}

// value classifies a non-slice, non-map Go type; why says why it cannot be encoded.
func (a *protoAnalysis) value(e *TypeExpr) (ProtoValue, string) {
	if e.Kind == ExprPointer {
		return ProtoValue{}, "a pointer in a slice or map, which go-to-protobuf does not encode"
	}
	var named *Type
	if e.Kind == ExprNamed {
		named = a.g.Lookup(e.Name)
	}
	u := a.underlying(e)
	if u == nil {
		u = &TypeExpr{Kind: ExprOther}
	}
	switch u.Kind {
	case ExprBasic:
		switch u.Basic {
		case "string":
			return ProtoValue{Encoding: EncString, Type: e, Basic: u.Basic}, ""
		case "bool":
			return ProtoValue{Encoding: EncBool, Type: e, Basic: u.Basic}, ""
		case "int32", "rune", "int64", "uint32", "uint64", "int", "uint":
			return ProtoValue{Encoding: EncVarint, Type: e, Basic: u.Basic}, ""
		case "int8", "int16", "uint8", "uint16":
			// Widened on the wire to int32 or uint32 (sign-extended as int32 is); go-to-protobuf
			// refuses these kinds, so no k8s.io/api type has them.
			return ProtoValue{Encoding: EncVarint, Type: e, Basic: u.Basic}, ""
		case "float64":
			return ProtoValue{Encoding: EncDouble, Type: e, Basic: u.Basic}, ""
		case "float32":
			return ProtoValue{Encoding: EncFloat, Type: e, Basic: u.Basic}, ""
		}
		return ProtoValue{}, fmt.Sprintf("whose kind %s has no protobuf type (use a string, bool, integer or float kind)", u.Basic)
	case ExprStruct:
		if named == nil {
			return ProtoValue{}, "an anonymous struct, which has no message name"
		}
		if e.Name.Pkg == a.pb.Pkg || named.ProtoMethods {
			return ProtoValue{Encoding: EncMessage, Type: e}, ""
		}
		return ProtoValue{}, fmt.Sprintf("from package %s, which has no protobuf methods (Size, MarshalToSizedBuffer, Unmarshal)", e.Name.Pkg)
	case ExprSlice:
		if a.isByte(u.Elem) {
			return ProtoValue{Encoding: EncBytes, Type: e}, ""
		}
		return ProtoValue{}, "a slice inside a slice or map, which go-to-protobuf wraps in a message type of its own"
	case ExprInterface:
		return ProtoValue{}, "an interface, which has no protobuf encoding"
	case ExprMap:
		return ProtoValue{}, "a map inside a slice or map, which go-to-protobuf wraps in a message type of its own"
	}
	// Types with their own methods but no struct underneath (resource.Quantity is a struct;
	// this is for completeness).
	if named != nil && named.ProtoMethods {
		return ProtoValue{Encoding: EncMessage, Type: e}, ""
	}
	return ProtoValue{}, "which has no protobuf encoding"
}

func (a *protoAnalysis) unsupported(pos token.Position, what, why string) {
	a.unsupportedFix(pos, what, why, "change the field's type to one docs/protobuf.md lists")
}

func (a *protoAnalysis) unsupportedFix(pos token.Position, what, why, fix string) {
	a.pb.Unsupported = append(a.pb.Unsupported, Diagnostic{
		Pos:     pos,
		Warning: true,
		Msg:     fmt.Sprintf("no protobuf for package %s: %s %s", a.pb.Pkg, what, why),
		Fix:     "the package's kinds are served in JSON and YAML only (a client asking for protobuf alone gets 406); to get protobuf, " + fix,
	})
}

// declaredProtoMethods returns the protobuf method names the type declares itself, sorted.
func declaredProtoMethods(t *Type) []string {
	var out []string
	for _, m := range t.Methods {
		if slices.Contains(ProtoMethodNames, m) {
			out = append(out, m)
		}
	}
	return out
}

// OwnProtobuf reports whether t has the methods k8s.io/apimachinery's protobuf serializer
// encodes and decodes a type with (Size, MarshalToSizedBuffer, Unmarshal, and Reset, which
// it calls before Unmarshal): go-to-protobuf's, gogo's, or the user's. ProtoMessage and
// String are not among them (k8s.io/api v0.37's generated.pb.go has no ProtoMessage).
func OwnProtobuf(t *Type) bool { return t.ProtoMethods && slices.Contains(t.Methods, "Reset") }

// ownMethods reports whether every root type has protobuf methods of its own.
func ownMethods(roots []*Type) bool {
	for _, t := range roots {
		if !OwnProtobuf(t) {
			return false
		}
	}
	return len(roots) > 0
}

// protoFieldName is a field's name in generated.proto: the name= of its protobuf tag, else
// its JSON name, else its Go name (as go-to-protobuf names them).
func protoFieldName(f *Field) string {
	for _, part := range strings.Split(f.ProtobufTag, ",") {
		if name, ok := strings.CutPrefix(part, "name="); ok {
			return name
		}
	}
	if f.JSONName != "" {
		return f.JSONName
	}
	return f.GoName
}

// StringIn is the Go spelling of e in package pkg: its own types unqualified, others
// qualified by import path (as go/types spells a type relative to a package).
func (e *TypeExpr) StringIn(pkg string) string {
	switch e.Kind {
	case ExprNamed:
		s := e.Name.Name
		if e.Name.Pkg != "" && e.Name.Pkg != pkg {
			s = e.Name.Pkg + "." + s
		}
		// Type arguments, as String spells them.
		if i := strings.Index(e.String, "["); i >= 0 {
			s += e.String[i:]
		}
		return s
	case ExprBasic:
		if !strings.Contains(e.String, ".") || e.String == "unsafe.Pointer" {
			return e.String
		}
		return e.Basic
	case ExprPointer:
		return "*" + e.Elem.StringIn(pkg)
	case ExprSlice:
		return "[]" + e.Elem.StringIn(pkg)
	case ExprArray:
		return "[" + strconv.FormatInt(e.Len, 10) + "]" + e.Elem.StringIn(pkg)
	case ExprMap:
		return "map[" + e.Key.StringIn(pkg) + "]" + e.Elem.StringIn(pkg)
	case ExprStruct:
		var b strings.Builder
		b.WriteString("struct{")
		for i, f := range e.Fields {
			if i > 0 {
				b.WriteString("; ")
			}
			if !f.Embedded {
				b.WriteString(f.GoName + " ")
			}
			b.WriteString(f.Type.StringIn(pkg))
			if f.Tag != "" {
				b.WriteString(" " + strconv.Quote(string(f.Tag)))
			}
		}
		b.WriteString("}")
		return b.String()
	}
	return e.String
}
