package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// haMember is one etcd member of the loopback cluster.
type haMember struct {
	name, clientURL string
	args            []string
	proc            *cluster.Process
}

// haReplica is one replica of the generated server.
type haReplica struct {
	name string
	host string
	args []string
	proc *cluster.Process
}

// startEtcdCluster starts a static 3-member etcd cluster on loopback and waits for a leader.
// The members' data directories are dataDirs when given (one each), else temporary ones.
func startEtcdCluster(t *testing.T, bin string, dataDirs ...string) []*haMember {
	t.Helper()
	const n = 3
	var peers []string
	members := make([]*haMember, n)
	peerURLs := make([]string, n)
	for i := range members {
		members[i] = &haMember{name: fmt.Sprintf("m%d", i), clientURL: fmt.Sprintf("http://127.0.0.1:%d", cluster.FreePort(t))}
		peerURLs[i] = fmt.Sprintf("http://127.0.0.1:%d", cluster.FreePort(t))
		peers = append(peers, members[i].name+"="+peerURLs[i])
	}
	if len(dataDirs) != 0 && len(dataDirs) != n {
		t.Fatalf("startEtcdCluster: %d data directories for %d members", len(dataDirs), n)
	}
	for i, m := range members {
		dataDir := filepath.Join(t.TempDir(), m.name)
		if len(dataDirs) != 0 {
			dataDir = dataDirs[i]
		}
		// The data directory survives the member's restart; the --initial-* flags are
		// ignored then.
		m.args = []string{
			"--name=" + m.name, "--data-dir=" + dataDir,
			"--listen-client-urls=" + m.clientURL, "--advertise-client-urls=" + m.clientURL,
			"--listen-peer-urls=" + peerURLs[i], "--initial-advertise-peer-urls=" + peerURLs[i],
			"--initial-cluster=" + strings.Join(peers, ","), "--initial-cluster-state=new",
			"--initial-cluster-token=aagen-e2e-ha", "--log-level=warn",
		}
		m.proc = cluster.StartProcess(t, "etcd "+m.name, bin, m.args...)
	}
	cli := etcdClient(t, members...)
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := etcdLeader(cli, members); err == nil {
			return members
		} else if time.Now().After(deadline) {
			t.Fatalf("etcd cluster has no leader after a minute: %v\n%s", err, cluster.Tail(members[0].proc.Out.String(), 3000))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func etcdClient(t *testing.T, members ...*haMember) *clientv3.Client {
	t.Helper()
	var eps []string
	for _, m := range members {
		eps = append(eps, m.clientURL)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// etcdLeader returns the index of the member that is leader, asking every member.
func etcdLeader(cli *clientv3.Client, members []*haMember) (int, error) {
	var errs []error
	for i, m := range members {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := cli.Status(ctx, m.clientURL)
		cancel()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st.Leader != 0 && st.Leader == st.Header.MemberId {
			return i, nil
		}
	}
	return -1, fmt.Errorf("no member reports itself as leader: %v", errors.Join(errs...))
}

// etcdWatchers returns the number of watchers a member serves, from its /metrics.
func etcdWatchers(m *haMember) int {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(m.clientURL + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "etcd_debugging_mvcc_watcher_total "); ok {
			n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(n)
		}
	}
	return -1
}

// haObject is the last state of a Boat a writer knows: acknowledged by the server, or read
// back after an attempt whose outcome was unknown.
type haObject struct {
	rv     string
	length int64
	how    string // "ack" or "read"
}

// haStats are the writers' figures.
type haStats struct {
	mu        sync.Mutex
	acks      []time.Time   // every acknowledged write
	failures  []time.Time   // every failed attempt (connection error, 5xx, timeout)
	resolved  int           // writes whose outcome was unknown and that were read back
	maxWait   time.Duration // longest from a write's first attempt to its success
	kinds     map[string]int
	kindsWait map[string]time.Duration // longest a failed attempt of that kind took to fail
}

func (s *haStats) ack(at time.Time) {
	s.mu.Lock()
	s.acks = append(s.acks, at)
	s.mu.Unlock()
}

func (s *haStats) fail(at time.Time, took time.Duration, err error) {
	s.mu.Lock()
	s.failures = append(s.failures, at)
	if s.kinds == nil {
		s.kinds, s.kindsWait = map[string]int{}, map[string]time.Duration{}
	}
	k := errorKind(err)
	s.kinds[k]++
	s.kindsWait[k] = max(s.kindsWait[k], took)
	s.mu.Unlock()
}

// errorKind names the kind of a failed attempt for the figures.
func errorKind(err error) string {
	var st apierrors.APIStatus
	switch {
	case errors.As(err, &st):
		return fmt.Sprintf("HTTP %d %s: %s", st.Status().Code, st.Status().Reason, st.Status().Message)
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer within 10s"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case strings.Contains(err.Error(), "EOF"), errors.Is(err, syscall.ECONNRESET):
		return "connection lost mid-request"
	}
	return err.Error()
}

func (s *haStats) waited(d time.Duration) {
	s.mu.Lock()
	s.maxWait = max(s.maxWait, d)
	s.mu.Unlock()
}

// retriable says whether an error means "this replica or its etcd could not do it now":
// connection errors, timeouts, 429 and 5xx. Those are retried on the other replica.
func retriable(err error) bool {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		code := st.Status().Code
		return code >= 500 || code == 429
	}
	return true
}

// TestHA runs a 3-member etcd cluster on loopback with two replicas of the generated server
// on it, SIGKILLs the etcd leader and then one replica while writers spread creates and
// updates over both replicas (failing over on connection errors and 5xx), restarts both,
// and checks that every acknowledged write is stored with its acknowledged content and
// resourceVersion — through both replicas and in every etcd member — that writes succeed
// again within a bounded time after each kill, and that a watch on the surviving replica
// delivers every write across the etcd member's death.
func TestHA(t *testing.T) {
	skipShort(t)
	runsToolsAlone(t)
	etcdBin := cluster.EtcdBinary(t)
	_, bin := buildExample(t)

	members := startEtcdCluster(t, etcdBin)
	var etcdServers []string
	for _, m := range members {
		etcdServers = append(etcdServers, m.clientURL)
	}

	replicas, clients := startHAReplicas(t, bin, etcdServers)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Replica 0 survives; its watch runs from before the first write to the end.
	survivor, victim := 0, 1
	list, err := clients[survivor].List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watcher := startHAWatch(ctx, t, clients[survivor], list.GetResourceVersion())

	load := startHALoad(ctx, t, clients, 4)
	tl := runHATimeline(t, haKills{
		members: members, etcdBin: etcdBin,
		replicas: replicas, victim: victim, serverBin: bin,
	})
	load.finish()
	tl.end = time.Now()
	if t.Failed() {
		t.FailNow()
	}

	t.Run("recovery bounds", func(t *testing.T) {
		checkHARecovery(t, load, tl)
	})
	t.Run("acknowledged writes through both replicas", func(t *testing.T) {
		// Every acknowledged write is stored with its content and resourceVersion, read through
		// both replicas (the restarted one included)...
		for i, c := range clients {
			checkHAReplica(ctx, t, replicas[i].name, c, load)
		}
	})
	t.Run("acknowledged writes in every etcd member", func(t *testing.T) {
		// ...and in every etcd member, the restarted one included, once it has caught up: each
		// key's mod revision is the acknowledged resourceVersion.
		checkEtcdMembers(ctx, t, members, load.objects)
	})
	t.Run("watch on the surviving replica", func(t *testing.T) {
		// The watch on the surviving replica delivered every write, across the etcd kill.
		watcher.waitFor(t, load.objects, 30*time.Second)
		watcher.stop()
		t.Logf("watch on %s: %d events, %d after the etcd leader's SIGKILL, reopened %d times, longest silence while writes were acknowledged %s",
			replicas[survivor].name, watcher.events, watcher.eventsAfter(tl.etcdKilled), watcher.reopens, watcher.longestSilence(tl.begin, tl.end).Round(time.Millisecond))
		if watcher.eventsAfter(tl.etcdKilled) == 0 {
			t.Errorf("the watch delivered nothing after the etcd leader's SIGKILL")
		}
		if watcher.gone {
			t.Errorf("the watch on %s ended with 410 Gone", replicas[survivor].name)
		}
		// The surviving replica's watch is served by its watch cache, which moves to another
		// etcd member under it: the client's watch is never ended (docs/reliability.md).
		if watcher.reopens != 0 {
			t.Errorf("the watch on %s was ended by the server and reopened %d times", replicas[survivor].name, watcher.reopens)
		}
	})
}

// haLoad is TestHA's write load: writers that create and update Boats, failing over between
// the replicas, and a prober (startProber) that measures how long a newly started write does
// not succeed: writers block on a request that hangs.
type haLoad struct {
	ctx     context.Context
	t       *testing.T
	clients []dynamic.ResourceInterface
	stats   haStats
	stop    chan struct{}
	wg      sync.WaitGroup
	probes  *prober

	mu         sync.Mutex
	objects    map[string]*haObject // every Boat a writer or probe knows the state of
	probeOK    []time.Time          // start times of acknowledged probes
	probeMaybe map[string]bool      // probes that failed: stored or not
}

// startHALoad starts writers writers and the prober; finish stops them.
func startHALoad(ctx context.Context, t *testing.T, clients []dynamic.ResourceInterface, writers int) *haLoad {
	l := &haLoad{
		ctx: ctx, t: t, clients: clients,
		stop:       make(chan struct{}),
		objects:    map[string]*haObject{},
		probeMaybe: map[string]bool{},
	}
	for w := 0; w < writers; w++ {
		l.wg.Add(1)
		go l.writer(w)
	}
	l.probes = startProber(ctx, clients, "p")
	return l
}

// finish stops the load, waits for every request in flight and records the probes.
func (l *haLoad) finish() {
	close(l.stop)
	l.wg.Wait()
	for _, r := range l.probes.finish() {
		if r.err != nil {
			if !retriable(r.err) {
				l.t.Errorf("probe %s: %v", r.name, r.err)
			}
			l.probeMaybe[r.name] = true
			continue
		}
		l.stats.ack(r.end)
		l.objects[r.name] = &haObject{rv: r.rv, length: r.length, how: "ack"}
		l.probeOK = append(l.probeOK, r.start)
	}
}

func (l *haLoad) stopped() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

func (l *haLoad) record(name string, o *haObject) {
	l.mu.Lock()
	l.objects[name] = o
	l.mu.Unlock()
}

// attempt runs op on the replicas in turn, starting with first, until it succeeds or fails
// with something other than a retriable error; it gives up after a minute.
func (l *haLoad) attempt(first int, op func(ctx context.Context, c dynamic.ResourceInterface) (*unstructured.Unstructured, error)) (*unstructured.Unstructured, error) {
	start := time.Now()
	for k := 0; ; k++ {
		tried := time.Now()
		rctx, rcancel := context.WithTimeout(l.ctx, 10*time.Second)
		obj, err := op(rctx, l.clients[(first+k)%len(l.clients)])
		rcancel()
		now := time.Now()
		if err == nil || !retriable(err) {
			l.stats.waited(now.Sub(start))
			return obj, err
		}
		l.stats.fail(now, now.Sub(tried), err)
		if now.Sub(start) > time.Minute {
			return nil, fmt.Errorf("no replica could do it for a minute, last: %w", err)
		}
		// Fail over to the next replica at once; back off once every replica failed.
		if round := (k + 1) / len(l.clients); (k+1)%len(l.clients) == 0 {
			time.Sleep(min(time.Duration(round)*50*time.Millisecond, 500*time.Millisecond))
		}
	}
}

// readBack reads name after a write whose answer was lost and checks it holds length
// (and, when prevRV is set, a newer resourceVersion): the write was done.
func (l *haLoad) readBack(first int, name string, length int64, prevRV string) bool {
	got, err := l.attempt(first, func(ctx context.Context, c dynamic.ResourceInterface) (*unstructured.Unstructured, error) {
		return c.Get(ctx, name, metav1.GetOptions{})
	})
	if err != nil {
		l.t.Errorf("reading %s back: %v", name, err)
		return false
	}
	if got, _, _ := unstructured.NestedInt64(got.Object, "spec", "lengthMeters"); got != length {
		l.t.Errorf("%s holds length %d after a write of %d whose answer was lost", name, got, length)
		return false
	}
	if prevRV != "" && got.GetResourceVersion() == prevRV {
		l.t.Errorf("update of %s from rv %s conflicted, but it is still at that rv", name, prevRV)
		return false
	}
	l.stats.mu.Lock()
	l.stats.resolved++
	l.stats.mu.Unlock()
	l.record(name, &haObject{rv: got.GetResourceVersion(), length: length, how: "read"})
	return true
}

// writer w creates Boats and, every third write, updates one of its own with its
// resourceVersion as precondition, until the load stops.
func (l *haLoad) writer(w int) {
	defer l.wg.Done()
	var mine []string
	for i := 0; !l.stopped(); i++ {
		first := (w + i) % len(l.clients)
		if i%3 == 2 && len(mine) > 0 {
			name := mine[(i/3)%len(mine)]
			l.mu.Lock()
			prev := *l.objects[name]
			l.mu.Unlock()
			want := prev.length + 1000
			obj, err := l.attempt(first, func(ctx context.Context, c dynamic.ResourceInterface) (*unstructured.Unstructured, error) {
				u := boat(name, nil, want)
				u.SetResourceVersion(prev.rv)
				return c.Update(ctx, u, metav1.UpdateOptions{})
			})
			switch {
			case err == nil:
				l.stats.ack(time.Now())
				l.record(name, &haObject{rv: obj.GetResourceVersion(), length: want, how: "ack"})
			case apierrors.IsConflict(err):
				// An earlier attempt whose answer was lost did the update.
				if !l.readBack(first, name, want, prev.rv) {
					return
				}
			default:
				l.t.Errorf("updating %s: %v", name, err)
				return
			}
			continue
		}
		name := fmt.Sprintf("w%d-%d", w, i)
		length := int64(i + 1)
		obj, err := l.attempt(first, func(ctx context.Context, c dynamic.ResourceInterface) (*unstructured.Unstructured, error) {
			return c.Create(ctx, boat(name, nil, length), metav1.CreateOptions{})
		})
		switch {
		case err == nil:
			l.stats.ack(time.Now())
			l.record(name, &haObject{rv: obj.GetResourceVersion(), length: length, how: "ack"})
		case apierrors.IsAlreadyExists(err):
			// An earlier attempt whose answer was lost created it.
			if !l.readBack(first, name, length, "") {
				return
			}
		default:
			l.t.Errorf("creating %s: %v", name, err)
			return
		}
		mine = append(mine, name)
	}
}

// haKills is what TestHA's timeline kills and restarts.
type haKills struct {
	members   []*haMember
	etcdBin   string
	replicas  []*haReplica
	victim    int
	serverBin string
}

// haTimeline is when each step of TestHA happened.
type haTimeline struct {
	begin, etcdKilled, replicaKilled, replicaRestarted, etcdRestarted, end time.Time
}

func (tl haTimeline) since(x time.Time) time.Duration {
	return x.Sub(tl.begin).Round(time.Millisecond)
}

// runHATimeline kills the etcd leader, then one replica; restarts the replica while the
// etcd member is still down, then the member; and returns 8s after that, the load writing
// throughout.
func runHATimeline(t *testing.T, k haKills) haTimeline {
	tl := haTimeline{begin: time.Now()}
	at := func(d time.Duration) { time.Sleep(time.Until(tl.begin.Add(d))) }
	cli := etcdClient(t, k.members...)
	at(4 * time.Second)
	leader, err := etcdLeader(cli, k.members)
	if err != nil {
		t.Fatal(err)
	}
	var watchers []string
	for _, m := range k.members {
		watchers = append(watchers, fmt.Sprintf("%s %d", m.name, etcdWatchers(m)))
	}
	t.Logf("etcd watchers per member before the kill (the replicas' watch caches): %s", strings.Join(watchers, ", "))
	etcd, victim := k.members[leader], k.replicas[k.victim]
	tl.etcdKilled = time.Now()
	etcd.proc.Kill()
	t.Logf("%s: SIGKILLed etcd leader %s", tl.since(tl.etcdKilled), etcd.name)
	at(9 * time.Second)
	tl.replicaKilled = time.Now()
	victim.proc.Kill()
	t.Logf("%s: SIGKILLed %s", tl.since(tl.replicaKilled), victim.name)
	at(13 * time.Second)
	tl.replicaRestarted = time.Now()
	victim.proc = cluster.StartProcess(t, victim.name+" (restarted)", k.serverBin, victim.args...)
	victim.waitAnnounced(t, 2*time.Minute)
	readyAfter := time.Since(tl.replicaRestarted)
	t.Logf("%s: restarted %s, ready after %s with etcd %s still down", tl.since(tl.replicaRestarted), victim.name, readyAfter.Round(time.Millisecond), etcd.name)
	// docs/reliability.md: a replica restarted while an etcd member is down is ready again
	// within this bound (observed 0.3-0.8 s on an idle machine).
	const replicaReady = 10 * time.Second
	if readyAfter > replicaReady {
		t.Errorf("the restarted replica took %s to be ready, more than %s", readyAfter, replicaReady)
	}
	at(max(18*time.Second, time.Since(tl.begin)+time.Second))
	tl.etcdRestarted = time.Now()
	etcd.proc = cluster.StartProcess(t, "etcd "+etcd.name+" (restarted)", k.etcdBin, etcd.args...)
	t.Logf("%s: restarted etcd %s", tl.since(tl.etcdRestarted), etcd.name)
	at(tl.etcdRestarted.Sub(tl.begin) + 8*time.Second)
	return tl
}

// longestGap returns the longest time in [from, to) without one of ts, and where it began.
func longestGap(ts []time.Time, from, to time.Time) (time.Duration, time.Time) {
	ts = slices.Clone(ts)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	var gap time.Duration
	gapAt, prev := from, from
	for _, x := range append(ts, to) {
		if d := x.Sub(prev); d > gap {
			gap, gapAt = d, prev
		}
		prev = x
	}
	return gap, gapAt
}

// checkHARecovery logs the load's figures per phase and checks that clients recover:
// writes go through again within a bounded time of each kill, and keep going through after
// the restarts.
func checkHARecovery(t *testing.T, load *haLoad, tl haTimeline) {
	stats := &load.stats
	phases := []struct {
		name     string
		from, to time.Time
	}{
		{"before the kills", tl.begin, tl.etcdKilled},
		{"after the etcd leader's SIGKILL", tl.etcdKilled, tl.replicaKilled},
		{"after the replica's SIGKILL", tl.replicaKilled, tl.replicaRestarted},
		{"after the replica's restart", tl.replicaRestarted, tl.etcdRestarted},
		{"after the etcd member's restart", tl.etcdRestarted, tl.end},
	}
	count := func(ts []time.Time, from, to time.Time) int {
		n := 0
		for _, x := range ts {
			if !x.Before(from) && x.Before(to) {
				n++
			}
		}
		return n
	}
	for _, p := range phases {
		t.Logf("%-35s (%4.1fs): %5d writes acknowledged, %4d attempts failed", p.name, p.to.Sub(p.from).Seconds(), count(stats.acks, p.from, p.to), count(stats.failures, p.from, p.to))
	}
	gap, gapAt := longestGap(stats.acks, tl.begin, tl.end)
	t.Logf("%d writes acknowledged, %d attempts failed (writers, probes not included), %d writes with a lost answer read back; longest wait of a writer for one write (first attempt to success) %s; longest time without any acknowledged write %s (from %s)",
		len(stats.acks), len(stats.failures), stats.resolved, stats.maxWait.Round(time.Millisecond), gap.Round(time.Millisecond), tl.since(gapAt))
	for kind, n := range stats.kinds {
		t.Logf("failed attempts: %4d × %s (slowest failed after %s)", n, kind, stats.kindsWait[kind].Round(time.Millisecond))
	}
	probeGap, probeGapAt := longestGap(load.probeOK, tl.begin, tl.end)
	t.Logf("probes: %d acknowledged, %d failed; longest time during which no newly started write succeeded %s (from %s)",
		len(load.probeOK), len(load.probeMaybe), probeGap.Round(time.Millisecond), tl.since(probeGapAt))
	// etcd answers a write that was in flight when the leader died only after its request
	// timeout (5s + 2 × election timeout = 7s by default), so a writer can wait that long;
	// new writes go through once a new leader is elected.
	const recovery, newWrites = 15 * time.Second, 10 * time.Second
	if stats.maxWait > recovery {
		t.Errorf("a writer waited %s for one write: clients did not recover within %s", stats.maxWait, recovery)
	}
	if gap > newWrites {
		t.Errorf("no write acknowledged for %s (from %s): more than %s", gap, tl.since(gapAt), newWrites)
	}
	if probeGap > newWrites {
		t.Errorf("no newly started write succeeded for %s (from %s): more than %s", probeGap, tl.since(probeGapAt), newWrites)
	}
	for _, p := range phases {
		if count(stats.acks, p.from, p.to) == 0 {
			t.Errorf("no write acknowledged %s", p.name)
		}
	}
}

// checkHAReplica lists Boats through one replica and checks every write the load knows is
// there with its content and resourceVersion, and nothing else but failed probes.
func checkHAReplica(ctx context.Context, t *testing.T, name string, c dynamic.ResourceInterface, load *haLoad) {
	list, err := c.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing through %s: %v", name, err)
	}
	stored := map[string]*unstructured.Unstructured{}
	for j := range list.Items {
		stored[list.Items[j].GetName()] = &list.Items[j]
	}
	lost := 0
	for boat, o := range load.objects {
		got := stored[boat]
		if got == nil {
			lost++
			t.Errorf("%s: %s (%s at rv %s) is missing", name, boat, o.how, o.rv)
			continue
		}
		l, _, _ := unstructured.NestedInt64(got.Object, "spec", "lengthMeters")
		if got.GetResourceVersion() != o.rv || l != o.length {
			t.Errorf("%s: %s is length %d at rv %s, %s was length %d at rv %s", name, boat, l, got.GetResourceVersion(), o.how, o.length, o.rv)
		}
	}
	unanswered := 0
	for boat := range stored {
		switch {
		case load.probeMaybe[boat]:
			unanswered++
		case load.objects[boat] == nil:
			t.Errorf("%s: %s stored but no writer knows it", name, boat)
		}
	}
	t.Logf("%s: %d boats listed: %d acknowledged or read back (%d lost), %d failed probes stored anyway", name, len(stored), len(load.objects), lost, unanswered)
}

// startHAReplicas starts two replicas of the generated server in local mode on the etcd
// cluster at etcdServers and returns them with a client for Boats in namespace harbour on
// each.
func startHAReplicas(t *testing.T, bin string, etcdServers []string) ([]*haReplica, []dynamic.ResourceInterface) {
	t.Helper()
	// Both replicas share one --local-dir: localauth locks it, the first creates the CA,
	// the serving certificate (127.0.0.1, the same for both) and the admin certificate,
	// the second reuses them. The kubeconfig there names whichever replica wrote it last,
	// so clients take its credentials and set the host per replica.
	localDir := filepath.Join(t.TempDir(), "local")
	replicas := make([]*haReplica, 2)
	for i := range replicas {
		port := cluster.FreePort(t)
		replicas[i] = &haReplica{
			name: fmt.Sprintf("replica%d", i),
			host: "https://127.0.0.1:" + strconv.Itoa(port),
			args: []string{"--local", "--local-dir=" + localDir, "--secure-port=" + strconv.Itoa(port),
				"--etcd-servers=" + strings.Join(etcdServers, ",")},
		}
	}
	for _, r := range replicas {
		r.proc = cluster.StartProcess(t, r.name, bin, r.args...)
	}
	for _, r := range replicas {
		r.waitAnnounced(t, 3*time.Minute)
	}
	base, err := clientcmd.BuildConfigFromFlags("", filepath.Join(localDir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	clients := make([]dynamic.ResourceInterface, len(replicas))
	for i, r := range replicas {
		cfg := rest.CopyConfig(base)
		cfg.Host = r.host
		cfg.QPS, cfg.Burst = 1000, 1000
		clients[i] = dynamic.NewForConfigOrDie(cfg).Resource(boats).Namespace("harbour")
	}
	return replicas, clients
}

// waitAnnounced waits until the replica prints its KUBECONFIG line (its /readyz is ok then).
func (r *haReplica) waitAnnounced(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(r.proc.Out.String(), "export KUBECONFIG=") {
		if r.proc.Exited() {
			t.Fatalf("%s exited:\n%s", r.name, cluster.Tail(r.proc.Out.String(), 4000))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after %s:\n%s", r.name, timeout, cluster.Tail(r.proc.Out.String(), 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkEtcdMembers reads the boats' keys from each member on its own (serializable reads,
// answered from the member's local state) once its revision has reached the cluster's.
func checkEtcdMembers(ctx context.Context, t *testing.T, members []*haMember, objects map[string]*haObject) {
	t.Helper()
	all := etcdClient(t, members...)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	head, err := all.Get(rctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	rev := head.Header.Revision
	for _, m := range members {
		cli := etcdClient(t, m)
		var resp *clientv3.GetResponse
		deadline := time.Now().Add(30 * time.Second)
		for {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			resp, err = cli.Get(rctx, "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithSerializable())
			cancel()
			if err == nil && resp.Header.Revision >= rev {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("etcd %s did not catch up to revision %d in 30s: %v", m.name, rev, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		modRev := map[string]int64{}
		for _, kv := range resp.Kvs {
			k := string(kv.Key)
			if i := bytes.LastIndex(kv.Key, []byte("/boats/harbour/")); i >= 0 {
				modRev[k[i+len("/boats/harbour/"):]] = kv.ModRevision
			}
		}
		bad := 0
		for name, o := range objects {
			if got, ok := modRev[name]; !ok || strconv.FormatInt(got, 10) != o.rv {
				bad++
				if bad <= 5 {
					t.Errorf("etcd %s: %s has mod revision %d (present %v), acknowledged rv %s", m.name, name, got, ok, o.rv)
				}
			}
		}
		t.Logf("etcd %s: %d boat keys at revision %d, %d acknowledged writes missing or different", m.name, len(modRev), resp.Header.Revision, bad)
	}
}

// haWatch is a watch on one replica that reopens from its last resourceVersion when the
// server ends it, as informers do.
type haWatch struct {
	mu      sync.Mutex
	seen    map[string]string // name -> resourceVersion of its last event
	times   []time.Time
	events  int
	reopens int
	gone    bool
	cancel  context.CancelFunc
	done    chan struct{}
}

func startHAWatch(ctx context.Context, t *testing.T, c dynamic.ResourceInterface, rv string) *haWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &haWatch{seen: map[string]string{}, cancel: cancel, done: make(chan struct{})}
	wi, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(w.done)
		for {
			for ev := range wi.ResultChan() {
				switch ev.Type {
				case watch.Added, watch.Modified, watch.Deleted:
					u := ev.Object.(*unstructured.Unstructured)
					rv = u.GetResourceVersion()
					w.mu.Lock()
					w.seen[u.GetName()] = rv
					w.times = append(w.times, time.Now())
					w.events++
					w.mu.Unlock()
				case watch.Error:
					if st, ok := ev.Object.(*metav1.Status); ok && st.Code == 410 {
						w.mu.Lock()
						w.gone = true
						w.mu.Unlock()
						return
					}
				}
			}
			wi.Stop()
			for {
				if ctx.Err() != nil {
					return
				}
				if wi, err = c.Watch(ctx, metav1.ListOptions{ResourceVersion: rv}); err == nil {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			w.mu.Lock()
			w.reopens++
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *haWatch) stop() {
	w.cancel()
	<-w.done
}

// waitFor waits until the watch has delivered each object's last known resourceVersion.
func (w *haWatch) waitFor(t *testing.T, objects map[string]*haObject, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var missing []string
		w.mu.Lock()
		for name, o := range objects {
			if w.seen[name] != o.rv {
				missing = append(missing, fmt.Sprintf("%s (rv %s, watch saw %q)", name, o.rv, w.seen[name]))
			}
		}
		gone := w.gone
		w.mu.Unlock()
		if len(missing) == 0 {
			return
		}
		if gone || time.Now().After(deadline) {
			slices.Sort(missing)
			t.Errorf("the watch missed %d of %d writes' last state, e.g. %s", len(missing), len(objects), strings.Join(missing[:min(5, len(missing))], ", "))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (w *haWatch) eventsAfter(at time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, x := range w.times {
		if x.After(at) {
			n++
		}
	}
	return n
}

// longestSilence is the longest time between two events (or the window's ends) in [from, to).
func (w *haWatch) longestSilence(from, to time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var longest time.Duration
	prev := from
	for _, x := range append(slices.Clone(w.times), to) {
		if x.Before(from) || x.After(to) {
			continue
		}
		longest = max(longest, x.Sub(prev))
		prev = x
	}
	return longest
}
