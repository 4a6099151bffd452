package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// servingConfig sizes the serving workloads.
type servingConfig struct {
	objects        int // stored objects for the large list (the small list uses objects/10)
	concurrency    int // concurrent clients for create, get and update
	watchers       int // watchers for the fan-out
	updates        int // writes observed by the watchers
	profileDir     string
	profileSeconds int
}

// subject is one way of serving the example's Boats: the generated server directly, the
// same server through kube-apiserver's aggregator, or a CRD with the same schema on that
// kube-apiserver.
type subject struct {
	name   string
	client *http.Client
	base   string // collection URL of Boats in the subject's namespace
	api    string // apiVersion of its objects
	procs  []*cluster.Process
	// store is the process that holds the objects (for heap and RSS).
	store     *cluster.Process
	storeHost string
	storeHTTP *http.Client
	// path are the servers a request goes through, for -profile.
	path []endpoint
}

// endpoint is a server's pprof address.
type endpoint struct {
	name   string
	host   string
	client *http.Client
}

// measurement is one workload on one subject.
type measurement struct {
	ops      int
	elapsed  time.Duration
	lat      []time.Duration
	cpu      time.Duration // server CPU (every process of the subject's path)
	failures int
}

func (m measurement) rate() float64 { return float64(m.ops) / m.elapsed.Seconds() }

