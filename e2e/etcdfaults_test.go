package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/aagen-dev/aagen/e2e/cluster"
	"github.com/aagen-dev/aagen/e2e/faults"
	"github.com/aagen-dev/aagen/e2e/robustness"
)

// faultMember is an etcd member whose client and peer traffic go through fault proxies:
// the cluster and the replicas only know the proxies' addresses. The member's own
// clientURL (in haMember) is for the test's checks, which bypass the faults.
type faultMember struct {
	*haMember
	id          string // hex member ID, as etcd's peers send it in X-Server-From
	peerListen  string // the member's own peer URL
	dataDir     string
	clientProxy *faults.Proxy
	peerProxy   *faults.Proxy
}

func (m *faultMember) proxiedClientURL() string { return "http://" + m.clientProxy.Addr() }
func (m *faultMember) proxiedPeerURL() string   { return "http://" + m.peerProxy.Addr() }

func newProxy(t *testing.T, rawURL, senderHeader string) *faults.Proxy {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	var p *faults.Proxy
	if senderHeader == "" {
		p, err = faults.Listen(u.Host)
	} else {
		p, err = faults.ListenHTTP(u.Host, senderHeader)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// startFaultEtcdCluster starts a static 3-member etcd cluster on loopback whose members
// reach each other, and are reached by clients, through fault proxies.
func startFaultEtcdCluster(t *testing.T, bin string) []*faultMember {
	t.Helper()
	const n = 3
	members := make([]*faultMember, n)
	var initial []string
	for i := range members {
		m := &faultMember{haMember: &haMember{name: fmt.Sprintf("m%d", i), clientURL: fmt.Sprintf("http://127.0.0.1:%d", cluster.FreePort(t))},
			peerListen: fmt.Sprintf("http://127.0.0.1:%d", cluster.FreePort(t))}
		m.clientProxy = newProxy(t, m.clientURL, "")
		m.peerProxy = newProxy(t, m.peerListen, "X-Server-From")
		members[i] = m
		initial = append(initial, m.name+"="+m.proxiedPeerURL())
	}
	for _, m := range members {
		m.dataDir = filepath.Join(t.TempDir(), m.name)
		m.args = etcdMemberArgs(m, strings.Join(initial, ","), "new")
		m.proc = cluster.StartProcess(t, "etcd "+m.name, bin, m.args...)
	}
	cli := etcdClient(t, haMembers(members)...)
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := etcdLeader(cli, haMembers(members)); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("etcd cluster has no leader after a minute: %v\n%s", err, cluster.Tail(members[0].proc.Out.String(), 3000))
		}
		time.Sleep(200 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, lm := range list.Members {
		for _, m := range members {
			if lm.Name == m.name {
				m.id = strconv.FormatUint(lm.ID, 16)
			}
		}
	}
	return members
}

// etcdMemberArgs are the arguments of member m.
func etcdMemberArgs(m *faultMember, initialCluster, state string) []string {
	return []string{
		"--name=" + m.name, "--data-dir=" + m.dataDir,
		"--listen-client-urls=" + m.clientURL, "--advertise-client-urls=" + m.proxiedClientURL(),
		"--listen-peer-urls=" + m.peerListen, "--initial-advertise-peer-urls=" + m.proxiedPeerURL(),
		"--initial-cluster=" + initialCluster, "--initial-cluster-state=" + state,
		"--initial-cluster-token=aagen-e2e-faults", "--log-level=info",
	}
}

func haMembers(ms []*faultMember) []*haMember {
	out := make([]*haMember, len(ms))
	for i, m := range ms {
		out[i] = m.haMember
	}
	return out
}

// partition cuts member i off from the other members and from clients, without closing
// any connection; heal undoes it.
func partition(members []*faultMember, i int) {
	members[i].clientProxy.Hold()
	members[i].peerProxy.Hold()
	for j, m := range members {
		if j != i {
			m.peerProxy.Block(members[i].id)
		}
	}
}

func heal(members []*faultMember) {
	for _, m := range members {
		m.clientProxy.Heal()
		m.peerProxy.Heal()
	}
}

// probeResult is one write the prober started.
type probeResult struct {
	name       string
	length     int64 // the Boat's spec.lengthMeters
	start, end time.Time
	rv         string // set when acknowledged
	err        error
}

// prober starts one create every 50 ms, alternating replicas, each with its own 10 s
// timeout and without retries, so that a request that hangs does not hide whether newly
// started writes go through.
type prober struct {
	mu      sync.Mutex
	results []probeResult
	stop    chan struct{}
	wg      sync.WaitGroup
}

func startProber(ctx context.Context, clients []dynamic.ResourceInterface, prefix string) *prober {
	p := &prober{stop: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
			p.wg.Add(1)
			go func(i int) {
				defer p.wg.Done()
				r := probeResult{name: fmt.Sprintf("%s-%d", prefix, i), length: int64(i), start: time.Now()}
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				obj, err := clients[i%len(clients)].Create(rctx, boat(r.name, nil, r.length), metav1.CreateOptions{})
				cancel()
				r.end, r.err = time.Now(), err
				if err == nil {
					r.rv = obj.GetResourceVersion()
				}
				p.mu.Lock()
				p.results = append(p.results, r)
				p.mu.Unlock()
			}(i)
		}
	}()
	return p
}

// finish stops the prober and returns every probe, in start order.
func (p *prober) finish() []probeResult {
	close(p.stop)
	p.wg.Wait()
	out := slices.Clone(p.results)
	slices.SortFunc(out, func(a, b probeResult) int { return a.start.Compare(b.start) })
	return out
}

// firstAckAfter is how long after at the first write started after at was acknowledged.
func firstAckAfter(results []probeResult, at time.Time) (time.Duration, bool) {
	best, found := time.Duration(0), false
	for _, r := range results {
		if r.err == nil && !r.start.Before(at) && (!found || r.end.Sub(at) < best) {
			best, found = r.end.Sub(at), true
		}
	}
	return best, found
}

// checkProbesStored checks that every acknowledged probe is stored with the resourceVersion
// it was acknowledged with, read through every replica.
func checkProbesStored(ctx context.Context, t *testing.T, clients []dynamic.ResourceInterface, results []probeResult) {
	t.Helper()
	for i, c := range clients {
		list, err := c.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing through replica%d: %v", i, err)
		}
		stored := map[string]string{}
		for _, item := range list.Items {
			stored[item.GetName()] = item.GetResourceVersion()
		}
		for _, r := range results {
			if r.err == nil && stored[r.name] != r.rv {
				t.Errorf("replica%d: acknowledged probe %s (rv %s) stored at rv %q", i, r.name, r.rv, stored[r.name])
			}
		}
	}
}

