package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// storageBackend is one place a generated server keeps its objects. The same test bodies
// (storageContract) run on each of them.
type storageBackend struct {
	name string
	// flags returns the server flags that select the backend for the state directory.
	flags func(state string) []string
}

// TestStorageBackends runs the storage contract on embedded etcd, on PostgreSQL (a cluster
// the test creates with initdb, reached through kine) and on SQLite (through kine): CRUD
// with resourceVersions and optimistic concurrency, pagination and selectors, watch from a
// resourceVersion, no acknowledged write lost to SIGKILL, a watch resumed across the
// restart, and 410 Gone with relist after compaction.
func TestStorageBackends(t *testing.T) {
	skipShort(t)
	_, bin := buildExample(t)
	pg := cluster.StartPostgres(t)
	backends := []storageBackend{
		{name: "etcd", flags: func(state string) []string {
			return []string{"--embedded-etcd-dir=" + filepath.Join(state, "etcd")}
		}},
		{name: "postgres", flags: func(state string) []string {
			return []string{"--datastore-endpoint=" + pg.DSN("marina")}
		}},
		{name: "sqlite", flags: func(state string) []string {
			return []string{"--datastore-endpoint=sqlite://" + filepath.Join(state, "kine", "state.db")}
		}},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { storageContract(t, bin, b) })
	}
}

// storageContract is the shared body: every step runs on the backend b.
func storageContract(t *testing.T, bin string, b storageBackend) {
	state := t.TempDir()
	start := func(extra ...string) (*storageServer, dynamic.ResourceInterface) {
		s := startStorageServer(t, bin, state, append(b.flags(state), extra...)...)
		return s, s.dyn.Resource(boats).Namespace("harbour")
	}
	srv, bc := start()
	t.Run("crud-conflict", func(t *testing.T) { storageCRUD(t, bc) })
	t.Run("pagination-selectors", func(t *testing.T) { storageLists(t, bc) })
	t.Run("watch-from-rv", func(t *testing.T) { storageWatch(t, bc) })
	srv.stop(t)
	var firstRV string
	t.Run("sigkill", func(t *testing.T) { firstRV = storageCrash(t, start) })
	if firstRV == "" {
		t.Fatal("no resourceVersion from before the crash")
	}
	t.Run("compaction-410-relist", func(t *testing.T) { storageCompaction(t, start, firstRV) })
}

