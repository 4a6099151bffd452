package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

var (
	boats = schema.GroupVersionResource{Group: "marina.example.com", Version: "v1alpha1", Resource: "boats"}
	docks = schema.GroupVersionResource{Group: "marina.example.com", Version: "v1alpha1", Resource: "docks"}
)

func boat(name string, labels map[string]any, length int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "marina.example.com/v1alpha1",
		"kind":       "Boat",
		"metadata":   map[string]any{"name": name, "labels": labels},
		"spec":       map[string]any{"dock": "north", "lengthMeters": length},
	}}
}

// TestLocalServer generates the example into a temporary module, runs it with `aagen up`
// and checks what kubectl and client-go users rely on.
func TestLocalServer(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata/example"), dir, nil)
	up := startUp(t, dir, 20*time.Minute)
	cfg := up.restConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dyn := dynamic.NewForConfigOrDie(cfg)
	ns := "harbour"
	bc := dyn.Resource(boats).Namespace(ns)

	t.Run("discovery", func(t *testing.T) {
		dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
		list, err := dc.ServerResourcesForGroupVersion("marina.example.com/v1alpha1")
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]struct {
			namespaced bool
			short      string
			verbs      string
		}{
			"boats":        {true, "bt", "create,delete,deletecollection,get,list,patch,update,watch"},
			"boats/status": {true, "", "get,patch,update"},
			"docks":        {false, "dk", "create,delete,deletecollection,get,list,patch,update,watch"},
		}
		got := map[string]bool{}
		for _, r := range list.APIResources {
			got[r.Name] = true
			w, ok := want[r.Name]
			if !ok {
				t.Errorf("unexpected resource %s", r.Name)
				continue
			}
			verbs := append([]string(nil), r.Verbs...)
			slices.Sort(verbs)
			if r.Namespaced != w.namespaced || strings.Join(r.ShortNames, ",") != w.short || strings.Join(verbs, ",") != w.verbs {
				t.Errorf("%s: namespaced=%v short=%v verbs=%v", r.Name, r.Namespaced, r.ShortNames, verbs)
			}
			if !strings.Contains(r.Name, "/") && (strings.Join(r.Categories, ",") != "marina" || r.SingularName == "") {
				t.Errorf("%s: categories=%v singular=%q", r.Name, r.Categories, r.SingularName)
			}
		}
		for name := range want {
			if !got[name] {
				t.Errorf("discovery lacks %s", name)
			}
		}
	})

	var created *unstructured.Unstructured
	t.Run("create get list", func(t *testing.T) {
		var err error
		created, err = bc.Create(ctx, boat("aurora", map[string]any{"rig": "sloop"}, 12), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if created.GetGeneration() != 1 || created.GetResourceVersion() == "" || created.GetUID() == "" {
			t.Errorf("create: generation=%d rv=%q uid=%q", created.GetGeneration(), created.GetResourceVersion(), created.GetUID())
		}
		if _, err := bc.Create(ctx, boat("borealis", map[string]any{"rig": "ketch"}, 15), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := bc.Get(ctx, "aurora", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l, _, _ := unstructured.NestedInt64(got.Object, "spec", "lengthMeters"); l != 12 {
			t.Errorf("get: lengthMeters=%d", l)
		}
		list, err := bc.List(ctx, metav1.ListOptions{LabelSelector: "rig=sloop"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 || list.Items[0].GetName() != "aurora" {
			t.Errorf("label selector rig=sloop: %d items", len(list.Items))
		}
		all, err := dyn.Resource(boats).List(ctx, metav1.ListOptions{})
		if err != nil || len(all.Items) != 2 {
			t.Errorf("list across namespaces: %v items, err %v", len(all.Items), err)
		}
		if _, err := bc.Get(ctx, "nonexistent", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get unknown: want 404, got %v", err)
		}
		bad := boat("Not_A_Name", nil, 1)
		if _, err := bc.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("invalid name: want 422, got %v", err)
		}
	})

	t.Run("cluster scoped", func(t *testing.T) {
		d := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "marina.example.com/v1alpha1", "kind": "Dock",
			"metadata": map[string]any{"name": "north"}, "spec": map[string]any{"berths": int64(8)},
		}}
		if _, err := dyn.Resource(docks).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := dyn.Resource(docks).Get(ctx, "north", metav1.GetOptions{})
		if err != nil || got.GetNamespace() != "" {
			t.Fatalf("get dock: %v ns=%q", err, got.GetNamespace())
		}
	})

	t.Run("watch", func(t *testing.T) {
		list, err := bc.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := bc.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bc.Create(ctx, boat("cygnus", nil, 9), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		mid, err := bc.Patch(ctx, "cygnus", types.MergePatchType, []byte(`{"spec":{"lengthMeters":10}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := bc.Delete(ctx, "cygnus", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		want := []watch.EventType{watch.Added, watch.Modified, watch.Deleted}
		for i, typ := range want {
			select {
			case ev := <-w.ResultChan():
				if ev.Type != typ || ev.Object.(*unstructured.Unstructured).GetName() != "cygnus" {
					t.Fatalf("event %d: got %s %v, want %s cygnus", i, ev.Type, ev.Object, typ)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("event %d (%s) did not arrive", i, typ)
			}
		}
		w.Stop()
		// Resume from the resourceVersion of the update: only the delete follows.
		w2, err := bc.Watch(ctx, metav1.ListOptions{ResourceVersion: mid.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		defer w2.Stop()
		select {
		case ev := <-w2.ResultChan():
			if ev.Type != watch.Deleted || ev.Object.(*unstructured.Unstructured).GetName() != "cygnus" {
				t.Fatalf("resumed watch: got %s %v, want DELETED cygnus", ev.Type, ev.Object)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("resumed watch delivered nothing")
		}
	})

	t.Run("update conflict and patches", func(t *testing.T) {
		cur, err := bc.Get(ctx, "aurora", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stale := cur.DeepCopy()
		_ = unstructured.SetNestedField(cur.Object, int64(13), "spec", "lengthMeters")
		updated, err := bc.Update(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if updated.GetGeneration() != 2 {
			t.Errorf("spec change: generation=%d, want 2", updated.GetGeneration())
		}
		_ = unstructured.SetNestedField(stale.Object, int64(99), "spec", "lengthMeters")
		if _, err := bc.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			t.Errorf("stale update: want 409, got %v", err)
		}
		p, err := bc.Patch(ctx, "aurora", types.MergePatchType, []byte(`{"metadata":{"labels":{"color":"red"}}}`), metav1.PatchOptions{})
		if err != nil || p.GetLabels()["color"] != "red" || p.GetGeneration() != 2 {
			t.Errorf("merge patch: %v labels=%v generation=%d", err, p.GetLabels(), p.GetGeneration())
		}
		p, err = bc.Patch(ctx, "aurora", types.JSONPatchType, []byte(`[{"op":"replace","path":"/spec/dock","value":"south"}]`), metav1.PatchOptions{})
		if dock, _, _ := unstructured.NestedString(p.Object, "spec", "dock"); err != nil || dock != "south" || p.GetGeneration() != 3 {
			t.Errorf("json patch: %v dock=%q generation=%d", err, dock, p.GetGeneration())
		}
	})

	t.Run("status subresource", func(t *testing.T) {
		// Writes to the main resource ignore status.
		cur, err := bc.Get(ctx, "aurora", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(cur.Object, "Berthed", "status", "phase")
		out, err := bc.Update(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if phase, _, _ := unstructured.NestedString(out.Object, "status", "phase"); phase != "" {
			t.Errorf("main resource update set status.phase=%q", phase)
		}
		// Writes to /status ignore spec.
		_ = unstructured.SetNestedField(out.Object, "Berthed", "status", "phase")
		_ = unstructured.SetNestedField(out.Object, int64(1), "spec", "lengthMeters")
		st, err := bc.UpdateStatus(ctx, out, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		phase, _, _ := unstructured.NestedString(st.Object, "status", "phase")
		length, _, _ := unstructured.NestedInt64(st.Object, "spec", "lengthMeters")
		if phase != "Berthed" || length != 13 {
			t.Errorf("status update: phase=%q lengthMeters=%d (want Berthed, 13)", phase, length)
		}
		ps, err := bc.Patch(ctx, "aurora", types.MergePatchType, []byte(`{"status":{"berth":4},"spec":{"dock":"east"}}`), metav1.PatchOptions{}, "status")
		if err != nil {
			t.Fatal(err)
		}
		berth, _, _ := unstructured.NestedInt64(ps.Object, "status", "berth")
		dock, _, _ := unstructured.NestedString(ps.Object, "spec", "dock")
		if berth != 4 || dock != "south" {
			t.Errorf("status patch: berth=%d dock=%q", berth, dock)
		}
		// Create ignores status too.
		b := boat("delta", nil, 7)
		_ = unstructured.SetNestedField(b.Object, "Departed", "status", "phase")
		c, err := bc.Create(ctx, b, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if phase, _, _ := unstructured.NestedString(c.Object, "status", "phase"); phase != "" {
			t.Errorf("create kept status.phase=%q", phase)
		}
	})

	t.Run("delete", func(t *testing.T) {
		if err := bc.Delete(ctx, "delta", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := bc.Get(ctx, "delta", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("after delete: want 404, got %v", err)
		}
		if err := bc.Delete(ctx, "delta", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("delete twice: want 404, got %v", err)
		}
	})

	t.Run("authentication", func(t *testing.T) {
		anon := rest.AnonymousClientConfig(cfg)
		code := statusOf(t, anon, "/apis/marina.example.com/v1alpha1/boats")
		if code != http.StatusUnauthorized {
			t.Errorf("no credentials: got %d, want 401", code)
		}
		insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := insecure.Get(cfg.Host + "/apis/marina.example.com/v1alpha1/boats")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("no client certificate: got %d, want 401", resp.StatusCode)
			}
		}
		plain := strings.Replace(cfg.Host, "https://", "http://", 1)
		if resp, err := http.Get(plain + "/apis"); err == nil {
			resp.Body.Close()
			if resp.StatusCode < 400 {
				t.Errorf("plain HTTP answered %d", resp.StatusCode)
			}
		}
	})

	t.Run("bad requests", func(t *testing.T) { badRequests(t, cfg, filepath.Join(dir, ".aagen", "local")) })

	t.Run("kubectl", func(t *testing.T) {
		manifest := "apiVersion: marina.example.com/v1alpha1\nkind: Boat\nmetadata:\n  name: echo\n  namespace: harbour\nspec:\n  dock: west\n  lengthMeters: 8\n"
		if out, err := kubectl(t, up.kubeconfig, manifest, "apply", "-f", "-"); err != nil || !strings.Contains(out, "boat.marina.example.com/echo created") {
			t.Fatalf("kubectl apply: %v\n%s", err, out)
		}
		out, err := kubectl(t, up.kubeconfig, "", "get", "bt", "-n", ns)
		if err != nil || !strings.Contains(out, "echo") || !strings.Contains(out, "aurora") {
			t.Errorf("kubectl get bt: %v\n%s", err, out)
		}
		out, err = kubectl(t, up.kubeconfig, "", "get", "marina", "-A")
		if err != nil || !strings.Contains(out, "dock.marina.example.com/north") {
			t.Errorf("kubectl get marina (category): %v\n%s", err, out)
		}
		out, err = kubectl(t, up.kubeconfig, "", "get", "boat", "echo", "-n", ns, "-o", "jsonpath={.spec.dock}")
		if err != nil || out != "west" {
			t.Errorf("kubectl get -o jsonpath: %v %q", err, out)
		}
		unknown := strings.Replace(manifest, "  lengthMeters: 8\n", "  lengthMeters: 8\n  colour: red\n", 1)
		if out, err := kubectl(t, up.kubeconfig, unknown, "apply", "-f", "-"); err == nil || !strings.Contains(out, "colour") {
			t.Errorf("kubectl apply with an unknown field: want it rejected naming the field, got %v\n%s", err, out)
		}
		out, err = kubectl(t, up.kubeconfig, "", "explain", "boat.spec.dock")
		if err != nil || !strings.Contains(out, "Dock is the name of the Dock the boat berths at.") {
			t.Errorf("kubectl explain: %v\n%s", err, out)
		}
		if out, err := kubectl(t, up.kubeconfig, "", "delete", "boat", "echo", "-n", ns); err != nil {
			t.Errorf("kubectl delete: %v\n%s", err, out)
		}
	})

	t.Run("generated tree is clean", func(t *testing.T) {
		if out := run(t, dir, "gofmt", "-l", "."); strings.TrimSpace(out) != "" {
			t.Errorf("gofmt -l lists files:\n%s", out)
		}
		run(t, dir, "go", "vet", "./...")
		// Exits non-zero (failing run) when anything is stale.
		run(t, dir, aagen(t), "generate", "--verify", "./pkg/apis/...")
	})

	// Data survives a restart: stop with Ctrl-C and start again on the same directory.
	up.stop(t)
	up2 := startUp(t, dir, 5*time.Minute)
	dyn2 := dynamic.NewForConfigOrDie(up2.restConfig(t))
	got, err := dyn2.Resource(boats).Namespace(ns).Get(ctx, "aurora", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if phase, _, _ := unstructured.NestedString(got.Object, "status", "phase"); phase != "Berthed" || got.GetGeneration() != 3 {
		t.Errorf("after restart: phase=%q generation=%d", phase, got.GetGeneration())
	}
	if _, err := os.Stat(filepath.Join(dir, ".aagen", "etcd")); err != nil {
		t.Errorf("etcd data dir: %v", err)
	}
}

func statusOf(t *testing.T, cfg *rest.Config, path string) int {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(cfg.Host + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var status metav1.Status
	_ = json.NewDecoder(resp.Body).Decode(&status)
	return resp.StatusCode
}

// TestExampleTests runs the example project's own tests (generated clientset, informers,
// listers, apply configurations and OpenAPI against an in-process server) in a fresh copy,
// as a user of the generated project would.
func TestExampleTests(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata/example"), dir, nil)
	run(t, dir, aagen(t), "generate", "./pkg/apis/...")
	out := run(t, dir, "go", "test", "-count=1", "./...")
	t.Log(tail(out, 2000))
}
