package registry

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/utils/ptr"
)

type presenceWidget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              presenceSpec   `json:"spec,omitempty"`
	Status            presenceStatus `json:"status,omitempty"`
}

type presenceSpec struct {
	Dock    string        `json:"dock"`
	Code    string        `json:"code"`
	Size    int32         `json:"size"`
	Color   string        `json:"color,omitempty"`
	Enabled bool          `json:"enabled"`
	Sub     presenceSub   `json:"sub,omitempty"`
	Items   []presenceSub `json:"items,omitempty"`
	Created metav1.Time   `json:"created,omitempty"`
}

type presenceSub struct {
	Name string `json:"name"`
}

type presenceStatus struct {
	Phase   string   `json:"phase,omitempty"`
	Parents []string `json:"parents"`
	Ready   bool     `json:"ready"`
}

func (w *presenceWidget) DeepCopyObject() runtime.Object { c := *w; return &c }

func presenceDefs(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
	obj := func(required []string, props map[string]spec.Schema) openapicommon.OpenAPIDefinition {
		return openapicommon.OpenAPIDefinition{Schema: spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, Required: required, Properties: props}}}
	}
	str := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}
	return map[string]openapicommon.OpenAPIDefinition{
		"com.example.v1.Widget": obj(nil, map[string]spec.Schema{
			"apiVersion": str, "kind": str,
			"metadata": {SchemaProps: spec.SchemaProps{Ref: ref(defObjectMeta)}},
			"spec":     {SchemaProps: spec.SchemaProps{Ref: ref("com.example.v1.WidgetSpec")}},
			"status":   {SchemaProps: spec.SchemaProps{Ref: ref("com.example.v1.WidgetStatus")}},
		}),
		"com.example.v1.WidgetSpec": obj([]string{"dock", "code", "size", "enabled"}, map[string]spec.Schema{
			"dock":    str,
			"code":    {SchemaProps: spec.SchemaProps{Type: []string{"string"}, MinLength: ptr.To[int64](1)}},
			"size":    {SchemaProps: spec.SchemaProps{Type: []string{"integer"}, Format: "int32", Default: 0}},
			"color":   str,
			"enabled": {SchemaProps: spec.SchemaProps{Type: []string{"boolean"}}},
			"sub":     {SchemaProps: spec.SchemaProps{Ref: ref("com.example.v1.Sub")}},
			"items":   {SchemaProps: spec.SchemaProps{Type: []string{"array"}, Items: &spec.SchemaOrArray{Schema: &spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref("com.example.v1.Sub")}}}}},
			"created": {SchemaProps: spec.SchemaProps{Type: []string{"string"}, Format: "date-time"}},
		}),
		"com.example.v1.Sub": obj([]string{"name"}, map[string]spec.Schema{"name": str}),
		"com.example.v1.WidgetStatus": obj([]string{"parents", "ready"}, map[string]spec.Schema{
			"phase":   str,
			"parents": {SchemaProps: spec.SchemaProps{Type: []string{"array"}, Items: &spec.SchemaOrArray{Schema: &str}}},
			"ready":   {SchemaProps: spec.SchemaProps{Type: []string{"boolean"}}},
		}),
	}
}

