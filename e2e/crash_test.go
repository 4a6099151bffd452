package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// startBinary runs the server binary in local mode on dir's state and waits for the
// KUBECONFIG line.
func startBinary(t *testing.T, bin, state string, extra ...string) (*exec.Cmd, dynamic.Interface, *rest.Config) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--local", "--secure-port=0", "--local-dir=" + filepath.Join(state, "local"), "--embedded-etcd-dir=" + filepath.Join(state, "etcd")}, extra...)...)
	stdout, _ := cmd.StdoutPipe()
	logs := &cluster.Buffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kc, err := awaitKubeconfig(stdout, 2*time.Minute)
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("server not ready: %v\n%s", err, cluster.Tail(logs.String(), 3000))
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	return cmd, dynamic.NewForConfigOrDie(cfg), cfg
}

// crashWrite is what a client knows of one object after a crash round: the last state a
// write of it was acknowledged with (resourceVersion and spec.lengthMeters), and the state
// of a later write whose answer never came (in flight at the kill, or failed).
type crashWrite struct {
	acked       bool
	ackedRV     string
	ackedLength int64
	inFlight    bool
	// inFlightLength is the length the unacknowledged write would have stored.
	inFlightLength int64
	// ackedRVs are every acknowledged write's resourceVersion (create, then update).
	ackedRVs []string
}

// storedBoat is an object's resourceVersion and spec.lengthMeters as read back.
type storedBoat struct {
	rv     string
	length int64
}

func readStoredBoats(t *testing.T, items []unstructured.Unstructured) map[string]storedBoat {
	t.Helper()
	out := map[string]storedBoat{}
	for _, item := range items {
		length, _, _ := unstructured.NestedInt64(item.Object, "spec", "lengthMeters")
		out[item.GetName()] = storedBoat{rv: item.GetResourceVersion(), length: length}
	}
	return out
}

// crashWriters are four writers that create Boats named <prefix>-w<writer>-<i> and update
// each once (resourceVersion as precondition), going on through errors until finish: an
// error leaves the write in flight.
type crashWriters struct {
	mu     sync.Mutex
	wg     sync.WaitGroup
	stop   chan struct{}
	writes map[string]*crashWrite
	// firstErr is the first error a write got, for a failure's message.
	firstErr error
}

func startCrashWriters(ctx context.Context, bc dynamic.ResourceInterface, prefix string) *crashWriters {
	cw := &crashWriters{stop: make(chan struct{}), writes: map[string]*crashWrite{}}
	for w := 0; w < 4; w++ {
		cw.wg.Add(1)
		go func(w int) {
			defer cw.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-cw.stop:
					return
				default:
				}
				name := fmt.Sprintf("%s-w%d-%d", prefix, w, i)
				rec := &crashWrite{inFlight: true, inFlightLength: int64(i)}
				cw.mu.Lock()
				cw.writes[name] = rec
				cw.mu.Unlock()
				created, err := bc.Create(ctx, boat(name, nil, int64(i)), metav1.CreateOptions{})
				if err != nil {
					cw.failed(err)
					continue
				}
				cw.mu.Lock()
				*rec = crashWrite{acked: true, ackedRV: created.GetResourceVersion(), ackedLength: int64(i), ackedRVs: []string{created.GetResourceVersion()},
					inFlight: true, inFlightLength: int64(i) + 100000}
				cw.mu.Unlock()
				_ = unstructured.SetNestedField(created.Object, int64(i)+100000, "spec", "lengthMeters")
				updated, err := bc.Update(ctx, created, metav1.UpdateOptions{})
				if err != nil {
					cw.failed(err)
					continue
				}
				cw.mu.Lock()
				rec.ackedRV, rec.ackedLength, rec.inFlight = updated.GetResourceVersion(), int64(i)+100000, false
				rec.ackedRVs = append(rec.ackedRVs, updated.GetResourceVersion())
				cw.mu.Unlock()
			}
		}(w)
	}
	return cw
}

func (cw *crashWriters) failed(err error) {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	if cw.firstErr == nil {
		cw.firstErr = err
	}
}

