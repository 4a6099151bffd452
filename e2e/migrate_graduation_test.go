package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/aagen-dev/aagen/internal/migrate"
)

var (
	guestbooksV1 = guestbooks("v1")
	guestbookGVK = schema.GroupVersionKind{Group: webapp, Version: "v1", Kind: "Guestbook"}
	// kbexampleMigration is testdata/kbexample's kinds, with kube-controller-manager's
	// garbage collector.
	kbexampleMigration = migrationProject{testdata: "kbexample", patterns: "./api/...", group: webapp, command: "kbexample-apiserver",
		controllers: []string{"garbage-collector-controller"}}
)

// guestNamespace is where TestMigrateGraduation keeps its objects.
const guestNamespace = "guests"

// graduationGuestbooks is how many guestbooks TestMigrateGraduation moves.
const graduationGuestbooks = 10000

// pageController is a controller-runtime controller of the guestbooks: for each with the
// label page=true it keeps a ConfigMap <name>-page that the guestbook controls. It counts
// what it created and the guestbook deletions its informer delivered (a relist that loses
// an object delivers one too).
type pageController struct {
	client     client.Client
	mu         sync.Mutex
	created    map[string]int // ConfigMap name -> creations
	deleted    []string       // guestbooks
	reconciles int
}

// Reconcile implements reconcile.Reconciler.
func (r *pageController) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r.mu.Lock()
	r.reconciles++
	r.mu.Unlock()
	gb := newUnstructured(guestbookGVK)
	if err := r.client.Get(ctx, req.NamespacedName, gb); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if gb.GetLabels()["page"] != "true" || gb.GetDeletionTimestamp() != nil {
		return ctrl.Result{}, nil
	}
	name := gb.GetName() + "-page"
	var cm corev1.ConfigMap
	err := r.client.Get(ctx, types.NamespacedName{Namespace: gb.GetNamespace(), Name: name}, &cm)
	if err == nil || !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	cm = corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: gb.GetNamespace(), OwnerReferences: []metav1.OwnerReference{{
			APIVersion: guestbookGVK.GroupVersion().String(), Kind: guestbookGVK.Kind, Name: gb.GetName(), UID: gb.GetUID(),
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}}},
		Data: map[string]string{"message": fmt.Sprint(gb.Object["spec"])},
	}
	if err := r.client.Create(ctx, &cm); err != nil {
		return ctrl.Result{}, client.IgnoreAlreadyExists(err)
	}
	r.mu.Lock()
	r.created[name]++
	r.mu.Unlock()
	return ctrl.Result{}, nil
}

// counts returns a copy of what the controller created and saw deleted.
func (r *pageController) counts() (map[string]int, []string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.created), slices.Clone(r.deleted), r.reconciles
}

// startPageController runs a controller-runtime manager with the page controller against
// cfg (kube-apiserver) until the test ends.
func startPageController(t *testing.T, cfg *rest.Config) *pageController {
	t.Helper()
	log.SetLogger(logr.Discard())
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 200, 400
	mgr, err := ctrl.NewManager(c, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Client:                 client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &pageController{client: mgr.GetClient(), created: map[string]int{}}
	deletions := predicate.Funcs{DeleteFunc: func(e event.DeleteEvent) bool {
		r.mu.Lock()
		r.deleted = append(r.deleted, e.Object.GetName())
		r.mu.Unlock()
		return true
	}}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("pages").
		For(newUnstructured(guestbookGVK), builder.WithPredicates(deletions)).
		Owns(&corev1.ConfigMap{}).
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: 4}).
		Complete(r)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the page controller: %v", err)
		}
	})
	return r
}

// guestbookObject is guestbook i of TestMigrateGraduation: labels, a message, and every
// hundredth from the 55th (none with a finalizer) labelled page=true, so that the page
// controller gives it a ConfigMap.
func guestbookObject(i int) *unstructured.Unstructured {
	return guestbookNamed("gb-"+strconv.Itoa(i), i)
}

func guestbookNamed(name string, i int) *unstructured.Unstructured {
	labels := map[string]any{"guestbook": name, "shard": strconv.Itoa(i % 7)}
	if i%100 == 55 {
		labels["page"] = "true"
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": guestbookGVK.GroupVersion().String(), "kind": guestbookGVK.Kind,
		"metadata": map[string]any{"name": name, "namespace": guestNamespace, "labels": labels},
		"spec":     map[string]any{"replicas": int64(i % 5), "message": "welcome to guestbook " + strconv.Itoa(i)},
	}}
}

