package emit

import (
	"bytes"
	"errors"
	"fmt"
	"go/token"
	"go/types"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/dave/jennifer/jen"
	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/imports"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/aagen-dev/aagen/generator/model"
	"github.com/aagen-dev/aagen/generator/protonum"
)

// ProtobufFileName is the file of protobuf methods aagen writes in each API package.
const ProtobufFileName = "zz_generated.protobuf.go"

// ProtoIDLFileName is the protobuf IDL aagen writes next to it, named as go-to-protobuf's.
const ProtoIDLFileName = "generated.proto"

const (
	pkgProtowire = "google.golang.org/protobuf/encoding/protowire"
	pkgBinary    = "encoding/binary"
	pkgMath      = "math"
	pkgSort      = "sort"
	pkgFmt       = "fmt"
	// putVarint is the helper each protobuf file declares: it writes a varint backwards,
	// ending at offset, and returns where it starts (go-to-protobuf's encodeVarintGenerated).
	putVarint = "aagenProtoPutVarint"
)

// protoMethods are the methods a type needs to be encoded and decoded by
// k8s.io/apimachinery's protobuf serializer, and those aagen writes.
var protoMethods = []string{"Reset", "ProtoMessage", "String", "Marshal", "MarshalTo", "MarshalToSizedBuffer", "Size", "Unmarshal"}

// Protobuf renders, for every API package of m (each version, and the internal package),
// zz_generated.protobuf.go with go-to-protobuf's methods for every struct reachable from a
// kind, its list or a subresource's body or answer, and the package's field numbers file (generator/protonum). The numbers are read
// from the file an earlier run wrote next to the types. A package with a field the
// encoding does not support gets neither file but a warning naming the field; a number
// conflict is an error. allProtobuf tells whether every version has the protobuf methods
// (a package whose types declare the methods themselves has them): then the generated
// clientset asks for protobuf.
func Protobuf(m *model.Model, pkgs []*packages.Package) (files []File, warns []model.Diagnostic, allProtobuf bool, err error) {
	byPath := map[string]*packages.Package{}
	packages.Visit(pkgs, nil, func(p *packages.Package) { byPath[p.PkgPath] = p })
	allProtobuf = true
	for _, g := range m.Groups {
		for _, v := range g.Packages() {
			p := byPath[v.ImportPath]
			if p == nil || p.Types == nil {
				return nil, nil, false, fmt.Errorf("protobuf: package %s was not loaded", v.ImportPath)
			}
			var roots []string
			for _, k := range v.Kinds {
				roots = append(roots, k.Name, k.ListName)
			}
			// The bodies and answers of imperative subresources are registered too: the
			// server offers protobuf for a group only when every registered type has it.
			roots = append(roots, v.SubresourceTypes()...)
			numbersPath := filepath.Join(v.Dir, protonum.FileName)
			old, err := os.ReadFile(numbersPath)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, nil, false, err
			}
			rel := m.RelPath(v.Dir)
			out, diags, err := ProtobufPackage(p, roots, old, path.Join(rel, protonum.FileName))
			if err != nil {
				return nil, nil, false, err
			}
			if len(diags) > 0 {
				warns = append(warns, diags...)
				if v != g.Internal {
					allProtobuf = false
				}
				continue
			}
			if out == nil {
				continue
			}
			// A generated.proto that go-to-protobuf (or a hand) wrote stays.
			files = append(files,
				File{Path: path.Join(rel, ProtobufFileName), Content: out.Go, Owner: Generated},
				File{Path: path.Join(rel, protonum.FileName), Content: out.Numbers, Owner: Generated},
				File{Path: path.Join(rel, ProtoIDLFileName), Content: out.Proto, Owner: GeneratedOrKept})
		}
	}
	return files, warns, allProtobuf, nil
}

// ProtobufOutput is what ProtobufPackage renders for one package.
type ProtobufOutput struct {
	// Go is zz_generated.protobuf.go.
	Go []byte
	// Numbers is the content of the numbers file (protonum.FileName), with aagen's header.
	Numbers []byte
	// Proto is generated.proto, the IDL of the same messages.
	Proto []byte
}

// ProtobufPackage renders the protobuf methods of the structs of p reachable from the named
// root types, numbered from oldNumbers (the numbers file's content, nil without one;
// numbersFile names it in errors). Each field the encoding does not support gives a warning
// diagnostic, and the package no output; when every root type declares the methods itself
// (a package with go-to-protobuf's generated.pb.go), there is neither.
func ProtobufPackage(p *packages.Package, roots []string, oldNumbers []byte, numbersFile string) (*ProtobufOutput, []model.Diagnostic, error) {
	a := &protoAnalysis{pkg: p, byName: map[string]*protoMessage{}}
	if ownMethods(p, roots) {
		// go-to-protobuf's generated.pb.go (or the user) already gives every type its
		// methods: nothing to write, nothing to warn about.
		return nil, nil, nil
	}
	for _, r := range roots {
		obj, ok := p.Types.Scope().Lookup(r).(*types.TypeName)
		if !ok {
			return nil, nil, fmt.Errorf("protobuf: %s has no type %s", p.PkgPath, r)
		}
		named, ok := obj.Type().(*types.Named)
		if !ok {
			return nil, nil, fmt.Errorf("protobuf: %s.%s is not a named type", p.PkgPath, r)
		}
		a.add(named)
	}
	if len(a.warns) > 0 {
		return nil, a.warns, nil
	}
	numbers, err := protonum.Parse(oldNumbers, numbersFile)
	if err != nil {
		return nil, nil, err
	}
	var specs []protonum.Type
	for _, msg := range a.messages {
		t := protonum.Type{Name: msg.name}
		for _, f := range msg.fields {
			t.Fields = append(t.Fields, protonum.Field{Name: f.goName, Tag: f.tag, Pos: f.pos.String()})
		}
		specs = append(specs, t)
	}
	numbers, err = numbers.Assign(specs)
	if err != nil {
		return nil, nil, err
	}
	for _, msg := range a.messages {
		for _, f := range msg.fields {
			f.num, _ = numbers.Number(msg.name, f.goName)
		}
		sort.SliceStable(msg.fields, func(i, j int) bool { return msg.fields[i].num < msg.fields[j].num })
	}
	src, err := renderProtobuf(p, a.messages)
	if err != nil {
		return nil, nil, err
	}
	header := GeneratedYAMLHeader + "\n"
	return &ProtobufOutput{Go: src, Numbers: append([]byte(header), numbers.Marshal()...), Proto: renderProtoIDL(p, a.messages)}, nil, nil
}