func (m measurement) pct(p float64) time.Duration {
	if len(m.lat) == 0 {
		return 0
	}
	s := slices.Clone(m.lat)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// servingRow is a line of the serving table.
type servingRow struct {
	workload string
	by       map[string]measurement
}

// memory of the process that stores the objects.
type memory struct {
	heapPerObject float64 // bytes of live heap per stored object
	peakRSSAdded  float64 // bytes of peak RSS added by the workloads
}

// serving runs the serving suite and returns its table as text.
func serving(root string, cfg servingConfig) (string, error) {
	r := &cluster.Runner{Log: func(f string, a ...any) { fmt.Fprintf(os.Stderr, "bench: "+f+"\n", a...) }}
	defer r.Close()
	ctx := context.Background()

	// One etcd (a separate process, fsync on, as in production) under everything.
	etcdBin := cluster.EtcdBinary(r)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", cluster.FreePort(r))
	peerURL := "http://127.0.0.1:" + strconv.Itoa(cluster.FreePort(r))
	etcdProc := cluster.StartProcess(r, "etcd", etcdBin, "--data-dir="+filepath.Join(r.TempDir(), "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--log-level=warn")
	cp := cluster.StartControlPlane(r, etcdURL)

	// The example, generated and built like a user would, deployed behind the aggregator.
	serverBin, dir, cleanup, err := buildServer(root)
	defer cleanup()
	if err != nil {
		return "", err
	}
	r.Logf("deploying the example behind kube-apiserver")
	backend := cluster.Deploy(r, ctx, cp, dir, serverBin, etcdURL, cborServerArgs...)

	adminHTTP, err := rest.HTTPClientFor(cp.Admin)
	if err != nil {
		return "", err
	}
	direct := rest.CopyConfig(cp.Admin)
	direct.Host = "https://127.0.0.1:" + strconv.Itoa(backend.Port)
	direct.TLSClientConfig.CAFile = filepath.Join(dir, "config/deploy/certs/ca.crt")
	direct.TLSClientConfig.ServerName = "marina-apiserver.marina-apiserver.svc"
	directHTTP, err := rest.HTTPClientFor(direct)
	if err != nil {
		return "", err
	}

	// Startup next to sample-apiserver, both delegating to this kube-apiserver, on this etcd.
	startRows, err := startupNextToSample(r, cp, etcdURL, serverBin)
	if err != nil {
		return "", err
	}

	// The same schema as a CRD: taken from the generated server's published OpenAPI v3.
	crdGroup := "crd.marina.example.com"
	if err := installCRD(ctx, cp.Admin, directHTTP, direct.Host, crdGroup); err != nil {
		return "", err
	}

	subjects := []*subject{
		{name: "generated server, direct", client: directHTTP, base: direct.Host + "/apis/marina.example.com/v1alpha1/namespaces/bench-direct/boats",
			api: "marina.example.com/v1alpha1", procs: []*cluster.Process{backend.Process}, store: backend.Process, storeHost: direct.Host, storeHTTP: directHTTP,
			path: []endpoint{{"server", direct.Host, directHTTP}}},
		{name: "generated server, via aggregator", client: adminHTTP, base: cp.Host + "/apis/marina.example.com/v1alpha1/namespaces/bench-aggregated/boats",
			api: "marina.example.com/v1alpha1", procs: []*cluster.Process{backend.Process, cp.APIServer}, store: backend.Process, storeHost: direct.Host, storeHTTP: directHTTP,
			path: []endpoint{{"kube-apiserver", cp.Host, adminHTTP}, {"server", direct.Host, directHTTP}}},
		{name: "CRD on kube-apiserver", client: adminHTTP, base: cp.Host + "/apis/" + crdGroup + "/v1alpha1/namespaces/bench-crd/boats",
			api: crdGroup + "/v1alpha1", procs: []*cluster.Process{cp.APIServer}, store: cp.APIServer, storeHost: cp.Host, storeHTTP: adminHTTP,
			path: []endpoint{{"kube-apiserver", cp.Host, adminHTTP}}},
	}
	// The same server on PostgreSQL (through kine), direct: next to etcd in the same run.
	pgSubject, err := postgresSubject(r, backend, serverBin, direct)
	if err != nil {
		return "", err
	}
	subjects = append(subjects, pgSubject)
	for _, ns := range []string{"bench-direct", "bench-aggregated", "bench-crd", "bench-postgres"} {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, ns)
		if _, _, err := do(adminHTTP, http.MethodPost, cp.Host+"/api/v1/namespaces", body, http.StatusCreated); err != nil {
			return "", err
		}
	}

	small := cfg.objects / 10
	wCreate, wGet, wWatch, wUpdate := "create", "get", "watch fan-out", "update under contention"
	wGet1 := "get, 1 client"
	wSmall := fmt.Sprintf("list %d (JSON)", small)
	wLarge := fmt.Sprintf("list %d (JSON)", cfg.objects)
	wSelector := fmt.Sprintf("list %d, label selector (%d match)", cfg.objects, cfg.objects/10)
	order := []string{wCreate, wGet, wGet1, wSmall, wLarge, wSelector, wWatch, wUpdate}
	rows := map[string]*servingRow{}
	for _, w := range order {
		rows[w] = &servingRow{workload: w, by: map[string]measurement{}}
	}
	mem := map[string]memory{}
	for _, s := range subjects {
		r.Logf("serving: %s", s.name)
		heap0, err := liveHeap(s.storeHTTP, s.storeHost)
		if err != nil {
			return "", err
		}
		rss0 := resetPeakRSS(s.store)
		// Warm up the path (connections, authorization caches) outside the figures.
		if _, err := runOps(cfg.concurrency, cfg.concurrency, s.procs, func(i int) error {
			_, _, err := do(s.client, http.MethodGet, s.base, "", http.StatusOK)
			return err
		}); err != nil {
			return "", err
		}
		stop := profile(cfg, s, "create")
		m, err := runOps(small, cfg.concurrency, s.procs, func(i int) error { return create(s, i) })
		stop()
		if err != nil {
			return "", err
		}
		rows[wCreate].by[s.name] = m
		get := func(int) error {
			_, _, err := do(s.client, http.MethodGet, fmt.Sprintf("%s/boat-%05d", s.base, rand.IntN(small)), "", http.StatusOK)
			return err
		}
		stop = profile(cfg, s, "get")
		if m, err = runOps(4*small, cfg.concurrency, s.procs, get); err != nil {
			return "", err
		}
		stop()
		rows[wGet].by[s.name] = m
		if m, err = runOps(small/2, 1, s.procs, get); err != nil {
			return "", err
		}
		rows[wGet1].by[s.name] = m
		if m, err = runOps(20, 1, s.procs, func(int) error { return list(s, "", small) }); err != nil {
			return "", err
		}
		rows[wSmall].by[s.name] = m
		if _, err := runOps(cfg.objects-small, cfg.concurrency, s.procs, func(i int) error { return create(s, small+i) }); err != nil {
			return "", err
		}
		if m, err = runOps(5, 1, s.procs, func(int) error { return list(s, "", cfg.objects) }); err != nil {
			return "", err
		}
		rows[wLarge].by[s.name] = m
		if m, err = runOps(10, 1, s.procs, func(int) error { return list(s, "shard=3", cfg.objects/10) }); err != nil {
			return "", err
		}
		rows[wSelector].by[s.name] = m
		heap1, err := liveHeap(s.storeHTTP, s.storeHost)
		if err != nil {
			return "", err
		}
		stop = profile(cfg, s, "watch")
		if m, err = watchFanOut(s, cfg); err != nil {
			return "", err
		}
		stop()
		rows[wWatch].by[s.name] = m
		if m, err = contention(s, cfg); err != nil {
			return "", err
		}
		rows[wUpdate].by[s.name] = m
		mem[s.name] = memory{heapPerObject: float64(heap1-heap0) / float64(cfg.objects), peakRSSAdded: float64(peakRSS(s.store) - rss0)}
	}

	r.Logf("serving: CBOR next to JSON")
	cborTable, err := cborRows(subjects[:2], cfg)
	if err != nil {
		return "", err
	}

	r.Logf("serving: protobuf next to JSON")
	protobufTable, protobufLists, err := protobufRows(subjects[:2], cfg)
	if err != nil {
		return "", err
	}

	// The floor for writes: etcd puts of the same size at the same concurrency.
	size, err := storedSize(subjects[0])
	if err != nil {
		return "", err
	}
	etcdPut, err := etcdPuts(etcdURL, small, cfg.concurrency, size, etcdProc)
	if err != nil {
		return "", err
	}

	var b strings.Builder
	fmt.Fprintf(&b, "Serving: %d objects of %d bytes in etcd, %d concurrent clients, %d watchers; ratios are to the CRD (lower is better for latency and CPU, higher for rate).\n\n", cfg.objects, size, cfg.concurrency, cfg.watchers)
	fmt.Fprintln(&b, "| workload | subject | ops | ops/s | p50 | p99 | server CPU per op | rate vs CRD | p50 vs CRD | CPU vs CRD |")
	fmt.Fprintln(&b, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	crd := subjects[2].name
	for _, w := range order {
		row := rows[w]
		for _, s := range subjects {
			m := row.by[s.name]
			c := row.by[crd]
			fmt.Fprintf(&b, "| %s | %s | %d | %.0f | %s | %s | %s | %.2f | %.2f | %.2f |\n", w, s.name, m.ops, m.rate(),
				ms(m.pct(0.5)), ms(m.pct(0.99)), ms(m.cpu/time.Duration(max(m.ops, 1))),
				m.rate()/c.rate(), ratio(m.pct(0.5), c.pct(0.5)), ratio(m.cpu, c.cpu))
		}
	}
	fmt.Fprintf(&b, "| etcd put (floor for writes) | etcd | %d | %.0f | %s | %s | %s | | | |\n", etcdPut.ops, etcdPut.rate(),
		ms(etcdPut.pct(0.5)), ms(etcdPut.pct(0.99)), ms(etcdPut.cpu/time.Duration(etcdPut.ops)))
	fmt.Fprintln(&b, "\nCBOR (--feature-gates=CBORServingAndStorage=true) next to JSON, same subject, same objects, back to back:")
	fmt.Fprintln(&b)
	b.WriteString(cborTable)
	fmt.Fprintln(&b, "\nProtobuf next to JSON, same subject, same objects, back to back (the objects are stored as protobuf):")
	fmt.Fprintln(&b)
	b.WriteString(protobufTable)
	fmt.Fprintln(&b, "\n| startup to /readyz, delegating to kube-apiserver, same etcd (median of 3) | generated server | sample-apiserver | ratio |")
	fmt.Fprintln(&b, "| --- | --- | --- | --- |")
	fmt.Fprintf(&b, "| process start to /readyz ok | %.2fs | %.2fs | %.2f |\n", startRows[0].Seconds(), startRows[1].Seconds(), float64(startRows[0])/float64(startRows[1]))
	fmt.Fprintln(&b, "\n| memory of the storing process | generated server | CRD (kube-apiserver) | ratio |")
	fmt.Fprintln(&b, "| --- | --- | --- | --- |")
	g, k := mem[subjects[0].name], mem[crd]
	fmt.Fprintf(&b, "| live heap per stored object | %.0f B | %.0f B | %.2f |\n", g.heapPerObject, k.heapPerObject, g.heapPerObject/k.heapPerObject)
	fmt.Fprintf(&b, "| peak RSS added by the workloads | %.0f MiB | %.0f MiB | %.2f |\n", g.peakRSSAdded/(1<<20), k.peakRSSAdded/(1<<20), g.peakRSSAdded/k.peakRSSAdded)

	// Targets.
	direct0, agg := subjects[0].name, subjects[1].name
	type target struct {
		what string
		val  string
		met  bool
	}
	l10 := rows[wLarge].by
	cr, gt, gt1, wf := rows[wCreate].by, rows[wGet].by, rows[wGet1].by, rows[wWatch].by
	targets := []target{
		{"list cost (server CPU, largest list, JSON), direct <= 0.5x CRD", fmt.Sprintf("%.2f", ratio(l10[direct0].cpu, l10[crd].cpu)), ratio(l10[direct0].cpu, l10[crd].cpu) <= 0.5},
		{"list cost (server CPU, largest list, JSON), via aggregator <= 0.5x CRD", fmt.Sprintf("%.2f", ratio(l10[agg].cpu, l10[crd].cpu)), ratio(l10[agg].cpu, l10[crd].cpu) <= 0.5},
		{"list cost (server CPU, largest list), protobuf, direct <= 0.1x CRD (JSON)", fmt.Sprintf("%.2f", ratio(perOp(protobufLists[direct0]), perOp(l10[crd]))), ratio(perOp(protobufLists[direct0]), perOp(l10[crd])) <= 0.1},
		{"list cost (server CPU, largest list), protobuf, via aggregator <= 0.1x CRD (JSON)", fmt.Sprintf("%.2f", ratio(perOp(protobufLists[agg]), perOp(l10[crd]))), ratio(perOp(protobufLists[agg]), perOp(l10[crd])) <= 0.1},
		{"get p50 via aggregator within +0.5 ms of CRD, 1 client", fmt.Sprintf("%+.2f ms", float64(gt1[agg].pct(0.5)-gt1[crd].pct(0.5))/1e6), gt1[agg].pct(0.5)-gt1[crd].pct(0.5) <= time.Millisecond/2},
		{fmt.Sprintf("get rate via aggregator >= 1.0x CRD, %d clients", cfg.concurrency), fmt.Sprintf("%.2f", gt[agg].rate()/gt[crd].rate()), gt[agg].rate() >= gt[crd].rate()},
		{"watch fan-out rate via aggregator >= 1.0x CRD", fmt.Sprintf("%.2f", wf[agg].rate()/wf[crd].rate()), wf[agg].rate() >= wf[crd].rate()},
		{fmt.Sprintf("get p50 via aggregator within +1 ms of CRD, %d clients", cfg.concurrency), fmt.Sprintf("%+.2f ms", float64(gt[agg].pct(0.5)-gt[crd].pct(0.5))/1e6), gt[agg].pct(0.5)-gt[crd].pct(0.5) <= time.Millisecond},
		{"create p50 via aggregator within +1 ms of CRD", fmt.Sprintf("%+.2f ms", float64(cr[agg].pct(0.5)-cr[crd].pct(0.5))/1e6), cr[agg].pct(0.5)-cr[crd].pct(0.5) <= time.Millisecond},
		{"create rate via aggregator >= 1.0x CRD", fmt.Sprintf("%.2f", cr[agg].rate()/cr[crd].rate()), cr[agg].rate() >= cr[crd].rate()},
		{"create rate (direct) >= 0.5x etcd put rate", fmt.Sprintf("%.2f", cr[direct0].rate()/etcdPut.rate()), cr[direct0].rate() >= 0.5*etcdPut.rate()},
		{"heap per stored object <= 0.35x CRD", fmt.Sprintf("%.2f", g.heapPerObject/k.heapPerObject), g.heapPerObject <= 0.35*k.heapPerObject},
	}
	fmt.Fprintln(&b, "\n| serving target | measured | met |")
	fmt.Fprintln(&b, "| --- | --- | --- |")
	for _, t := range targets {
		met := "yes"
		if !t.met {
			met = "NO"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", t.what, t.val, met)
	}
	return b.String(), nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/1e6) }

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// runOps runs op for i in [0,n) on c workers and measures latency, rate and the CPU the
// processes used meanwhile.
func runOps(n, c int, procs []*cluster.Process, op func(i int) error) (measurement, error) {
	next := make(chan int)
	lat := make([]time.Duration, n)
	var mu sync.Mutex
	var firstErr error
	failures := 0
	cpu0 := cpuOf(procs)
	start := time.Now()
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			for i := range next {
				t := time.Now()
				err := op(i)
				lat[i] = time.Since(t)
				if err != nil {
					mu.Lock()
					failures++
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	m := measurement{ops: n, elapsed: time.Since(start), lat: lat, cpu: cpuOf(procs) - cpu0, failures: failures}
	if firstErr != nil {
		return m, fmt.Errorf("%d of %d operations failed, the first: %w", failures, n, firstErr)
	}
	return m, nil
}

// watchEvents returns a reader of the events of a watch answered in mediaType: each call
// returns the next event's type and its object's resourceVersion.
func watchEvents(r *bufio.Reader, mediaType string) func() (typ, rv string, err error) {
	if mediaType == protobufMediaType {
		return func() (string, string, error) { return protobufWatchEvent(r) }
	}
	dec := json.NewDecoder(r)
	return func() (string, string, error) {
		var ev struct {
			Type   string
			Object struct {
				Metadata struct{ ResourceVersion string }
			}
		}
		err := dec.Decode(&ev)
		return ev.Type, ev.Object.Metadata.ResourceVersion, err
	}
}

// do sends a request and checks its status; it returns the body.
func do(c *http.Client, method, url, body string, want int) ([]byte, http.Header, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	switch method {
	case http.MethodPatch:
		req.Header.Set("Content-Type", "application/merge-patch+json")
	default:
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != want {
		return data, resp.Header, &statusError{code: resp.StatusCode, body: string(data), req: method + " " + url}
	}
	return data, resp.Header, nil
}

type statusError struct {
	code      int
	body, req string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s: %d %s", e.req, e.code, cluster.Tail(e.body, 400))
}

func boatJSON(api string, i int) string {
	return fmt.Sprintf(`{"apiVersion":%q,"kind":"Boat","metadata":{"name":"boat-%05d","labels":{"shard":"%d","fleet":"bench"}},`+
		`"spec":{"dock":"dock-%d","lengthMeters":%d,"crew":["ann","bo","cy"],"sails":%d,"hull":"Wood","contact":"owner%d@example.com"}}`,
		api, i, i%10, i%7, 10+i%20, i%5, i)
}

func create(s *subject, i int) error {
	_, _, err := do(s.client, http.MethodPost, s.base, boatJSON(s.api, i), http.StatusCreated)
	return err
}

func list(s *subject, selector string, want int) error {
	url := s.base
	if selector != "" {
		url += "?labelSelector=" + selector
	}
	data, _, err := do(s.client, http.MethodGet, url, "", http.StatusOK)
	if err != nil {
		return err
	}
	var l struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(data, &l); err != nil {
		return err
	}
	if len(l.Items) != want {
		return fmt.Errorf("list %s: %d items, want %d", url, len(l.Items), want)
	}
	return nil
}

// watchFanOut opens cfg.watchers watches, makes cfg.updates writes, and measures the
// delivery latency of every event to every watcher from the start of its write.
func watchFanOut(s *subject, cfg servingConfig) (measurement, error) {
	return watchFanOutAs(s, cfg, "application/json", 50)
}

// watchFanOutAs is watchFanOut with the watches answered in accept (JSON or protobuf),
// the writes setting spec.lengthMeters to lengthBase+i%20 (a base no earlier run used, so
// that every write changes the object).
func watchFanOutAs(s *subject, cfg servingConfig, accept string, lengthBase int) (measurement, error) {
	data, _, err := do(s.client, http.MethodGet, s.base+"?limit=1", "", http.StatusOK)
	if err != nil {
		return measurement{}, err
	}
	var l metav1.List
	if err := json.Unmarshal(data, &l); err != nil {
		return measurement{}, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type seen struct {
		rv string
		at time.Time
	}
	received := make([][]seen, cfg.watchers)
	var ready, done sync.WaitGroup
	errs := make(chan error, cfg.watchers)
	for w := range cfg.watchers {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet,
				fmt.Sprintf("%s?watch=1&resourceVersion=%s&labelSelector=fleet%%3Dbench", s.base, l.ResourceVersion), nil)
			req.Header.Set("Accept", accept)
			resp, err := s.client.Do(req)
			ready.Done()
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, accept) {
				errs <- fmt.Errorf("watcher %d: %d %s, want 200 %s", w, resp.StatusCode, ct, accept)
				return
			}
			next := watchEvents(bufio.NewReader(resp.Body), accept)
			for len(received[w]) < cfg.updates {
				typ, rv, err := next()
				if err != nil {
					errs <- fmt.Errorf("watcher %d after %d events: %w", w, len(received[w]), err)
					return
				}
				if typ == "MODIFIED" {
					received[w] = append(received[w], seen{rv, time.Now()})
				}
			}
		}()
	}
	ready.Wait()
	time.Sleep(time.Second) // every watch is established server-side
	started := map[string]time.Time{}
	var mu sync.Mutex
	cpu0 := cpuOf(s.procs)
	start := time.Now()
	if _, err := runOps(cfg.updates, 4, nil, func(i int) error {
		t := time.Now()
		body, _, err := do(s.client, http.MethodPatch, fmt.Sprintf("%s/boat-%05d", s.base, i), fmt.Sprintf(`{"spec":{"lengthMeters":%d}}`, lengthBase+i%20), http.StatusOK)
		if err != nil {
			return err
		}
		var o metav1.PartialObjectMetadata
		if err := json.Unmarshal(body, &o); err != nil {
			return err
		}
		mu.Lock()
		started[o.ResourceVersion] = t
		mu.Unlock()
		return nil
	}); err != nil {
		return measurement{}, err
	}
	waitDone := make(chan struct{})
	go func() { done.Wait(); close(waitDone) }()
	select {
	case <-waitDone:
	case err := <-errs:
		return measurement{}, err
	case <-time.After(2 * time.Minute):
		return measurement{}, fmt.Errorf("watchers did not receive every event in two minutes")
	}
	m := measurement{elapsed: time.Since(start), cpu: cpuOf(s.procs) - cpu0}
	for _, rs := range received {
		for _, e := range rs {
			t, ok := started[e.rv]
			if !ok {
				return m, fmt.Errorf("event at resourceVersion %s that no write made", e.rv)
			}
			m.lat = append(m.lat, e.at.Sub(t))
		}
	}
	m.ops = len(m.lat)
	return m, nil
}

// contention runs cfg.concurrency clients that each make 20 read-modify-write updates of
// one of four objects, retrying on 409; it measures the successful updates.
func contention(s *subject, cfg servingConfig) (measurement, error) {
	const perClient, objects = 20, 4
	m, err := runOps(cfg.concurrency*perClient, cfg.concurrency, s.procs, func(i int) error {
		url := fmt.Sprintf("%s/boat-%05d", s.base, i%objects)
		for {
			data, _, err := do(s.client, http.MethodGet, url, "", http.StatusOK)
			if err != nil {
				return err
			}
			var o map[string]any
			if err := json.Unmarshal(data, &o); err != nil {
				return err
			}
			o["spec"].(map[string]any)["lengthMeters"] = 10 + i%30
			body, _ := json.Marshal(o)
			_, _, err = do(s.client, http.MethodPut, url, string(body), http.StatusOK)
			if se, ok := err.(*statusError); ok && se.code == http.StatusConflict {
				continue // someone else updated it first: read it again
			}
			return err
		}
	})
	return m, err
}

// storedSize is the size of one Boat as the generated server returns it.
func storedSize(s *subject) (int, error) {
	data, _, err := do(s.client, http.MethodGet, s.base+"/boat-00000", "", http.StatusOK)
	return len(data), err
}

// etcdPuts makes n puts of size bytes with c clients on etcd directly.
func etcdPuts(url string, n, c, size int, proc *cluster.Process) (measurement, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second})
	if err != nil {
		return measurement{}, err
	}
	defer cli.Close()
	value := string(bytes.Repeat([]byte("x"), size))
	return runOps(n, c, []*cluster.Process{proc}, func(i int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := cli.Put(ctx, fmt.Sprintf("/bench-floor/%06d", i), value)
		return err
	})
}

// installCRD creates boats.<group> with the schema the generated server publishes for
// Boat, and waits until it is served.
func installCRD(ctx context.Context, admin *rest.Config, direct *http.Client, directHost, group string) error {
	data, _, err := do(direct, http.MethodGet, directHost+"/openapi/v3/apis/marina.example.com/v1alpha1", "", http.StatusOK)
	if err != nil {
		return err
	}
	schemaProps, err := cluster.CRDSchema(data, ".v1alpha1.Boat")
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "boats." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "boats", Singular: "boat", Kind: "Boat", ListKind: "BoatList", ShortNames: []string{"cbt"}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1alpha1", Served: true, Storage: true,
				Schema:           &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: schemaProps},
				SelectableFields: []apiextensionsv1.SelectableField{{JSONPath: ".spec.dock"}},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
					{Name: "Dock", Type: "string", JSONPath: ".spec.dock"},
					{Name: "Length", Type: "integer", JSONPath: ".spec.lengthMeters"},
					{Name: "Phase", Type: "string", JSONPath: ".status.phase"},
					{Name: "Berth", Type: "integer", JSONPath: ".status.berth", Priority: 1},
				},
			}},
		},
	}
	body, _ := json.Marshal(crd)
	var u map[string]any
	_ = json.Unmarshal(body, &u)
	dyn := dynamic.NewForConfigOrDie(admin)
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dyn.Resource(gvr).Create(ctx, &unstructured.Unstructured{Object: u}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the CRD: %w", err)
	}
	// Served means a list answers: Established comes before the storage (and its watch
	// cache) is ready.
	boats := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1alpha1", Resource: "boats"})
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := boats.List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
}

