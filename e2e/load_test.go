package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// heapAfterGC forces a garbage collection in the server (pprof's gc=1) and returns the
// live heap from /metrics.
func heapAfterGC(t *testing.T, cfg *rest.Config) float64 {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/debug/pprof/heap?gc=1", "/debug/pprof/heap?gc=1"} {
		resp, err := client.Get(cfg.Host + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	resp, err := client.Get(cfg.Host + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "go_memstats_heap_alloc_bytes "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatal("no go_memstats_heap_alloc_bytes in /metrics")
	return 0
}

// TestLoad runs many clients with mixed CRUD and watches against the server for a bounded
// time: no 5xx, every watcher's view equals the final state, and the live heap returns to
// its baseline once the objects are gone.
func TestLoad(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata/example"), dir, nil)
	run(t, dir, aagen(t), "generate", "./pkg/apis/...")
	bin := filepath.Join(dir, "server")
	run(t, dir, "go", "build", "-o", bin, "./cmd/marina-apiserver")
	// Compact etcd often, so that history does not hide a leak.
	cmd, dyn, cfg := startBinary(t, bin, t.TempDir(), "--etcd-compaction-interval=5s")
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	ctx := context.Background()
	bc := dyn.Resource(boats).Namespace("load")

	// Warm up, then take the baseline.
	for i := 0; i < 20; i++ {
		_, _ = bc.Create(ctx, boat(fmt.Sprintf("warm-%d", i), nil, 1), metav1.CreateOptions{})
	}
	_ = bc.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	baseline := heapAfterGC(t, cfg)

	var heaps []float64
	for round := 0; round < 2; round++ {
		loadRound(t, ctx, bc, round)
		if err := bc.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(11 * time.Second) // two compaction intervals
		heaps = append(heaps, heapAfterGC(t, cfg))
	}
	t.Logf("live heap: %.1f MiB before, %.1f MiB after round 1, %.1f MiB after round 2 (with etcd compacted every 5s)",
		baseline/(1<<20), heaps[0]/(1<<20), heaps[1]/(1<<20))
	if heaps[1] > heaps[0]*1.3+4<<20 {
		t.Errorf("live heap keeps growing from one round to the next: %.1f MiB, then %.1f MiB", heaps[0]/(1<<20), heaps[1]/(1<<20))
	}
}

// loadRound runs writers and watchers for a bounded time and checks the outcome.
func loadRound(t *testing.T, ctx context.Context, bc dynamic.ResourceInterface, round int) {
	// Watchers keep their own view of the namespace.
	const watchers, writers = 8, 16
	list, err := bc.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	views := make([]map[string]string, watchers)
	var wwg sync.WaitGroup
	wctx, stopWatch := context.WithCancel(ctx)
	for i := range views {
		views[i] = map[string]string{}
		w, err := bc.Watch(wctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		wwg.Add(1)
		go func(view map[string]string, w watch.Interface) {
			defer wwg.Done()
			for ev := range w.ResultChan() {
				o, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				switch ev.Type {
				case watch.Added, watch.Modified:
					view[o.GetName()] = o.GetResourceVersion()
				case watch.Deleted:
					delete(view, o.GetName())
				}
			}
		}(views[i], w)
	}

	// Writers: create, get, update (patch), list and delete for a bounded time.
	var ops, serverErrors, otherErrors atomic.Int64
	deadline := time.Now().Add(20 * time.Second)
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(w)))
			check := func(err error) {
				ops.Add(1)
				var status apierrors.APIStatus
				switch {
				case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
				case errors.As(err, &status) && status.Status().Code >= 500:
					serverErrors.Add(1)
					t.Errorf("5xx: %v", err)
				default:
					otherErrors.Add(1)
					t.Errorf("unexpected error: %v", err)
				}
			}
			for i := 0; time.Now().Before(deadline); i++ {
				name := fmt.Sprintf("w%d-%d", w, r.Intn(40))
				switch r.Intn(5) {
				case 0, 1:
					_, err := bc.Create(ctx, boat(name, map[string]any{"writer": strconv.Itoa(w)}, int64(i)), metav1.CreateOptions{})
					check(err)
				case 2:
					_, err := bc.Patch(ctx, name, types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"lengthMeters":%d}}`, i)), metav1.PatchOptions{})
					check(err)
				case 3:
					_, err := bc.List(ctx, metav1.ListOptions{LabelSelector: "writer=" + strconv.Itoa(w)})
					check(err)
				case 4:
					check(bc.Delete(ctx, name, metav1.DeleteOptions{}))
				}
			}
		}(w)
	}
	wg.Wait()

	// Every watcher converges on the final state.
	final, err := bc.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, o := range final.Items {
		want[o.GetName()] = o.GetResourceVersion()
	}
	time.Sleep(2 * time.Second)
	stopWatch()
	wwg.Wait()
	for i, v := range views {
		if len(v) != len(want) {
			t.Errorf("watcher %d sees %d objects, the server has %d", i, len(v), len(want))
			continue
		}
		for name, rv := range want {
			if v[name] != rv {
				t.Errorf("watcher %d: %s at %q, server at %q", i, name, v[name], rv)
			}
		}
	}

	t.Logf("round %d: %d operations by %d writers with %d watchers in 20s: %d 5xx, %d other errors; %d objects at the end",
		round, ops.Load(), writers, watchers, serverErrors.Load(), otherErrors.Load(), len(want))
}