// protoEncoding is how a value (a field, a slice element or a map key or value) is encoded.
type protoEncoding int

const (
	encString  protoEncoding = iota // length-delimited UTF-8
	encBytes                        // length-delimited ([]byte)
	encBool                         // varint 0 or 1
	encVarint                       // varint of the value converted to uint64 (ints sign-extended)
	encDouble                       // fixed64 (float64)
	encFloat                        // fixed32 (float32)
	encMessage                      // length-delimited, the type's own methods
)

func (e protoEncoding) wireType() int {
	switch e {
	case encBool, encVarint:
		return 0
	case encDouble:
		return 1
	case encFloat:
		return 5
	}
	return 2
}

// protoValue is one encoded value and its Go type.
type protoValue struct {
	enc protoEncoding
	typ types.Type
}

// protoField is one field of a message.
type protoField struct {
	goName string
	tag    string
	// protoName is the field's name in generated.proto: name= of its protobuf tag, else its
	// JSON name. decl is its index in declaration order.
	protoName string
	decl      int
	pos       token.Position
	num       int
	// pointer, repeated and isMap say how the value is held; for a map, key and value
	// describe its entries.
	pointer, repeated, isMap bool
	fieldType                types.Type
	value                    protoValue
	key                      protoValue
}

type protoMessage struct {
	name   string
	fields []*protoField
}

type protoAnalysis struct {
	pkg      *packages.Package
	messages []*protoMessage
	byName   map[string]*protoMessage
	// warns are the types and fields the encoding does not support.
	warns []model.Diagnostic
}

// add analyses a struct of the package and every struct of the package it reaches,
// recording in a.warns each type and field the encoding does not support.
func (a *protoAnalysis) add(named *types.Named) {
	name := named.Obj().Name()
	if a.byName[name] != nil {
		return
	}
	st, ok := named.Underlying().(*types.Struct)
	if !ok {
		a.unsupported(named.Obj().Pos(), name, "is not a struct")
		return
	}
	if existing := declaredMethods(named); len(existing) > 0 {
		a.unsupportedFix(named.Obj().Pos(), name, fmt.Sprintf("already declares %s, which the protobuf methods would redeclare", strings.Join(existing, ", ")),
			"remove or rename those methods")
		return
	}
	msg := &protoMessage{name: name}
	a.byName[name] = msg
	a.messages = append(a.messages, msg)
	var reach []*types.Named
	for i := 0; i < st.NumFields(); i++ {
		v := st.Field(i)
		tag := reflect.StructTag(st.Tag(i))
		if !v.Exported() || tag.Get("json") == "-" || tag.Get("protobuf") == "-" {
			continue
		}
		if v.Embedded() && model.IsNamed(v.Type(), "k8s.io/apimachinery/pkg/apis/meta/v1", "TypeMeta") {
			continue // apiVersion and kind travel in the envelope (runtime.Unknown)
		}
		if slices.Contains(protoMethods, v.Name()) {
			a.unsupportedFix(v.Pos(), name+"."+v.Name(), fmt.Sprintf("has the name of a protobuf method (%s), which the type cannot then declare", strings.Join(protoMethods, ", ")),
				fmt.Sprintf("rename the Go field (its JSON name %q can stay)", jsonName(tag, v.Name())))
			continue
		}
		f := &protoField{goName: v.Name(), tag: tag.Get("protobuf"), pos: a.pkg.Fset.Position(v.Pos()), fieldType: v.Type(),
			protoName: protoFieldName(tag, v.Name()), decl: len(msg.fields)}
		fail := func(why string) {
			a.unsupported(v.Pos(), name+"."+v.Name(), fmt.Sprintf("has type %s, %s", types.TypeString(v.Type(), types.RelativeTo(a.pkg.Types)), why))
		}
		t := types.Unalias(v.Type())
		if ptr, ok := t.(*types.Pointer); ok {
			f.pointer = true
			t = types.Unalias(ptr.Elem())
		}
		switch u := t.Underlying().(type) {
		case *types.Slice:
			if b, ok := u.Elem().Underlying().(*types.Basic); ok && b.Kind() == types.Byte {
				if f.pointer {
					fail("a pointer to bytes, which protobuf cannot tell from bytes")
					continue
				}
				f.value = protoValue{enc: encBytes, typ: t}
				break
			}
			if f.pointer {
				fail("a pointer to a slice, which protobuf cannot tell from the slice")
				continue
			}
			f.repeated = true
			val, why := a.value(u.Elem())
			if why != "" {
				fail(why)
				continue
			}
			if val.enc == encBytes {
				fail("a slice of bytes slices, which go-to-protobuf wraps in a message type of its own")
				continue
			}
			f.value = val
		case *types.Map:
			if f.pointer {
				fail("a pointer to a map, which protobuf cannot tell from the map")
				continue
			}
			f.isMap = true
			key, why := a.value(u.Key())
			if why != "" || key.enc != encString {
				fail("a map whose key is not a string")
				continue
			}
			val, why := a.value(u.Elem())
			if why != "" {
				fail(why)
				continue
			}
			f.key, f.value = key, val
		default:
			val, why := a.value(t)
			if why != "" {
				fail(why)
				continue
			}
			f.value = val
		}
		if f.value.enc == encMessage {
			if n, ok := f.value.typ.(*types.Named); ok && n.Obj().Pkg() == a.pkg.Types {
				reach = append(reach, n)
			}
		}
		msg.fields = append(msg.fields, f)
	}
	for _, n := range reach {
		a.add(n)
	}
}

