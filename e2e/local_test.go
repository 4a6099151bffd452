package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
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

	"github.com/aagen-dev/aagen/e2e/cluster"
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
	runsTools(t)
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
			"boats":         {true, "bt", "create,delete,deletecollection,get,list,patch,update,watch"},
			"boats/status":  {true, "", "get,patch,update"},
			"boats/depart":  {true, "", "create"},
			"boats/berth":   {true, "", "get,patch,update"},
			"boats/log":     {true, "", "get"},
			"boats/attach":  {true, "", "create,get"},
			"docks":         {false, "dk", "create,delete,deletecollection,get,list,patch,update,watch"},
			"fleets":        {true, "fl", "create,delete,deletecollection,get,list,patch,update,watch"},
			"fleets/status": {true, "", "get,patch,update"},
			"fleets/scale":  {true, "", "get,patch,update"},
			// Served from the example's own backend (+aagen:backend): read-only.
			"dockoccupancies": {false, "occ", "get,list,watch"},
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

		// Aggregated discovery (what kubectl and client-go ask for first) lists the group,
		// its resources with their subresources, scope, verbs and short names in one document.
		client, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, cfg.Host+"/apis", nil)
		req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, "as=APIGroupDiscoveryList") {
			t.Fatalf("aggregated discovery: Content-Type %q", ct)
		}
		var agg apidiscoveryv2.APIGroupDiscoveryList
		if err := json.Unmarshal(body, &agg); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, g := range agg.Items {
			if g.Name != "marina.example.com" {
				continue
			}
			found = true
			if len(g.Versions) != 1 || g.Versions[0].Version != "v1alpha1" {
				t.Fatalf("aggregated discovery versions: %+v", g.Versions)
			}
			res := map[string]apidiscoveryv2.APIResourceDiscovery{}
			for _, r := range g.Versions[0].Resources {
				res[r.Resource] = r
			}
			fl := res["fleets"]
			var subs []string
			for _, sr := range fl.Subresources {
				subs = append(subs, sr.Subresource)
			}
			slices.Sort(subs)
			if fl.Scope != apidiscoveryv2.ScopeNamespace || strings.Join(fl.ShortNames, ",") != "fl" || strings.Join(subs, ",") != "scale,status" ||
				res["docks"].Scope != apidiscoveryv2.ScopeCluster || res["boats"].ResponseKind == nil || res["boats"].ResponseKind.Kind != "Boat" {
				t.Errorf("aggregated discovery resources: %+v", g.Versions[0].Resources)
			}
		}
		if !found {
			t.Errorf("aggregated discovery lacks marina.example.com:\n%s", body)
		}

		// Health endpoints, each with its checks (etcd among them).
		for _, path := range []string{"/livez", "/readyz", "/healthz", "/livez?verbose", "/readyz?verbose"} {
			resp, err := client.Get(cfg.Host + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s: %d %s", path, resp.StatusCode, body)
			}
			if strings.HasSuffix(path, "verbose") && !strings.Contains(string(body), "[+]etcd ok") {
				t.Errorf("%s lacks the etcd check:\n%s", path, body)
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
		// The TLS handshake without a client certificate succeeds (the server asks for
		// one, it does not require it); the request then gets 401.
		resp, err := insecure.Get(cfg.Host + "/apis/marina.example.com/v1alpha1/boats")
		if err != nil {
			t.Fatalf("no client certificate: %v; want a 401 answer", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("no client certificate: got %d, want 401", resp.StatusCode)
		}
		// Plain HTTP to the TLS port: Go's TLS server answers 400 and nothing else.
		plain := strings.Replace(cfg.Host, "https://", "http://", 1)
		resp, err = http.Get(plain + "/apis")
		if err != nil {
			t.Fatalf("plain HTTP: %v; want a 400 answer", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "Client sent an HTTP request to an HTTPS server") {
			t.Errorf("plain HTTP answered %d %q, want 400 \"Client sent an HTTP request to an HTTPS server\"", resp.StatusCode, body)
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

	// kubectl get shows NAME and the +kubebuilder:printcolumn columns of priority 0 (no AGE,
	// as for a CRD with printer columns); -o wide adds the others.
	t.Run("printer columns", func(t *testing.T) {
		out, err := kubectl(t, up.kubeconfig, "", "get", "boats", "-n", ns)
		if err != nil {
			t.Fatalf("kubectl get boats: %v\n%s", err, out)
		}
		rows := table(out)
		if got := strings.Join(rows["NAME"], " "); got != "DOCK LENGTH PHASE" {
			t.Errorf("kubectl get boats: header NAME %s, want NAME DOCK LENGTH PHASE\n%s", got, out)
		}
		// aurora is at dock south, 13 m long and berthed; borealis has no phase yet.
		if got := cells(rows, "aurora", 3); got != "south 13 Berthed" {
			t.Errorf("aurora row %q\n%s", got, out)
		}
		if got := cells(rows, "borealis", 3); got != "north 15 " {
			t.Errorf("borealis row %q\n%s", got, out)
		}
		out, err = kubectl(t, up.kubeconfig, "", "get", "boats", "-n", ns, "-o", "wide")
		rows = table(out)
		if got := strings.Join(rows["NAME"], " "); err != nil || got != "DOCK LENGTH PHASE BERTH" {
			t.Errorf("kubectl get boats -o wide: %v, header NAME %s\n%s", err, got, out)
		}
		if got := cells(rows, "aurora", 4); got != "south 13 Berthed 4" {
			t.Errorf("aurora wide row %q\n%s", got, out)
		}
		out, err = kubectl(t, up.kubeconfig, "", "get", "docks")
		rows = table(out)
		if err != nil || strings.Join(rows["NAME"], " ") != "BERTHS" || cells(rows, "north", 1) != "8" {
			t.Errorf("kubectl get docks: %v\n%s", err, out)
		}
		// The Table itself, as client-go asks for it.
		client, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/apis/marina.example.com/v1alpha1/namespaces/harbour/boats/aurora", nil)
		req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var tbl metav1.Table
		if err := json.NewDecoder(resp.Body).Decode(&tbl); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("table: %d %v", resp.StatusCode, err)
		}
		var cols []string
		for _, c := range tbl.ColumnDefinitions {
			cols = append(cols, fmt.Sprintf("%s:%s:%d", c.Name, c.Type, c.Priority))
		}
		if got := strings.Join(cols, " "); got != "Name:string:0 Dock:string:0 Length:integer:0 Phase:string:0 Berth:integer:1" {
			t.Errorf("table columns %s", got)
		}
		if len(tbl.Rows) != 1 || fmt.Sprint(tbl.Rows[0].Cells[:5]) != "[aurora south 13 Berthed 4]" {
			t.Errorf("table rows %+v", tbl.Rows)
		}
	})

	// +kubebuilder:selectablefield:JSONPath=.spec.dock makes spec.dock a field selector.
	t.Run("field selectors", func(t *testing.T) {
		// What the selectors must return, filtered here.
		all, err := bc.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var north, other []string
		for _, b := range all.Items {
			if dock, _, _ := unstructured.NestedString(b.Object, "spec", "dock"); dock == "north" {
				north = append(north, "boat.marina.example.com/"+b.GetName())
			} else {
				other = append(other, "boat.marina.example.com/"+b.GetName())
			}
		}
		if !slices.Contains(north, "boat.marina.example.com/borealis") || !slices.Contains(other, "boat.marina.example.com/aurora") {
			t.Fatalf("boats at north %v, elsewhere %v", north, other)
		}
		out, err := kubectl(t, up.kubeconfig, "", "get", "boats", "-n", ns, "--field-selector", "spec.dock=north", "-o", "name")
		if err != nil || strings.Fields(out) == nil || strings.Join(strings.Fields(out), " ") != strings.Join(north, " ") {
			t.Errorf("kubectl get boats --field-selector spec.dock=north: %v, want %v\n%s", err, north, out)
		}
		out, err = kubectl(t, up.kubeconfig, "", "get", "boats", "-A", "--field-selector", "spec.dock!=north,metadata.namespace=harbour", "-o", "name")
		if err != nil || strings.Join(strings.Fields(out), " ") != strings.Join(other, " ") {
			t.Errorf("kubectl get boats --field-selector spec.dock!=north: %v, want %v\n%s", err, other, out)
		}
		out, err = kubectl(t, up.kubeconfig, "", "get", "boats", "-n", ns, "--field-selector", "metadata.name=aurora", "-o", "name")
		if err != nil || strings.TrimSpace(out) != "boat.marina.example.com/aurora" {
			t.Errorf("kubectl get boats --field-selector metadata.name=aurora: %v\n%s", err, out)
		}
		out, err = kubectl(t, up.kubeconfig, "", "get", "boats", "-n", ns, "--field-selector", "spec.colour=red")
		if err == nil || !strings.Contains(out, "BadRequest") || !strings.Contains(out, "field label not supported: spec.colour") ||
			!strings.Contains(out, "metadata.name, metadata.namespace, spec.dock") {
			t.Errorf("kubectl get boats --field-selector spec.colour=red: want 400 naming the supported fields, got %v\n%s", err, out)
		}
		if _, err := bc.List(ctx, metav1.ListOptions{FieldSelector: "spec.lengthMeters=13"}); !apierrors.IsBadRequest(err) {
			t.Errorf("list with an unselectable field: want 400, got %v", err)
		}
		if _, err := dyn.Resource(docks).List(ctx, metav1.ListOptions{FieldSelector: "spec.berths=8"}); !apierrors.IsBadRequest(err) {
			t.Errorf("docks have no selectable fields: want 400, got %v", err)
		}

		// Watches filter on the field too: only the boat at dock west arrives.
		list, err := bc.List(ctx, metav1.ListOptions{FieldSelector: "spec.dock=west"})
		if err != nil || len(list.Items) != 0 {
			t.Fatalf("list spec.dock=west: %v %d items", err, len(list.Items))
		}
		w, err := bc.Watch(ctx, metav1.ListOptions{FieldSelector: "spec.dock=west", ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		east, west := boat("foxtrot", nil, 5), boat("golf", nil, 6)
		_ = unstructured.SetNestedField(east.Object, "east", "spec", "dock")
		_ = unstructured.SetNestedField(west.Object, "west", "spec", "dock")
		for _, b := range []*unstructured.Unstructured{east, west} {
			if _, err := bc.Create(ctx, b, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			defer func(name string) { _ = bc.Delete(ctx, name, metav1.DeleteOptions{}) }(b.GetName())
		}
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Added || ev.Object.(*unstructured.Unstructured).GetName() != "golf" {
				t.Errorf("watch spec.dock=west: got %s %v, want ADDED golf", ev.Type, ev.Object)
			}
		case <-time.After(30 * time.Second):
			t.Error("watch spec.dock=west delivered nothing")
		}
	})

	// +kubebuilder:subresource:scale serves /scale as autoscaling/v1 Scale.
	t.Run("scale subresource", func(t *testing.T) {
		fleets := schema.GroupVersionResource{Group: "marina.example.com", Version: "v1alpha1", Resource: "fleets"}
		fc := dyn.Resource(fleets).Namespace(ns)
		manifest := "apiVersion: marina.example.com/v1alpha1\nkind: Fleet\nmetadata:\n  name: armada\n  namespace: harbour\nspec:\n  replicas: 1\n  class: dinghy\n"
		if out, err := kubectl(t, up.kubeconfig, manifest, "apply", "-f", "-"); err != nil {
			t.Fatalf("kubectl apply fleet: %v\n%s", err, out)
		}
		dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
		resources, err := dc.ServerResourcesForGroupVersion("marina.example.com/v1alpha1")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range resources.APIResources {
			if r.Name == "fleets/scale" && (r.Group != "autoscaling" || r.Version != "v1" || r.Kind != "Scale") {
				t.Errorf("discovery of fleets/scale: %s/%s %s, want autoscaling/v1 Scale", r.Group, r.Version, r.Kind)
			}
		}

		out, err := kubectl(t, up.kubeconfig, "", "scale", "fleet/armada", "-n", ns, "--replicas=3")
		if err != nil || !strings.Contains(out, "fleet.marina.example.com/armada scaled") {
			t.Fatalf("kubectl scale: %v\n%s", err, out)
		}
		f, err := fc.Get(ctx, "armada", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		replicas, _, _ := unstructured.NestedInt64(f.Object, "spec", "replicas")
		class, _, _ := unstructured.NestedString(f.Object, "spec", "class")
		if replicas != 3 || class != "dinghy" || f.GetGeneration() != 2 {
			t.Errorf("after kubectl scale: replicas=%d class=%q generation=%d", replicas, class, f.GetGeneration())
		}
		// kubectl scale now owns spec.replicas (recorded in the Fleet's version).
		var owner string
		for _, e := range f.GetManagedFields() {
			if e.FieldsV1 != nil && strings.Contains(string(e.FieldsV1.Raw), `"f:replicas"`) {
				owner += e.Manager + "@" + e.APIVersion + " "
			}
		}
		if !strings.Contains(owner, "@marina.example.com/v1alpha1") || strings.Contains(owner, "client-side-apply") || strings.Count(owner, "@") != 1 {
			t.Errorf("owners of spec.replicas after kubectl scale: %q", owner)
		}

		// The observed side comes from status.
		_ = unstructured.SetNestedField(f.Object, int64(2), "status", "replicas")
		_ = unstructured.SetNestedField(f.Object, "fleet=armada", "status", "selector")
		if _, err := fc.UpdateStatus(ctx, f, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		s, err := fc.Get(ctx, "armada", metav1.GetOptions{}, "scale")
		if err != nil {
			t.Fatal(err)
		}
		specReplicas, _, _ := unstructured.NestedInt64(s.Object, "spec", "replicas")
		statusReplicas, _, _ := unstructured.NestedInt64(s.Object, "status", "replicas")
		selector, _, _ := unstructured.NestedString(s.Object, "status", "selector")
		if s.GetAPIVersion() != "autoscaling/v1" || s.GetKind() != "Scale" || s.GetName() != "armada" || specReplicas != 3 || statusReplicas != 2 || selector != "fleet=armada" {
			t.Errorf("GET /scale: %v", s.Object)
		}
		out, err = kubectl(t, up.kubeconfig, "", "get", "fleet", "armada", "-n", ns, "--subresource=scale", "-o", "jsonpath={.kind} {.apiVersion} {.spec.replicas} {.status.replicas}")
		if err != nil || out != "Scale autoscaling/v1 3 2" {
			t.Errorf("kubectl get --subresource=scale: %v %q", err, out)
		}
		out, err = kubectl(t, up.kubeconfig, "", "get", "fleet", "armada", "-n", ns, "--subresource=scale")
		if rows := table(out); err != nil || strings.Join(rows["NAME"], " ") != "DESIRED AVAILABLE AGE" || cells(rows, "armada", 2) != "3 2" {
			t.Errorf("kubectl get --subresource=scale table: %v\n%s", err, out)
		}
		out, err = kubectl(t, up.kubeconfig, "", "get", "fleets", "-n", ns)
		if rows := table(out); err != nil || cells(rows, "armada", 2) != "3 2" {
			t.Errorf("kubectl get fleets: %v\n%s", err, out)
		}

		// PUT /scale with the current resourceVersion sets the replicas; a stale one conflicts.
		_ = unstructured.SetNestedField(s.Object, int64(5), "spec", "replicas")
		put, err := fc.Update(ctx, s, metav1.UpdateOptions{}, "scale")
		if err != nil {
			t.Fatal(err)
		}
		if n, _, _ := unstructured.NestedInt64(put.Object, "spec", "replicas"); n != 5 || put.GetKind() != "Scale" || put.GetResourceVersion() == s.GetResourceVersion() {
			t.Errorf("PUT /scale returned %v", put.Object)
		}
		if _, err := fc.Update(ctx, s, metav1.UpdateOptions{}, "scale"); !apierrors.IsConflict(err) {
			t.Errorf("PUT /scale with a stale resourceVersion: want 409, got %v", err)
		}
		if out, err := kubectl(t, up.kubeconfig, "", "scale", "fleet/armada", "-n", ns, "--replicas=-1"); err == nil {
			t.Errorf("kubectl scale --replicas=-1 succeeded:\n%s", out)
		}
		// kubectl refuses a negative count itself; the server refuses it too (422).
		neg, err := fc.Get(ctx, "armada", metav1.GetOptions{}, "scale")
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(neg.Object, int64(-1), "spec", "replicas")
		if _, err := fc.Update(ctx, neg, metav1.UpdateOptions{}, "scale"); !apierrors.IsInvalid(err) {
			t.Errorf("PUT /scale with replicas -1: want 422 Invalid, got %v", err)
		}
		f, err = fc.Get(ctx, "armada", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		replicas, _, _ = unstructured.NestedInt64(f.Object, "spec", "replicas")
		statusReplicas, _, _ = unstructured.NestedInt64(f.Object, "status", "replicas")
		if replicas != 5 || statusReplicas != 2 || f.GetGeneration() != 3 {
			t.Errorf("after PUT /scale: replicas=%d status.replicas=%d generation=%d", replicas, statusReplicas, f.GetGeneration())
		}
		if _, err := dyn.Resource(boats).Namespace(ns).Get(ctx, "aurora", metav1.GetOptions{}, "scale"); !apierrors.IsNotFound(err) {
			t.Errorf("boats have no /scale: want 404, got %v", err)
		}
		if err := fc.Delete(ctx, "armada", metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	})

	t.Run("computed kind", func(t *testing.T) { computedKind(t, up.kubeconfig, ns) })

	t.Run("generated tree is clean", func(t *testing.T) {
		if out := run(t, dir, "gofmt", "-l", "."); strings.TrimSpace(out) != "" {
			t.Errorf("gofmt -l lists files:\n%s", out)
		}
		run(t, dir, "go", "vet", "./...")
		// Exits non-zero (failing run) when anything is stale.
		run(t, dir, aagen(t), "generate", "--verify", "./pkg/apis/...")
	})

	// What the README has a new user do in a second shell (last: it changes the dock
	// "north" the subtests above use).
	t.Run("samples", func(t *testing.T) {
		out, err := kubectl(t, up.kubeconfig, "", "apply", "-f", filepath.Join(dir, "config/samples"))
		if err != nil || !strings.Contains(out, "boat.marina.example.com/aurora") || !strings.Contains(out, "dock.marina.example.com/") {
			t.Errorf("kubectl apply -f config/samples: %v\n%s", err, out)
		}
		out, err = kubectl(t, up.kubeconfig, "", "get", "boats", "-A")
		if err != nil || !strings.Contains(out, "aurora") {
			t.Errorf("kubectl get boats -A: %v\n%s", err, out)
		}
		if out, err := kubectl(t, up.kubeconfig, "", "delete", "-f", filepath.Join(dir, "config/samples")); err != nil {
			t.Errorf("kubectl delete -f config/samples: %v\n%s", err, out)
		}
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
	code, _ := httpGet(t, cfg, path)
	return code
}

// TestExampleTests runs the example project's own tests (generated clientset, informers,
// listers, apply configurations and OpenAPI against an in-process server) in a fresh copy,
// as a user of the generated project would.
func TestExampleTests(t *testing.T) {
	skipShort(t)
	for _, ex := range []struct{ name, pattern string }{{"example", "./pkg/apis/..."}, {"kbexample", "./api/..."}} {
		t.Run(ex.name, func(t *testing.T) {
			dir := t.TempDir()
			copyTree(t, filepath.Join(repoRoot(t), "testdata", ex.name), dir, nil)
			run(t, dir, aagen(t), "generate", ex.pattern)
			// kbexample's Visitor is not valid as a zero value: the generated test creates it
			// from config/samples.
			out := run(t, dir, "go", "test", "-count=1", "./...")
			t.Log(cluster.Tail(out, 2000))
		})
	}
}

// table splits kubectl's table output into rows keyed by their first column (NAME for the
// header), each holding the other columns, cut where the header's columns start (an empty
// cell is "").
func table(out string) map[string][]string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	var starts []int
	header := lines[0]
	for i := range header {
		if header[i] != ' ' && (i == 0 || header[i-1] == ' ') {
			starts = append(starts, i)
		}
	}
	rows := map[string][]string{}
	for _, line := range lines {
		var row []string
		for i, start := range starts {
			end := len(line)
			if i+1 < len(starts) && starts[i+1] < end {
				end = starts[i+1]
			}
			cell := ""
			if start < end {
				cell = strings.TrimSpace(line[start:end])
			}
			row = append(row, cell)
		}
		if len(row) > 0 && row[0] != "" {
			rows[row[0]] = row[1:]
		}
	}
	return rows
}

// cells joins the first n cells of a row of table.
func cells(rows map[string][]string, key string, n int) string {
	row := append(append([]string(nil), rows[key]...), make([]string, n)...)
	return strings.Join(row[:n], " ")
}
