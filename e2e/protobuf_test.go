package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

const (
	mediaJSON     = "application/json"
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
)

// storedHead returns how an etcd value is encoded (mediaJSON or mediaProtobuf) and the
// apiVersion it is stored in.
func storedHead(value []byte) (mediaType, apiVersion string, err error) {
	if bytes.HasPrefix(value, []byte(cluster.ProtobufMagic)) {
		unk, err := cluster.UnwrapProtobuf(value)
		if err != nil {
			return "", "", err
		}
		return mediaProtobuf, unk.APIVersion, nil
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(value, &head); err != nil {
		return "", "", err
	}
	return mediaJSON, head.APIVersion, nil
}

// storedMediaTypes returns the media type of every stored object of the resources in the
// (stopped) server's etcd data directory, keyed "resource/namespace/name" (or "resource/name").
func storedMediaTypes(t *testing.T, ctx context.Context, dir string, resources ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for key, value := range storedValues(t, ctx, dir) {
		for _, r := range resources {
			_, rest, ok := strings.Cut(key, "/"+r+"/")
			if !ok {
				continue
			}
			mt, _, err := storedHead(value)
			if err != nil {
				t.Fatalf("%s: neither JSON nor protobuf: %v", key, err)
			}
			out[r+"/"+rest] = mt
		}
	}
	return out
}

// TestProtobufStorageReadsJSON: objects a server stored as JSON (the example run with
// --storage-media-type=application/json, as every generated server stored before
// protobuf) are read unchanged by the same server storing protobuf (its default now that
// the types have the protobuf methods), and each is rewritten as protobuf by its next
// update; the others stay JSON and readable.
func TestProtobufStorageReadsJSON(t *testing.T) {
	skipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	_, bin := buildExample(t)
	state := t.TempDir()
	etcdDir := filepath.Join(state, "etcd")
	const ns = "storage"
	start := func(extra ...string) (dynamic.Interface, func()) {
		cmd, dyn, _ := startBinary(t, bin, state, extra...)
		return dyn, func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		}
	}
	readAll := func(dyn dynamic.Interface) map[string]*unstructured.Unstructured {
		t.Helper()
		out := map[string]*unstructured.Unstructured{}
		for _, r := range []struct {
			gvr schema.GroupVersionResource
			ns  string
		}{{boats, ns}, {docks, ""}, {fleets, ns}} {
			list, err := dyn.Resource(r.gvr).Namespace(r.ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range list.Items {
				key := r.gvr.Resource + "/" + r.ns + "/" + list.Items[i].GetName()
				out[strings.Replace(key, "//", "/", 1)] = &list.Items[i]
			}
		}
		return out
	}

	// The JSON-storing server writes boats, a dock and a fleet.
	dyn, stop := start("--storage-media-type=" + mediaJSON)
	for i, name := range []string{"b-0", "b-1", "b-2"} {
		if _, err := dyn.Resource(boats).Namespace(ns).Create(ctx, boat(name, map[string]any{"e2e": "storage"}, int64(8+i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dock := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "marina.example.com/v1alpha1", "kind": "Dock",
		"metadata": map[string]any{"name": "north"}, "spec": map[string]any{"berths": int64(6), "amenities": map[string]any{"water": "yes"}}}}
	if _, err := dyn.Resource(docks).Create(ctx, dock, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fleet := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "marina.example.com/v1alpha1", "kind": "Fleet",
		"metadata": map[string]any{"name": "regatta"}, "spec": map[string]any{"replicas": int64(3), "class": "dinghy"}}}
	if _, err := dyn.Resource(fleets).Namespace(ns).Create(ctx, fleet, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := readAll(dyn)
	stop()
	want := map[string]string{"boats/storage/b-0": mediaJSON, "boats/storage/b-1": mediaJSON, "boats/storage/b-2": mediaJSON,
		"docks/north": mediaJSON, "fleets/storage/regatta": mediaJSON}
	if got := storedMediaTypes(t, ctx, etcdDir, "boats", "docks", "fleets"); !reflect.DeepEqual(got, want) {
		t.Fatalf("stored by the JSON server: %v, want %v", got, want)
	}

	// The server with its default storage reads every object as it was.
	dyn, stop = start()
	after := readAll(dyn)
	if len(after) != len(before) {
		t.Fatalf("read %d objects after the switch to protobuf storage, want %d", len(after), len(before))
	}
	for key, obj := range before {
		if !reflect.DeepEqual(after[key], obj) {
			t.Errorf("%s changed across the switch to protobuf storage:\nbefore %v\nafter  %v", key, obj, after[key])
		}
	}
	// An update of each kind, and one boat of three.
	updates := []struct {
		gvr        schema.GroupVersionResource
		ns, name   string
		value      any
		fieldsPath []string
	}{
		{boats, ns, "b-1", int64(21), []string{"spec", "lengthMeters"}},
		{docks, "", "north", int64(9), []string{"spec", "berths"}},
		{fleets, ns, "regatta", "keelboat", []string{"spec", "class"}},
	}
	for _, u := range updates {
		rc := dyn.Resource(u.gvr).Namespace(u.ns)
		obj, err := rc.Get(ctx, u.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedField(obj.Object, u.value, u.fieldsPath...); err != nil {
			t.Fatal(err)
		}
		if _, err := rc.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update %s %s: %v", u.gvr.Resource, u.name, err)
		}
	}
	stop()
	want = map[string]string{"boats/storage/b-0": mediaJSON, "boats/storage/b-1": mediaProtobuf, "boats/storage/b-2": mediaJSON,
		"docks/north": mediaProtobuf, "fleets/storage/regatta": mediaProtobuf}
	if got := storedMediaTypes(t, ctx, etcdDir, "boats", "docks", "fleets"); !reflect.DeepEqual(got, want) {
		t.Errorf("stored after the updates: %v, want %v", got, want)
	}

	// JSON and protobuf side by side, read again after a restart.
	dyn, stop = start()
	defer stop()
	final := readAll(dyn)
	for _, u := range updates {
		key := strings.Replace(u.gvr.Resource+"/"+u.ns+"/"+u.name, "//", "/", 1)
		got, _, _ := unstructured.NestedFieldNoCopy(final[key].Object, u.fieldsPath...)
		if got != u.value {
			t.Errorf("%s: %s is %v after the restart, want %v", key, strings.Join(u.fieldsPath, "."), got, u.value)
		}
	}
	for _, key := range []string{"boats/storage/b-0", "boats/storage/b-2"} {
		if !reflect.DeepEqual(final[key], before[key]) {
			t.Errorf("%s (still JSON) changed: before %v, after %v", key, before[key], final[key])
		}
	}
}

// protobufClient is a program in the generated project that uses the generated clientset
// in protobuf: with "strict", a config that sends and accepts protobuf only; with
// "default", the clientset's own choice (protobuf with a JSON fallback). For every kind it
// watches, creates (but DockOccupancy, which is read-only and computed), updates a Boat,
// gets, lists and waits for the watch events; it prints the objects it got and the
// Content-Type of every response.
const protobufClient = `package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	marinav1alpha1 "example.com/marina/pkg/apis/marina/v1alpha1"
	"example.com/marina/pkg/generated/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
)

type recorder struct {
	next  http.RoundTripper
	mu    sync.Mutex
	types map[string]int
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err == nil {
		r.mu.Lock()
		r.types[resp.Header.Get("Content-Type")]++
		r.mu.Unlock()
	}
	return resp, err
}

func check(err error, what string) {
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		os.Exit(1)
	}
}

// added waits for the ADDED event of name on w.
func added(w watch.Interface, name string) {
	timeout := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				check(fmt.Errorf("watch closed"), "watch for "+name)
			}
			if m, ok := ev.Object.(metav1.Object); ok && m.GetName() == name && ev.Type == watch.Added {
				return
			}
			if ev.Type == watch.Error {
				check(fmt.Errorf("%v", ev.Object), "watch for "+name)
			}
		case <-timeout:
			check(fmt.Errorf("no ADDED event"), "watch for "+name)
		}
	}
}

func main() {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Args[1])
	check(err, "kubeconfig")
	ns, mode := os.Args[2], os.Args[3]
	if mode == "strict" {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
	}
	rec := &recorder{types: map[string]int{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec })
	m := versioned.NewForConfigOrDie(cfg).MarinaV1alpha1()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	labels := map[string]string{"e2e": "protobuf-" + mode}
	sel := metav1.ListOptions{LabelSelector: "e2e=protobuf-" + mode}
	name := "proto-" + mode

	bw, err := m.Boats(ns).Watch(ctx, sel)
	check(err, "watch boats")
	dw, err := m.Docks().Watch(ctx, sel)
	check(err, "watch docks")
	fw, err := m.Fleets(ns).Watch(ctx, sel)
	check(err, "watch fleets")
	ow, err := m.DockOccupancies().Watch(ctx, metav1.ListOptions{})
	check(err, "watch dockoccupancies")

	_, err = m.Docks().Create(ctx, &marinav1alpha1.Dock{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: marinav1alpha1.DockSpec{Berths: 4, Depth: "5m", Amenities: map[string]string{"water": "yes", "power": "16A"}}}, metav1.CreateOptions{})
	check(err, "create dock")
	sails, replicas := int32(3), int32(2)
	b, err := m.Boats(ns).Create(ctx, &marinav1alpha1.Boat{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: marinav1alpha1.BoatSpec{Dock: name, LengthMeters: 11, Crew: []string{"ann", "bo"}, Sails: &sails, Contact: "ann@example.com"}}, metav1.CreateOptions{})
	check(err, "create boat")
	b.Spec.Crew = append(b.Spec.Crew, "cy")
	_, err = m.Boats(ns).Update(ctx, b, metav1.UpdateOptions{})
	check(err, "update boat")
	_, err = m.Fleets(ns).Create(ctx, &marinav1alpha1.Fleet{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: marinav1alpha1.FleetSpec{Replicas: &replicas, Class: "dinghy"}}, metav1.CreateOptions{})
	check(err, "create fleet")

	objects := map[string]any{}
	boat, err := m.Boats(ns).Get(ctx, name, metav1.GetOptions{})
	check(err, "get boat")
	objects["boats/"+name] = boat
	dock, err := m.Docks().Get(ctx, name, metav1.GetOptions{})
	check(err, "get dock")
	objects["docks/"+name] = dock
	fleet, err := m.Fleets(ns).Get(ctx, name, metav1.GetOptions{})
	check(err, "get fleet")
	objects["fleets/"+name] = fleet
	// The occupancy follows the boat through the server's informers.
	for {
		occ, err := m.DockOccupancies().Get(ctx, name, metav1.GetOptions{})
		if err == nil && occ.Occupied == 1 {
			objects["dockoccupancies/"+name] = occ
			break
		}
		if ctx.Err() != nil {
			check(fmt.Errorf("%v, %+v", err, occ), "occupancy of the dock")
		}
		time.Sleep(200 * time.Millisecond)
	}

	lists := map[string][]string{}
	bl, err := m.Boats(ns).List(ctx, sel)
	check(err, "list boats")
	for _, i := range bl.Items {
		lists["boats"] = append(lists["boats"], i.Name)
	}
	dl, err := m.Docks().List(ctx, sel)
	check(err, "list docks")
	for _, i := range dl.Items {
		lists["docks"] = append(lists["docks"], i.Name)
	}
	fl, err := m.Fleets(ns).List(ctx, sel)
	check(err, "list fleets")
	for _, i := range fl.Items {
		lists["fleets"] = append(lists["fleets"], i.Name)
	}
	ol, err := m.DockOccupancies().List(ctx, metav1.ListOptions{})
	check(err, "list dockoccupancies")
	for _, i := range ol.Items {
		if i.Name == name {
			lists["dockoccupancies"] = append(lists["dockoccupancies"], i.Name)
		}
	}

	added(bw, name)
	added(dw, name)
	added(fw, name)
	added(ow, name)
	bw.Stop()
	dw.Stop()
	fw.Stop()
	ow.Stop()

	rec.mu.Lock()
	defer rec.mu.Unlock()
	check(json.NewEncoder(os.Stdout).Encode(map[string]any{"objects": objects, "lists": lists, "responses": rec.types}), "output")
}
`

// protobufClients runs protobufClient against kube-apiserver (so through the aggregator)
// in both modes and checks that every answer was protobuf and that kubectl (JSON) reads
// the same objects.
func protobufClients(t *testing.T, cp *cluster.ControlPlane, dir, ns string) {
	p := filepath.Join(dir, "cmd", "protobufclient")
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "main.go"), []byte(protobufClient), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "protobufclient")
	run(t, dir, "go", "build", "-o", bin, "./cmd/protobufclient")
	for _, mode := range []string{"strict", "default"} {
		t.Run(mode, func(t *testing.T) {
			out := run(t, dir, bin, cp.Kubeconfig, ns, mode)
			var got struct {
				Objects   map[string]map[string]any `json:"objects"`
				Lists     map[string][]string       `json:"lists"`
				Responses map[string]int            `json:"responses"`
			}
			if err := json.Unmarshal([]byte(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]), &got); err != nil {
				t.Fatalf("output of the protobuf client: %v\n%s", err, out)
			}
			name := "proto-" + mode
			var types []string
			for ct := range got.Responses {
				types = append(types, ct)
				if ct != mediaProtobuf && ct != mediaProtobuf+";stream=watch" {
					t.Errorf("%d answers to the protobuf client were %q, want protobuf", got.Responses[ct], ct)
				}
			}
			sort.Strings(types)
			if len(types) != 2 {
				t.Errorf("answers to the protobuf client were %v, want %s and %s;stream=watch", types, mediaProtobuf, mediaProtobuf)
			}
			for _, r := range []string{"boats", "docks", "fleets", "dockoccupancies"} {
				if l := got.Lists[r]; len(l) != 1 || l[0] != name {
					t.Errorf("list of %s in protobuf: %v, want [%s]", r, l, name)
				}
				obj, ok := got.Objects[r+"/"+name]
				if !ok {
					t.Errorf("the protobuf client got no %s", r)
					continue
				}
				args := []string{"get", r, name, "-o", "json", "--show-managed-fields"}
				if r == "boats" || r == "fleets" {
					args = append(args, "-n", ns)
				}
				kc, err := kubectl(t, cp.Kubeconfig, "", args...)
				if err != nil {
					t.Fatalf("kubectl %v: %v\n%s", args, err, kc)
				}
				var viaJSON map[string]any
				if err := json.Unmarshal([]byte(kc), &viaJSON); err != nil {
					t.Fatal(err)
				}
				for _, m := range []map[string]any{obj, viaJSON} {
					delete(m, "apiVersion")
					delete(m, "kind")
				}
				if !reflect.DeepEqual(obj, viaJSON) {
					a, _ := json.Marshal(obj)
					b, _ := json.Marshal(viaJSON)
					t.Errorf("%s %s read differently:\nprotobuf client %s\nkubectl         %s", r, name, a, b)
				}
			}
			if crew, _, _ := unstructured.NestedStringSlice(got.Objects["boats/"+name], "spec", "crew"); !reflect.DeepEqual(crew, []string{"ann", "bo", "cy"}) {
				t.Errorf("boat's crew after the protobuf update: %v", crew)
			}
		})
	}
}