// profile starts CPU profiles of the servers on the subject's path (pprof over HTTPS,
// cfg.profileSeconds long) when -profile is set; the returned function waits for them and
// writes <dir>/<subject>-<workload>-<server>.pprof.
func profile(cfg servingConfig, s *subject, workload string) func() {
	if cfg.profileDir == "" {
		return func() {}
	}
	var wg sync.WaitGroup
	for _, e := range s.path {
		wg.Go(func() {
			data, _, err := do(e.client, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", e.host, cfg.profileSeconds), "", http.StatusOK)
			if err == nil {
				name := strings.NewReplacer(" ", "-", ",", "").Replace(s.name) + "-" + workload + "-" + e.name + ".pprof"
				err = os.WriteFile(filepath.Join(cfg.profileDir, name), data, 0o644)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "bench: profile %s %s %s: %v\n", s.name, workload, e.name, err)
			}
		})
	}
	time.Sleep(100 * time.Millisecond)
	return wg.Wait
}

// startupNextToSample returns the median time from process start to /readyz ok of the
// generated server and of k8s.io/sample-apiserver, each run three times with the same
// flags: delegated authentication and authorization to cp, a self-signed serving
// certificate, etcdURL under a prefix of its own.
func startupNextToSample(r *cluster.Runner, cp *cluster.ControlPlane, etcdURL, serverBin string) ([2]time.Duration, error) {
	sample := cluster.SampleAPIServerBinary(r)
	var out [2]time.Duration
	for i, bin := range []string{serverBin, sample} {
		var runs []time.Duration
		for n := range 3 {
			port := cluster.FreePort(r)
			args := []string{
				"--secure-port=" + strconv.Itoa(port), "--bind-address=127.0.0.1", "--cert-dir=" + r.TempDir(),
				"--etcd-servers=" + etcdURL, fmt.Sprintf("--etcd-prefix=/startup/%d/%d", i, n),
				"--kubeconfig=" + cp.Kubeconfig, "--authentication-kubeconfig=" + cp.Kubeconfig, "--authorization-kubeconfig=" + cp.Kubeconfig,
			}
			d, err := startupOnce(bin, port, args)
			if err != nil {
				return out, fmt.Errorf("%s: %w", filepath.Base(bin), err)
			}
			runs = append(runs, d)
		}
		slices.Sort(runs)
		out[i] = runs[1]
	}
	return out, nil
}

