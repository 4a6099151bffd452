package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
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

// serverMetrics forces two garbage collections in the server (pprof's gc=1) and returns
// its /metrics text.
func serverMetrics(t *testing.T, cfg *rest.Config, gc bool) string {
	t.Helper()
	if gc {
		for i := 0; i < 2; i++ {
			httpGet(t, cfg, "/debug/pprof/heap?gc=1")
		}
	}
	_, data := httpGet(t, cfg, "/metrics")
	return string(data)
}

// metric returns the value of the sample in text named exactly series (a metric name with
// its labels as /metrics prints them, sorted by label name).
func metric(t *testing.T, text, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if value, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				t.Fatalf("metric %s: %v", series, err)
			}
			return f
		}
	}
	t.Fatalf("no %s in /metrics", series)
	return 0
}

// liveHeap returns the server's live heap after a forced garbage collection.
func liveHeap(t *testing.T, cfg *rest.Config) float64 {
	return metric(t, serverMetrics(t, cfg, true), "go_memstats_heap_alloc_bytes")
}

// TestLoad runs many clients with mixed CRUD and watches against the server for a bounded
// time: no 5xx, every watcher's view equals the final state, and once the objects are gone
// the live heap returns to its baseline.
//
// Two bounded windows hold memory after a burst of writes, by design: the watch cache of
// k8s.io/apiserver keeps at least 75s of events (so that watches can resume from a recent
// resourceVersion) and frees an event only when a newer one takes its slot, and etcd keeps
// its raft log in memory until the next snapshot. The ring shrinks by half with each new
// event once it is full and its newest quarter is older than the window, and doubles when
// it is full of events younger than that. So the test waits out the window, fills the ring
// with small events, waits out the window again, writes a few more, which shrink the ring
// to its lower bound of 100 events, and only then compares the heap with the baseline:
// what is left of the burst after that is a leak.
func TestLoad(t *testing.T) {
	skipShort(t)
	_, bin := buildExample(t)
	// Compact etcd often, so that history does not hide a leak.
	cmd, dyn, cfg := startBinary(t, bin, t.TempDir(), "--etcd-compaction-interval=5s")
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	ctx := context.Background()
	// The load's clients count every 429 and 5xx response, including the ones client-go
	// retries without telling its caller (429, and 5xx with Retry-After).
	responses := &retryableResponses{}
	loadCfg := rest.CopyConfig(cfg)
	loadCfg.Wrap(responses.wrap)
	bc := dynamic.NewForConfigOrDie(loadCfg).Resource(boats).Namespace("load")

	// Warm up (every code path once), then take the baseline.
	for i := 0; i < 20; i++ {
		_, _ = bc.Create(ctx, boat(fmt.Sprintf("warm-%d", i), nil, 1), metav1.CreateOptions{})
		_, _ = bc.List(ctx, metav1.ListOptions{LabelSelector: "writer=0"})
	}
	_ = bc.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	baseline := liveHeap(t, cfg)

	loadRound(t, ctx, bc)
	if n := responses.count.Load(); n != 0 {
		t.Errorf("%d responses were 429 or 5xx during the load (client-go retried some of them silently): %s", n, responses.first.Load())
	}
	if err := bc.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	burstEnd := time.Now()
	afterLoad := liveHeap(t, cfg)

	// Once the burst is older than the watch cache's history window, turn the ring over
	// with small events, stopping just short of a full turn (a ring full of events younger
	// than the window doubles); wait out the window again; then each new event halves the
	// ring, whose newest quarter is now old, down to its lower bound of 100 events.
	const historyWindow = 75 * time.Second
	series := `watch_cache_capacity{group="marina.example.com",resource="boats"}`
	trickle := dyn.Resource(boats).Namespace("trickle")
	time.Sleep(time.Until(burstEnd.Add(historyWindow + 2*time.Second)))
	capacity := metric(t, serverMetrics(t, cfg, false), series)
	writeSmallEvents(t, ctx, trickle, int(capacity)-10)
	time.Sleep(historyWindow + 2*time.Second)
	writeSmallEvents(t, ctx, trickle, 20)
	shrunk := metric(t, serverMetrics(t, cfg, false), series)
	// k8s.io/apiserver's defaultLowerBoundCapacity (storage/cacher/watch_cache_history.go);
	// the ring's sizes are 100 times a power of two, so it halves to exactly this.
	const ringLowerBound = 100
	if shrunk != ringLowerBound {
		t.Errorf("the watch cache's ring did not shrink to its lower bound of %d events after its history window: %.0f events, was %.0f", ringLowerBound, shrunk, capacity)
	}
	final := liveHeap(t, cfg)
	mib := func(b float64) float64 { return b / (1 << 20) }
	t.Logf("live heap: %.1f MiB at baseline, %.1f MiB right after the load, %.1f MiB once the watch cache's history of the load has expired (ring of %.0f events shrunk to %.0f); etcd compacted every 5s",
		mib(baseline), mib(afterLoad), mib(final), capacity, shrunk)
	if limit := baseline*1.25 + 4<<20; final > limit {
		t.Errorf("live heap does not return to its baseline: %.1f MiB after the run, %.1f MiB before (limit %.1f MiB)", mib(final), mib(baseline), mib(limit))
	}
}