// value classifies a non-slice, non-map Go type; why says why it cannot be encoded.
func (a *protoAnalysis) value(t types.Type) (protoValue, string) {
	t = types.Unalias(t)
	if _, ok := t.(*types.Pointer); ok {
		return protoValue{}, "a pointer in a slice or map, which go-to-protobuf does not encode"
	}
	named, _ := t.(*types.Named)
	switch u := t.Underlying().(type) {
	case *types.Basic:
		switch u.Kind() {
		case types.String:
			return protoValue{enc: encString, typ: t}, ""
		case types.Bool:
			return protoValue{enc: encBool, typ: t}, ""
		case types.Int32, types.Int64, types.Uint32, types.Uint64, types.Int, types.Uint:
			return protoValue{enc: encVarint, typ: t}, ""
		case types.Int8, types.Int16, types.Uint8, types.Uint16:
			// Widened on the wire to int32 or uint32 (sign-extended as int32 is); go-to-protobuf
			// refuses these kinds, so no k8s.io/api type has them.
			return protoValue{enc: encVarint, typ: t}, ""
		case types.Float64:
			return protoValue{enc: encDouble, typ: t}, ""
		case types.Float32:
			return protoValue{enc: encFloat, typ: t}, ""
		}
		return protoValue{}, fmt.Sprintf("whose kind %s has no protobuf type (use a string, bool, integer or float kind)", u.Name())
	case *types.Struct:
		if named == nil {
			return protoValue{}, "an anonymous struct, which has no message name"
		}
		if named.Obj().Pkg() == a.pkg.Types {
			return protoValue{enc: encMessage, typ: t}, ""
		}
		if hasProtoMethods(named) {
			return protoValue{enc: encMessage, typ: t}, ""
		}
		return protoValue{}, fmt.Sprintf("from package %s, which has no protobuf methods (Size, MarshalToSizedBuffer, Unmarshal)", named.Obj().Pkg().Path())
	case *types.Slice:
		if b, ok := u.Elem().Underlying().(*types.Basic); ok && b.Kind() == types.Byte {
			return protoValue{enc: encBytes, typ: t}, ""
		}
		return protoValue{}, "a slice inside a slice or map, which go-to-protobuf wraps in a message type of its own"
	case *types.Interface:
		return protoValue{}, "an interface, which has no protobuf encoding"
	case *types.Map:
		return protoValue{}, "a map inside a slice or map, which go-to-protobuf wraps in a message type of its own"
	}
	// Types with their own methods but no struct underneath (resource.Quantity is a struct;
	// this is for completeness).
	if named != nil && hasProtoMethods(named) {
		return protoValue{enc: encMessage, typ: t}, ""
	}
	return protoValue{}, "which has no protobuf encoding"
}

func (a *protoAnalysis) unsupported(pos token.Pos, what, why string) {
	a.unsupportedFix(pos, what, why, "change the field's type to one docs/protobuf.md lists")
}

func (a *protoAnalysis) unsupportedFix(pos token.Pos, what, why, fix string) {
	a.warns = append(a.warns, model.Diagnostic{
		Pos:     a.pkg.Fset.Position(pos),
		Warning: true,
		Msg:     fmt.Sprintf("no protobuf for package %s: %s %s", a.pkg.PkgPath, what, why),
		Fix:     "the package's kinds are served in JSON and YAML only (a client asking for protobuf alone gets 406); to get protobuf, " + fix,
	})
}

// hasProtoMethods reports whether *named has the methods the emitted code delegates to.
func hasProtoMethods(named *types.Named) bool {
	ms := types.NewMethodSet(types.NewPointer(named))
	for _, name := range []string{"Size", "MarshalToSizedBuffer", "Unmarshal"} {
		if ms.Lookup(nil, name) == nil {
			return false
		}
	}
	return true
}

// declaredMethods returns the protobuf method names the type declares itself.
func declaredMethods(named *types.Named) []string {
	var out []string
	for i := 0; i < named.NumMethods(); i++ {
		if slices.Contains(protoMethods, named.Method(i).Name()) {
			out = append(out, named.Method(i).Name())
		}
	}
	sort.Strings(out)
	return out
}

// protoKey returns the varint bytes of a field's key.
func protoKey(num, wireType int) []byte {
	return protowire.AppendTag(nil, protowire.Number(num), protowire.Type(wireType))
}

// typeCode is the Go expression of t, qualified for the file of pkg.
func typeCode(t types.Type) *jen.Statement {
	switch t := t.(type) {
	case *types.Named:
		return jen.Qual(t.Obj().Pkg().Path(), t.Obj().Name())
	case *types.Basic:
		return jen.Id(t.Name())
	case *types.Pointer:
		return jen.Op("*").Add(typeCode(t.Elem()))
	case *types.Slice:
		return jen.Index().Add(typeCode(t.Elem()))
	case *types.Map:
		return jen.Map(typeCode(t.Key())).Add(typeCode(t.Elem()))
	case *types.Alias:
		return typeCode(types.Unalias(t))
	}
	return jen.Id(t.String())
}

// byteLit renders a byte as go-to-protobuf does (0x12).
func byteLit(b byte) *jen.Statement { return jen.Op(fmt.Sprintf("0x%x", b)) }

func writeKeyBytes(key []byte) []jen.Code {
	var out []jen.Code
	for i := len(key) - 1; i >= 0; i-- {
		out = append(out, jen.Id("i").Op("--"), jen.Id("dAtA").Index(jen.Id("i")).Op("=").Add(byteLit(key[i])))
	}
	return out
}