// finish stops the writers (call it once the server is killed, so that what was in flight
// stays in flight) and returns what they wrote, the number of acknowledged writes and of
// objects with a write in flight.
func (cw *crashWriters) finish() (writes map[string]*crashWrite, acked, inFlight int) {
	close(cw.stop)
	cw.wg.Wait()
	for _, rec := range cw.writes {
		acked += len(rec.ackedRVs)
		if rec.inFlight {
			inFlight++
		}
	}
	return cw.writes, acked, inFlight
}

// checkStored checks the Boats stored after a crash against what the client knows: objects
// verified before (known) unchanged, every acknowledged write stored with the
// resourceVersion and spec it was acknowledged with, and an object stored without its last
// write acknowledged only with the content of the write in flight. It returns how many
// writes in flight were stored.
func checkStored(t *testing.T, what string, stored, known map[string]storedBoat, writes map[string]*crashWrite) (inFlightStored int) {
	t.Helper()
	for name, got := range stored {
		if want, ok := known[name]; ok {
			if got != want {
				t.Errorf("%s: %s from an earlier round changed: %+v, was %+v", what, name, got, want)
			}
			continue
		}
		rec := writes[name]
		switch {
		case rec == nil:
			t.Errorf("%s: %s stored but never written", what, name)
		case rec.acked && got.rv == rec.ackedRV && got.length == rec.ackedLength:
		case rec.inFlight && got.length == rec.inFlightLength:
			inFlightStored++ // the answer was lost, the write applied: allowed
		case rec.acked:
			t.Errorf("%s: %s stored as %+v, acknowledged as resourceVersion %s length %d", what, name, got, rec.ackedRV, rec.ackedLength)
		default:
			t.Errorf("%s: %s stored as %+v but never acknowledged nor in flight with that content", what, name, got)
		}
	}
	for name, rec := range writes {
		if _, ok := stored[name]; rec.acked && !ok {
			t.Errorf("%s: acknowledged write %s (resourceVersion %s) lost", what, name, rec.ackedRV)
		}
	}
	for name, want := range known {
		if _, ok := stored[name]; !ok {
			t.Errorf("%s: %s (resourceVersion %s), verified earlier, lost", what, name, want.rv)
		}
	}
	return inFlightStored
}