// TestRequiredFieldsOfTypedObjects checks that a typed object's zero values are treated
// as a CRD treats the absent fields of the JSON a client sent.
func TestRequiredFieldsOfTypedObjects(t *testing.T) {
	v, err := newSchemaValidator(&Schema{Definitions: presenceDefs, Name: "com.example.v1.Widget"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		obj  *presenceWidget
		want []string
	}{
		// 0 and false are values clients set; only the empty string reads as unset, unless
		// the field's own constraints refuse it (then the error names the constraint).
		{"empty spec", &presenceWidget{}, []string{"spec.dock: Required value",
			`spec.code: Invalid value: "": spec.code in body should be at least 1 chars long`}},
		{"set", &presenceWidget{Spec: presenceSpec{Dock: "north", Code: "n"}}, nil},
		{"a status nobody wrote has no required fields", &presenceWidget{Spec: presenceSpec{Dock: "north", Code: "n"}}, nil},
		{"a written status has", &presenceWidget{Spec: presenceSpec{Dock: "north", Code: "n"}, Status: presenceStatus{Phase: "Ready"}},
			[]string{"status.parents: Required value"}},
		{"an optional struct left out has no required fields", &presenceWidget{Spec: presenceSpec{Dock: "north", Code: "n", Sub: presenceSub{}}}, nil},
		{"list items are present", &presenceWidget{Spec: presenceSpec{Dock: "north", Code: "n", Items: []presenceSub{{Name: "a"}, {}}}},
			[]string{"spec.items[1].name: Required value"}},
	} {
		got := errorStrings(v.validate(context.Background(), c.obj, nil))
		if messages(got) != messages(c.want) {
			t.Errorf("%s:\n%s\nwant:\n%s", c.name, messages(got), messages(c.want))
		}
	}
	// An update is checked the same way, old object included.
	errs := v.validate(context.Background(), &presenceWidget{}, &presenceWidget{Spec: presenceSpec{Dock: "north", Code: "n"}})
	if len(errs) != 2 {
		t.Errorf("update to an empty spec: %v", errs)
	}
}

// TestAbsentFieldsOfTheBody checks that required numbers and booleans a create left out
// are reported missing, as a CRD reports them, though the typed object holds 0 and false.
func TestAbsentFieldsOfTheBody(t *testing.T) {
	v, err := newSchemaValidator(&Schema{Definitions: presenceDefs, Name: "com.example.v1.Widget"})
	if err != nil {
		t.Fatal(err)
	}
	if !v.hiddenRequired {
		t.Error("spec.size is a required integer, yet the schema is not marked as needing the body read")
	}
	if w, err := newSchemaValidator(&Schema{Definitions: defs("true"), Name: "com.example.v1.Widget"}); err != nil || !w.hiddenRequired {
		t.Errorf("defs' required integer size: hiddenRequired=%v, err %v", w != nil && w.hiddenRequired, err)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(`{"spec":{"dock":"north","code":"n","items":[{}]},"status":{}}`), &body); err != nil {
		t.Fatal(err)
	}
	absent, _ := absences(body, v.structural, nil, &writeScope{statusSubresource: true})
	got := make([]string, len(absent))
	for i, p := range absent {
		got[i] = strings.Join(p, ".")
	}
	if messages(got) != messages([]string{"spec.size", "spec.enabled", "spec.items.0.name"}) {
		t.Errorf("absent: %v", got)
	}
	ctx := WithAbsentFields(context.Background(), absent)
	check := func(name string, obj *presenceWidget, want ...string) {
		t.Helper()
		if errs := errorStrings(v.validate(ctx, obj, nil)); messages(errs) != messages(want) {
			t.Errorf("%s:\n%s\nwant:\n%s", name, messages(errs), messages(want))
		}
	}
	check("as decoded", &presenceWidget{Spec: presenceSpec{Dock: "north", Code: "n", Items: []presenceSub{{}}}},
		"spec.size: Required value", "spec.enabled: Required value", "spec.items[0].name: Required value")
	// A value set after decoding (a hook, a default) stands.
	check("set by a hook", &presenceWidget{Spec: presenceSpec{Dock: "north", Code: "n", Size: 3, Items: []presenceSub{{Name: "a"}}}},
		"spec.enabled: Required value")
}

// TestAbsencesOfPatches checks that validation finds what a patch leaves absent (issue
// #29) on the result of the patch computed on JSON, as a CRD's validation sees it, though
// the typed result holds zero values there: an apply that creates without a required
// number, a merge or JSON patch that removes one, an apply that drops what its manager
// set, and an optional struct (the spec) that is absent has no required fields.
func TestAbsencesOfPatches(t *testing.T) {
	v, err := newSchemaValidator(&Schema{Definitions: presenceDefs, Name: "com.example.v1.Widget"})
	if err != nil {
		t.Fatal(err)
	}
	if !v.optionalRequired {
		t.Error("spec is an optional struct with required fields, yet the schema is not marked so")
	}
	full := presenceSpec{Dock: "north", Code: "n", Size: 3, Enabled: true}
	zeroes := presenceSpec{Dock: "north", Code: "n"}
	for _, c := range []struct {
		name, mediaType, patch string
		obj, old               *presenceWidget // the typed result and the old object (nil: a create)
		want                   []string
	}{
		{name: "apply creating without size and enabled", mediaType: mediaApplyPatch, patch: "spec:\n  dock: north\n  code: n\n",
			obj: &presenceWidget{Spec: zeroes}, want: []string{"spec.size: Required value", "spec.enabled: Required value"}},
		{name: "apply creating with 0 and false", mediaType: mediaApplyPatch, patch: `{"spec":{"dock":"north","code":"n","size":0,"enabled":false}}`,
			obj: &presenceWidget{Spec: zeroes}},
		{name: "apply creating without spec", mediaType: mediaApplyPatch, patch: `{"metadata":{"name":"w"}}`,
			obj: &presenceWidget{}},
		{name: "merge patch removing size", mediaType: mediaMergePatch, patch: `{"spec":{"size":null}}`,
			obj: &presenceWidget{Spec: presenceSpec{Dock: "north", Code: "n", Enabled: true}}, old: &presenceWidget{Spec: full},
			want: []string{"spec.size: Required value"}},
		{name: "JSON patch removing enabled", mediaType: mediaJSONPatch, patch: `[{"op":"remove","path":"/spec/enabled"}]`,
			obj: &presenceWidget{Spec: presenceSpec{Dock: "north", Code: "n", Size: 3}}, old: &presenceWidget{Spec: full},
			want: []string{"spec.enabled: Required value"}},
		{name: "merge patch of another field keeps 0 and false", mediaType: mediaMergePatch, patch: `{"spec":{"color":"red"}}`,
			obj: &presenceWidget{Spec: presenceSpec{Dock: "north", Code: "n", Color: "red"}}, old: &presenceWidget{Spec: zeroes}},
		{name: "strategic merge patch removing size", mediaType: mediaStrategicPatch, patch: `{"spec":{"size":null}}`,
			obj: &presenceWidget{Spec: presenceSpec{Dock: "north", Code: "n", Enabled: true}}, old: &presenceWidget{Spec: full},
			want: []string{"spec.size: Required value"}},
		{name: "apply leaving out what its manager set", mediaType: mediaApplyPatch, patch: `{"spec":{"dock":"north","code":"n","enabled":true}}`,
			obj: &presenceWidget{Spec: presenceSpec{Dock: "north", Code: "n", Enabled: true}}, old: &presenceWidget{Spec: full},
			want: []string{"spec.size: Required value"}},
		{name: "merge patch sending an optional struct without its required field", mediaType: mediaMergePatch, patch: `{"spec":{"sub":{}}}`,
			obj: &presenceWidget{Spec: full}, old: &presenceWidget{Spec: full},
			want: []string{"spec.sub.name: Required value"}},
		{name: "merge patch giving an absent spec one field", mediaType: mediaMergePatch, patch: `{"spec":{"color":"red"}}`,
			obj: &presenceWidget{Spec: presenceSpec{Color: "red"}}, old: &presenceWidget{},
			want: []string{"spec.dock: Required value", "spec.code: Required value", "spec.size: Required value", "spec.enabled: Required value"}},
	} {
		ctx := WithPatch(context.Background(), c.mediaType, []byte(c.patch))
		var old runtime.Object
		if c.old != nil {
			old = c.old
		}
		got := errorStrings(v.validate(ctx, c.obj, old))
		if messages(got) != messages(c.want) {
			t.Errorf("%s:\n%s\nwant:\n%s", c.name, messages(got), messages(c.want))
		}
	}

	// A create without spec: the body inspector reports it (AbsentObjects), and nothing of
	// it is required; one whose spec is sent empty gets every required field reported.
	var body map[string]any
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"w"}}`), &body); err != nil {
		t.Fatal(err)
	}
	fields, objects := absences(body, v.structural, nil, &writeScope{statusSubresource: true})
	ctx := WithAbsentObjects(WithAbsentFields(context.Background(), fields), objects)
	if errs := v.validate(ctx, &presenceWidget{}, nil); len(errs) != 0 {
		t.Errorf("a create without spec: %v", errs)
	}
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"w"},"spec":{}}`), &body); err != nil {
		t.Fatal(err)
	}
	fields, objects = absences(body, v.structural, nil, &writeScope{statusSubresource: true})
	ctx = WithAbsentObjects(WithAbsentFields(context.Background(), fields), objects)
	if errs := v.validate(ctx, &presenceWidget{}, nil); len(errs) != 4 {
		t.Errorf("a create with an empty spec: %v; want 4 errors", errs)
	}
}

