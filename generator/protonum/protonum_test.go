package protonum

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// typeOf describes a Go struct as the generator would, with or without its protobuf tags;
// embedded fields without a JSON name (TypeMeta) are inline, not protobuf fields.
func typeOf(t reflect.Type, withTags bool) Type {
	out := Type{Name: t.Name()}
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.Anonymous && name == "" {
			continue
		}
		field := Field{Name: f.Name, Pos: "types.go:" + f.Name}
		if withTags {
			field.Tag = f.Tag.Get("protobuf")
		}
		out.Fields = append(out.Fields, field)
	}
	return out
}

func numbersOf(t *testing.T, n *Numbers, typ Type) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, f := range typ.Fields {
		num, ok := n.Number(typ.Name, f.Name)
		if !ok {
			t.Fatalf("%s.%s has no number", typ.Name, f.Name)
		}
		got[f.Name] = num
	}
	return got
}

// Types written in k8s.io/api's style keep their numbers: the tags win.
func TestTagsGiveK8sNumbers(t *testing.T) {
	for _, rt := range []reflect.Type{reflect.TypeFor[appsv1.Deployment](), reflect.TypeFor[appsv1.DeploymentSpec](), reflect.TypeFor[corev1.PodSpec]()} {
		typ := typeOf(rt, true)
		n, err := (&Numbers{}).Assign([]Type{typ})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range typ.Fields {
			want, err := TagNumber(f.Tag)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := n.Number(typ.Name, f.Name); got != want {
				t.Errorf("%s.%s: %d, want k8s.io/api's %d", typ.Name, f.Name, got, want)
			}
		}
	}
}

// Untagged fields are numbered in declaration order, as go-to-protobuf numbers a new type:
// Deployment gets metadata 1, spec 2, status 3 as in k8s.io/api.
func TestUntaggedInDeclarationOrder(t *testing.T) {
	typ := typeOf(reflect.TypeFor[appsv1.Deployment](), false)
	n, err := (&Numbers{}).Assign([]Type{typ})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := numbersOf(t, n, typ), map[string]int{"ObjectMeta": 1, "Spec": 2, "Status": 3}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestNumbersStayAsFieldsChange(t *testing.T) {
	f := func(names ...string) Type {
		typ := Type{Name: "BoatSpec"}
		for _, n := range names {
			typ.Fields = append(typ.Fields, Field{Name: n, Pos: "types.go:" + n})
		}
		return typ
	}
	step := func(n *Numbers, typ Type, want map[string]int) *Numbers {
		t.Helper()
		next, err := n.Assign([]Type{typ})
		if err != nil {
			t.Fatal(err)
		}
		// What is written is what is read back, byte for byte.
		parsed, err := Parse(next.Marshal(), FileName)
		if err != nil {
			t.Fatalf("%v\n%s", err, next.Marshal())
		}
		if string(parsed.Marshal()) != string(next.Marshal()) {
			t.Fatalf("round trip changed the file:\n%s\nvs\n%s", parsed.Marshal(), next.Marshal())
		}
		if got := numbersOf(t, parsed, typ); !reflect.DeepEqual(got, want) {
			t.Fatalf("%v: got %v, want %v", typ.Fields, got, want)
		}
		return parsed
	}
	n := step(&Numbers{}, f("Dock", "Length", "Crew"), map[string]int{"Dock": 1, "Length": 2, "Crew": 3})
	// Reordered, one added in the middle: the others keep theirs.
	n = step(n, f("Crew", "Sails", "Dock", "Length"), map[string]int{"Dock": 1, "Length": 2, "Crew": 3, "Sails": 4})
	// Removed: its number is reserved, the next new field does not get it.
	n = step(n, f("Dock", "Length", "Sails", "Hull"), map[string]int{"Dock": 1, "Length": 2, "Sails": 4, "Hull": 5})
	if !strings.Contains(string(n.Marshal()), "  reserved: 3\n") {
		t.Errorf("Crew's number is not reserved:\n%s", n.Marshal())
	}
	// A field of the removed name comes back as a new field.
	step(n, f("Dock", "Length", "Sails", "Hull", "Crew"), map[string]int{"Dock": 1, "Length": 2, "Sails": 4, "Hull": 5, "Crew": 6})
}

func TestNumbersSkipTheImplementationRange(t *testing.T) {
	n, err := Parse([]byte("T:\n  A: 18999\n"), FileName)
	if err != nil {
		t.Fatal(err)
	}
	n, err = n.Assign([]Type{{Name: "T", Fields: []Field{{Name: "A"}, {Name: "B"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := n.Number("T", "B"); got != 20000 {
		t.Errorf("B: %d, want 20000 (19000-19999 are reserved by protobuf)", got)
	}
}

func TestAssignErrors(t *testing.T) {
	file := []byte("BoatSpec:\n  Dock: 1\n  Length: 2\n  reserved: 3\n")
	known, err := Parse(file, FileName)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		fields []Field
		want   string
	}{
		{"tag changes a number", []Field{{Name: "Dock", Tag: "bytes,5,opt,name=dock", Pos: "types.go:10"}},
			"types.go:10: BoatSpec.Dock has protobuf tag number 5, but it was 1 (" + FileName + ")"},
		{"tag takes a reserved number", []Field{{Name: "Hull", Tag: "bytes,3,opt,name=hull", Pos: "types.go:11"}},
			"types.go:11: BoatSpec.Hull has protobuf tag number 3, which a removed field used"},
		{"two tags, one number", []Field{{Name: "A", Tag: "bytes,7,opt", Pos: "types.go:12"}, {Name: "B", Tag: "varint,7,opt", Pos: "types.go:13"}},
			"types.go:13: BoatSpec.B and BoatSpec.A have the same protobuf tag number 7"},
		{"tag takes a known field's number", []Field{{Name: "Dock"}, {Name: "Hull", Tag: "bytes,2,opt", Pos: "types.go:14"}, {Name: "Length", Pos: "types.go:15"}},
			"types.go:14: BoatSpec.Hull has protobuf tag number 2, which BoatSpec.Length has"},
		{"bad tag", []Field{{Name: "Dock", Tag: "bytes", Pos: "types.go:16"}},
			"types.go:16: BoatSpec.Dock: protobuf tag \"bytes\""},
	} {
		_, err := known.Assign([]Type{{Name: "BoatSpec", Fields: c.fields}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"  Dock: 1\n", FileName + ":1: field line before any type"},
		{"BoatSpec:\n  Dock: x\n", FileName + ":2: BoatSpec.Dock: \"x\" is not a number"},
		{"BoatSpec:\n  Dock: 1\n  Hull: 1\n", "have the same number 1"},
		{"BoatSpec:\n  Dock: 19500\n", FileName + ":2: BoatSpec.Dock: 19500 is not a valid protobuf field number"},
		{"BoatSpec:\n  Dock: 2\n  reserved: 2\n", "BoatSpec.Dock has number 2, which is reserved"},
		{"BoatSpec\n", FileName + ":1: want a type name followed by ':'"},
	} {
		_, err := Parse([]byte(c.file), FileName)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want an error containing %q", c.file, err, c.want)
		}
	}
}