// createGuestbooks creates guestbooks 0..n-1 with 16 clients: by server-side apply (manager
// "shipper"), every tenth with a finalizer and a status written by a second manager
// ("counter").
func createGuestbooks(ctx context.Context, client dynamic.ResourceInterface, n int) error {
	return inParallel(0, n, func(i int) error {
		obj := guestbookObject(i)
		if i%10 == 0 {
			obj.SetFinalizers([]string{webapp + "/keep"})
		}
		got, err := client.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "shipper"})
		if err != nil {
			return fmt.Errorf("creating %s: %w", obj.GetName(), err)
		}
		if i%10 != 0 {
			return nil
		}
		// ready 0 on every thousandth: a zero value the server's Go type omits
		// (omitempty), where the CRD keeps it.
		ready := int64(1 + (i/10)%4)
		if i%1000 == 0 {
			ready = 0
		}
		got.Object["status"] = map[string]any{"ready": ready}
		if _, err := client.UpdateStatus(ctx, got, metav1.UpdateOptions{FieldManager: "counter"}); err != nil {
			return fmt.Errorf("the status of %s: %w", obj.GetName(), err)
		}
		return nil
	})
}

// freezeWriter patches an annotation of one object through kube-apiserver every 50 ms
// until stopped, and records how its writes went: the refusals by the freeze, the other
// errors (a switch may answer 503 for a moment), and the writes that succeeded after the
// first refusal.
type freezeWriter struct {
	mu             sync.Mutex
	refused        []string
	otherErrors    []string
	succeededAfter int
	lastWritten    string
	stop           chan struct{}
	done           chan struct{}
	halted         sync.Once
}