func varintBack(v jen.Code) jen.Code {
	return jen.Id("i").Op("=").Id(putVarint).Call(jen.Id("dAtA"), jen.Id("i"), jen.Id("uint64").Call(v))
}

func sov(v jen.Code) *jen.Statement {
	return jen.Qual(pkgProtowire, "SizeVarint").Call(jen.Id("uint64").Call(v))
}

// marshalValue writes one value backwards (without its key); v is an addressable expression.
func marshalValue(val protoValue, v *jen.Statement) []jen.Code {
	switch val.enc {
	case encString, encBytes:
		return []jen.Code{
			jen.Id("i").Op("-=").Len(v.Clone()),
			jen.Copy(jen.Id("dAtA").Index(jen.Id("i").Op(":")), v.Clone()),
			varintBack(jen.Len(v.Clone())),
		}
	case encBool:
		return []jen.Code{
			jen.Id("i").Op("--"),
			jen.If(v.Clone()).Block(jen.Id("dAtA").Index(jen.Id("i")).Op("=").Lit(1)).Else().Block(jen.Id("dAtA").Index(jen.Id("i")).Op("=").Lit(0)),
		}
	case encVarint:
		return []jen.Code{varintBack(v.Clone())}
	case encDouble:
		return []jen.Code{
			jen.Id("i").Op("-=").Lit(8),
			jen.Qual(pkgBinary, "LittleEndian").Dot("PutUint64").Call(jen.Id("dAtA").Index(jen.Id("i").Op(":")), jen.Qual(pkgMath, "Float64bits").Call(jen.Id("float64").Call(v.Clone()))),
		}
	case encFloat:
		return []jen.Code{
			jen.Id("i").Op("-=").Lit(4),
			jen.Qual(pkgBinary, "LittleEndian").Dot("PutUint32").Call(jen.Id("dAtA").Index(jen.Id("i").Op(":")), jen.Qual(pkgMath, "Float32bits").Call(jen.Id("float32").Call(v.Clone()))),
		}
	}
	return []jen.Code{jen.Block(
		jen.List(jen.Id("size"), jen.Err()).Op(":=").Add(v.Clone()).Dot("MarshalToSizedBuffer").Call(jen.Id("dAtA").Index(jen.Empty(), jen.Id("i"))),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Lit(0), jen.Err())),
		jen.Id("i").Op("-=").Id("size"),
		varintBack(jen.Id("size")),
	)}
}

// sizeValue is the size of one value without its key.
func sizeValue(val protoValue, v *jen.Statement) *jen.Statement {
	switch val.enc {
	case encString, encBytes:
		return jen.Len(v.Clone()).Op("+").Add(sov(jen.Len(v.Clone())))
	case encBool:
		return jen.Lit(1)
	case encVarint:
		return sov(v.Clone())
	case encDouble:
		return jen.Lit(8)
	case encFloat:
		return jen.Lit(4)
	}
	return jen.Id("l").Op("+").Add(sov(jen.Id("l")))
}

// sizePre is what must run before sizeValue's expression: a message's size into l.
func sizePre(val protoValue, v *jen.Statement) []jen.Code {
	if val.enc != encMessage {
		return nil
	}
	return []jen.Code{jen.Id("l").Op("=").Add(v.Clone()).Dot("Size").Call()}
}

func (f *protoField) wireKey() []byte {
	if f.isMap {
		return protoKey(f.num, 2)
	}
	return protoKey(f.num, f.value.wireType())
}

// marshalField writes the field backwards, in go-to-protobuf's way.
func marshalField(f *protoField) []jen.Code {
	m := func() *jen.Statement { return jen.Id("m").Dot(f.goName) }
	key := f.wireKey()
	switch {
	case f.isMap:
		keys := "keysFor" + f.goName
		body := []jen.Code{
			jen.Id("v").Op(":=").Add(m()).Index(typeCode(f.key.typ).Call(jen.Id(keys).Index(jen.Id("iNdEx")))),
			jen.Id("baseI").Op(":=").Id("i"),
		}
		valCode := append(marshalValue(f.value, jen.Id("v")), writeKeyBytes(protoKey(2, f.value.wireType()))...)
		if f.value.enc == encMessage {
			valCode = append(marshalValue(f.value, jen.Parens(jen.Op("&").Id("v"))), writeKeyBytes(protoKey(2, 2))...)
		}
		if f.value.enc == encBytes {
			body = append(body, jen.If(jen.Id("v").Op("!=").Nil()).Block(valCode...))
		} else {
			body = append(body, valCode...)
		}
		body = append(body, marshalValue(protoValue{enc: encString}, jen.Id(keys).Index(jen.Id("iNdEx")))...)
		body = append(body, writeKeyBytes(protoKey(1, 2))...)
		body = append(body, varintBack(jen.Id("baseI").Op("-").Id("i")))
		body = append(body, writeKeyBytes(key)...)
		return []jen.Code{jen.If(jen.Len(m()).Op(">").Lit(0)).Block(
			jen.Id(keys).Op(":=").Make(jen.Index().String(), jen.Lit(0), jen.Len(m())),
			jen.For(jen.Id("k").Op(":=").Range().Add(m())).Block(jen.Id(keys).Op("=").Append(jen.Id(keys), jen.String().Call(jen.Id("k")))),
			jen.Qual(pkgSort, "Strings").Call(jen.Id(keys)),
			jen.For(jen.Id("iNdEx").Op(":=").Len(jen.Id(keys)).Op("-").Lit(1), jen.Id("iNdEx").Op(">=").Lit(0), jen.Id("iNdEx").Op("--")).Block(body...),
		)}
	case f.repeated:
		elem := append(marshalValue(f.value, m().Index(jen.Id("iNdEx"))), writeKeyBytes(key)...)
		return []jen.Code{jen.If(jen.Len(m()).Op(">").Lit(0)).Block(
			jen.For(jen.Id("iNdEx").Op(":=").Len(m()).Op("-").Lit(1), jen.Id("iNdEx").Op(">=").Lit(0), jen.Id("iNdEx").Op("--")).Block(elem...),
		)}
	case f.pointer:
		v := jen.Op("*").Add(m())
		if f.value.enc == encMessage {
			v = m()
		}
		return []jen.Code{jen.If(m().Op("!=").Nil()).Block(append(marshalValue(f.value, v), writeKeyBytes(key)...)...)}
	case f.value.enc == encBytes:
		return []jen.Code{jen.If(m().Op("!=").Nil()).Block(append(marshalValue(f.value, m()), writeKeyBytes(key)...)...)}
	}
	return append(marshalValue(f.value, m()), writeKeyBytes(key)...)
}