// summarize logs the probes' figures in [from, to).
func summarize(t *testing.T, what string, results []probeResult, from, to time.Time) (acked, failed int, slowest time.Duration) {
	t.Helper()
	for _, r := range results {
		if r.start.Before(from) || !r.start.Before(to) {
			continue
		}
		if r.err != nil {
			failed++
			continue
		}
		acked++
		slowest = max(slowest, r.end.Sub(r.start))
	}
	t.Logf("%s: %d probes acknowledged, %d failed, slowest acknowledged %s", what, acked, failed, slowest.Round(time.Millisecond))
	return acked, failed, slowest
}

// waitMemberCaughtUp waits until member m, read on its own (serializable), has reached the
// cluster's revision, and returns its boat keys with their mod revisions.
func waitMemberCaughtUp(ctx context.Context, t *testing.T, members []*faultMember, m *faultMember, timeout time.Duration) map[string]int64 {
	t.Helper()
	all := etcdClient(t, haMembers(members)...)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	head, err := all.Get(rctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	cli := etcdClient(t, m.haMember)
	deadline := time.Now().Add(timeout)
	for {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := cli.Get(rctx, "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithSerializable())
		cancel()
		if err == nil && resp.Header.Revision >= head.Header.Revision {
			out := map[string]int64{}
			for _, kv := range resp.Kvs {
				k := string(kv.Key)
				if i := strings.LastIndex(k, "/boats/harbour/"); i >= 0 {
					out[k[i+len("/boats/harbour/"):]] = kv.ModRevision
				}
			}
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd %s did not catch up to revision %d within %s: %v", m.name, head.Header.Revision, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// memberStates says how each member answers when asked directly (around the proxies): the
// leader it follows, the term of its last applied entry and its applied index, or why it did
// not answer; then the last raft events of each.
func memberStates(cli *clientv3.Client, members []*faultMember) string {
	var b strings.Builder
	for _, m := range members {
		if m.proc.Exited() {
			fmt.Fprintf(&b, "\n  %s (%s) exited; its output (tail):\n%s", m.name, m.id, cluster.Tail(m.proc.Out.String(), 1500))
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cli.Status(ctx, m.clientURL)
		cancel()
		if err != nil {
			fmt.Fprintf(&b, "\n  %s (%s): %v", m.name, m.id, err)
			continue
		}
		fmt.Fprintf(&b, "\n  %s (%s): leader %x, term of its last applied entry %d, applied index %d, errors %v", m.name, m.id, st.Leader, st.RaftTerm, st.RaftAppliedIndex, st.Errors)
	}
	for _, m := range members {
		fmt.Fprintf(&b, "\n  %s's last raft events:\n%s", m.name, raftEvents(m, 20))
	}
	return b.String()
}

// raftEvents are the last n lines of member m's log from its raft and peer transport
// loggers (elections, pre-votes, peers becoming active or inactive), which the 4,000-byte
// tail of a failed test's process output leaves out at info level.
func raftEvents(m *faultMember, n int) string {
	var out []string
	for _, line := range strings.Split(m.proc.Out.String(), "\n") {
		if strings.Contains(line, `"logger":"raft"`) || strings.Contains(line, `"caller":"rafthttp/`) {
			out = append(out, "    "+line)
		}
	}
	return strings.Join(out[max(0, len(out)-n):], "\n")
}

// waitClusterHealthy waits until every member, asked directly (around the proxies), names
// one leader, agrees on the term of its last applied entry, has applied what the most
// advanced one had applied when they first agreed, and serves a linearizable read on its
// own (a read index needs messages both ways between the member and the leader, so a
// member cut off from the leader in either direction fails it, even while it still applies
// what the leader sends): the state each fault starts from. It says nothing of the client
// proxies, which the checks do not go through. It returns the leader's index in members.
func waitClusterHealthy(ctx context.Context, t *testing.T, cli *clientv3.Client, members []*faultMember, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	own := make([]*clientv3.Client, len(members))
	for i, m := range members {
		own[i] = etcdClient(t, m.haMember)
	}
	// status asks member i for its status and a linearizable read; nil if either fails.
	status := func(i int) *clientv3.StatusResponse {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		st, err := cli.Status(sctx, members[i].clientURL)
		if err == nil {
			_, err = own[i].Get(sctx, "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		}
		if err != nil {
			return nil
		}
		return st
	}
	var target uint64
	for {
		first, leader := status(0), -1
		if first != nil {
			leader = memberWithID(members, first.Leader)
		}
		agreed := leader >= 0
		var minApplied, maxApplied uint64
		if agreed {
			minApplied, maxApplied = first.RaftAppliedIndex, first.RaftAppliedIndex
		}
		for i := 1; agreed && i < len(members); i++ {
			st := status(i)
			agreed = st != nil && st.Leader == first.Leader && st.RaftTerm == first.RaftTerm
			if agreed {
				minApplied, maxApplied = min(minApplied, st.RaftAppliedIndex), max(maxApplied, st.RaftAppliedIndex)
			}
		}
		if agreed {
			if target == 0 {
				target = maxApplied
			}
			if minApplied >= target {
				return leader
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the etcd cluster was not healthy within %s (one leader, one term of the last applied entry, every member applied to index %d and serving a linearizable read):%s", timeout, target, memberStates(cli, members))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// idValue is the member's ID as etcd reports it (m.id is its hex form, made from such a value).
func (m *faultMember) idValue() uint64 {
	id, _ := strconv.ParseUint(m.id, 16, 64)
	return id
}

// memberWithID is the index in members of the member with etcd ID id, -1 if none has it.
func memberWithID(members []*faultMember, id uint64) int {
	return slices.IndexFunc(members, func(m *faultMember) bool { return m.idValue() == id })
}

// etcdFaultsDefectEnv names the environment variable that makes TestEtcdFaults inject a
// deliberate defect, to show that its checks fail on it; it is read by the test only. Its
// one value, faultsNotInjected, leaves the leader's proxies passing traffic as usual
// instead of partitioning or slowing it.
const etcdFaultsDefectEnv = "AAGEN_ETCDFAULTS_DEFECT"

const faultsNotInjected = "faults-not-injected"

// probesStarted are the probes started in [from, to) as the robustness checks take them: how
// long each took and whether it failed.
func probesStarted(results []probeResult, from, to time.Time) []robustness.Probe {
	var out []robustness.Probe
	for _, r := range results {
		if !r.start.Before(from) && r.start.Before(to) {
			out = append(out, robustness.Probe{At: r.start, Took: r.end.Sub(r.start), Failed: r.err != nil})
		}
	}
	return out
}

// TestEtcdFaults injects faults other than a process dying into a 3-member etcd cluster
// under two replicas of the generated server, while a prober keeps starting writes: the
// leader partitioned but alive (no connection reset), the leader slow, and a member whose
// data directory is lost, replaced by member remove and add. Each fault is shown to take
// effect (another leader or stalled writes; slower writes), has a bounded time until newly
// started writes are acknowledged again, and every acknowledged write is stored with its
// resourceVersion. Each fault starts from a healthy cluster, and the last ends with one (see
// waitClusterHealthy), so the peer traffic of each fault flows again before the next.
// AAGEN_ETCDFAULTS_DEFECT=faults-not-injected must make it fail.
func TestEtcdFaults(t *testing.T) {
	skipShort(t)
	runsToolsAlone(t)
	defect := false
	switch d := os.Getenv(etcdFaultsDefectEnv); d {
	case "":
	case faultsNotInjected:
		defect = true
		t.Logf("deliberate defect injected (%s=%s): this run must fail", etcdFaultsDefectEnv, d)
	default:
		t.Fatalf("%s: unknown defect %q (known: %s)", etcdFaultsDefectEnv, d, faultsNotInjected)
	}
	etcdBin := cluster.EtcdBinary(t)
	_, bin := buildExample(t)
	members := startFaultEtcdCluster(t, etcdBin)
	var servers []string
	for _, m := range members {
		servers = append(servers, m.proxiedClientURL())
	}
	_, clients := startHAReplicas(t, bin, servers)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cli := etcdClient(t, haMembers(members)...)
	leader := func(t *testing.T) int {
		t.Helper()
		i, err := etcdLeader(cli, haMembers(members))
		if err != nil {
			t.Fatal(err)
		}
		return i
	}

	// A partitioned leader still runs and holds its connections open: its followers elect
	// a new leader after the election timeout (1 s) and writes go through them; requests the
	// replicas' etcd clients send to the partitioned member hang until their own timeout.
	// The partition is shown to take effect: another member becomes leader during it, or
	// no write is acknowledged while it lasts.
	t.Run("partitioned leader", func(t *testing.T) {
		p := startProber(ctx, clients, "part")
		time.Sleep(2 * time.Second)
		old := waitClusterHealthy(ctx, t, cli, members, 30*time.Second)
		oldID := members[old].idValue()
		faultAt := time.Now()
		if defect {
			t.Logf("defect %s: the partition is not applied", faultsNotInjected)
		} else {
			partition(members, old)
		}
		// The other members, asked directly (around the proxies), name the leader they follow.
		var newLeaders []string
		for time.Since(faultAt) < 8*time.Second {
			for j, m := range members {
				if j == old {
					continue
				}
				sctx, scancel := context.WithTimeout(ctx, 500*time.Millisecond)
				st, err := cli.Status(sctx, m.clientURL)
				scancel()
				if err == nil && st.Leader != 0 && st.Leader != oldID {
					if l := memberWithID(members, st.Leader); l >= 0 && !slices.Contains(newLeaders, members[l].name) {
						newLeaders = append(newLeaders, members[l].name)
					}
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		healAt := time.Now()
		heal(members)
		time.Sleep(5 * time.Second)
		results := p.finish()
		const failover = 10 * time.Second
		took, ok := firstAckAfter(results, faultAt)
		t.Logf("leader %s partitioned: the first write started after it was acknowledged %s later", members[old].name, took.Round(time.Millisecond))
		if !ok || took > failover {
			t.Errorf("no write started after the leader's partition was acknowledged within %s (took %s, found %v)", failover, took, ok)
		}
		summarize(t, "before the partition", results, time.Time{}, faultAt)
		summarize(t, "during the partition", results, faultAt, healAt)
		summarize(t, "after healing", results, healAt, time.Now())
		ackedDuring := 0
		for _, r := range results {
			if r.err == nil && r.end.After(faultAt) && r.end.Before(healAt) {
				ackedDuring++
			}
		}
		t.Logf("during the partition: leaders other than %s seen: %v; %d writes acknowledged", members[old].name, newLeaders, ackedDuring)
		if len(newLeaders) == 0 && ackedDuring > 0 {
			t.Errorf("the partition of leader %s did not take effect: no other member became leader during its %s, and %d writes were acknowledged meanwhile (a stall for its length would show it)",
				members[old].name, healAt.Sub(faultAt).Round(time.Millisecond), ackedDuring)
		}
		if took, ok := firstAckAfter(results, healAt); !ok || took > failover {
			t.Errorf("writes after healing: first acknowledged after %s (found %v)", took, ok)
		}
		if now := leader(t); now == old {
			t.Logf("leader %s is leader again after healing", members[old].name)
		}
		waitMemberCaughtUp(ctx, t, members, members[old], 30*time.Second)
		checkProbesStored(ctx, t, clients, results)
	})

	// A slow leader (300 ms more each way on its peer and client traffic, under the
	// election timeout) stays leader: writes slow down but every one completes in time. The
	// slowdown is shown: the median latency of the writes started during it is at least the
	// one-way delay above the median of those started in the 2 s before it.
	t.Run("slow leader", func(t *testing.T) {
		p := startProber(ctx, clients, "slow")
		time.Sleep(2 * time.Second)
		slow := waitClusterHealthy(ctx, t, cli, members, 30*time.Second)
		faultAt := time.Now()
		const delay = 300 * time.Millisecond
		if defect {
			t.Logf("defect %s: the delay is not applied", faultsNotInjected)
		} else {
			members[slow].clientProxy.Delay(delay)
			members[slow].peerProxy.Delay(delay)
		}
		time.Sleep(8 * time.Second)
		healAt := time.Now()
		heal(members)
		time.Sleep(3 * time.Second)
		results := p.finish()
		acked, failed, slowest := summarize(t, "while the leader is slow", results, faultAt, healAt)
		const bound = 5 * time.Second
		if failed != 0 || acked == 0 || slowest > bound {
			t.Errorf("slow leader %s: %d probes failed, %d acknowledged, slowest %s (bound %s)", members[slow].name, failed, acked, slowest, bound)
		}
		fault := robustness.Fault{Kind: "slow leader", Target: members[slow].name, Effect: robustness.Slower, Delay: delay,
			Baseline: probesStarted(results, faultAt.Add(-2*time.Second), faultAt), Probes: probesStarted(results, faultAt, healAt)}
		t.Logf("slow leader %s: %s", members[slow].name, fault.Observed())
		if err := fault.Effective(); err != nil {
			t.Errorf("the slowdown did not take effect: %v", err)
		}
		checkProbesStored(ctx, t, clients, results)
	})

	// A follower's data directory is lost: the member is removed from the cluster and a new
	// one (new name, empty data directory, same addresses) is added in its place; it catches
	// up from the leader, and writes go on throughout (only a write in flight on the member
	// as it dies may fail).
	t.Run("lost data directory", func(t *testing.T) {
		p := startProber(ctx, clients, "lost")
		time.Sleep(2 * time.Second)
		l := waitClusterHealthy(ctx, t, cli, members, 30*time.Second)
		i := (l + 1) % len(members)
		m := members[i]
		lost := m.name
		faultAt := time.Now()
		m.proc.Kill()
		diedAt := time.Now()
		if err := os.RemoveAll(m.dataDir); err != nil {
			t.Fatal(err)
		}
		mctx, mcancel := context.WithTimeout(ctx, 30*time.Second)
		defer mcancel()
		if _, err := cli.MemberRemove(mctx, m.idValue()); err != nil {
			t.Fatalf("member remove %s: %v; the members now:%s", m.name, err, memberStates(cli, members))
		}
		added, err := cli.MemberAdd(mctx, []string{m.proxiedPeerURL()})
		if err != nil {
			t.Fatalf("member add: %v", err)
		}
		m.name, m.id = m.name+"b", strconv.FormatUint(added.Member.ID, 16)
		var initial []string
		for _, am := range added.Members {
			name := am.Name
			if am.ID == added.Member.ID {
				name = m.name
			}
			initial = append(initial, name+"="+am.PeerURLs[0])
		}
		m.args = etcdMemberArgs(m, strings.Join(initial, ","), "existing")
		m.proc = cluster.StartProcess(t, "etcd "+m.name, etcdBin, m.args...)
		waitMemberCaughtUp(ctx, t, members, m, time.Minute)
		replacedAt := time.Now()
		time.Sleep(3 * time.Second)
		results := p.finish()
		keys := waitMemberCaughtUp(ctx, t, members, m, 30*time.Second)
		t.Logf("member %s replaced by %s in %s", strings.TrimSuffix(m.name, "b"), m.name, replacedAt.Sub(faultAt).Round(time.Millisecond))
		summarize(t, "while the member was replaced", results, faultAt, replacedAt)
		// A write whose etcd request was in flight on the member when it died fails with an
		// error, as it does for any client of a dying member (the replica cannot know whether
		// it was committed, so etcd's client does not retry it): a few such probes, started
		// and failed within a second of the death, are excused. Every other probe from the
		// prober's start to its end is acknowledged within the bound.
		const bound, settle, maxInFlight = 10 * time.Second, time.Second, 3
		var inFlight, failed int
		var slowest time.Duration
		for _, r := range results {
			switch {
			case r.err != nil && r.start.Before(diedAt.Add(settle)) && r.end.Before(diedAt.Add(settle)):
				inFlight++
				t.Logf("probe %s, failed within %s of %s's death (in flight on it, presumably): %v", r.name, settle, lost, r.err)
			case r.err != nil:
				failed++
				t.Logf("probe %s failed: %v", r.name, r.err)
			default:
				slowest = max(slowest, r.end.Sub(r.start))
			}
		}
		t.Logf("from the prober's start to its end: %d probes failed within %s of the death (at most %d excused), %d failed otherwise, slowest acknowledged %s",
			inFlight, settle, maxInFlight, failed, slowest.Round(time.Millisecond))
		if failed != 0 || inFlight > maxInFlight || slowest > bound {
			t.Errorf("replacing a follower: %d probes failed other than within %s of its death, %d within it (at most %d may be in flight on it), slowest acknowledged %s (bound %s)",
				failed, settle, inFlight, maxInFlight, slowest, bound)
		}
		checkProbesStored(ctx, t, clients, results)
		missing := 0
		for _, r := range results {
			if r.err == nil && strconv.FormatInt(keys[r.name], 10) != r.rv {
				missing++
			}
		}
		if missing != 0 {
			t.Errorf("the new member %s lacks %d acknowledged probes (or has other revisions)", m.name, missing)
		}
		// The cluster of three is whole again: the new member follows the leader both ways.
		waitClusterHealthy(ctx, t, cli, members, 30*time.Second)
	})
}
