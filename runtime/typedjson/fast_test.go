package typedjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/intstr"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	kjson "sigs.k8s.io/json"
)

// kubeAPIFixtures returns k8s.io/api's round-trip fixtures (testdata/HEAD, one JSON body
// of every kind, every field set) by kind.
func kubeAPIFixtures(t *testing.T) map[schema.GroupVersionKind][]byte {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/api").Output()
	if err != nil {
		t.Fatalf("go list -m k8s.io/api: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "testdata", "HEAD")
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(names) < 100 {
		t.Fatalf("k8s.io/api's fixtures in %s: %d, %v", dir, len(names), err)
	}
	fixtures := map[schema.GroupVersionKind][]byte{}
	for _, name := range names {
		rest, kind := cutLast(strings.TrimSuffix(filepath.Base(name), ".json"))
		group, version := cutLast(rest)
		if group == "core" {
			group = ""
		}
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		fixtures[schema.GroupVersionKind{Group: group, Version: version, Kind: kind}] = data
	}
	return fixtures
}

func cutLast(s string) (string, string) {
	i := strings.LastIndex(s, ".")
	return s[:i], s[i+1:]
}

// A body the fast decoding accepts comes out as sigs.k8s.io/json's strict decoding gives
// it, with no error: every kind of k8s.io/api, from its round-trip fixture and from
// variations of the fixture (a value made null, a string re-escaped, a number written
// otherwise, a key in other case or twice, a value of another JSON type, an unknown key,
// invalid UTF-8). Every fixture of a kind the fast decoding takes is decoded fast, so the
// test compares the fast decoding, not only the fallback.
func TestFastDecodingAsUpstream(t *testing.T) {
	fixtures := kubeAPIFixtures(t)
	kinds := slices.SortedFunc(func(yield func(schema.GroupVersionKind) bool) {
		for gvk := range fixtures {
			if !yield(gvk) {
				return
			}
		}
	}, func(a, b schema.GroupVersionKind) int { return strings.Compare(a.String(), b.String()) })
	rng := rand.New(rand.NewPCG(1, 2))
	var fastKinds, compared, accepted int
	var slow []string
	for _, gvk := range kinds {
		obj, err := kubescheme.Scheme.New(gvk)
		if err != nil {
			continue // a kind client-go's scheme does not register (an alpha version)
		}
		typ := reflect.TypeOf(obj).Elem()
		if !fastDecodable(typ) {
			slow = append(slow, typ.String())
			continue
		}
		fastKinds++
		body := fixtures[gvk]
		if !compareWithUpstream(t, gvk.Kind+" fixture", typ, body) {
			t.Errorf("%s: the fast decoding refused k8s.io/api's fixture", gvk)
		}
		for _, variant := range variations(t, body, rng, 30) {
			compared++
			if compareWithUpstream(t, gvk.Kind+" "+variant.what, typ, variant.body) {
				accepted++
			}
		}
	}
	t.Logf("%d kinds decoded fast, %d variations compared, %d accepted by the fast decoding; not fast: %v", fastKinds, compared, accepted, slow)
	if fastKinds < 150 || accepted < compared/10 || accepted == compared {
		t.Errorf("%d kinds decoded fast, %d of %d variations accepted: the comparison is not exercised", fastKinds, accepted, compared)
	}
}

// compareWithUpstream decodes body into a new value of typ fast and with sigs.k8s.io/json's
// strict decoding, fails the test when the fast decoding accepts what upstream refuses or
// reads it otherwise, and reports whether the fast decoding accepted it.
func compareWithUpstream(t *testing.T, what string, typ reflect.Type, body []byte) bool {
	t.Helper()
	fast := reflect.New(typ).Interface()
	if jsonv2.Unmarshal(body, fast, fastOptions) != nil {
		return false
	}
	want := reflect.New(typ).Interface()
	strictErrs, err := kjson.UnmarshalStrict(body, want)
	switch {
	case err != nil || len(strictErrs) > 0:
		t.Errorf("%s: accepted fast, upstream says %v %v\nbody %s", what, err, strictErrs, body)
	case !reflect.DeepEqual(fast, want):
		t.Errorf("%s: decoded fast as\n%#v\nupstream\n%#v\nbody %s", what, fast, want, body)
	}
	return true
}

type variation struct {
	what string
	body []byte
}

// variations returns n variations of body, each changing one value or key of it.
func variations(t *testing.T, body []byte, rng *rand.Rand, n int) []variation {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		t.Fatal(err)
	}
	var paths [][]any
	walk(tree, nil, func(p []any) { paths = append(paths, slices.Clone(p)) })
	var out []variation
	for range n {
		p := paths[rng.IntN(len(paths))]
		change := changes[rng.IntN(len(changes))]
		what, value, ok := change(rng, get(tree, p))
		if !ok {
			continue
		}
		out = append(out, variation{fmt.Sprintf("%s at %v", what, p), render(set(tree, p, value))})
	}
	// Keys in other case, twice and unknown, at the top and in metadata.
	for _, raw := range []string{
		strings.Replace(string(body), `"metadata"`, `"Metadata"`, 1),
		strings.Replace(string(body), `"metadata":{`, `"metadata":{"name":"twice",`, 1),
		strings.Replace(string(body), `{`, `{"bogus":1,`, 1),
		strings.Replace(string(body), `"metadata":{`, `"metadata":{"Name":"other case",`, 1),
		strings.Replace(string(body), `"metadata":{`, "\"metadata\":{\"labels\":{\"a\":\"\xff\"},", 1),
	} {
		out = append(out, variation{"raw change", []byte(raw)})
	}
	return out
}

// rawJSON is a value rendered as it is.
type rawJSON string

// changes each return a new value for v (the tree's: maps, slices, json.Number, strings,
// booleans, nil) and what they did, or false when they do not apply to v.
var changes = []func(rng *rand.Rand, v any) (string, any, bool){
	func(_ *rand.Rand, v any) (string, any, bool) { return "null", nil, true },
	func(_ *rand.Rand, v any) (string, any, bool) {
		s, ok := v.(string)
		var b strings.Builder
		for _, r := range s {
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		return "every rune escaped", rawJSON(`"` + b.String() + `"`), ok && s != "" && !strings.ContainsFunc(s, func(r rune) bool { return r > 0xffff })
	},
	func(_ *rand.Rand, v any) (string, any, bool) {
		s, ok := v.(string)
		return "a string with a surrogate pair, an escaped slash and a lone surrogate", rawJSON(`"` + s + `\ud83d\ude00\/\ud800"`), ok
	},
	func(_ *rand.Rand, v any) (string, any, bool) {
		s, ok := v.(string)
		return "a string with a surrogate pair and an escaped slash", rawJSON(`"` + s + `\ud83d\ude00\/"`), ok
	},
	func(_ *rand.Rand, v any) (string, any, bool) {
		n, ok := v.(json.Number)
		return "a number with a fraction", rawJSON(string(n) + ".0"), ok
	},
	func(_ *rand.Rand, v any) (string, any, bool) {
		n, ok := v.(json.Number)
		return "a number with an exponent", rawJSON(string(n) + "e0"), ok
	},
	func(rng *rand.Rand, v any) (string, any, bool) {
		_, ok := v.(json.Number)
		big := []string{"-1", "0", "-0", "255", "256", "32767", "32768", "2147483647", "2147483648", "-2147483649",
			"9223372036854775807", "9223372036854775808", "18446744073709551616", "1.5", "1e400", "0.1e-400"}
		return "another number", rawJSON(big[rng.IntN(len(big))]), ok
	},
	func(_ *rand.Rand, v any) (string, any, bool) {
		n, ok := v.(json.Number)
		return "a number as a string", string(n), ok
	},
	func(_ *rand.Rand, v any) (string, any, bool) {
		s, ok := v.(string)
		return "a string as a number", rawJSON("1"), ok && s != ""
	},
	func(_ *rand.Rand, v any) (string, any, bool) {
		_, ok := v.(map[string]any)
		return "an object as an empty array", []any{}, ok
	},
	func(_ *rand.Rand, v any) (string, any, bool) {
		_, ok := v.([]any)
		return "an array as an object", map[string]any{}, ok
	},
	func(_ *rand.Rand, v any) (string, any, bool) {
		b, ok := v.(bool)
		return "a boolean as a string", fmt.Sprint(b), ok
	},
	func(_ *rand.Rand, v any) (string, any, bool) {
		m, ok := v.(map[string]any)
		if !ok {
			return "", nil, false
		}
		m2 := map[string]any{}
		for k, e := range m {
			m2[k] = e
		}
		m2["zz-unknown"] = "x"
		return "an unknown key", m2, true
	},
	func(rng *rand.Rand, v any) (string, any, bool) {
		m, ok := v.(map[string]any)
		if !ok || len(m) == 0 {
			return "", nil, false
		}
		keys := slices.Sorted(maps.Keys(m))
		k := keys[rng.IntN(len(keys))]
		other := map[string]any{}
		for key, e := range m {
			other[key] = e
		}
		delete(other, k)
		renamed := []string{"null", "0", strings.ToUpper(k[:1]) + k[1:], k + " "}[rng.IntN(4)]
		other[renamed] = m[k]
		return fmt.Sprintf("key %q renamed %q", k, renamed), other, true
	},
	func(_ *rand.Rand, v any) (string, any, bool) {
		s, ok := v.(string)
		return "an RFC 3339 time with a fraction and an offset", "2026-11-29T05:00:00.123456+02:00", ok && len(s) > 18 && s[4] == '-' && s[10] == 'T'
	},
	func(_ *rand.Rand, v any) (string, any, bool) {
		s, ok := v.(string)
		return "a quantity in other notation", "1.5e3", ok && s != "" && s[0] >= '0' && s[0] <= '9'
	},
}

func walk(v any, p []any, visit func([]any)) {
	visit(p)
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range v {
				if !yield(k) {
					return
				}
			}
		}) {
			walk(v[k], append(p, k), visit)
		}
	case []any:
		for i, e := range v {
			walk(e, append(p, i), visit)
		}
	}
}