func startFreezeWriter(ctx context.Context, client dynamic.ResourceInterface, name string) *freezeWriter {
	w := &freezeWriter{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; ; i++ {
			select {
			case <-w.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			tick := strconv.Itoa(i)
			_, err := client.Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"annotations":{"tick":"`+tick+`"}}}`), metav1.PatchOptions{})
			w.mu.Lock()
			switch {
			case err != nil && strings.Contains(err.Error(), migrate.FreezeMessage):
				w.refused = append(w.refused, err.Error())
			case err != nil:
				w.otherErrors = append(w.otherErrors, err.Error())
			default:
				w.lastWritten = tick
				if len(w.refused) > 0 {
					w.succeededAfter++
				}
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// succeededSinceRefusal reports whether a write succeeded after the first refusal.
func (w *freezeWriter) succeededSinceRefusal() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.succeededAfter > 0
}

// halt stops the writer (again: a no-op) and returns its record.
func (w *freezeWriter) halt() (refused, otherErrors []string, succeededAfter int, last string) {
	w.halted.Do(func() { close(w.stop) })
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.refused, w.otherErrors, w.succeededAfter, w.lastWritten
}

// TestMigrateGraduation is the acceptance of `aagen migrate` on a user's kubebuilder API:
// testdata/kbexample's kinds installed as controller-gen v0.23.0's CRDs on kube-apiserver
// v1.37.2 with kube-controller-manager's garbage collector; 10,000 guestbooks with labels,
// server-side-apply managers, every tenth with a finalizer and status by a second manager,
// and a sample of every other kind; ConfigMaps controlled by every hundredth guestbook,
// created by a controller-runtime controller that runs throughout. `aagen migrate apply`
// is killed during its copy and run again; it finishes with every object equal to the
// CRDs' but for resourceVersion. A write during the freeze is refused with the freeze's
// message and succeeds after. Deleting an owner through kube-apiserver garbage-collects
// its ConfigMap; the controller recreated nothing and saw no deletion but that one, and
// acts on a change made after the switch. `aagen migrate rollback` then brings the group
// back to the CRDs, with the same checks.
func TestMigrateGraduation(t *testing.T) {
	skipShort(t)
	runsTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	f := newProjectMigrationFixture(t, ctx, kbexampleMigration, guestNamespace, nil)
	const ns = guestNamespace
	loader := rest.CopyConfig(f.cp.Admin)
	loader.QPS, loader.Burst = -1, 0
	dyn := dynamic.NewForConfigOrDie(loader)
	books := dyn.Resource(guestbooksV1).Namespace(ns)
	start := time.Now()
	if err := createGuestbooks(ctx, books, graduationGuestbooks); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d guestbooks created on the CRD in %v", graduationGuestbooks, time.Since(start).Round(time.Millisecond))
	// A sample of every other kind (config/samples, v1).
	samples, err := filepath.Glob(filepath.Join(f.dir, "config", "samples", "webapp_v1_*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]schema.GroupVersionResource{}
	for _, file := range samples {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &obj.Object); err != nil {
			t.Fatal(err)
		}
		if obj.GetKind() == "Guestbook" {
			continue
		}
		gvr := schema.GroupVersionResource{Group: webapp, Version: "v1", Resource: strings.ToLower(obj.GetKind()) + "s"}
		kinds[obj.GetKind()] = gvr
		if _, err := dyn.Resource(gvr).Namespace(ns).Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: "samples"}); err != nil {
			t.Fatalf("the sample %s: %v", filepath.Base(file), err)
		}
	}
	pages := startPageController(t, f.cp.Admin)
	core := kubernetes.NewForConfigOrDie(f.cp.Admin).CoreV1()
	awaitPages := func(names ...string) {
		t.Helper()
		for _, name := range names {
			var last error
			for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				if _, last = core.ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); last == nil {
					break
				}
			}
			if last != nil {
				t.Fatalf("the page controller did not create the ConfigMap %s: %v", name, last)
			}
		}
	}
	var initialPages []string
	for i := 55; i < graduationGuestbooks; i += 100 {
		initialPages = append(initialPages, "gb-"+strconv.Itoa(i)+"-page")
	}
	awaitPages(initialPages...)

	// What kube-apiserver serves from the CRDs before the switch.
	all := []schema.GroupVersionResource{guestbooksV1}
	for _, gvr := range kinds {
		all = append(all, gvr)
	}
	listAll := func(cfg *rest.Config) map[string]*unstructured.Unstructured {
		t.Helper()
		out := map[string]*unstructured.Unstructured{}
		client := dynamic.NewForConfigOrDie(cfg)
		for _, gvr := range all {
			list, err := client.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("listing %s: %v", gvr.Resource, err)
			}
			for i := range list.Items {
				out[gvr.Resource+"/"+list.Items[i].GetName()] = &list.Items[i]
			}
		}
		return out
	}
	// equal compares got with want but for resourceVersion (and an empty status against
	// none), and returns the names that differ, the writer's object but for its annotation.
	equal := func(what string, want, got map[string]*unstructured.Unstructured) {
		t.Helper()
		var differ []string
		for name, w := range want {
			g, ok := got[name]
			if !ok {
				differ = append(differ, name+" (missing)")
				continue
			}
			wc, gc := migrate.WithoutNulls(withoutRV(w)), migrate.WithoutNulls(withoutRV(g))
			for _, c := range []map[string]any{wc, gc} {
				// The server's type omits a zero ready (the plan says so); the CRD's
				// object keeps it.
				if st, ok := c["status"].(map[string]any); ok && st["ready"] == int64(0) {
					delete(st, "ready")
				}
				if reflect.DeepEqual(c["status"], map[string]any{}) {
					delete(c, "status")
				}
				if name == "guestbooks/gb-writes" {
					delete(c["metadata"].(map[string]any), "annotations")
					delete(c["metadata"].(map[string]any), "managedFields")
					delete(c["metadata"].(map[string]any), "generation")
				}
			}
			if !reflect.DeepEqual(wc, gc) {
				if len(differ) < 3 {
					t.Errorf("%s: %s:\n%s\nwant but for resourceVersion:\n%s", what, name, mustJSON(t, gc), mustJSON(t, wc))
				}
				differ = append(differ, name)
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				differ = append(differ, name+" (extra)")
			}
		}
		if len(differ) > 0 {
			sort.Strings(differ)
			t.Errorf("%s: %d of %d objects differ: %v", what, len(differ), len(want), firstN(differ, 20))
		}
	}
	// deleteOwner deletes the guestbook owner through kube-apiserver; checkAround then
	// checks, on whichever side serves the group now: the garbage collector deletes
	// owner's ConfigMap; the controller recreated nothing and saw no deletion but those of
	// the test; labelling fresh page=true gets it a ConfigMap.
	var deletedByTest, freshPages []string
	deleteOwner := func(when, owner string) {
		t.Helper()
		// Retried while the lifted freeze is still loaded (kube-apiserver and the server
		// unload it asynchronously), as its message asks.
		var err error
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if err = books.Delete(ctx, owner, metav1.DeleteOptions{}); err == nil || !strings.Contains(err.Error(), migrate.FreezeMessage) {
				break
			}
		}
		if err != nil {
			t.Fatalf("%s: deleting %s: %v", when, owner, err)
		}
		deletedByTest = append(deletedByTest, owner)
	}
	checkAround := func(when, owner, fresh string) {
		t.Helper()
		var last error
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			if _, last = core.ConfigMaps(ns).Get(ctx, owner+"-page", metav1.GetOptions{}); apierrors.IsNotFound(last) {
				break
			}
		}
		if !apierrors.IsNotFound(last) {
			t.Errorf("%s: the ConfigMap %s-page of the deleted %s was not garbage-collected within 2 minutes: %v", when, owner, owner, last)
		}
		if _, err := books.Patch(ctx, fresh, types.MergePatchType, []byte(`{"metadata":{"labels":{"page":"true"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatalf("%s: labelling %s: %v", when, fresh, err)
		}
		awaitPages(fresh + "-page")
		freshPages = append(freshPages, fresh+"-page")
		// The ConfigMap can be read before the controller's create has returned and been
		// counted.
		created, deleted, reconciles := pages.counts()
		for deadline := time.Now().Add(10 * time.Second); created[fresh+"-page"] == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			created, deleted, reconciles = pages.counts()
		}
		for name, n := range created {
			if n > 1 {
				t.Errorf("%s: the page controller created %s %d times", when, name, n)
			}
		}
		var missing, extra []string
		for _, name := range append(append([]string(nil), initialPages...), freshPages...) {
			if created[name] == 0 {
				missing = append(missing, name)
			}
		}
		for name := range created {
			if !slices.Contains(initialPages, name) && !slices.Contains(freshPages, name) {
				extra = append(extra, name)
			}
		}
		if len(missing) > 0 || len(extra) > 0 {
			t.Errorf("%s: the page controller did not create %v, and created %v besides", when, missing, extra)
		}
		sort.Strings(deleted)
		want := append([]string(nil), deletedByTest...)
		sort.Strings(want)
		if !reflect.DeepEqual(deleted, want) {
			t.Errorf("%s: the page controller saw the guestbooks %v deleted, want %v", when, firstN(deleted, 20), want)
		}
		t.Logf("%s: the page controller reconciled %d times", when, reconciles)
	}
	// The same with the CRDs, before anything moves: what the checks after the switches
	// compare with.
	deleteOwner("before apply", "gb-55")
	checkAround("before apply", "gb-55", "gb-6")
	if _, err := books.Apply(ctx, "gb-writes", guestbookNamed("gb-writes", 1), metav1.ApplyOptions{FieldManager: "shipper"}); err != nil {
		t.Fatal(err)
	}
	before := listAll(f.cp.Admin)
	books0 := 0 // what apply is to verify
	for name := range before {
		if strings.HasPrefix(name, "guestbooks/") {
			books0++
		}
	}

	apply := func(ctx context.Context, killAfter *regexp.Regexp) (string, error) {
		cmd := exec.CommandContext(ctx, aagen(t), "migrate", "apply", "--kubeconfig", f.cp.Kubeconfig, "--server-kubeconfig", f.serverKubeconfig,
			"--group", webapp, "--service", f.service["namespace"].(string)+"/"+f.service["name"].(string),
			"--service-port", strconv.Itoa(f.backend.Port), "--ca-bundle", f.caFile)
		pr, pw := io.Pipe()
		cmd.Stdout, cmd.Stderr = pw, pw
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		scanned := make(chan struct{})
		go func() {
			defer close(scanned)
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				out.WriteString(sc.Text() + "\n")
				if killAfter != nil && killAfter.MatchString(sc.Text()) {
					_ = cmd.Process.Kill()
				}
			}
		}()
		err := cmd.Wait()
		pw.Close()
		<-scanned
		return out.String(), err
	}
	// Killed during its copy (after a progress line of 1,000 to 9,000 guestbooks).
	out, err := apply(ctx, regexp.MustCompile(`^guestbooks\.`+regexp.QuoteMeta(webapp)+`: [1-9]000 copied`))
	t.Logf("aagen migrate apply, killed during its copy:\n%s", out)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("aagen migrate apply was not killed during its copy: %v", err)
	}
	direct := dynamic.NewForConfigOrDie(f.cp.PKI.FrontProxy(f.backend, "migration-admin", "system:masters"))
	if list, err := direct.Resource(guestbooksV1).Namespace(ns).List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) == 0 || len(list.Items) >= graduationGuestbooks {
		t.Errorf("the generated server after the killed apply: %d guestbooks (%v), want some but not all", len(list.Items), err)
	}

	writer := startFreezeWriter(ctx, books, "gb-writes")
	t.Cleanup(func() { writer.halt() })
	out, err = apply(ctx, nil)
	t.Logf("aagen migrate apply, again:\n%s", out)
	if err != nil {
		writer.halt()
		t.Fatalf("aagen migrate apply, run again after it was killed: %v", err)
	}
	// At once: the controller's cache must be up to date when writes resume.
	deleteOwner("after apply", "gb-155")
	delete(before, "guestbooks/gb-155")
	// kube-apiserver unloads the lifted freeze asynchronously: within a minute.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && !writer.succeededSinceRefusal(); time.Sleep(100 * time.Millisecond) {
	}
	refused, otherErrors, succeededAfter, lastTick := writer.halt()
	if want := fmt.Sprintf("status.ready (%d)", graduationGuestbooks/1000); !strings.Contains(out, want) {
		t.Errorf("aagen migrate apply does not note that the server's types store the guestbooks of ready 0 otherwise (%q)", want)
	}
	if want := fmt.Sprintf("guestbooks.%s:%d", webapp, books0); !strings.Contains(out, want) {
		t.Errorf("aagen migrate apply does not report %d guestbooks verified (%q)", books0, want)
	}
	if len(refused) == 0 || succeededAfter == 0 {
		t.Errorf("the writes during apply: %d refused, %d succeeded after; want the freeze to refuse some and later ones to succeed", len(refused), succeededAfter)
	}
	t.Logf("the writer's patches during apply: %d refused by the freeze, %d succeeded after; other errors: %v", len(refused), succeededAfter, otherErrors)

	// Served by the generated server now, equal to the CRDs' objects.
	after := listAll(f.cp.Admin)
	equal("through kube-apiserver after apply", before, after)
	if own, err := direct.Resource(guestbooksV1).Namespace(ns).Get(ctx, "gb-1", metav1.GetOptions{}); err != nil || own.GetResourceVersion() != after["guestbooks/gb-1"].GetResourceVersion() {
		t.Errorf("gb-1 after apply: kube-apiserver answers resourceVersion %s, the generated server %v (%v)", after["guestbooks/gb-1"].GetResourceVersion(), own, err)
	}
	if got := after["guestbooks/gb-writes"].GetAnnotations()["tick"]; got != lastTick {
		t.Errorf("gb-writes after apply has tick %q, want the last write's %q", got, lastTick)
	}

	checkAround("after apply", "gb-155", "gb-7")

	// Rollback: back to the CRDs, with what changed on the server.
	onServer := listAll(f.cp.Admin)
	rollback := exec.CommandContext(ctx, aagen(t), "migrate", "rollback", "--kubeconfig", f.cp.Kubeconfig, "--server-kubeconfig", f.serverKubeconfig, "--group", webapp)
	out2, err := rollback.CombinedOutput()
	t.Logf("aagen migrate rollback:\n%s", out2)
	if err != nil {
		t.Fatalf("aagen migrate rollback: %v", err)
	}
	deleteOwner("after rollback", "gb-255")
	delete(onServer, "guestbooks/gb-255")
	back := listAll(f.cp.Admin)
	for name, obj := range back {
		if s := onServer[name]; s != nil && s.GetResourceVersion() == obj.GetResourceVersion() {
			t.Errorf("%s after the rollback has the generated server's resourceVersion: not served by the CRD", name)
			break
		}
	}
	equal("through kube-apiserver after rollback", onServer, back)
	checkAround("after rollback", "gb-255", "gb-8")
}

func firstN(list []string, n int) []string {
	if len(list) > n {
		return list[:n]
	}
	return list
}
