package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aagen-dev/aagen/e2e/cluster"
	"github.com/aagen-dev/aagen/e2e/robustness"
)

// robustnessSeedsEnv names the environment variable that replays chosen seeds of
// TestRobustness (comma-separated).
const robustnessSeedsEnv = "AAGEN_ROBUSTNESS_SEEDS"

// faultKinds are the faults TestRobustness injects.
func faultKinds() []string {
	return []string{"kill replica", "kill etcd member", "partition etcd member", "slow etcd member"}
}

// TestRobustness runs generated traffic (create, update with a precondition, delete, get,
// list, watch) against two replicas of the generated server on a 3-member etcd cluster
// while faults are injected at random points, records the whole history, checks it for
// linearizability with porcupine and checks every watch against the storage's own events
// (ordered, no gaps, no duplicates, resumable from any delivered resourceVersion). Each
// seed decides the traffic, two fault kinds and when they strike; a failure prints the seed
// to replay it with AAGEN_ROBUSTNESS_SEEDS.
func TestRobustness(t *testing.T) {
	skipShort(t)
	// Registered first, so it runs last: after the processes' output tails, which would
	// otherwise bury the failures at the end of a long CI log.
	failures := &failureLog{}
	t.Cleanup(func() { failures.repeat(t) })
	seeds := robustnessSeedList(t)
	etcdBin := cluster.EtcdBinary(t)
	_, bin := buildExample(t)
	members := startFaultEtcdCluster(t, etcdBin)
	var servers []string
	for _, m := range members {
		servers = append(servers, m.proxiedClientURL())
	}
	replicas, _ := startHAReplicas(t, bin, servers)
	env := &robustEnv{parent: t, etcdBin: etcdBin, bin: bin, members: members, replicas: replicas, failures: failures}
	env.clients = env.newClients(t)
	kinds := map[string]bool{}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("replay: %s=%d go test ./e2e -run TestRobustness", robustnessSeedsEnv, seed)
				}
			})
			for _, k := range env.run(failures.recording(t), seed) {
				kinds[k] = true
			}
		})
	}
	if len(seeds) >= 3 && len(kinds) < 2 {
		t.Errorf("only %d fault kinds injected over %d seeds", len(kinds), len(seeds))
	}
}

// robustnessSeedList is the seeds to run: the environment's, or three new ones.
func robustnessSeedList(t *testing.T) []int64 {
	t.Helper()
	spec := os.Getenv(robustnessSeedsEnv)
	if spec == "" {
		base := time.Now().UnixNano() % 1_000_000
		return []int64{base, base + 1, base + 2}
	}
	var seeds []int64
	for _, s := range strings.Split(spec, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			t.Fatalf("robustness seed %q: %v", s, err)
		}
		seeds = append(seeds, n)
	}
	return seeds
}

// robustEnv is the cluster the seeds share.
type robustEnv struct {
	parent   *testing.T // processes restarted by faults belong to the whole test
	etcdBin  string
	bin      string
	members  []*faultMember
	replicas []*haReplica
	clients  []*robustClient
	failures *failureLog
}

// failureLog keeps the failure messages of TestRobustness's seeds to repeat them at the
// test's very end.
type failureLog struct {
	mu   sync.Mutex
	msgs []string
}

// recording returns t with its Errorf and Fatalf messages also kept in l.
func (l *failureLog) recording(t *testing.T) recordingT { return recordingT{T: t, log: l} }

func (l *failureLog) add(test, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, test+": "+msg)
}

// repeat logs the kept messages again if t failed.
func (l *failureLog) repeat(t *testing.T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.Failed() && len(l.msgs) > 0 {
		t.Logf("failures, repeated after the processes' output:\n%s", strings.Join(l.msgs, "\n"))
	}
}

// recordingT is a seed's *testing.T that also keeps its failure messages in log.
type recordingT struct {
	*testing.T
	log *failureLog
}

func (r recordingT) Errorf(format string, args ...any) {
	r.Helper()
	r.log.add(r.Name(), fmt.Sprintf(format, args...))
	r.T.Errorf(format, args...)
}

func (r recordingT) Fatalf(format string, args ...any) {
	r.Helper()
	r.log.add(r.Name(), fmt.Sprintf(format, args...))
	r.T.Fatalf(format, args...)
}