// TestEmptyStringSentOrLeftOut checks that, once the body of a create was read
// (WithBodyRead), an empty string sent in a required string field is validated as a CRD
// validates "" (accepted by a schema that allows it, refused by a minLength), while the
// same field left out is "Required value": the typed object holds "" in both cases.
func TestEmptyStringSentOrLeftOut(t *testing.T) {
	v, err := newSchemaValidator(&Schema{Definitions: presenceDefs, Name: "com.example.v1.Widget"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, body string
		obj        *presenceWidget // as decoded
		want       []string
	}{
		{"both sent empty", `{"spec":{"dock":"","code":"","size":0,"enabled":false}}`, &presenceWidget{},
			[]string{`spec.code: Invalid value: "": spec.code in body should be at least 1 chars long`}},
		{"dock left out", `{"spec":{"code":"n","size":0,"enabled":false}}`, &presenceWidget{Spec: presenceSpec{Code: "n"}}, []string{"spec.dock: Required value"}},
		{"code left out", `{"spec":{"dock":"","size":0,"enabled":false}}`, &presenceWidget{}, []string{"spec.code: Required value"}},
	} {
		var body map[string]any
		if err := json.Unmarshal([]byte(c.body), &body); err != nil {
			t.Fatal(err)
		}
		fields, objects := absences(body, v.structural, nil, &writeScope{statusSubresource: true})
		ctx := WithBodyRead(WithAbsentObjects(WithAbsentFields(context.Background(), fields), objects))
		got := errorStrings(v.validate(ctx, c.obj, nil))
		if messages(got) != messages(c.want) {
			t.Errorf("%s:\n%s\nwant:\n%s", c.name, messages(got), messages(c.want))
		}
	}
	// A merge patch that sends "" keeps it; one that removes the field leaves it absent.
	old := &presenceWidget{Spec: presenceSpec{Dock: "north", Code: "n"}}
	for patch, want := range map[string][]string{
		`{"spec":{"dock":""}}`:   nil,
		`{"spec":{"dock":null}}`: {"spec.dock: Required value"},
	} {
		got := errorStrings(v.validate(WithPatch(context.Background(), mediaMergePatch, []byte(patch)), &presenceWidget{Spec: presenceSpec{Code: "n"}}, old))
		if messages(got) != messages(want) {
			t.Errorf("merge patch %s:\n%s\nwant:\n%s", patch, messages(got), messages(want))
		}
	}
}

// errorStrings returns the errors' texts.
func errorStrings(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// TestAbsencesThroughStatus checks that a write through /status is read for what it
// leaves out of the status, as a CRD's status strategy validates it: a merge patch, JSON
// patch or apply that removes the status's required boolean (false once decoded, so only
// the body tells it absent), and a PUT whose status lacks it, are refused; a PUT without a
// status is accepted (an absent optional object, as on a CRD). A kind without a /status
// subresource has its status written, and so read, by the main resource's writes.
func TestAbsencesThroughStatus(t *testing.T) {
	v, err := newSchemaValidator(&Schema{Definitions: presenceDefs, Name: "com.example.v1.Widget"})
	if err != nil {
		t.Fatal(err)
	}
	v.statusSubresource = true
	spec := presenceSpec{Dock: "north", Code: "n", Size: 3, Enabled: true}
	old := &presenceWidget{Spec: spec, Status: presenceStatus{Phase: "Ready", Parents: []string{"a"}, Ready: true}}
	notReady := &presenceWidget{Spec: spec, Status: presenceStatus{Phase: "Ready", Parents: []string{"a"}}}
	const required = "status.ready: Required value"
	for _, c := range []struct {
		name, mediaType, patch string
		want                   []string
	}{
		{"merge patch removing the required boolean", mediaMergePatch, `{"status":{"ready":null}}`, []string{required}},
		{"JSON patch removing it", mediaJSONPatch, `[{"op":"remove","path":"/status/ready"}]`, []string{required}},
		{"apply leaving it out", mediaApplyPatch, `{"status":{"phase":"Ready","parents":["a"]}}`, []string{required}},
		{"merge patch setting it false", mediaMergePatch, `{"status":{"ready":false}}`, nil},
	} {
		if got := errorStrings(v.validateStatus(WithPatch(context.Background(), c.mediaType, []byte(c.patch)), notReady, old)); messages(got) != messages(c.want) {
			t.Errorf("/status %s:\n%s\nwant:\n%s", c.name, messages(got), messages(c.want))
		}
	}
	// A PUT through /status: its status is read, the rest of the body is not written.
	for _, c := range []struct {
		name, body string
		obj        *presenceWidget
		want       []string
	}{
		{"status without the required boolean", `{"metadata":{"name":"w"},"status":{"phase":"Ready","parents":["a"]}}`, notReady, []string{required}},
		{"status with it false", `{"metadata":{"name":"w"},"status":{"phase":"Ready","parents":["a"],"ready":false}}`, notReady, nil},
		{"no status", `{"metadata":{"name":"w"},"spec":{}}`, &presenceWidget{Spec: spec}, nil},
	} {
		var body map[string]any
		if err := json.Unmarshal([]byte(c.body), &body); err != nil {
			t.Fatal(err)
		}
		scope := v.scope(true)
		fields, objects := absences(body, v.structural, nil, &scope)
		ctx := WithBodyRead(WithAbsentObjects(WithAbsentFields(context.Background(), fields), objects))
		if got := errorStrings(v.validateStatus(ctx, c.obj, old)); messages(got) != messages(c.want) {
			t.Errorf("/status PUT, %s:\n%s\nwant:\n%s", c.name, messages(got), messages(c.want))
		}
	}
	// The main resource of a kind with /status does not write the status (its strategy
	// keeps the old one), so a PUT's status is not read; without /status, it is.
	var body map[string]any
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"w"},"spec":{"dock":"north","code":"n","size":3,"enabled":true},"status":{"phase":"Ready","parents":["a"]}}`), &body); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []bool{true, false} {
		v.statusSubresource = sub
		scope := v.scope(false)
		fields, _ := absences(body, v.structural, nil, &scope)
		var got []string
		for _, f := range fields {
			got = append(got, strings.Join(f, "."))
		}
		if want := map[bool]string{true: "", false: "status.ready"}[sub]; messages(got) != want {
			t.Errorf("main resource PUT, /status subresource %v: absent %q, want %q", sub, got, want)
		}
	}
	if got := errorStrings(v.validate(WithPatch(context.Background(), mediaMergePatch, []byte(`{"status":{"ready":null}}`)), notReady, old)); messages(got) != required {
		t.Errorf("main resource merge patch, kind without /status:\n%s\nwant %s", messages(got), required)
	}
}

// defaultedWidget has a required struct whose members have defaults.
type defaultedWidget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              defaultedSpec `json:"spec"`
}

type defaultedSpec struct {
	Mode  string      `json:"mode,omitempty"`
	Count int32       `json:"count,omitempty"`
	Ref   presenceSub `json:"ref"`
}

func (w *defaultedWidget) DeepCopyObject() runtime.Object { c := *w; return &c }

func defaultedDefs(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
	str := spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}
	return map[string]openapicommon.OpenAPIDefinition{
		"com.example.v1.Widget": {Schema: spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, Required: []string{"spec"}, Properties: map[string]spec.Schema{
			"apiVersion": str, "kind": str,
			"metadata": {SchemaProps: spec.SchemaProps{Ref: ref(defObjectMeta)}},
			"spec":     {SchemaProps: spec.SchemaProps{Ref: ref("com.example.v1.Spec")}},
		}}}},
		"com.example.v1.Spec": {Schema: spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: map[string]spec.Schema{
			"mode":  {SchemaProps: spec.SchemaProps{Type: []string{"string"}, Default: "Auto"}},
			"count": {SchemaProps: spec.SchemaProps{Type: []string{"integer"}, Format: "int32"}},
			"ref":   {SchemaProps: spec.SchemaProps{Ref: ref("com.example.v1.Ref")}},
		}}}},
		"com.example.v1.Ref": {Schema: spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: map[string]spec.Schema{
			"name": {SchemaProps: spec.SchemaProps{Type: []string{"string"}, Default: "main"}},
		}}}},
	}
}

// TestHoldsOnlyDefaults checks that a required struct a create left out is missing
// ("spec: Required value", as on a CRD) although decoding and defaulting filled its
// members with their defaults, while one a hook set a value in stands.
func TestHoldsOnlyDefaults(t *testing.T) {
	v, err := newSchemaValidator(&Schema{Definitions: defaultedDefs, Name: "com.example.v1.Widget"})
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"w"}}`), &body); err != nil {
		t.Fatal(err)
	}
	scope := v.scope(false)
	fields, objects := absences(body, v.structural, nil, &scope)
	if len(fields) != 1 || strings.Join(fields[0], ".") != "spec" {
		t.Fatalf("absences of a create without spec: %v", fields)
	}
	ctx := WithBodyRead(WithAbsentObjects(WithAbsentFields(context.Background(), fields), objects))
	for _, c := range []struct {
		name string
		spec defaultedSpec
		want []string
	}{
		{"defaults alone", defaultedSpec{Mode: "Auto", Ref: presenceSub{Name: "main"}}, []string{"spec: Required value"}},
		{"nothing", defaultedSpec{}, []string{"spec: Required value"}},
		{"a hook's value", defaultedSpec{Mode: "Auto", Count: 2, Ref: presenceSub{Name: "main"}}, nil},
		{"a hook's value inside", defaultedSpec{Mode: "Auto", Ref: presenceSub{Name: "other"}}, nil},
	} {
		if got := errorStrings(v.validate(ctx, &defaultedWidget{Spec: c.spec}, nil)); messages(got) != messages(c.want) {
			t.Errorf("%s:\n%s\nwant:\n%s", c.name, messages(got), messages(c.want))
		}
	}
	ref := v.structural.Properties["spec"]
	for v, want := range map[string]bool{
		`{"mode":"Auto","ref":{"name":"main"}}`: true,
		`{"mode":"","count":0,"ref":{}}`:        true,
		`{"mode":"Manual"}`:                     false,
		`{"ref":{"name":"x"}}`:                  false,
		`{"other":1}`:                           false,
	} {
		var m map[string]any
		if err := json.Unmarshal([]byte(v), &m); err != nil {
			t.Fatal(err)
		}
		if got := holdsOnlyDefaults(m, &ref, nil); got != want {
			t.Errorf("holdsOnlyDefaults(%s) = %v, want %v", v, got, want)
		}
	}
	// A member of a parent's default object counts as a default: count has no default of
	// its own, but the default of the spec (the parent's) holds count 3.
	if !holdsOnlyDefaults(map[string]any{"count": int64(3), "mode": "Auto"}, &ref, map[string]any{"count": float64(3)}) {
		t.Error("a member equal to the parent default's is a default")
	}
	if holdsOnlyDefaults(map[string]any{"count": int64(2)}, &ref, map[string]any{"count": int64(3)}) {
		t.Error("a member other than the parent default's is a value")
	}
}