// loadRound runs writers and watchers for a bounded time and checks the outcome.
func loadRound(t *testing.T, ctx context.Context, bc dynamic.ResourceInterface) {
	// Watchers keep their own view of the namespace.
	const watchers, writers = 8, 16
	list, err := bc.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	views := make([]map[string]string, watchers)
	// synced[i] is closed once watcher i has delivered the sentinel written after the load:
	// a watch delivers events in resourceVersion order, so it has delivered every earlier one.
	synced := make([]chan struct{}, watchers)
	const sentinel = "sentinel"
	var wwg sync.WaitGroup
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	for i := range views {
		views[i], synced[i] = map[string]string{}, make(chan struct{})
		w, err := bc.Watch(wctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			t.Fatal(err)
		}
		wwg.Add(1)
		go func(i int, view map[string]string, w watch.Interface) {
			defer wwg.Done()
			for ev := range w.ResultChan() {
				o, ok := ev.Object.(*unstructured.Unstructured)
				if !ok || ev.Type == watch.Error || ev.Type == watch.Bookmark {
					// client-go ends a watch whose context is cancelled with an error event.
					if wctx.Err() == nil {
						t.Errorf("watcher %d: %s event: %v", i, ev.Type, ev.Object)
					}
					continue
				}
				switch ev.Type {
				case watch.Added, watch.Modified:
					view[o.GetName()] = o.GetResourceVersion()
				case watch.Deleted:
					delete(view, o.GetName())
				}
				if o.GetName() == sentinel && ev.Type == watch.Added {
					close(synced[i])
				}
			}
			if wctx.Err() == nil {
				t.Errorf("watcher %d: the watch ended before the test stopped it", i)
			}
		}(i, views[i], w)
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

	// Every watcher converges on the final state: once it has delivered the sentinel, the
	// last write, its view must equal the list.
	if _, err := bc.Create(ctx, boat(sentinel, nil, 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	final, err := bc.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, o := range final.Items {
		want[o.GetName()] = o.GetResourceVersion()
	}
	for i := range synced {
		select {
		case <-synced[i]:
		case <-time.After(time.Minute):
			t.Errorf("watcher %d did not deliver the sentinel within a minute of its write", i)
		}
	}
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

	t.Logf("%d operations by %d writers with %d watchers in 20s: %d 5xx, %d other errors; %d objects at the end",
		ops.Load(), writers, watchers, serverErrors.Load(), otherErrors.Load(), len(want))
}

// writeSmallEvents writes n watch events (n/2 creates and n/2 deletes of tiny objects) with
// eight clients.
func writeSmallEvents(t *testing.T, ctx context.Context, rc dynamic.ResourceInterface, n int) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(2); i <= int64(n); i = next.Add(2) {
				name := fmt.Sprintf("small-%d", i)
				if _, err := rc.Create(ctx, boat(name, nil, 1), metav1.CreateOptions{}); err != nil {
					t.Errorf("small event: %v", err)
					return
				}
				if err := rc.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
					t.Errorf("small event: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// retryableResponses counts the responses a client-go transport receives with status 429
// or 5xx, below client-go's retries, and keeps the first one's description.
type retryableResponses struct {
	count atomic.Int64
	first atomic.Value // string
}

func (r *retryableResponses) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500) {
			if r.count.Add(1) == 1 {
				r.first.Store(fmt.Sprintf("first: %s %s -> %s", req.Method, req.URL.Path, resp.Status))
			}
		}
		return resp, err
	})
}

// roundTripFunc is an http.RoundTripper made of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