func (r recordingT) Fatal(args ...any) {
	r.Helper()
	r.log.add(r.Name(), fmt.Sprint(args...))
	r.T.Fatal(args...)
}

// robustClient is a client of one replica whose requests client-go does not retry: the
// transport removes Retry-After, so a write's answer is the answer to its only attempt.
type robustClient struct {
	boats dynamic.NamespaceableResourceInterface
}

func (e *robustEnv) newClients(t *testing.T) []*robustClient {
	t.Helper()
	var localDir string
	for _, a := range e.replicas[0].args {
		if d, ok := strings.CutPrefix(a, "--local-dir="); ok {
			localDir = d
		}
	}
	base, err := clientcmd.BuildConfigFromFlags("", filepath.Join(localDir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*robustClient
	for _, r := range e.replicas {
		cfg := rest.CopyConfig(base)
		cfg.Host = r.host
		cfg.QPS, cfg.Burst = 1000, 1000
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(req *http.Request) (*http.Response, error) {
				resp, err := rt.RoundTrip(req)
				if resp != nil {
					resp.Header.Del("Retry-After")
				}
				return resp, err
			})
		})
		out = append(out, &robustClient{boats: dynamic.NewForConfigOrDie(cfg).Resource(boats)})
	}
	return out
}

// run runs one seed: traffic and watches for a bounded time with two faults, then the
// checks. It returns the fault kinds injected.
func (e *robustEnv) run(t recordingT, seed int64) []string {
	rng := rand.New(rand.NewSource(seed))
	ns := fmt.Sprintf("robust-%d", seed)
	const (
		clients  = 6
		names    = 8
		duration = 16 * time.Second
	)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	keys := make([]string, names)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	start, err := e.clients[0].boats.Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	startRV, _ := strconv.ParseInt(start.GetResourceVersion(), 10, 64)

	// Watches: one opened on each replica before the traffic, reopened from the last
	// delivered resourceVersion (on the other replica when this one is down).
	watches := make([]*robustWatch, len(e.clients))
	wctx, stopWatches := context.WithCancel(ctx)
	defer stopWatches()
	for i := range watches {
		watches[i] = e.startWatch(wctx, ns, i, startRV)
	}

	// Faults: two kinds of this seed, at random points of the first and second half.
	all := faultKinds()
	perm := rng.Perm(len(all))
	kinds := []string{all[perm[0]], all[perm[1]]}
	faultRNG := rand.New(rand.NewSource(rng.Int63()))
	var faultWG sync.WaitGroup
	faultWG.Add(1)
	begin := time.Now()
	go func() {
		defer faultWG.Done()
		for i, kind := range kinds {
			at := begin.Add(time.Duration(i)*duration/2 + time.Second + time.Duration(faultRNG.Int63n(int64(duration/2-5*time.Second))))
			time.Sleep(time.Until(at))
			e.inject(t, faultRNG, kind, 3*time.Second)
		}
	}()

	// Traffic: each client picks a replica, an object and an operation at random.
	var (
		histMu  sync.Mutex
		history []robustness.Op
		value   int64
		wg      sync.WaitGroup
	)
	nextValue := func() int64 {
		histMu.Lock()
		defer histMu.Unlock()
		value++
		return value
	}
	record := func(ops ...robustness.Op) {
		histMu.Lock()
		history = append(history, ops...)
		histMu.Unlock()
	}
	for c := 0; c < clients; c++ {
		crng := rand.New(rand.NewSource(rng.Int63()))
		wg.Add(1)
		go func(c int, crng *rand.Rand) {
			defer wg.Done()
			seen := map[string]int64{} // name -> last resourceVersion this client saw
			for time.Since(begin) < duration {
				rc := e.clients[crng.Intn(len(e.clients))].boats.Namespace(ns)
				name := keys[crng.Intn(len(keys))]
				op := robustness.Op{Client: c, Name: name}
				var opErr error
				rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
				op.Call = time.Now()
				switch p := crng.Intn(100); {
				case p < 25:
					op.Kind, op.Value = robustness.Create, nextValue()
					obj, err := rc.Create(rctx, boat(name, nil, op.Value), metav1.CreateOptions{})
					op.Return, opErr = time.Now(), err
					op.Result, op.RV = outcome(obj, err)
				case p < 50 && seen[name] != 0:
					op.Kind, op.Value, op.Precondition = robustness.Update, nextValue(), seen[name]
					u := boat(name, nil, op.Value)
					u.SetResourceVersion(strconv.FormatInt(op.Precondition, 10))
					obj, err := rc.Update(rctx, u, metav1.UpdateOptions{})
					op.Return, opErr = time.Now(), err
					op.Result, op.RV = outcome(obj, err)
				case p < 60:
					op.Kind = robustness.Delete
					err := rc.Delete(rctx, name, metav1.DeleteOptions{})
					op.Return, opErr = time.Now(), err
					op.Result, _ = outcome(nil, err)
				case p < 80:
					op.Kind = robustness.Get
					obj, err := rc.Get(rctx, name, metav1.GetOptions{})
					op.Return = time.Now()
					op.Result, op.RV = outcome(obj, err)
					if obj != nil && err == nil {
						op.Value, _, _ = unstructured.NestedInt64(obj.Object, "spec", "lengthMeters")
					}
				default:
					// A list is a read of every name at once.
					list, err := rc.List(rctx, metav1.ListOptions{})
					ret := time.Now()
					rcancel()
					if err != nil {
						continue
					}
					found := map[string]*unstructured.Unstructured{}
					for i := range list.Items {
						found[list.Items[i].GetName()] = &list.Items[i]
					}
					var reads []robustness.Op
					for _, k := range keys {
						r := robustness.Op{Client: c, Name: k, Kind: robustness.Get, Result: robustness.NotFound, Call: op.Call, Return: ret}
						if o := found[k]; o != nil {
							r.Result = robustness.OK
							r.RV, _ = strconv.ParseInt(o.GetResourceVersion(), 10, 64)
							r.Value, _, _ = unstructured.NestedInt64(o.Object, "spec", "lengthMeters")
							seen[k] = r.RV
						}
						reads = append(reads, r)
					}
					record(reads...)
					continue
				}
				rcancel()
				if op.RV != 0 {
					seen[name] = op.RV
				}
				if op.Result == robustness.Unknown && op.Kind == robustness.Get {
					continue
				}
				if op.Result == robustness.Unknown && errors.Is(opErr, syscall.ECONNREFUSED) {
					continue // never reached a server: not applied, nothing to check
				}
				record(op)
			}
		}(c, crng)
	}
	wg.Wait()
	faultWG.Wait()
	e.healAll(t)

	// Every watch catches up with the storage's last revision of the key space.
	history2 := etcdHistory(ctx, t, e.members, ns, startRV)
	headRV := startRV
	if len(history2) > 0 {
		headRV = history2[len(history2)-1].RV
	}
	for i, w := range watches {
		w.waitFor(t, headRV, time.Minute)
		if err := robustness.CheckWatch(w.delivered(), history2, startRV, headRV); err != nil {
			t.Errorf("watch %d (opened on replica%d, reopened %d times): %v", i, i, w.reopens(), err)
		}
	}
	stopWatches()

	// Resumable from any delivered resourceVersion: new watches from a few of them, on
	// either replica, deliver exactly the storage's events after it.
	var delivered []robustness.Event
	for _, w := range watches {
		delivered = append(delivered, w.delivered()...)
	}
	resumed := 0
	for i := 0; i < 3 && len(delivered) > 0; i++ {
		from := delivered[rng.Intn(len(delivered))].RV
		r := rng.Intn(len(e.clients))
		rctx, rcancel := context.WithTimeout(ctx, time.Minute)
		w := e.startWatchOn(rctx, ns, r, from, false)
		w.waitFor(t, headRV, time.Minute)
		rcancel()
		if err := robustness.CheckWatch(w.delivered(), history2, from, headRV); err != nil {
			t.Errorf("watch resumed on replica%d from delivered resourceVersion %d: %v", r, from, err)
		}
		resumed++
	}

	checked, err := robustness.CheckLinearizable(history, time.Minute)
	if err != nil {
		t.Errorf("seed %d: %v", seed, err)
	}
	counts := map[string]int{}
	for _, o := range history {
		counts[o.Kind.String()+" "+o.Result.String()]++
	}
	var summary []string
	for k, n := range counts {
		summary = append(summary, fmt.Sprintf("%s %d", k, n))
	}
	slices.Sort(summary)
	events := 0
	for _, w := range watches {
		events += len(w.delivered())
	}
	t.Logf("seed %d: faults %s; %d operations checked for linearizability (%s); %d storage events, %d watch events checked on %d watches (%d reopens), %d resumed watches; 0 violations unless reported above",
		seed, strings.Join(kinds, " and "), checked, strings.Join(summary, ", "), len(history2), events, len(watches), watches[0].reopens()+watches[1].reopens(), resumed)
	return kinds
}

