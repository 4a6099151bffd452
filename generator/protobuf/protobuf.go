// Package protobuf writes, for every types package of the model whose types the protobuf
// encoding can carry (model.Version.Protobuf), go-to-protobuf's methods in k8s.io/api's wire
// format (zz_generated.protobuf.go), the IDL of the same messages (generated.proto), and the
// field numbers file (generator/protonum) the next run numbers from.
package protobuf

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/dave/jennifer/jen"
	"golang.org/x/tools/imports"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/aagen-dev/aagen/generator/emit"
	"github.com/aagen-dev/aagen/generator/model"
	"github.com/aagen-dev/aagen/generator/protonum"
)

// FileName is the file of protobuf methods aagen writes in each API package.
const FileName = "zz_generated.protobuf.go"

// IDLFileName is the protobuf IDL aagen writes next to it, named as go-to-protobuf's.
const IDLFileName = "generated.proto"

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

// Files renders, for every types package of m (each version, and the internal package)
// whose Version.Protobuf generates methods, zz_generated.protobuf.go, generated.proto and
// the package's field numbers file. read reads the numbers file an earlier run wrote next to
// the types (os.ReadFile; a file that does not exist is none); a number conflict is an error.
// The packages the encoding cannot carry are the model's warnings, not this package's.
func Files(m *model.Model, read func(path string) ([]byte, error)) ([]emit.File, error) {
	var files []emit.File
	for _, g := range m.Groups {
		for _, v := range g.Packages() {
			if !v.Protobuf.Generates() {
				continue
			}
			old, err := read(filepath.Join(v.Dir, protonum.FileName))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
			rel := m.RelPath(v.Dir)
			out, err := Package(v.Protobuf, old, path.Join(rel, protonum.FileName))
			if err != nil {
				return nil, err
			}
			// A generated.proto that go-to-protobuf (or a hand) wrote stays.
			files = append(files,
				emit.File{Path: path.Join(rel, FileName), Content: out.Go, Owner: emit.Generated},
				emit.File{Path: path.Join(rel, protonum.FileName), Content: out.Numbers, Owner: emit.Generated},
				emit.File{Path: path.Join(rel, IDLFileName), Content: out.Proto, Owner: emit.GeneratedOrKept})
		}
	}
	return files, nil
}

// Output is what Package renders for one package.
type Output struct {
	// Go is zz_generated.protobuf.go.
	Go []byte
	// Numbers is the content of the numbers file (protonum.FileName), with aagen's header.
	Numbers []byte
	// Proto is generated.proto, the IDL of the same messages.
	Proto []byte
}

// Package renders the protobuf methods of pb's messages, numbered from oldNumbers (the
// numbers file's content, nil without one; numbersFile names it in errors). It returns nil
// when pb generates nothing (the types declare the methods, or a field cannot be encoded).
func Package(pb *model.Protobuf, oldNumbers []byte, numbersFile string) (*Output, error) {
	if !pb.Generates() {
		return nil, nil
	}
	numbers, err := protonum.Parse(oldNumbers, numbersFile)
	if err != nil {
		return nil, err
	}
	var specs []protonum.Type
	var msgs []*protoMessage
	for _, m := range pb.Messages {
		t := protonum.Type{Name: m.Name}
		msg := &protoMessage{name: m.Name}
		for i, f := range m.Fields {
			t.Fields = append(t.Fields, protonum.Field{Name: f.GoName, Tag: f.Tag, Pos: f.Pos.String()})
			msg.fields = append(msg.fields, newField(f, i))
		}
		specs = append(specs, t)
		msgs = append(msgs, msg)
	}
	numbers, err = numbers.Assign(specs)
	if err != nil {
		return nil, err
	}
	for _, msg := range msgs {
		for _, f := range msg.fields {
			f.num, _ = numbers.Number(msg.name, f.goName)
		}
		sort.SliceStable(msg.fields, func(i, j int) bool { return msg.fields[i].num < msg.fields[j].num })
	}
	src, err := renderProtobuf(pb, msgs)
	if err != nil {
		return nil, err
	}
	header := emit.GeneratedYAMLHeader + "\n"
	return &Output{Go: src, Numbers: append([]byte(header), numbers.Marshal()...), Proto: renderProtoIDL(pb, msgs)}, nil
}

const (
	encString  = model.EncString
	encBytes   = model.EncBytes
	encBool    = model.EncBool
	encVarint  = model.EncVarint
	encDouble  = model.EncDouble
	encFloat   = model.EncFloat
	encMessage = model.EncMessage
)

// protoValue is one encoded value and its Go type.
type protoValue struct {
	enc   model.ProtoEncoding
	typ   *model.TypeExpr
	basic string
}

func value(v model.ProtoValue) protoValue {
	return protoValue{enc: v.Encoding, typ: v.Type, basic: v.Basic}
}