// storageCRUD: create, get, update with the current and with a stale resourceVersion
// (409 Conflict), delete, 404.
func storageCRUD(t *testing.T, bc dynamic.ResourceInterface) {
	ctx := context.Background()
	created, err := bc.Create(ctx, boat("crud", map[string]any{"step": "created"}, 9), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bc.Create(ctx, boat("crud", nil, 9), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: want 409 AlreadyExists, got %v", err)
	}
	got, err := bc.Get(ctx, "crud", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetResourceVersion() != created.GetResourceVersion() || got.GetUID() != created.GetUID() {
		t.Fatalf("get: resourceVersion %s uid %s, created %s %s", got.GetResourceVersion(), got.GetUID(), created.GetResourceVersion(), created.GetUID())
	}
	stale := got.DeepCopy()
	_ = unstructured.SetNestedField(got.Object, int64(10), "spec", "lengthMeters")
	updated, err := bc.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rvInt(t, updated.GetResourceVersion()) <= rvInt(t, created.GetResourceVersion()) {
		t.Fatalf("update: resourceVersion %s not after %s", updated.GetResourceVersion(), created.GetResourceVersion())
	}
	_ = unstructured.SetNestedField(stale.Object, int64(11), "spec", "lengthMeters")
	if _, err := bc.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("update with a stale resourceVersion: want 409 Conflict, got %v", err)
	}
	after, err := bc.Get(ctx, "crud", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(after.Object, "spec", "lengthMeters"); n != 10 {
		t.Fatalf("after the conflict: lengthMeters %d, want 10", n)
	}
	staleRV := created.GetResourceVersion()
	if err := bc.Delete(ctx, "crud", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &staleRV}}); !apierrors.IsConflict(err) {
		t.Fatalf("delete with a stale resourceVersion precondition: want 409 Conflict, got %v", err)
	}
	if err := bc.Delete(ctx, "crud", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := bc.Get(ctx, "crud", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: want 404, got %v", err)
	}
}

// storageLists: pages with continue tokens cover every object once; label and field
// selectors filter.
func storageLists(t *testing.T, bc dynamic.ResourceInterface) {
	ctx := context.Background()
	const n = 25
	for i := 0; i < n; i++ {
		b := boat(fmt.Sprintf("page-%02d", i), map[string]any{"parity": []string{"even", "odd"}[i%2]}, int64(i+1))
		if i%5 == 0 {
			_ = unstructured.SetNestedField(b.Object, "west", "spec", "dock")
		}
		if _, err := bc.Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	opts := metav1.ListOptions{Limit: 10, LabelSelector: "parity"}
	pages := 0
	for {
		list, err := bc.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(list.Items) > 10 {
			t.Fatalf("page of %d items with limit 10", len(list.Items))
		}
		for _, it := range list.Items {
			names = append(names, it.GetName())
		}
		if list.GetContinue() == "" {
			break
		}
		opts.Continue = list.GetContinue()
	}
	if pages != 3 || len(names) != n || !sort.StringsAreSorted(names) {
		t.Fatalf("paginated list: %d pages, %d names (want 3 pages, %d sorted names): %v", pages, len(names), n, names)
	}
	even, err := bc.List(ctx, metav1.ListOptions{LabelSelector: "parity=even"})
	if err != nil {
		t.Fatal(err)
	}
	if len(even.Items) != 13 {
		t.Errorf("label selector parity=even: %d items, want 13", len(even.Items))
	}
	west, err := bc.List(ctx, metav1.ListOptions{FieldSelector: "spec.dock=west"})
	if err != nil {
		t.Fatal(err)
	}
	if len(west.Items) != 5 {
		t.Errorf("field selector spec.dock=west: %d items, want 5", len(west.Items))
	}
	both, err := bc.List(ctx, metav1.ListOptions{FieldSelector: "spec.dock=west,metadata.name!=page-00", LabelSelector: "parity=even"})
	if err != nil {
		t.Fatal(err)
	}
	if len(both.Items) != 2 { // page-10, page-20
		t.Errorf("label and field selectors together: %d items, want 2", len(both.Items))
	}
}

// storageWatch: a watch from a list's resourceVersion delivers exactly the later changes,
// in order.
func storageWatch(t *testing.T, bc dynamic.ResourceInterface) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := bc.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bc.Create(ctx, boat("watched", nil, 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := bc.Get(ctx, "watched", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(got.Object, int64(4), "spec", "lengthMeters")
	if _, err := bc.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := bc.Delete(ctx, "watched", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := bc.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	want := []watch.EventType{watch.Added, watch.Modified, watch.Deleted}
	last := rvInt(t, list.GetResourceVersion())
	for i, typ := range want {
		select {
		case ev := <-w.ResultChan():
			o, ok := ev.Object.(*unstructured.Unstructured)
			if ev.Type != typ || !ok || o.GetName() != "watched" {
				t.Fatalf("event %d: got %s %v, want %s watched", i, ev.Type, ev.Object, typ)
			}
			rv := rvInt(t, o.GetResourceVersion())
			if rv <= last {
				t.Fatalf("event %d: resourceVersion %d not after %d", i, rv, last)
			}
			last = rv
		case <-ctx.Done():
			t.Fatalf("watch from %s: no event %d (%s)", list.GetResourceVersion(), i, typ)
		}
	}
}

// storageCrash: SIGKILL during a stream of writes loses no acknowledged write, and a watch
// from before the crash resumes after the restart and delivers every one of them. It
// returns the resourceVersion it listed before the crash.
func storageCrash(t *testing.T, start func(extra ...string) (*storageServer, dynamic.ResourceInterface)) string {
	ctx := context.Background()
	srv, bc := start()
	list, err := bc.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	startRV := list.GetResourceVersion()
	var mu sync.Mutex
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var acked []string
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("crash-w%d-%d", w, i)
				if _, err := bc.Create(ctx, boat(name, nil, int64(i+1)), metav1.CreateOptions{}); err != nil {
					return // the server is gone
				}
				mu.Lock()
				acked = append(acked, name)
				mu.Unlock()
			}
		}(w)
	}
	time.Sleep(1500 * time.Millisecond)
	srv.kill()
	close(stop)
	wg.Wait()
	if len(acked) == 0 {
		t.Fatal("no write was acknowledged before SIGKILL")
	}

	srv, bc = start()
	defer srv.stop(t)
	after, err := bc.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for _, it := range after.Items {
		stored[it.GetName()] = true
	}
	for _, name := range acked {
		if !stored[name] {
			t.Errorf("acknowledged write %s lost", name)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	w, err := bc.Watch(wctx, metav1.ListOptions{ResourceVersion: startRV})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	pending := map[string]bool{}
	for _, name := range acked {
		pending[name] = true
	}
	last := rvInt(t, startRV)
	for len(pending) > 0 {
		ev, ok := <-w.ResultChan()
		if !ok {
			t.Fatalf("the resumed watch ended with %d of %d acknowledged writes missed", len(pending), len(acked))
		}
		if ev.Type == watch.Error {
			t.Fatalf("the watch from before the crash did not resume: %v", ev.Object)
		}
		o := ev.Object.(*unstructured.Unstructured)
		rv := rvInt(t, o.GetResourceVersion())
		if ev.Type != watch.Added || rv <= last {
			t.Fatalf("resumed watch: %s %s at %d after %d", ev.Type, o.GetName(), rv, last)
		}
		last = rv
		delete(pending, o.GetName())
	}
	t.Logf("%d writes acknowledged before SIGKILL, all stored, all delivered by the watch resumed after the restart", len(acked))
	return startRV
}

// storageCompaction: once the apiserver's compactor has compacted the revision a watch asks
// for, the watch gets 410 Gone, a relist recovers every object and a watch from the
// relist's resourceVersion delivers new writes.
func storageCompaction(t *testing.T, start func(extra ...string) (*storageServer, dynamic.ResourceInterface), oldRV string) {
	ctx := context.Background()
	srv, bc := start("--etcd-compaction-interval=2s")
	defer srv.stop(t)
	before, err := bc.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		// The compactor compacts to the revision it saw one interval earlier.
		if _, err := bc.Create(ctx, boat(fmt.Sprintf("compacted-%d", i), nil, 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2500 * time.Millisecond)
	}
	expectGone(t, ctx, bc, oldRV)
	relist, err := bc.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(relist.Items), len(before.Items)+3; got != want {
		t.Errorf("relist: %d objects, want %d", got, want)
	}
	expectWatchFromRelist(t, ctx, bc, relist.GetResourceVersion())
}

func rvInt(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q is not an integer: %v", rv, err)
	}
	return n
}

// storageServer is the example's server binary running in local mode.
type storageServer struct {
	cmd  *exec.Cmd
	dyn  dynamic.Interface
	logs *cluster.Buffer
	done chan struct{}
}

// startStorageServer runs bin in local mode with its credentials in state and waits for the
// KUBECONFIG line.
func startStorageServer(t *testing.T, bin, state string, flags ...string) *storageServer {
	t.Helper()
	args := append([]string{"--local", "--secure-port=0", "--local-dir=" + filepath.Join(state, "local")}, flags...)
	s := &storageServer{cmd: exec.Command(bin, args...), logs: &cluster.Buffer{}, done: make(chan struct{})}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if kc, ok := strings.CutPrefix(sc.Text(), "export KUBECONFIG="); ok {
				ready <- kc
			}
		}
		_ = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() { s.kill() })
	select {
	case kc := <-ready:
		cfg, err := clientcmd.BuildConfigFromFlags("", kc)
		if err != nil {
			t.Fatal(err)
		}
		cfg.QPS, cfg.Burst = 500, 1000
		s.dyn = dynamic.NewForConfigOrDie(cfg)
		return s
	case <-s.done:
		t.Fatalf("server exited before it was ready:\n%s", cluster.Tail(s.logs.String(), 3000))
	case <-time.After(2 * time.Minute):
		s.kill()
		t.Fatalf("server not ready after 2m:\n%s", cluster.Tail(s.logs.String(), 3000))
	}
	return nil
}

// kill stops the server with SIGKILL and waits for it.
func (s *storageServer) kill() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// stop asks the server to shut down (SIGTERM) and fails the test if it does not within a
// minute.
func (s *storageServer) stop(t *testing.T) {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(time.Minute):
		t.Errorf("server did not stop within a minute of SIGTERM:\n%s", cluster.Tail(s.logs.String(), 3000))
		s.kill()
	}
}