// outcome classifies an answer for the model.
func outcome(obj *unstructured.Unstructured, err error) (robustness.Result, int64) {
	switch {
	case err == nil:
		var rv int64
		if obj != nil {
			rv, _ = strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
		}
		return robustness.OK, rv
	case apierrors.IsNotFound(err):
		return robustness.NotFound, 0
	case apierrors.IsAlreadyExists(err):
		return robustness.AlreadyExists, 0
	case apierrors.IsConflict(err):
		return robustness.Conflict, 0
	}
	return robustness.Unknown, 0
}

// inject applies one fault for about d, then undoes it.
func (e *robustEnv) inject(t recordingT, rng *rand.Rand, kind string, d time.Duration) {
	switch kind {
	case "kill replica":
		r := e.replicas[rng.Intn(len(e.replicas))]
		r.proc.Kill()
		t.Logf("%s: SIGKILLed %s", kind, r.name)
		time.Sleep(d)
		r.proc = cluster.StartProcess(e.parent, r.name+" (restarted)", e.bin, r.args...)
	case "kill etcd member":
		m := e.members[rng.Intn(len(e.members))]
		m.proc.Kill()
		t.Logf("%s: SIGKILLed %s", kind, m.name)
		time.Sleep(d)
		m.proc = cluster.StartProcess(e.parent, "etcd "+m.name+" (restarted)", e.etcdBin, m.args...)
	case "partition etcd member":
		i := rng.Intn(len(e.members))
		partition(e.members, i)
		t.Logf("%s: partitioned %s", kind, e.members[i].name)
		time.Sleep(d)
		heal(e.members)
	case "slow etcd member":
		m := e.members[rng.Intn(len(e.members))]
		m.clientProxy.Delay(200 * time.Millisecond)
		m.peerProxy.Delay(200 * time.Millisecond)
		t.Logf("%s: %s delayed by 200ms each way", kind, m.name)
		time.Sleep(d)
		heal(e.members)
	default:
		t.Errorf("unknown fault %q", kind)
	}
}