// protoField is one field of a message, numbered.
type protoField struct {
	goName string
	// protoName is the field's name in generated.proto; decl its index in declaration order.
	protoName string
	decl      int
	num       int
	// pointer, repeated and isMap say how the value is held; for a map, key and value
	// describe its entries.
	pointer, repeated, isMap bool
	fieldType                *model.TypeExpr
	value                    protoValue
	key                      protoValue
}

func newField(f *model.ProtoField, decl int) *protoField {
	return &protoField{goName: f.GoName, protoName: f.ProtoName, decl: decl, pointer: f.Pointer, repeated: f.Repeated, isMap: f.Map,
		fieldType: f.Type, value: value(f.Value), key: value(f.Key)}
}

type protoMessage struct {
	name   string
	fields []*protoField
}

// protoKey returns the varint bytes of a field's key.
func protoKey(num, wireType int) []byte {
	return protowire.AppendTag(nil, protowire.Number(num), protowire.Type(wireType))
}

// typeCode is the Go expression of t, qualified for the file it is written in.
func typeCode(t *model.TypeExpr) *jen.Statement {
	switch t.Kind {
	case model.ExprNamed:
		return jen.Qual(t.Name.Pkg, t.Name.Name)
	case model.ExprBasic:
		if t.String == "byte" {
			return jen.Id("byte")
		}
		return jen.Id(t.Basic)
	case model.ExprPointer:
		return jen.Op("*").Add(typeCode(t.Elem))
	case model.ExprSlice:
		return jen.Index().Add(typeCode(t.Elem))
	case model.ExprMap:
		return jen.Map(typeCode(t.Key)).Add(typeCode(t.Elem))
	}
	return jen.Id(t.String)
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

func renderProtobuf(pb *model.Protobuf, msgs []*protoMessage) ([]byte, error) {
	f := jen.NewFilePathName(pb.Pkg, pb.PkgName)
	f.HeaderComment(emit.BuildConstraint)
	f.HeaderComment("// " + emit.GeneratedHeader)
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
		return nil, fmt.Errorf("rendering %s/%s: %w", pb.Pkg, FileName, err)
	}
	src, err := imports.Process(FileName, buf.Bytes(), &imports.Options{FormatOnly: true, Comments: true, TabIndent: true, TabWidth: 8})
	if err != nil {
		return nil, fmt.Errorf("formatting %s/%s: %w", pb.Pkg, FileName, err)
	}
	return src, nil
}

func (v protoValue) wireType() int { return v.enc.WireType() }

// mapValueDecl declares an entry's value; bytes start empty, not nil, as go-to-protobuf's
// Unmarshal has them when the entry has no value.
func mapValueDecl(val protoValue) jen.Code {
	if val.enc == encBytes {
		return jen.Id("mapvalue").Op(":=").Add(typeCode(val.typ)).Values()
	}
	return jen.Var().Id("mapvalue").Add(typeCode(val.typ))
}

// protoPackage is the protobuf package of a Go package, as go-to-protobuf names it
// (k8s.io/api/apps/v1 is k8s.io.api.apps.v1).
func protoPackage(importPath string) string {
	return strings.NewReplacer("/", ".", "-", "_").Replace(importPath)
}

// protoTypeName is the IDL type of a value; imports collects the files it needs.
func protoTypeName(pb *model.Protobuf, val protoValue, imports map[string]bool) string {
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
		switch val.basic {
		case "int32", "rune", "int8", "int16":
			return "int32"
		case "uint32", "uint8", "uint16":
			return "uint32"
		case "uint64", "uint":
			return "uint64"
		}
		return "int64"
	}
	n := val.typ.Name
	if n.Pkg == pb.Pkg {
		return n.Name
	}
	imports[n.Pkg+"/generated.proto"] = true
	return "." + protoPackage(n.Pkg) + "." + n.Name
}

// renderProtoIDL writes generated.proto: proto2, one message per struct (by name), fields
// in declaration order, as go-to-protobuf writes it (without the documentation comments).
func renderProtoIDL(pb *model.Protobuf, msgs []*protoMessage) []byte {
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
				fmt.Fprintf(&body, "  map<%s, %s> %s = %d;\n", protoTypeName(pb, f.key, imports), protoTypeName(pb, f.value, imports), f.protoName, f.num)
			case f.repeated:
				fmt.Fprintf(&body, "  repeated %s %s = %d;\n", protoTypeName(pb, f.value, imports), f.protoName, f.num)
			default:
				fmt.Fprintf(&body, "  optional %s %s = %d;\n", protoTypeName(pb, f.value, imports), f.protoName, f.num)
			}
		}
		body.WriteString("}\n")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// %s\n\nsyntax = \"proto2\";\n\npackage %s;\n\n", emit.GeneratedHeader, protoPackage(pb.Pkg))
	for _, imp := range slices.Sorted(maps.Keys(imports)) {
		fmt.Fprintf(&b, "import %q;\n", imp)
	}
	if len(imports) > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "// Package-wide variables from generator \"generated\".\noption go_package = %q;\n", pb.Pkg)
	b.WriteString(body.String())
	return []byte(b.String())
}
