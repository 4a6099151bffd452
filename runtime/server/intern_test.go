package server

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
)

// storedJSON is an object as the storage holds it, with the metadata a client's create
// leaves.
func storedJSON(gv schema.GroupVersion, name string) []byte {
	return fmt.Appendf(nil, `{"apiVersion":%q,"kind":"plainObject","metadata":{"name":%q,"namespace":"shop","uid":"u-%s",`+
		`"labels":{"fleet":"bench","shard":"3"},"managedFields":[{"manager":"Go-http-client","operation":"Update","apiVersion":%q,`+
		`"time":"2026-11-23T08:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:fleet":{},"f:shard":{}}}}}]}}`,
		gv.String(), name, name, gv.String())
}

func sameString(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// Objects the storage codec decodes share their repeated metadata values, and are equal to
// what the plain codec decodes.
func TestInterningCodecSharesRepeatedMetadata(t *testing.T) {
	spec, _, gv := plainSpec()
	plain := jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, spec.Scheme, spec.Scheme, jsonserializer.SerializerOptions{})
	interning := newInterningCodec(plain)
	var objs []*plainObject
	for _, name := range []string{"a", "b"} {
		got, err := runtime.Decode(interning, storedJSON(gv, name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := runtime.Decode(plain, storedJSON(gv, name))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("interned decoding differs:\n%#v\nwant:\n%#v", got, want)
		}
		objs = append(objs, got.(*plainObject))
	}
	a, b := objs[0], objs[1]
	if !sameString(a.Namespace, b.Namespace) {
		t.Error("namespace not shared")
	}
	for k, v := range a.Labels {
		var shared bool
		for k2, v2 := range b.Labels {
			if k == k2 {
				shared = sameString(k, k2) && sameString(v, v2)
			}
		}
		if !shared {
			t.Errorf("label %s=%s not shared", k, v)
		}
	}
	ma, mb := a.ManagedFields[0], b.ManagedFields[0]
	if !sameString(ma.Manager, mb.Manager) || !sameString(ma.APIVersion, mb.APIVersion) || !sameString(ma.FieldsType, mb.FieldsType) || !sameString(string(ma.Operation), string(mb.Operation)) {
		t.Error("managed fields' strings not shared")
	}
	if &ma.FieldsV1.Raw[0] != &mb.FieldsV1.Raw[0] {
		t.Error("managed fields' set not shared")
	}
	if sameString(string(a.UID), string(b.UID)) || sameString(a.Name, b.Name) {
		t.Error("distinct values shared")
	}
	if reflect.ValueOf(a.Labels).UnsafePointer() != reflect.ValueOf(b.Labels).UnsafePointer() {
		t.Error("equal label sets not shared")
	}
}

// Label sets are shared only when equal; a key and value that run together differently
// make another set.
func TestInternTableLabelSets(t *testing.T) {
	table := newInternTable()
	same := func(a, b map[string]string) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	first := table.labelSet(map[string]string{"app": "web", "tier": "front"})
	if got := table.labelSet(map[string]string{"tier": "front", "app": "web"}); !same(got, first) {
		t.Error("an equal set was not shared")
	}
	for _, other := range []map[string]string{
		{"app": "web"},
		{"app": "web", "tier": "back"},
		{"app": "webtier", "": "front"},
		{"ap": "pweb", "tier": "front"},
	} {
		if got := table.labelSet(other); same(got, first) || !reflect.DeepEqual(got, other) {
			t.Errorf("%v: got %v", other, got)
		}
	}
	many := map[string]string{}
	for i := range maxInternedLabels + 1 {
		many[fmt.Sprint("k", i)] = "v"
	}
	if table.labelSet(many) != nil {
		t.Error("a set of more than maxInternedLabels was kept")
	}
	for i := range maxInterned + 10 {
		table.labelSet(map[string]string{"n": fmt.Sprint(i)})
	}
	if len(table.labelSets) != maxInterned {
		t.Errorf("the table holds %d label sets, want at most %d", len(table.labelSets), maxInterned)
	}
}

func TestInternTableBounds(t *testing.T) {
	table := newInternTable()
	long := strings.Repeat("x", maxInternedLen+1)
	if a, b := table.str(long), table.str(strings.Clone(long)); sameString(a, b) {
		t.Error("a string longer than maxInternedLen was kept")
	}
	for i := range maxInterned + 10 {
		table.str(fmt.Sprint("v", i))
	}
	if len(table.strs) != maxInterned {
		t.Errorf("the table holds %d strings, want at most %d", len(table.strs), maxInterned)
	}
	set := make([]byte, maxInternedFieldsLen)
	for i := 0; i < 2*maxInternedFieldsBytes/maxInternedFieldsLen; i++ {
		set[0], set[1] = byte(i), byte(i>>8)
		table.bytes(set)
	}
	if table.fieldBytes > maxInternedFieldsBytes {
		t.Errorf("the table holds %d bytes of managed fields, want at most %d", table.fieldBytes, maxInternedFieldsBytes)
	}
}