// sizeField adds the field's size to n (l is a scratch int declared by Size).
func sizeField(f *protoField) []jen.Code {
	m := func() *jen.Statement { return jen.Id("m").Dot(f.goName) }
	keyLen := len(f.wireKey())
	add := func(val protoValue, v *jen.Statement) []jen.Code {
		return append(sizePre(val, v), jen.Id("n").Op("+=").Lit(keyLen).Op("+").Add(sizeValue(val, v)))
	}
	switch {
	case f.isMap:
		valSize := append(sizePre(f.value, jen.Id("v")), jen.Id("l").Op("=").Lit(len(protoKey(2, f.value.wireType()))).Op("+").Add(sizeValue(f.value, jen.Id("v"))))
		stmts := []jen.Code{jen.Id("_").Op("=").Id("v")}
		if f.value.enc == encBytes {
			stmts = append(stmts,
				jen.Id("l").Op("=").Lit(0),
				jen.If(jen.Id("v").Op("!=").Nil()).Block(valSize...))
		} else {
			stmts = append(stmts, valSize...)
		}
		stmts = append(stmts,
			jen.Id("entry").Op(":=").Lit(1).Op("+").Add(sizeValue(protoValue{enc: encString}, jen.Id("k"))).Op("+").Id("l"),
			jen.Id("n").Op("+=").Lit(keyLen).Op("+").Id("entry").Op("+").Add(sov(jen.Id("entry"))))
		return []jen.Code{jen.For(jen.List(jen.Id("k"), jen.Id("v")).Op(":=").Range().Add(m())).Block(stmts...)}
	case f.repeated:
		return []jen.Code{jen.For(jen.List(jen.Id("iNdEx")).Op(":=").Range().Add(m())).Block(append([]jen.Code{jen.Id("_").Op("=").Id("iNdEx")}, add(f.value, m().Index(jen.Id("iNdEx")))...)...)}
	case f.pointer:
		v := jen.Parens(jen.Op("*").Add(m()))
		if f.value.enc == encMessage {
			v = m()
		}
		return []jen.Code{jen.If(m().Op("!=").Nil()).Block(add(f.value, v)...)}
	case f.value.enc == encBytes:
		return []jen.Code{jen.If(m().Op("!=").Nil()).Block(add(f.value, m())...)}
	}
	return add(f.value, m())
}

// consume reads one value of val's wire type at dAtA[iNdEx:] into a new variable named
// name (a uint64 for varints and fixed, a []byte for length-delimited), advancing iNdEx.
func consume(val protoValue, data, name string) []jen.Code {
	fn := map[int]string{0: "ConsumeVarint", 1: "ConsumeFixed64", 2: "ConsumeBytes", 5: "ConsumeFixed32"}[val.wireType()]
	return []jen.Code{
		jen.List(jen.Id(name), jen.Id("n")).Op(":=").Qual(pkgProtowire, fn).Call(jen.Id(data).Index(jen.Id("iNdEx").Op(":"))),
		jen.If(jen.Id("n").Op("<").Lit(0)).Block(jen.Return(jen.Qual(pkgProtowire, "ParseError").Call(jen.Id("n")))),
		jen.Id("iNdEx").Op("+=").Id("n"),
	}
}

// protoConvert turns the raw value named raw into a Go value of val's type.
func protoConvert(val protoValue, raw string) *jen.Statement {
	t := typeCode(val.typ)
	switch val.enc {
	case encBool:
		return t.Call(jen.Id(raw).Op("!=").Lit(0))
	case encDouble:
		return t.Call(jen.Qual(pkgMath, "Float64frombits").Call(jen.Id(raw)))
	case encFloat:
		return t.Call(jen.Qual(pkgMath, "Float32frombits").Call(jen.Id(raw)))
	case encBytes:
		return jen.Append(t.Clone().Values(), jen.Id(raw).Op("..."))
	}
	return t.Call(jen.Id(raw))
}

func wrongWire(f *protoField) jen.Code {
	return jen.Return(jen.Qual(pkgFmt, "Errorf").Call(jen.Lit("proto: wrong wireType = %d for field "+f.goName), jen.Id("wireType")))
}