// TestCrashRecovery kills the server with SIGKILL in the middle of a stream of writes on
// its embedded etcd, restarts it, and checks by content that every acknowledged write
// survived, that only writes whose answer never came are stored unacknowledged, and that a
// watch from before the crash resumes and delivers every acknowledged write.
func TestCrashRecovery(t *testing.T) {
	skipShort(t)
	_, bin := buildExample(t)
	state := t.TempDir()
	ctx := context.Background()
	// known is what the server must hold at the start of a round: the state each object was
	// verified in after the previous rounds.
	known := map[string]storedBoat{}
	var firstRV string
	for round := 0; round < 3; round++ {
		cmd, dyn, _ := startBinary(t, bin, state)
		bc := dyn.Resource(boats).Namespace("harbour")
		list, err := bc.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := readStoredBoats(t, list.Items); !reflect.DeepEqual(got, known) {
			t.Fatalf("round %d: %d boats stored, not the %d verified after the previous round (or with other content)", round, len(got), len(known))
		}
		startRV := list.GetResourceVersion()

		writers := startCrashWriters(ctx, bc, fmt.Sprintf("r%d", round))
		time.Sleep(1500 * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		writes, ackedWrites, inFlight := writers.finish()
		_ = cmd.Wait()
		if ackedWrites == 0 {
			t.Fatalf("round %d: no write was acknowledged", round)
		}

		cmd, dyn, _ = startBinary(t, bin, state)
		bc = dyn.Resource(boats).Namespace("harbour")
		list, err = bc.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stored := readStoredBoats(t, list.Items)
		inFlightStored := checkStored(t, fmt.Sprintf("round %d", round), stored, known, writes)
		// A watch from before the crash resumes (the runtime serves it from etcd, which
		// still has the events, although the restarted watch cache starts after them) and
		// delivers every acknowledged write, in resourceVersion order; it may also deliver
		// writes that were in flight and were stored.
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		w, err := bc.Watch(wctx, metav1.ListOptions{ResourceVersion: startRV})
		if err != nil {
			t.Fatal(err)
		}
		pending := map[string]string{} // resourceVersion: name
		for name, rec := range writes {
			for _, rv := range rec.ackedRVs {
				pending[rv] = name
			}
		}
		lastRV := int64(0)
		for len(pending) > 0 {
			ev, ok := <-w.ResultChan()
			if !ok {
				t.Fatalf("round %d: the resumed watch ended with %d of %d acknowledged writes missed", round, len(pending), ackedWrites)
			}
			if ev.Type == watch.Error {
				t.Fatalf("round %d: the watch from before the crash did not resume: %v", round, ev.Object)
			}
			o := ev.Object.(*unstructured.Unstructured)
			rv, _ := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
			if (ev.Type != watch.Added && ev.Type != watch.Modified) || rv <= lastRV || writes[o.GetName()] == nil {
				t.Fatalf("round %d: resumed watch: %s %s at %d after %d", round, ev.Type, o.GetName(), rv, lastRV)
			}
			lastRV = rv
			if name, ok := pending[o.GetResourceVersion()]; ok && name != o.GetName() {
				t.Fatalf("round %d: resumed watch: %s at %d, acknowledged for %s", round, o.GetName(), rv, name)
			}
			delete(pending, o.GetResourceVersion())
		}
		w.Stop()
		cancel()
		if round == 0 {
			firstRV = startRV
		}
		for name, got := range stored {
			known[name] = got
		}
		t.Logf("round %d: %d writes acknowledged before SIGKILL, all stored with their content and delivered by the watch resumed after the restart; %d objects had a write in flight, %d of them stored", round, ackedWrites, inFlight, inFlightStored)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}

	// Once etcd has compacted the revision a watch asks for, nothing can resume it: the
	// watch gets 410 Gone, and a relist (what informers do) recovers every write; a watch
	// from the relist's resourceVersion delivers new writes.
	cmd, dyn, _ := startBinary(t, bin, state, "--etcd-compaction-interval=2s")
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	bc := dyn.Resource(boats).Namespace("harbour")
	for i := 0; i < 3; i++ {
		// The compactor compacts to the revision it saw one interval earlier.
		if _, err := bc.Create(ctx, boat(fmt.Sprintf("compacted-%d", i), nil, 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		known[fmt.Sprintf("compacted-%d", i)] = storedBoat{}
		time.Sleep(2500 * time.Millisecond)
	}
	expectGone(t, ctx, bc, firstRV)
	relist, err := bc.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	relisted := map[string]bool{}
	for _, item := range relist.Items {
		relisted[item.GetName()] = true
	}
	for name := range known {
		if !relisted[name] {
			t.Errorf("%s missing from the relist", name)
		}
	}
	expectWatchFromRelist(t, ctx, bc, relist.GetResourceVersion())
}

// expectGone opens a watch from rv, which compaction has removed, and wants its one
// event to be 410 Gone.
func expectGone(t *testing.T, ctx context.Context, c dynamic.ResourceInterface, rv string) {
	t.Helper()
	w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case ev := <-w.ResultChan():
		status, _ := ev.Object.(*metav1.Status)
		if ev.Type != watch.Error || status == nil || status.Code != 410 {
			t.Fatalf("watch from a compacted resourceVersion: want 410 Gone, got %s %v", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("watch from a compacted resourceVersion: no event")
	}
}

// expectWatchFromRelist opens a watch from a relist's resourceVersion and wants it to
// deliver the next create.
func expectWatchFromRelist(t *testing.T, ctx context.Context, c dynamic.ResourceInterface, rv string) {
	t.Helper()
	w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := c.Create(ctx, boat("after-relist", nil, 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if o, ok := ev.Object.(*unstructured.Unstructured); ev.Type != watch.Added || !ok || o.GetName() != "after-relist" {
			t.Errorf("watch after relist got %s %v", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("watch after relist saw nothing")
	}
}