// healAll waits until every replica is ready and every member answers.
func (e *robustEnv) healAll(t recordingT) {
	t.Helper()
	heal(e.members)
	for _, r := range e.replicas {
		r.waitAnnounced(t.T, 2*time.Minute)
	}
	cli := etcdClient(t.T, haMembers(e.members)...)
	deadline := time.Now().Add(time.Minute)
	for _, m := range e.members {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := cli.Status(ctx, m.clientURL)
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("etcd %s does not answer after the faults: %v", m.name, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// etcdHistory is the storage's own event history of the namespace's boats after fromRV,
// read with an etcd watch from fromRV+1 up to the current revision.
func etcdHistory(ctx context.Context, t recordingT, members []*faultMember, ns string, fromRV int64) []robustness.Event {
	t.Helper()
	cli := etcdClient(t.T, haMembers(members)...)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	head, err := cli.Get(rctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	// The boats' keys are /registry/<group>/boats/<namespace>/<name>.
	prefix := ""
	all, err := cli.Get(rctx, "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range all.Kvs {
		if i := strings.Index(string(kv.Key), "/boats/"); i >= 0 {
			prefix = string(kv.Key[:i]) + "/boats/" + ns + "/"
			break
		}
	}
	if prefix == "" {
		t.Fatal("no boats in etcd")
	}
	// A progress notification at or after the head revision says the watch has delivered
	// every event up to it.
	var out []robustness.Event
	wch := cli.Watch(rctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(fromRV+1))
	if err := cli.RequestProgress(rctx); err != nil {
		t.Fatal(err)
	}
	for {
		resp, ok := <-wch
		if !ok {
			t.Fatalf("etcd watch of %s ended: %v", prefix, rctx.Err())
		}
		if err := resp.Err(); err != nil {
			t.Fatal(err)
		}
		if resp.IsProgressNotify() {
			if resp.Header.Revision >= head.Header.Revision {
				return out
			}
			if err := cli.RequestProgress(rctx); err != nil {
				t.Fatal(err)
			}
			continue
		}
		for _, ev := range resp.Events {
			if ev.Kv.ModRevision > head.Header.Revision {
				return out
			}
			e := robustness.Event{Name: strings.TrimPrefix(string(ev.Kv.Key), prefix), RV: ev.Kv.ModRevision}
			switch {
			case ev.Type == clientv3.EventTypeDelete:
				e.Type = string(watch.Deleted)
			case ev.IsCreate():
				e.Type = string(watch.Added)
			default:
				e.Type = string(watch.Modified)
			}
			out = append(out, e)
		}
		if err := cli.RequestProgress(rctx); err != nil {
			t.Fatal(err)
		}
	}
}

// robustWatch is a watch of a namespace's boats that, like a reflector, reopens from its
// last delivered resourceVersion when the watch ends, fails to open or ends with an error
// event other than 410 Gone. A 410 Gone ends it for good: the check is that every
// delivered resourceVersion can be resumed from.
type robustWatch struct {
	mu       sync.Mutex
	events   []robustness.Event
	last     int64
	nReopens int
	errs     []string // 410 Gone answers: failures
	lastErr  string   // the last error that made it reopen, for a timeout's message
	done     chan struct{}
}

// startWatch watches from on replica and reopens on the next replica each time.
func (e *robustEnv) startWatch(ctx context.Context, ns string, replica int, from int64) *robustWatch {
	return e.startWatchOn(ctx, ns, replica, from, true)
}

// startWatchOn watches from the resourceVersion from on replica until ctx ends; with
// alternate it reopens on the next replica, otherwise on the same one.
func (e *robustEnv) startWatchOn(ctx context.Context, ns string, replica int, from int64, alternate bool) *robustWatch {
	w := &robustWatch{last: from, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		r := replica
		opened := false
		for first := true; ctx.Err() == nil; first = false {
			if !first {
				if alternate {
					r = (r + 1) % len(e.clients)
				}
				time.Sleep(100 * time.Millisecond)
			}
			wi, err := e.clients[r].boats.Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(w.lastRV(), 10)})
			if err != nil {
				w.noteError(fmt.Sprintf("opening on replica%d: %v", r, err))
				continue
			}
			if opened {
				w.mu.Lock()
				w.nReopens++
				w.mu.Unlock()
			}
			opened = true
			if gone := w.consume(wi, r); gone {
				return
			}
		}
	}()
	return w
}

// consume records wi's events until it ends and tells whether it ended with 410 Gone.
func (w *robustWatch) consume(wi watch.Interface, replica int) (gone bool) {
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		if ev.Type == watch.Error {
			err := apierrors.FromObject(ev.Object)
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				w.mu.Lock()
				w.errs = append(w.errs, fmt.Sprintf("410 Gone on replica%d from resourceVersion %d: %v", replica, w.last, err))
				w.mu.Unlock()
				return true
			}
			w.noteError(fmt.Sprintf("error event on replica%d: %v", replica, err))
			return false
		}
		o, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			w.noteError(fmt.Sprintf("%s event on replica%d with a %T", ev.Type, replica, ev.Object))
			return false
		}
		rv, _ := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
		w.mu.Lock()
		w.events = append(w.events, robustness.Event{Type: string(ev.Type), Name: o.GetName(), RV: rv})
		w.last = rv
		w.mu.Unlock()
	}
	return false
}

func (w *robustWatch) noteError(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lastErr = msg
}

func (w *robustWatch) lastRV() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

func (w *robustWatch) delivered() []robustness.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.events)
}

func (w *robustWatch) reopens() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nReopens
}

// waitFor waits until the watch has delivered resourceVersion rv or later.
func (w *robustWatch) waitFor(t recordingT, rv int64, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		w.mu.Lock()
		last, errs, lastErr := w.last, slices.Clone(w.errs), w.lastErr
		w.mu.Unlock()
		if len(errs) > 0 {
			t.Errorf("watch: %s", strings.Join(errs, "; "))
			return
		}
		if last >= rv {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("watch at resourceVersion %d has not reached %d after %s (last error: %q)", last, rv, timeout, lastErr)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