// unmarshalField decodes field f at dAtA[iNdEx:] (its key read, wireType known).
func unmarshalField(f *protoField) []jen.Code {
	m := func() *jen.Statement { return jen.Id("m").Dot(f.goName) }
	wt := f.value.wireType()
	check := func(want int) jen.Code {
		return jen.If(jen.Id("wireType").Op("!=").Lit(want)).Block(wrongWire(f))
	}
	switch {
	case f.isMap:
		var value []jen.Code
		if f.value.enc == encMessage {
			value = append(consume(f.value, "entry", "b"),
				jen.Id("mapvalue").Op("=").Add(typeCode(f.value.typ)).Values(),
				jen.If(jen.Err().Op(":=").Id("mapvalue").Dot("Unmarshal").Call(jen.Id("b")), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())))
		} else {
			value = append(consume(f.value, "entry", "raw"), jen.Id("mapvalue").Op("=").Add(protoConvert(f.value, "raw")))
		}
		entryLoop := jen.For(jen.Id("iNdEx").Op("<").Len(jen.Id("entry"))).Block(
			jen.List(jen.Id("key"), jen.Id("n")).Op(":=").Qual(pkgProtowire, "ConsumeVarint").Call(jen.Id("entry").Index(jen.Id("iNdEx").Op(":"))),
			jen.If(jen.Id("n").Op("<").Lit(0)).Block(jen.Return(jen.Qual(pkgProtowire, "ParseError").Call(jen.Id("n")))),
			jen.Id("iNdEx").Op("+=").Id("n"),
			jen.Id("num").Op(",").Id("typ").Op(":=").Qual(pkgProtowire, "Number").Call(jen.Id("key").Op(">>").Lit(3)).Op(",").Qual(pkgProtowire, "Type").Call(jen.Id("key").Op("&").Lit(7)),
			jen.Switch().Block(
				jen.Case(jen.Id("num").Op("==").Lit(1).Op("&&").Id("typ").Op("==").Lit(2)).Block(append(consume(f.key, "entry", "b"), jen.Id("mapkey").Op("=").Add(protoConvert(f.key, "b")))...),
				jen.Case(jen.Id("num").Op("==").Lit(2).Op("&&").Id("typ").Op("==").Lit(wt)).Block(value...),
				jen.Default().Block(
					jen.Id("n").Op("=").Qual(pkgProtowire, "ConsumeFieldValue").Call(jen.Id("num"), jen.Id("typ"), jen.Id("entry").Index(jen.Id("iNdEx").Op(":"))),
					jen.If(jen.Id("n").Op("<").Lit(0)).Block(jen.Return(jen.Qual(pkgProtowire, "ParseError").Call(jen.Id("n")))),
					jen.Id("iNdEx").Op("+=").Id("n"),
				),
			),
		)
		return append([]jen.Code{check(2)}, append(consume(protoValue{enc: encBytes}, "dAtA", "entry"),
			jen.If(m().Op("==").Nil()).Block(m().Op("=").Make(typeCode(f.fieldType))),
			jen.Var().Id("mapkey").Add(typeCode(f.key.typ)),
			mapValueDecl(f.value),
			jen.If(jen.Err().Op(":=").Func().Params().Error().Block(
				jen.Id("iNdEx").Op(":=").Lit(0),
				entryLoop,
				jen.Return(jen.Nil()),
			).Call(), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
			m().Index(jen.Id("mapkey")).Op("=").Id("mapvalue"),
		)...)
	case f.value.enc == encMessage:
		var target *jen.Statement
		var pre []jen.Code
		switch {
		case f.repeated:
			pre = []jen.Code{m().Op("=").Append(m(), typeCode(f.value.typ).Values())}
			target = m().Index(jen.Len(m()).Op("-").Lit(1))
		case f.pointer:
			pre = []jen.Code{jen.If(m().Op("==").Nil()).Block(m().Op("=").Op("&").Add(typeCode(f.value.typ)).Values())}
			target = m()
		default:
			target = m()
		}
		out := []jen.Code{check(2)}
		out = append(out, consume(f.value, "dAtA", "b")...)
		out = append(out, pre...)
		return append(out, jen.If(jen.Err().Op(":=").Add(target).Dot("Unmarshal").Call(jen.Id("b")), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())))
	case f.repeated:
		one := append(consume(f.value, "dAtA", "raw"), m().Op("=").Append(m(), protoConvert(f.value, "raw")))
		if wt == 2 {
			return append([]jen.Code{check(2)}, one...)
		}
		// Unpacked is what go-to-protobuf writes; packed is read too, as its Unmarshal does.
		packed := append(consume(protoValue{enc: encBytes}, "dAtA", "packed"),
			jen.For(jen.Id("j").Op(":=").Lit(0), jen.Id("j").Op("<").Len(jen.Id("packed")), jen.Empty()).Block(
				jen.List(jen.Id("raw"), jen.Id("n")).Op(":=").Qual(pkgProtowire, map[int]string{0: "ConsumeVarint", 1: "ConsumeFixed64", 5: "ConsumeFixed32"}[wt]).Call(jen.Id("packed").Index(jen.Id("j").Op(":"))),
				jen.If(jen.Id("n").Op("<").Lit(0)).Block(jen.Return(jen.Qual(pkgProtowire, "ParseError").Call(jen.Id("n")))),
				jen.Id("j").Op("+=").Id("n"),
				m().Op("=").Append(m(), protoConvert(f.value, "raw")),
			))
		return []jen.Code{jen.Switch(jen.Id("wireType")).Block(
			jen.Case(jen.Lit(wt)).Block(one...),
			jen.Case(jen.Lit(2)).Block(packed...),
			jen.Default().Block(wrongWire(f)),
		)}
	}
	raw := "raw"
	out := []jen.Code{check(wt)}
	out = append(out, consume(f.value, "dAtA", raw)...)
	if f.pointer {
		return append(out, jen.Id("v").Op(":=").Add(protoConvert(f.value, raw)), m().Op("=").Op("&").Id("v"))
	}
	if f.value.enc == encBytes {
		return append(out, m().Op("=").Append(m().Index(jen.Empty(), jen.Lit(0)), jen.Id(raw).Op("...")), jen.If(m().Op("==").Nil()).Block(m().Op("=").Index().Byte().Values()))
	}
	return append(out, m().Op("=").Add(protoConvert(f.value, raw)))
}

