package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/encoding/protowire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/aagen-dev/aagen/runtime/etcd"
)

var fleets = schema.GroupVersionResource{Group: "marina.example.com", Version: "v1alpha1", Resource: "fleets"}

// TestValidation runs the example, whose types carry validation, default and CEL markers,
// against an etcd the test owns, and checks what a user of a CRD with the same schema
// would see: every schema and CEL error of an object in one 422 Invalid with field paths,
// a transition rule (oldSelf) on update, defaults filled on create and when an object
// stored without the field is read, and the constraints in /openapi/v2 and /openapi/v3.
func TestValidation(t *testing.T) {
	skipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	store, err := etcd.Start(ctx, etcd.Config{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	dir := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata/example"), dir, nil)
	up := startUp(t, dir, 20*time.Minute, "--etcd-servers="+store.ClientURL())
	cfg := up.restConfig(t)
	dyn := dynamic.NewForConfigOrDie(cfg)
	ns := "harbour"
	bc := dyn.Resource(boats).Namespace(ns)

	obj := func(kind, name string, spec map[string]any) *unstructured.Unstructured {
		meta := map[string]any{"name": name}
		if kind != "Dock" {
			meta["namespace"] = ns
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "marina.example.com/v1alpha1", "kind": kind, "metadata": meta, "spec": spec,
		}}
	}
	crew := make([]any, 13)
	for i := range crew {
		crew[i] = fmt.Sprintf("sailor-%d", i)
	}
	amenities := map[string]any{}
	for i := range 17 {
		amenities[fmt.Sprintf("a%d", i)] = "yes"
	}

	t.Run("invalid objects", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			client dynamic.ResourceInterface
			obj    *unstructured.Unstructured
			// want are the causes of the one 422, as "field: message", in any order.
			want []string
		}{{
			name:   "every schema constraint of a boat",
			client: bc,
			obj: obj("Boat", "wreck", map[string]any{
				"dock": "North_Pier", "lengthMeters": int64(-1), "crew": crew, "sails": int64(30),
				"hull": "Iron", "contact": "nobody",
			}),
			want: []string{
				`spec.dock: Invalid value: "North_Pier": spec.dock in body should match '^[a-z0-9-]*$'`,
				`spec.lengthMeters: Invalid value: -1: spec.lengthMeters in body should be greater than or equal to 0`,
				`spec.crew: Too many: 13: must have at most 12 items`,
				`spec.sails: Invalid value: 30: spec.sails in body should be less than or equal to 20`,
				`spec.hull: Unsupported value: "Iron": supported values: "Wood", "Steel", "Fibreglass"`,
				`spec.contact: Invalid value: "nobody": spec.contact in body must be of type email: "nobody"`,
				// As for a CRD: after these errors the CEL rules are not evaluated.
				`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
			},
		}, {
			name:   "a CEL rule across fields, reported at its fieldPath",
			client: bc,
			obj:    obj("Boat", "overcanvassed", map[string]any{"dock": "north", "lengthMeters": int64(2), "sails": int64(3)}),
			want:   []string{`spec.sails: Invalid value: a boat carries at most one sail per metre of length`},
		}, {
			name:   "metadata and schema errors together",
			client: bc,
			obj:    obj("Boat", "Not_A_Name", map[string]any{"dock": "north", "lengthMeters": int64(-5)}),
			want: []string{
				`metadata.name: Invalid value: "Not_A_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
				`spec.lengthMeters: Invalid value: -5: spec.lengthMeters in body should be greater than or equal to 0`,
			},
		}, {
			// Required fields are required as in a CRD, though the Go field is a plain string.
			name:   "a boat with an empty spec",
			client: bc,
			obj:    obj("Boat", "empty", map[string]any{}),
			want:   []string{`spec.dock: Required value`, `spec.lengthMeters: Required value`, rulesNotChecked},
		}, {
			name:   "a boat with nulls",
			client: bc,
			obj:    obj("Boat", "nulls", map[string]any{"dock": nil, "lengthMeters": nil}),
			want:   []string{`spec.dock: Required value`, `spec.lengthMeters: Required value`, rulesNotChecked},
		}, {
			// An int32 without omitempty: 0 sent is a value, a field left out is missing.
			name:   "a boat without its length",
			client: bc,
			obj:    obj("Boat", "unmeasured", map[string]any{"dock": "north"}),
			want:   []string{`spec.lengthMeters: Required value`, rulesNotChecked},
		}, {
			name:   "a dock",
			client: dyn.Resource(docks),
			obj:    obj("Dock", "bad-dock", map[string]any{"berths": int64(501), "depth": "deep", "amenities": amenities}),
			want: []string{
				`spec.berths: Invalid value: 501: spec.berths in body should be less than or equal to 500`,
				`spec.depth: Invalid value: "deep": spec.depth in body should match '^[0-9]+(\.[0-9]+)?m$'`,
				`spec.amenities: Too many: 17: must have at most 16 items`,
			},
		}, {
			name:   "a fleet",
			client: dyn.Resource(fleets).Namespace(ns),
			obj:    obj("Fleet", "armada", map[string]any{"replicas": int64(101), "class": strings.Repeat("x", 33)}),
			want: []string{
				`spec.replicas: Invalid value: 101: spec.replicas in body should be less than or equal to 100`,
				`spec.class: Too long: may not be more than 32 bytes`,
			},
		}} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := tc.client.Create(ctx, tc.obj, metav1.CreateOptions{})
				checkInvalid(t, err, tc.obj.GetKind(), tc.obj.GetName(), tc.want)
			})
		}
		// The spec is an optional struct: null or left out, nothing of it is required, as
		// for a CRD (TestHostileClientLikeCRD).
		if _, err := bc.Create(ctx, obj("Boat", "nothing", nil), metav1.CreateOptions{}); err != nil {
			t.Errorf("a boat with a null spec: %v", err)
		}
	})

	t.Run("required fields on strict create and on patch", func(t *testing.T) {
		_, err := bc.Create(ctx, obj("Boat", "strict", map[string]any{}), metav1.CreateOptions{FieldValidation: "Strict"})
		checkInvalid(t, err, "Boat", "strict", []string{`spec.dock: Required value`, `spec.lengthMeters: Required value`, rulesNotChecked})
		if _, err := bc.Create(ctx, obj("Boat", "zero-length", map[string]any{"dock": "north", "lengthMeters": int64(0)}), metav1.CreateOptions{}); err != nil {
			t.Errorf("a length of 0, sent: %v", err)
		}
		if _, err := bc.Create(ctx, obj("Boat", "patched", map[string]any{"dock": "north", "lengthMeters": int64(4)}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// A patch that removes a required number is refused, as a CRD refuses it, although
		// the typed result holds 0 there: validation reads the patch (TestHostileClientLikeCRD).
		_, err = bc.Patch(ctx, "patched", types.JSONPatchType, []byte(`[{"op":"remove","path":"/spec/lengthMeters"}]`), metav1.PatchOptions{})
		checkInvalid(t, err, "Boat", "patched", []string{`spec.lengthMeters: Required value`, rulesNotChecked})
		_, err = bc.Patch(ctx, "patched", types.MergePatchType, []byte(`{"spec":{"dock":null}}`), metav1.PatchOptions{})
		checkInvalid(t, err, "Boat", "patched", []string{`spec.dock: Required value`, rulesNotChecked})
		// Removing the optional spec leaves nothing required, as for a CRD.
		if _, err := bc.Patch(ctx, "patched", types.JSONPatchType, []byte(`[{"op":"remove","path":"/spec"}]`), metav1.PatchOptions{}); err != nil {
			t.Errorf("removing the optional spec: %v", err)
		}
		apply := []byte(`{"apiVersion":"marina.example.com/v1alpha1","kind":"Boat","metadata":{"name":"applied","namespace":"` + ns + `"},"spec":{"lengthMeters":3}}`)
		_, err = bc.Patch(ctx, "applied", types.ApplyPatchType, apply, metav1.PatchOptions{FieldManager: "test"})
		checkInvalid(t, err, "Boat", "applied", []string{`spec.dock: Required value`, rulesNotChecked})
	})

	t.Run("a request over a size limit costs little", func(t *testing.T) {
		pid := serverPID(t, up)
		// The cost of an ordinary create, averaged.
		const ordinary = 40
		before := cpuTicks(t, pid)
		for i := range ordinary {
			if _, err := dyn.Resource(docks).Create(ctx, obj("Dock", fmt.Sprintf("pier-%d", i), map[string]any{"berths": int64(4)}), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		perCreate := float64(cpuTicks(t, pid)-before) / ordinary
		// 150,000 amenities where the schema allows 16 (2.2 MB): refused before its managed
		// fields are computed, also as a dry run, in a few tens of milliseconds.
		huge := map[string]any{}
		for i := range 150000 {
			huge[fmt.Sprintf("a%d", i)] = "yes"
		}
		const over = 3
		before = cpuTicks(t, pid)
		for i := range over {
			opts := metav1.CreateOptions{}
			if i == 1 {
				opts.DryRun = []string{metav1.DryRunAll}
			}
			_, err := dyn.Resource(docks).Create(ctx, obj("Dock", "huge", map[string]any{"berths": int64(4), "amenities": huge}), opts)
			checkInvalid(t, err, "Dock", "huge", []string{`spec.amenities: Too many: 150000: must have at most 16 items`})
		}
		perOver := float64(cpuTicks(t, pid)-before) / over
		t.Logf("server CPU: %.1f ticks per ordinary create, %.1f per refused 2.2 MB create", perCreate, perOver)
		// Before the check, such a request cost 12.5 s of CPU, thousands of ordinary creates;
		// now parsing the 2.2 MB body dominates (tens of ordinary creates, more on a loaded machine).
		if perOver > 250*max(perCreate, 0.5) {
			t.Errorf("a refused request over a limit cost %.0fx an ordinary create (%.1f vs %.1f clock ticks); want under 250x", perOver/max(perCreate, 0.5), perOver, perCreate)
		}

		// The same check for a protobuf body: a Boat with 1.4 million empty crew entries
		// where the schema allows 12 (2.8 MB; each entry is two bytes on the wire). Before
		// the check covered protobuf, this cost about 3 s of CPU here (300 ticks) before its 422.
		// Decoding 1.4 million entries is most of what is left: about 60 ticks on a quiet
		// machine, 130 in a CI run with other packages' tests beside it. So the least of three
		// requests is compared, with a bound of 400x (200 ticks at the 0.5-tick floor), still
		// well under the 300 ticks (600x) the unchecked path cost on a quiet machine.
		pb := protobufBoat(ns, "crowded", 1400000)
		perProto := math.Inf(1)
		for range 3 {
			before = cpuTicks(t, pid)
			status, body := postProtobuf(t, cfg, "/apis/marina.example.com/v1alpha1/namespaces/"+ns+"/boats", pb)
			perProto = min(perProto, float64(cpuTicks(t, pid)-before))
			if status != 422 || !strings.Contains(string(body), `spec.crew: Too many: 1400000: must have at most 12 items`) {
				t.Fatalf("a protobuf Boat with 1.4 million crew entries: %d %s; want 422 naming spec.crew", status, body)
			}
		}
		t.Logf("server CPU: %.1f ticks (least of 3) for the refused %.1f MB protobuf create", perProto, float64(len(pb))/1e6)
		if perProto > 400*max(perCreate, 0.5) {
			t.Errorf("a refused protobuf request over a limit cost %.0fx an ordinary create (%.1f vs %.1f clock ticks); want under 400x", perProto/max(perCreate, 0.5), perProto, perCreate)
		}

		// 150,000 labels and 250,000 finalizers, over the bounds of 1,000 and 100: each
		// cost 10 to 70 s of CPU in managed fields before the bounds.
		labels := map[string]any{}
		for i := range 150000 {
			labels[fmt.Sprintf("l%d", i)] = ""
		}
		finalizers := make([]any, 250000)
		for i := range finalizers {
			finalizers[i] = "x/f" // 6 bytes each in JSON: 1.5 MB, under the 3 MiB body limit
		}
		for _, c := range []struct {
			field string
			value any
			want  string
		}{
			{"labels", labels, "metadata.labels: Too many: 150000: must have at most 1000 items"},
			{"finalizers", finalizers, "metadata.finalizers: Too many: 250000: must have at most 100 items"},
		} {
			b := obj("Boat", "many-"+c.field, map[string]any{"dock": "north", "lengthMeters": int64(4)})
			_ = unstructured.SetNestedField(b.Object, c.value, "metadata", c.field)
			before = cpuTicks(t, pid)
			_, err := bc.Create(ctx, b, metav1.CreateOptions{})
			ticks := float64(cpuTicks(t, pid) - before)
			checkInvalid(t, err, "Boat", "many-"+c.field, []string{c.want})
			t.Logf("server CPU: %.1f ticks for the refused create with %s", ticks, c.field)
			if ticks > 250*max(perCreate, 0.5) {
				t.Errorf("a refused create with too many %s cost %.0fx an ordinary create (%.1f vs %.1f clock ticks); want under 250x", c.field, ticks/max(perCreate, 0.5), ticks, perCreate)
			}
		}
	})

	t.Run("transition rule with oldSelf", func(t *testing.T) {
		b, err := bc.Create(ctx, obj("Boat", "ironsides", map[string]any{"dock": "north", "lengthMeters": int64(20), "hull": "Wood"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(b.Object, "Steel", "spec", "hull")
		_, err = bc.Update(ctx, b, metav1.UpdateOptions{})
		checkInvalid(t, err, "Boat", "ironsides", []string{`spec: Forbidden: hull cannot be changed`})
		// Other changes pass the rule; an unchanged hull is compared with itself.
		_ = unstructured.SetNestedField(b.Object, "Wood", "spec", "hull")
		_ = unstructured.SetNestedField(b.Object, int64(21), "spec", "lengthMeters")
		if _, err := bc.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update keeping the hull: %v", err)
		}
	})

	t.Run("defaults on create", func(t *testing.T) {
		b, err := bc.Create(ctx, obj("Boat", "plain", map[string]any{"dock": "north", "lengthMeters": int64(6)}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if hull, _, _ := unstructured.NestedString(b.Object, "spec", "hull"); hull != "Fibreglass" {
			t.Errorf("created boat: spec.hull=%q, want the default Fibreglass", hull)
		}
		d, err := dyn.Resource(docks).Create(ctx, obj("Dock", "west", map[string]any{"berths": int64(4)}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if depth, _, _ := unstructured.NestedString(d.Object, "spec", "depth"); depth != "3m" {
			t.Errorf("created dock: spec.depth=%q, want the default 3m", depth)
		}
	})

	t.Run("defaults on read", func(t *testing.T) {
		// An object stored before its field had a default (here: written to etcd by hand,
		// next to one the server stored, without spec.hull) gets it when read, as
		// built-in objects do.
		if _, err := bc.Create(ctx, obj("Boat", "template", map[string]any{"dock": "north", "lengthMeters": int64(8), "hull": "Wood"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{store.ClientURL()}, DialTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		keys, err := cli.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		var key string
		for _, kv := range keys.Kvs {
			if strings.HasSuffix(string(kv.Key), "/boats/"+ns+"/template") {
				key = string(kv.Key)
			}
		}
		if key == "" {
			t.Fatalf("no etcd key for boat template among %d keys", len(keys.Kvs))
		}
		// The JSON a release that stored JSON wrote: the object as served, without its
		// resourceVersion (the server now stores protobuf, and reads both).
		tmpl, err := bc.Get(ctx, "template", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m := tmpl.Object
		unstructured.RemoveNestedField(m, "metadata", "resourceVersion")
		unstructured.RemoveNestedField(m, "spec", "hull")
		unstructured.RemoveNestedField(m, "metadata", "managedFields")
		_ = unstructured.SetNestedField(m, "legacy", "metadata", "name")
		_ = unstructured.SetNestedField(m, "00000000-0000-0000-0000-00000000beef", "metadata", "uid")
		raw, _ := json.Marshal(m)
		if strings.Contains(string(raw), "hull") {
			t.Fatalf("stored object still has hull: %s", raw)
		}
		if _, err := cli.Put(ctx, strings.TrimSuffix(key, "template")+"legacy", string(raw)); err != nil {
			t.Fatal(err)
		}
		var got *unstructured.Unstructured
		deadline := time.Now().Add(30 * time.Second)
		for {
			got, err = bc.Get(ctx, "legacy", metav1.GetOptions{})
			if err == nil || !apierrors.IsNotFound(err) || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		if hull, _, _ := unstructured.NestedString(got.Object, "spec", "hull"); hull != "Fibreglass" {
			t.Errorf("boat stored without spec.hull, read back: hull=%q, want the default Fibreglass", hull)
		}
		list, err := bc.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=legacy"})
		if err != nil || len(list.Items) != 1 {
			t.Fatalf("list: %v", err)
		}
		if hull, _, _ := unstructured.NestedString(list.Items[0].Object, "spec", "hull"); hull != "Fibreglass" {
			t.Errorf("list: hull=%q, want the default Fibreglass", hull)
		}
	})

	t.Run("openapi", func(t *testing.T) {
		var v2 struct {
			Definitions map[string]map[string]any `json:"definitions"`
		}
		getJSON(t, cfg, "/openapi/v2", &v2)
		var v3 struct {
			Components struct {
				Schemas map[string]map[string]any `json:"schemas"`
			} `json:"components"`
		}
		getJSON(t, cfg, "/openapi/v3/apis/marina.example.com/v1alpha1", &v3)
		for doc, defs := range map[string]map[string]map[string]any{"v2": v2.Definitions, "v3": v3.Components.Schemas} {
			spec := definition(t, defs, ".v1alpha1.BoatSpec")
			props := spec["properties"].(map[string]any)
			prop := func(name string) map[string]any { return props[name].(map[string]any) }
			checks := []struct {
				what string
				got  any
				want string
			}{
				{"hull enum", prop("hull")["enum"], `["Wood","Steel","Fibreglass"]`},
				{"dock pattern", prop("dock")["pattern"], `"^[a-z0-9-]*$"`},
				{"dock maxLength", prop("dock")["maxLength"], `63`},
				{"lengthMeters minimum", prop("lengthMeters")["minimum"], `0`},
				{"sails maximum", prop("sails")["maximum"], `20`},
				{"crew maxItems", prop("crew")["maxItems"], `12`},
				{"contact format", prop("contact")["format"], `"email"`},
				{"rules", spec["x-kubernetes-validations"], `[{"fieldPath":".sails","message":"a boat carries at most one sail per metre of length","rule":"!has(self.sails) || self.sails \u003c= self.lengthMeters"},` +
					`{"message":"hull cannot be changed","reason":"FieldValueForbidden","rule":"!has(oldSelf.hull) || has(self.hull) \u0026\u0026 self.hull == oldSelf.hull"}]`},
			}
			for _, c := range checks {
				got, _ := json.Marshal(c.got)
				if string(got) != c.want {
					t.Errorf("/openapi/%s BoatSpec %s: %s, want %s", doc, c.what, got, c.want)
				}
			}
			if doc == "v3" { // /openapi/v2 publishes no defaults
				if got, _ := json.Marshal(prop("hull")["default"]); string(got) != `"Fibreglass"` {
					t.Errorf("/openapi/v3 BoatSpec hull default: %s", got)
				}
			}
			dock := definition(t, defs, ".v1alpha1.DockSpec")["properties"].(map[string]any)
			if got, _ := json.Marshal(dock["amenities"].(map[string]any)["maxProperties"]); string(got) != "16" {
				t.Errorf("/openapi/%s DockSpec amenities maxProperties: %s", doc, got)
			}
		}
	})
}

// checkInvalid checks that err is one 422 Invalid for kind/name whose causes are want.
// rulesNotChecked is the cause a CRD adds when schema errors keep its CEL rules from running.
const rulesNotChecked = `<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`

func checkInvalid(t *testing.T, err error, kind, name string, want []string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want 422 Invalid, got %v", err)
	}
	st := err.(apierrors.APIStatus).Status()
	if st.Details == nil || st.Details.Kind != kind || st.Details.Name != name {
		t.Errorf("details: %+v", st.Details)
	}
	var got []string
	for _, c := range st.Details.Causes {
		f := c.Field
		if f == "" {
			f = "<nil>"
		}
		got = append(got, f+": "+c.Message)
	}
	slices.Sort(got)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("causes:\n\t%s\nwant:\n\t%s\n(message: %s)", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"), st.Message)
	}
}

func getJSON(t *testing.T, cfg *rest.Config, path string, into any) {
	t.Helper()
	code, body := httpGet(t, cfg, path)
	if code != 200 {
		t.Fatalf("GET %s: %d %.500s", path, code, body)
	}
	if err := json.Unmarshal(body, into); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

func definition(t *testing.T, defs map[string]map[string]any, suffix string) map[string]any {
	t.Helper()
	for name, d := range defs {
		if strings.HasSuffix(name, suffix) {
			return d
		}
	}
	t.Fatalf("no definition *%s", suffix)
	return nil
}

// serverPID returns the process id of the server `aagen up` runs: its child.
func serverPID(t *testing.T, up *upProcess) int {
	t.Helper()
	pid := up.cmd.Process.Pid
	// The child is listed under the thread that started it (aagen up locks one).
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	for _, task := range tasks {
		if data, err := os.ReadFile(task); err == nil {
			fields = append(fields, strings.Fields(string(data))...)
		}
	}
	if len(fields) == 0 {
		t.Fatalf("aagen up (pid %d) has no child process", pid)
	}
	child, err := strconv.Atoi(fields[0])
	if err != nil {
		t.Fatal(err)
	}
	return child
}

// cpuTicks returns the CPU time (user and system, in clock ticks) process pid has used.
func cpuTicks(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name, which is in parentheses and may hold spaces.
	rest := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	utime, err1 := strconv.ParseInt(rest[11], 10, 64)
	stime, err2 := strconv.ParseInt(rest[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("parsing /proc/%d/stat: %v %v", pid, err1, err2)
	}
	return utime + stime
}

// protobufBoat is the protobuf body of a Boat (field numbers from the example's
// zz_generated.protobuf-numbers.txt: metadata 1, spec 2; spec.dock 1, lengthMeters 2,
// crew 3) with crew empty crew entries.
func protobufBoat(ns, name string, crew int) []byte {
	meta := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), name)
	meta = protowire.AppendString(protowire.AppendTag(meta, 3, protowire.BytesType), ns)
	spec := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "north")
	spec = protowire.AppendVarint(protowire.AppendTag(spec, 2, protowire.VarintType), 4)
	spec = slices.Grow(spec, 2*crew)
	for range crew {
		spec = protowire.AppendString(protowire.AppendTag(spec, 3, protowire.BytesType), "")
	}
	raw := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), meta)
	raw = protowire.AppendBytes(protowire.AppendTag(raw, 2, protowire.BytesType), spec)
	typeMeta := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "marina.example.com/v1alpha1")
	typeMeta = protowire.AppendString(protowire.AppendTag(typeMeta, 2, protowire.BytesType), "Boat")
	out := append([]byte("k8s\x00"), protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), typeMeta)...)
	return protowire.AppendBytes(protowire.AppendTag(out, 2, protowire.BytesType), raw)
}

// postProtobuf sends body as a protobuf create to path and returns the status and the
// (JSON) answer.
func postProtobuf(t *testing.T, cfg *rest.Config, path string, body []byte) (int, []byte) {
	t.Helper()
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(cfg.Host, "/")+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/vnd.kubernetes.protobuf")
	req.Header.Set("Accept", "application/json")
	resp, err := (&http.Client{Transport: rt, Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}