func startupOnce(bin string, port int, args []string) (time.Duration, error) {
	cmd := exec.Command(bin, args...)
	var logs cluster.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	// Self-signed serving certificates: readiness only, nothing is sent.
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()
	for time.Since(start) < time.Minute {
		resp, err := client.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz", port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start), nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, fmt.Errorf("not ready after a minute:\n%s", cluster.Tail(logs.String(), 3000))
}

// cpuOf is the CPU time (user and system) the processes have used so far.
func cpuOf(procs []*cluster.Process) time.Duration {
	var total time.Duration
	for _, p := range procs {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Cmd.Process.Pid))
		if err != nil {
			continue
		}
		// Fields after the command name (which may hold spaces) in parentheses.
		f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(utime+stime) * (time.Second / 100) // USER_HZ
	}
	return total
}

// resetPeakRSS resets the process's peak RSS (VmHWM) and returns its current RSS.
func resetPeakRSS(p *cluster.Process) int64 {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.Cmd.Process.Pid), []byte("5"), 0)
	return procStatus(p, "VmRSS:")
}

func peakRSS(p *cluster.Process) int64 { return procStatus(p, "VmHWM:") }

func procStatus(p *cluster.Process, field string) int64 {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Cmd.Process.Pid))
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// liveHeap forces two garbage collections in the server (pprof's gc=1) and returns its
// live heap from /metrics.
func liveHeap(c *http.Client, host string) (int64, error) {
	for range 2 {
		if _, _, err := do(c, http.MethodGet, host+"/debug/pprof/heap?gc=1", "", http.StatusOK); err != nil {
			return 0, err
		}
	}
	data, _, err := do(c, http.MethodGet, host+"/metrics", "", http.StatusOK)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "go_memstats_heap_alloc_bytes "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int64(f), err
		}
	}
	return 0, fmt.Errorf("%s/metrics has no go_memstats_heap_alloc_bytes", host)
}