func renderProtobuf(p *packages.Package, msgs []*protoMessage) ([]byte, error) {
	f := jen.NewFilePathName(p.PkgPath, p.Types.Name())
	f.HeaderComment(BuildConstraint)
	f.HeaderComment("// " + GeneratedHeader)
	f.ImportName(pkgProtowire, "protowire")
	sorted := slices.Clone(msgs)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	for _, msg := range sorted {
		recv := jen.Id("m").Op("*").Id(msg.name)
		f.Func().Params(recv.Clone()).Id("Reset").Params().Block(jen.Op("*").Id("m").Op("=").Id(msg.name).Values())
		f.Line()
		f.Func().Params(jen.Op("*").Id(msg.name)).Id("ProtoMessage").Params().Block()
		f.Line()
		f.Func().Params(recv.Clone()).Id("String").Params().String().Block(
			jen.If(jen.Id("m").Op("==").Nil()).Block(jen.Return(jen.Lit("nil"))),
			jen.Return(jen.Qual(pkgFmt, "Sprintf").Call(jen.Lit("%+v"), jen.Op("*").Id("m"))),
		)
		f.Line()
		f.Func().Params(recv.Clone()).Id("Marshal").Params().Params(jen.Index().Byte(), jen.Error()).Block(
			jen.Id("size").Op(":=").Id("m").Dot("Size").Call(),
			jen.Id("dAtA").Op(":=").Make(jen.Index().Byte(), jen.Id("size")),
			jen.List(jen.Id("n"), jen.Err()).Op(":=").Id("m").Dot("MarshalToSizedBuffer").Call(jen.Id("dAtA").Index(jen.Empty(), jen.Id("size"))),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
			jen.Return(jen.Id("dAtA").Index(jen.Empty(), jen.Id("n")), jen.Nil()),
		)
		f.Line()
		f.Func().Params(recv.Clone()).Id("MarshalTo").Params(jen.Id("dAtA").Index().Byte()).Params(jen.Int(), jen.Error()).Block(
			jen.Id("size").Op(":=").Id("m").Dot("Size").Call(),
			jen.Return(jen.Id("m").Dot("MarshalToSizedBuffer").Call(jen.Id("dAtA").Index(jen.Empty(), jen.Id("size")))),
		)
		f.Line()
		body := []jen.Code{jen.Id("i").Op(":=").Len(jen.Id("dAtA"))}
		for k := len(msg.fields) - 1; k >= 0; k-- {
			body = append(body, marshalField(msg.fields[k])...)
		}
		body = append(body, jen.Return(jen.Len(jen.Id("dAtA")).Op("-").Id("i"), jen.Nil()))
		f.Func().Params(recv.Clone()).Id("MarshalToSizedBuffer").Params(jen.Id("dAtA").Index().Byte()).Params(jen.Int(), jen.Error()).Block(body...)
		f.Line()
		size := []jen.Code{jen.If(jen.Id("m").Op("==").Nil()).Block(jen.Return(jen.Lit(0))), jen.Var().Id("l").Int(), jen.Id("_").Op("=").Id("l")}
		for _, fld := range msg.fields {
			size = append(size, sizeField(fld)...)
		}
		size = append(size, jen.Return(jen.Id("n")))
		f.Func().Params(recv.Clone()).Id("Size").Params().Params(jen.Id("n").Int()).Block(size...)
		f.Line()
		var cases []jen.Code
		for _, fld := range msg.fields {
			cases = append(cases, jen.Case(jen.Lit(fld.num)).Block(unmarshalField(fld)...))
		}
		cases = append(cases, jen.Default().Block(
			jen.Id("n").Op("=").Qual(pkgProtowire, "ConsumeFieldValue").Call(jen.Id("num"), jen.Id("wireType"), jen.Id("dAtA").Index(jen.Id("iNdEx").Op(":"))),
			jen.If(jen.Id("n").Op("<").Lit(0)).Block(jen.Return(jen.Qual(pkgProtowire, "ParseError").Call(jen.Id("n")))),
			jen.Id("iNdEx").Op("+=").Id("n"),
		))
		f.Func().Params(recv.Clone()).Id("Unmarshal").Params(jen.Id("dAtA").Index().Byte()).Error().Block(
			jen.Id("iNdEx").Op(":=").Lit(0),
			jen.For(jen.Id("iNdEx").Op("<").Len(jen.Id("dAtA"))).Block(
				jen.List(jen.Id("key"), jen.Id("n")).Op(":=").Qual(pkgProtowire, "ConsumeVarint").Call(jen.Id("dAtA").Index(jen.Id("iNdEx").Op(":"))),
				jen.If(jen.Id("n").Op("<").Lit(0)).Block(jen.Return(jen.Qual(pkgProtowire, "ParseError").Call(jen.Id("n")))),
				jen.Id("iNdEx").Op("+=").Id("n"),
				jen.List(jen.Id("num"), jen.Id("wireType")).Op(":=").Qual(pkgProtowire, "Number").Call(jen.Id("key").Op(">>").Lit(3)).Op(",").Qual(pkgProtowire, "Type").Call(jen.Id("key").Op("&").Lit(7)),
				jen.If(jen.Id("wireType").Op("==").Qual(pkgProtowire, "EndGroupType")).Block(jen.Return(jen.Qual(pkgFmt, "Errorf").Call(jen.Lit("proto: "+msg.name+": wiretype end group for non-group")))),
				jen.If(jen.Id("num").Op("<=").Lit(0)).Block(jen.Return(jen.Qual(pkgFmt, "Errorf").Call(jen.Lit("proto: "+msg.name+": illegal tag %d (wire type %d)"), jen.Id("num"), jen.Id("wireType")))),
				jen.Switch(jen.Id("num")).Block(cases...),
			),
			jen.Return(jen.Nil()),
		)
		f.Line()
	}
	f.Comment("// " + putVarint + " writes v as a varint ending at dAtA[offset] and returns where it starts.")
	f.Func().Id(putVarint).Params(jen.Id("dAtA").Index().Byte(), jen.Id("offset").Int(), jen.Id("v").Uint64()).Int().Block(
		jen.Id("offset").Op("-=").Qual(pkgProtowire, "SizeVarint").Call(jen.Id("v")),
		jen.Id("base").Op(":=").Id("offset"),
		jen.For(jen.Id("v").Op(">=").Lit(1).Op("<<").Lit(7)).Block(
			jen.Id("dAtA").Index(jen.Id("offset")).Op("=").Uint8().Call(jen.Id("v").Op("&").Lit(0x7f).Op("|").Lit(0x80)),
			jen.Id("v").Op(">>=").Lit(7),
			jen.Id("offset").Op("++"),
		),
		jen.Id("dAtA").Index(jen.Id("offset")).Op("=").Uint8().Call(jen.Id("v")),
		jen.Return(jen.Id("base")),
	)
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return nil, fmt.Errorf("rendering %s/%s: %w", p.PkgPath, ProtobufFileName, err)
	}
	src, err := imports.Process(ProtobufFileName, buf.Bytes(), &imports.Options{FormatOnly: true, Comments: true, TabIndent: true, TabWidth: 8})
	if err != nil {
		return nil, fmt.Errorf("formatting %s/%s: %w", p.PkgPath, ProtobufFileName, err)
	}
	return src, nil
}