func get(v any, p []any) any {
	for _, k := range p {
		switch k := k.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	return v
}

// set returns a copy of v with the value at p replaced.
func set(v any, p []any, value any) any {
	if len(p) == 0 {
		return value
	}
	switch k := p[0].(type) {
	case string:
		m := v.(map[string]any)
		out := make(map[string]any, len(m))
		for key, e := range m {
			out[key] = e
		}
		out[k] = set(m[k], p[1:], value)
		return out
	default:
		s := slices.Clone(v.([]any))
		s[k.(int)] = set(s[k.(int)], p[1:], value)
		return s
	}
}

// render writes v as JSON, rawJSON values as they are.
func render(v any) []byte {
	var b bytes.Buffer
	var write func(v any)
	write = func(v any) {
		switch v := v.(type) {
		case rawJSON:
			b.WriteString(string(v))
		case map[string]any:
			b.WriteByte('{')
			for i, k := range slices.Sorted(func(yield func(string) bool) {
				for k := range v {
					if !yield(k) {
						return
					}
				}
			}) {
				if i > 0 {
					b.WriteByte(',')
				}
				kb, _ := json.Marshal(k)
				b.Write(kb)
				b.WriteByte(':')
				write(v[k])
			}
			b.WriteByte('}')
		case []any:
			b.WriteByte('[')
			for i, e := range v {
				if i > 0 {
					b.WriteByte(',')
				}
				write(e)
			}
			b.WriteByte(']')
		default:
			data, _ := json.Marshal(v)
			b.Write(data)
		}
	}
	write(v)
	return b.Bytes()
}

// kitchenSink holds the kinds of Go values k8s.io/api's kinds do not, or rarely.
type kitchenSink struct {
	metav1.TypeMeta `json:""`
	*Embedded
	Any      any                       `json:"any"`
	AnyMap   map[string]any            `json:"anyMap"`
	AnyList  []any                     `json:"anyList"`
	Raw      json.RawMessage           `json:"raw"`
	MetaTime *metav1.Time              `json:"metaTime"`
	Bytes    []byte                    `json:"bytes"`
	Float32  float32                   `json:"float32"`
	Uint8    uint8                     `json:"uint8"`
	Array    [2]int                    `json:"array"`
	Duration metav1.Duration           `json:"duration"`
	Quantity resource.Quantity         `json:"quantity"`
	Port     intstr.IntOrString        `json:"port"`
	Nested   map[string][]*kitchenSink `json:"nested,omitempty"`
	NoTag    string
	Ignored  string `json:"-"`
	Dash     string `json:"-,"`
	hidden   string
}

type Embedded struct {
	Inner string `json:"inner"`
}

func TestFastDecodingOfOtherTypes(t *testing.T) {
	typ := reflect.TypeFor[kitchenSink]()
	if !fastDecodable(typ) {
		t.Fatal("kitchenSink is not decoded fast")
	}
	body := []byte(`{"apiVersion":"v1","kind":"K","inner":"in","any":{"n":12345678901234,"f":1.5,"l":[1,"a",null,true]},"anyMap":{"a":1,"b":{"c":2}},` +
		`"anyList":[1,2.5,{"x":[]}],"raw":{"x": 1 },"metaTime":"2026-11-29T05:00:00Z","duration":"1m30s",` +
		`"bytes":"aGVsbG8=","float32":1.1,"uint8":200,"array":[1,2],"quantity":"1500m","port":"http",` +
		`"nested":{"a":[{"NoTag":"n"},null]},"NoTag":"x","-":"dash"}`)
	if !compareWithUpstream(t, "kitchen sink", typ, body) {
		t.Fatal("the fast decoding refused the kitchen sink")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	accepted := 0
	for _, v := range variations(t, body, rng, 400) {
		if compareWithUpstream(t, v.what, typ, v.body) {
			accepted++
		}
	}
	if accepted < 40 {
		t.Errorf("%d variations accepted by the fast decoding: the comparison is not exercised", accepted)
	}
}

// Types the fast decoding might read otherwise than encoding/json are decoded as upstream.
func TestFastDecodableTypes(t *testing.T) {
	type named interface{}
	for _, c := range []struct {
		v    any
		want bool
	}{
		{struct{ A map[string]any }{}, true},
		{struct{ A named }{}, false},
		{struct{ A fmt.Stringer }{}, false},
		{struct{ A json.Number }{}, false},
		{struct {
			A int `json:"a,string"`
		}{}, false},
		{struct {
			A int `json:"a,format:x"`
		}{}, false},
		{struct {
			A int `json:"a\\b"`
		}{}, false},
		{struct{ A chan int }{}, false},
		{struct{ A map[[2]int]string }{}, false},
		{struct{ A map[int8]string }{}, false},
		{struct{ A map[string]time.Time }{}, false},
		{struct{ A *time.Duration }{}, false},
		{struct{ A metav1.Time }{}, true},
		{struct{ fmt.Stringer }{}, false},
		{struct{ *Embedded }{}, true},
		{struct{ *unexportedEmbedded }{}, false},
		{struct{ unexportedEmbedded }{}, true},
	} {
		typ := reflect.TypeOf(c.v)
		if got := fastDecodable(typ); got != c.want {
			t.Errorf("fastDecodable(%v) = %v, want %v", typ, got, c.want)
		}
	}
}

type unexportedEmbedded struct{ B string }

// v2 refuses a tag on an unexported field (encoding/json ignores the field).
func TestFastDecodableRefusesTaggedUnexportedFields(t *testing.T) {
	intType := reflect.TypeFor[int]()
	tagged := reflect.StructField{Name: "a", PkgPath: "example.com/p", Type: intType, Tag: `json:"a"`}
	untagged := reflect.StructField{Name: "a", PkgPath: "example.com/p", Type: intType}
	if fastDecodableField(tagged, map[reflect.Type]bool{}) || !fastDecodableField(untagged, map[reflect.Type]bool{}) {
		t.Error("an unexported field with a json tag must not be decoded fast, one without may")
	}
}

// Where v2, with encoding/json's options, accepts a body that sigs.k8s.io/json refuses, the
// types involved are not decoded fast: integer map keys ("null" read as 0) and time.Time
// (v2 unescapes its string first; time.Time's UnmarshalJSON refuses escapes).
func TestV2DiffersWhereNotFast(t *testing.T) {
	type intKeyed struct {
		M map[int]string `json:"m"`
	}
	type timed struct {
		T time.Time `json:"t"`
	}
	for _, c := range []struct {
		v    any
		body string
	}{
		{&intKeyed{}, `{"m":{"null":"a"}}`},
		{&timed{}, `{"t":"\u0032026-11-29T05:00:00Z"}`},
	} {
		typ := reflect.TypeOf(c.v).Elem()
		fastErr := jsonv2.Unmarshal([]byte(c.body), reflect.New(typ).Interface(), fastOptions)
		strictErrs, err := kjson.UnmarshalStrict([]byte(c.body), reflect.New(typ).Interface())
		if fastErr != nil || (err == nil && len(strictErrs) == 0) {
			t.Errorf("%v %s: v2 says %v, sigs.k8s.io/json %v %v: they no longer differ here", typ, c.body, fastErr, err, strictErrs)
		}
		if fastDecodable(typ) {
			t.Errorf("%v is decoded fast", typ)
		}
	}
}

// BenchmarkFastDecoding decodes one widget strictly through the Serializer with the fast
// decoding and with sigs.k8s.io/json only (the Serializer before it), and reports the ratio.
func BenchmarkFastDecoding(b *testing.B) {
	s := scheme(b)
	strict := jsonserializer.SerializerOptions{Strict: true}
	fast := NewSerializer(jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, s, s, strict), s)
	slow := NewSerializer(jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, s, s, strict), s)
	clear(slow.fast)
	if !fast.fast[reflect.TypeFor[widget]()] {
		b.Fatal("widget is not decoded fast")
	}
	body := []byte(`{"apiVersion":"shop.example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"shop","uid":"0b0d3c1e-1d2f-4c56-9e8a-123456789abc",` +
		`"resourceVersion":"12345","creationTimestamp":"2026-11-29T05:00:00Z","labels":{"app":"marina","tier":"gold"},"managedFields":[{"manager":"bench",` +
		`"operation":"Update","apiVersion":"shop.example.com/v1","time":"2026-11-29T05:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:size":{}}}}]},` +
		`"spec":{"size":3,"tags":{"a":"b","c":"d"}}}`)
	var fastNs, slowNs time.Duration
	for b.Loop() {
		for _, side := range []struct {
			s *Serializer
			d *time.Duration
		}{{fast, &fastNs}, {slow, &slowNs}} {
			start := time.Now()
			if _, _, err := side.s.Decode(body, nil, &widget{}); err != nil {
				b.Fatal(err)
			}
			*side.d += time.Since(start)
		}
	}
	b.ReportMetric(float64(fastNs)/float64(b.N), "fast-ns/op")
	b.ReportMetric(float64(slowNs)/float64(b.N), "sigsjson-ns/op")
	b.ReportMetric(float64(fastNs)/float64(slowNs), "fast/sigsjson")
}