// TestStoredEmptyStringStays checks that a "" sent in a required string and stored (a
// list item's name, which the schema allows empty) is in the old object as it is in a
// CRD's stored JSON: a merge patch of another field keeps it in the patched result, and a
// CEL rule that reads it finds it ("no such key: name" before).
func TestStoredEmptyStringStays(t *testing.T) {
	defs := func(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
		d := presenceDefs(ref)
		ws := d["com.example.v1.WidgetSpec"]
		items := ws.Schema.Properties["items"]
		items.VendorExtensible = spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-validations": []any{
			map[string]any{"rule": "self.all(i, i.name.size() < 10)", "message": "short names"}}}}
		ws.Schema.Properties["items"] = items
		d["com.example.v1.WidgetSpec"] = ws
		return d
	}
	v, err := newSchemaValidator(&Schema{Definitions: defs, Name: "com.example.v1.Widget"})
	if err != nil {
		t.Fatal(err)
	}
	old := &presenceWidget{Spec: presenceSpec{Dock: "north", Code: "n", Size: 1, Enabled: true, Items: []presenceSub{{Name: ""}}}}
	obj := &presenceWidget{Spec: old.Spec}
	obj.Spec.Color = "red"
	if got := errorStrings(v.validate(WithPatch(context.Background(), mediaMergePatch, []byte(`{"spec":{"color":"red"}}`)), obj, old)); len(got) != 0 {
		t.Errorf("merge patch of another field: %v", got)
	}
	// An optional struct nobody wrote, which defaulting filled, reads as absent too.
	dv, err := newSchemaValidator(&Schema{Definitions: func(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
		d := defs(ref)
		ws := d["com.example.v1.WidgetSpec"]
		color := ws.Schema.Properties["color"]
		color.Default = "red"
		ws.Schema.Properties["color"] = color
		d["com.example.v1.WidgetSpec"] = ws
		return d
	}, Name: "com.example.v1.Widget"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range dv.validate(WithPatch(context.Background(), mediaMergePatch, []byte(`{"spec":{"dock":"north"}}`)),
		&presenceWidget{Spec: presenceSpec{Dock: "north", Color: "red"}}, &presenceWidget{Spec: presenceSpec{Color: "red"}}) {
		if e.Type == field.ErrorTypeRequired {
			got = append(got, e.Field)
		}
	}
	if messages(got) != messages([]string{"spec.code", "spec.size", "spec.enabled"}) {
		t.Errorf("merge patch giving a defaulted absent spec a dock: required %v, want spec.code, spec.size, spec.enabled", got)
	}
	// An optional struct nobody wrote still reads as absent: its "" is no value.
	required := 0
	for _, e := range v.validate(WithPatch(context.Background(), mediaMergePatch, []byte(`{"spec":{"color":"red"}}`)), &presenceWidget{Spec: presenceSpec{Color: "red"}}, &presenceWidget{}) {
		if e.Type == field.ErrorTypeRequired {
			required++
		}
	}
	if required != 4 {
		t.Errorf("merge patch giving an absent spec one field: %d Required errors, want its 4 required fields", required)
	}
}