func (v protoValue) wireType() int { return v.enc.wireType() }

// mapValueDecl declares an entry's value; bytes start empty, not nil, as go-to-protobuf's
// Unmarshal has them when the entry has no value.
func mapValueDecl(val protoValue) jen.Code {
	if val.enc == encBytes {
		return jen.Id("mapvalue").Op(":=").Add(typeCode(val.typ)).Values()
	}
	return jen.Var().Id("mapvalue").Add(typeCode(val.typ))
}

// jsonName is a field's JSON name.
func jsonName(tag reflect.StructTag, goName string) string {
	if name, _, _ := strings.Cut(tag.Get("json"), ","); name != "" {
		return name
	}
	return goName
}

// protoFieldName is a field's name in generated.proto: the name= of its protobuf tag, else
// its JSON name, else its Go name (as go-to-protobuf names them).
func protoFieldName(tag reflect.StructTag, goName string) string {
	for _, part := range strings.Split(tag.Get("protobuf"), ",") {
		if name, ok := strings.CutPrefix(part, "name="); ok {
			return name
		}
	}
	return jsonName(tag, goName)
}

// protoPackage is the protobuf package of a Go package, as go-to-protobuf names it
// (k8s.io/api/apps/v1 is k8s.io.api.apps.v1).
func protoPackage(importPath string) string {
	return strings.NewReplacer("/", ".", "-", "_").Replace(importPath)
}

// protoTypeName is the IDL type of a value; imports collects the files it needs.
func protoTypeName(p *packages.Package, val protoValue, imports map[string]bool) string {
	switch val.enc {
	case encString:
		return "string"
	case encBytes:
		return "bytes"
	case encBool:
		return "bool"
	case encDouble:
		return "double"
	case encFloat:
		return "float"
	case encVarint:
		switch val.typ.Underlying().(*types.Basic).Kind() {
		case types.Int32, types.Int8, types.Int16:
			return "int32"
		case types.Uint32, types.Uint8, types.Uint16:
			return "uint32"
		case types.Uint64, types.Uint:
			return "uint64"
		}
		return "int64"
	}
	obj := val.typ.(*types.Named).Obj()
	if obj.Pkg() == p.Types {
		return obj.Name()
	}
	imports[obj.Pkg().Path()+"/generated.proto"] = true
	return "." + protoPackage(obj.Pkg().Path()) + "." + obj.Name()
}

// renderProtoIDL writes generated.proto: proto2, one message per struct (by name), fields
// in declaration order, as go-to-protobuf writes it (without the documentation comments).
func renderProtoIDL(p *packages.Package, msgs []*protoMessage) []byte {
	imports := map[string]bool{}
	var body strings.Builder
	sorted := slices.Clone(msgs)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	for _, msg := range sorted {
		fmt.Fprintf(&body, "\nmessage %s {\n", msg.name)
		fields := slices.Clone(msg.fields)
		sort.Slice(fields, func(i, j int) bool { return fields[i].decl < fields[j].decl })
		for _, f := range fields {
			switch {
			case f.isMap:
				fmt.Fprintf(&body, "  map<%s, %s> %s = %d;\n", protoTypeName(p, f.key, imports), protoTypeName(p, f.value, imports), f.protoName, f.num)
			case f.repeated:
				fmt.Fprintf(&body, "  repeated %s %s = %d;\n", protoTypeName(p, f.value, imports), f.protoName, f.num)
			default:
				fmt.Fprintf(&body, "  optional %s %s = %d;\n", protoTypeName(p, f.value, imports), f.protoName, f.num)
			}
		}
		body.WriteString("}\n")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// %s\n\nsyntax = \"proto2\";\n\npackage %s;\n\n", GeneratedHeader, protoPackage(p.PkgPath))
	for _, imp := range slices.Sorted(maps.Keys(imports)) {
		fmt.Fprintf(&b, "import %q;\n", imp)
	}
	if len(imports) > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "// Package-wide variables from generator \"generated\".\noption go_package = %q;\n", p.PkgPath)
	b.WriteString(body.String())
	return []byte(b.String())
}

// ownMethods reports whether every root type of p declares all the protobuf methods itself.
func ownMethods(p *packages.Package, roots []string) bool {
	for _, r := range roots {
		obj, ok := p.Types.Scope().Lookup(r).(*types.TypeName)
		if !ok {
			return false
		}
		named, ok := obj.Type().(*types.Named)
		if !ok || len(declaredMethods(named)) != len(protoMethods) {
			return false
		}
	}
	return len(roots) > 0
}
