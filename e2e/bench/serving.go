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
	repeats        int // rounds of every workload
	profileDir     string
	profileSeconds int
	serverArgs     []string // more flags for the generated server
}

// subject is one way of serving the example's Boats: the generated server directly, the
// same server through kube-apiserver's aggregator, a CRD with the same schema on that
// kube-apiserver, or the generated server on PostgreSQL.
type subject struct {
	id     string // sDirect, ...
	client *http.Client
	// collection is the URL of Boats in a namespace (%s); base that of the round's.
	collection string
	base       string
	api        string // apiVersion of its objects
	procs      []*cluster.Process
	// store is the process that holds the objects (for heap and RSS).
	store     *cluster.Process
	storeHost string
	storeHTTP *http.Client
	// etcdKey is the etcd key of a Boat in a namespace and with a name (%s, %s), for
	// subjects that store in the bench's etcd.
	etcdKey string
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

func (m measurement) pct(p float64) time.Duration {
	if len(m.lat) == 0 {
		return 0
	}
	s := slices.Clone(m.lat)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// sample is m as a repetition in the results.
func (m measurement) sample() Sample {
	return Sample{Ops: m.ops, Seconds: m.elapsed.Seconds(), P50: m.pct(0.5).Seconds(), P99: m.pct(0.99).Seconds(), CPU: m.cpu.Seconds()}
}

// rotated returns xs rotated left by round: round r starts with the subject at r.
func rotated[T any](xs []T, round int) []T {
	if len(xs) == 0 {
		return nil
	}
	k := round % len(xs)
	return append(slices.Clone(xs[k:]), xs[:k]...)
}

// etcdPrefixes are the etcd prefixes of the generated server and of kube-apiserver
// (e2e/cluster's), under which they store a Boat at <prefix>/<group>/boats/<ns>/<name>.
const (
	generatedEtcdPrefix = "/marina"
	kubeEtcdPrefix      = "/kube"
)

// serving runs the serving workloads cfg.repeats times, subjects in rotating order, and
// adds their figures to res.
func serving(root string, cfg servingConfig, res *Results) error {
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
	etcdClient, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		return err
	}
	defer etcdClient.Close()

	// The example, generated and built like a user would, deployed behind the aggregator.
	serverBin, dir, cleanup, err := buildServer(root)
	defer cleanup()
	if err != nil {
		return err
	}
	r.Logf("deploying the example behind kube-apiserver")
	backend := cluster.Deploy(r, ctx, cp, dir, serverBin, etcdURL, slices.Concat(cborServerArgs, []string{"--etcd-prefix=" + generatedEtcdPrefix}, cfg.serverArgs)...)

	adminHTTP, err := rest.HTTPClientFor(cp.Admin)
	if err != nil {
		return err
	}
	direct := rest.CopyConfig(cp.Admin)
	direct.Host = "https://127.0.0.1:" + strconv.Itoa(backend.Port)
	direct.TLSClientConfig.CAFile = filepath.Join(dir, "config/deploy/certs/ca.crt")
	direct.TLSClientConfig.ServerName = "marina-apiserver.marina-apiserver.svc"
	directHTTP, err := rest.HTTPClientFor(direct)
	if err != nil {
		return err
	}

	// Startup next to sample-apiserver, both delegating to this kube-apiserver, on this etcd.
	if err := startupNextToSample(r, cp, etcdURL, serverBin, cfg.repeats, res); err != nil {
		return err
	}

	// The same types as a CRD: controller-gen's, under another group name.
	crdGroup := "crd.marina.example.com"
	if err := installCRD(ctx, r, cp.Admin, dir, crdGroup); err != nil {
		return err
	}

	subjects := []*subject{
		{id: sDirect, client: directHTTP, collection: direct.Host + "/apis/marina.example.com/v1alpha1/namespaces/%s/boats",
			api: "marina.example.com/v1alpha1", procs: []*cluster.Process{backend.Process}, store: backend.Process, storeHost: direct.Host, storeHTTP: directHTTP,
			etcdKey: generatedEtcdPrefix + "/marina.example.com/boats/%s/%s", path: []endpoint{{"server", direct.Host, directHTTP}}},
		{id: sAggregated, client: adminHTTP, collection: cp.Host + "/apis/marina.example.com/v1alpha1/namespaces/%s/boats",
			api: "marina.example.com/v1alpha1", procs: []*cluster.Process{backend.Process, cp.APIServer}, store: backend.Process, storeHost: direct.Host, storeHTTP: directHTTP,
			etcdKey: generatedEtcdPrefix + "/marina.example.com/boats/%s/%s", path: []endpoint{{"kube-apiserver", cp.Host, adminHTTP}, {"server", direct.Host, directHTTP}}},
		{id: sCRD, client: adminHTTP, collection: cp.Host + "/apis/" + crdGroup + "/v1alpha1/namespaces/%s/boats",
			api: crdGroup + "/v1alpha1", procs: []*cluster.Process{cp.APIServer}, store: cp.APIServer, storeHost: cp.Host, storeHTTP: adminHTTP,
			etcdKey: kubeEtcdPrefix + "/" + crdGroup + "/boats/%s/%s", path: []endpoint{{"kube-apiserver", cp.Host, adminHTTP}}},
	}
	// The same server on PostgreSQL (through kine), direct: next to etcd in the same run.
	pgSubject, err := postgresSubject(r, backend, serverBin, direct)
	if err != nil {
		return err
	}
	subjects = append(subjects, pgSubject)

	for round := range cfg.repeats {
		if err := servingRound(r, cfg, round, subjects, cp.APIServer, cp.Host, adminHTTP, etcdClient, etcdProc, res); err != nil {
			return fmt.Errorf("round %d: %w", round+1, err)
		}
	}
	return nil
}

// store is a process that stores objects, measured once however many subjects it serves.
type store struct {
	proc    *cluster.Process
	host    string
	client  *http.Client
	subject string // the subject the memory rows name it by
	objects int    // the objects the round adds to it
	heap0   int64
	rss0    int64
}

// servingRound runs every serving workload once on every subject, in the round's order,
// each subject in a namespace of its own for the round.
func servingRound(r *cluster.Runner, cfg servingConfig, round int, subjects []*subject, kas *cluster.Process, kubeHost string, admin *http.Client, etcdClient *clientv3.Client, etcdProc *cluster.Process, res *Results) error {
	order := rotated(subjects, round)
	names := make([]string, len(order))
	for i, s := range order {
		names[i] = s.id
		ns := fmt.Sprintf("bench-%s-%d", s.id, round)
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":%q}}`, ns)
		if _, _, err := do(admin, http.MethodPost, kubeHost+"/api/v1/namespaces", body, http.StatusCreated); err != nil {
			return err
		}
		s.base = fmt.Sprintf(s.collection, ns)
	}
	r.Logf("serving, round %d of %d: %s", round+1, cfg.repeats, strings.Join(names, ", "))

	// The processes that store objects, each measured once however many subjects it
	// serves, and the objects the round adds to each.
	var stores []*store
	byProc := map[*cluster.Process]*store{}
	for _, s := range subjects {
		st := byProc[s.store]
		if st == nil {
			st = &store{proc: s.store, host: s.storeHost, client: s.storeHTTP, subject: s.id}
			byProc[s.store] = st
			stores = append(stores, st)
		}
		st.objects += cfg.objects
	}
	heaps, err := steadyHeaps(r, kas, stores, order)
	if err != nil {
		return err
	}
	for _, st := range stores {
		st.heap0, st.rss0 = heaps[st], resetPeakRSS(st.proc)
	}
	small := cfg.objects / 10
	if err := warmUp(cfg, order); err != nil {
		return err
	}

	get := func(s *subject) func(int) error {
		return func(int) error {
			_, _, err := do(s.client, http.MethodGet, fmt.Sprintf("%s/boat-%05d", s.base, rand.IntN(small)), "", http.StatusOK)
			return err
		}
	}
	type workload struct {
		id      string // "" for a step whose figures are not kept
		profile string // the -profile name, or ""
		run     func(s *subject) (measurement, error)
	}
	workloads := []workload{
		{wCreate, "create", func(s *subject) (measurement, error) {
			return runOps(small, cfg.concurrency, s.procs, func(i int) error { return create(s, i) })
		}},
		{wGet, "get", func(s *subject) (measurement, error) { return runOps(4*small, cfg.concurrency, s.procs, get(s)) }},
		{wGet1, "", func(s *subject) (measurement, error) { return runOps(small/2, 1, s.procs, get(s)) }},
		{wListSmall, "", func(s *subject) (measurement, error) {
			return runOps(20, 1, s.procs, func(int) error { return list(s, "", small) })
		}},
		{"", "", func(s *subject) (measurement, error) {
			return runOps(cfg.objects-small, cfg.concurrency, s.procs, func(i int) error { return create(s, small+i) })
		}},
		{wListLarge, "list", func(s *subject) (measurement, error) {
			return runOps(5, 1, s.procs, func(int) error { return list(s, "", cfg.objects) })
		}},
		{wSelector, "", func(s *subject) (measurement, error) {
			return runOps(10, 1, s.procs, func(int) error { return list(s, "shard=3", cfg.objects/10) })
		}},
	}
	run := func(ws []workload) error {
		for _, w := range ws {
			for _, s := range order {
				stop := profile(cfg, s, w.profile, round)
				m, err := w.run(s)
				stop()
				if err != nil {
					what := workloadTitle(w.id, res.Run.Config)
					if w.id == "" {
						what = fmt.Sprintf("creating objects up to %d", cfg.objects)
					}
					return fmt.Errorf("%s, %s: %w", what, subjectTitles[s.id], err)
				}
				if w.id != "" {
					res.add(tableServing, w.id, s.id, "", m.sample())
				}
			}
		}
		return nil
	}
	if err := run(workloads); err != nil {
		return err
	}
	if err := run([]workload{
		{wWatch, "watch", func(s *subject) (measurement, error) { return watchFanOutAs(s, cfg, jsonMediaType, 50) }},
		{wContention, "", func(s *subject) (measurement, error) { return contention(s, cfg) }},
	}); err != nil {
		return err
	}
	for _, st := range stores {
		res.add(tableMemory, wPeakRSS, st.subject, "", Sample{Bytes: float64(peakRSS(st.proc) - st.rss0)})
	}
	// Every subject holds its objects: the heap they take, read from restarted stores like
	// heap0 (the watch and contention workloads only update objects), after the peak RSS of
	// the processes that ran the workloads.
	heaps, err = steadyHeaps(r, kas, stores, order)
	if err != nil {
		return err
	}
	for _, st := range stores {
		res.add(tableMemory, wHeap, st.subject, "", Sample{Bytes: float64(heaps[st]-st.heap0) / float64(st.objects)})
		if err := heapProfile(cfg, st.client, st.host, st.subject, round); err != nil {
			return err
		}
	}
	if err := warmUp(cfg, order); err != nil {
		return err
	}

	// Other formats next to JSON on the generated server (a CRD serves no protobuf).
	if err := formatRounds(cfg, round, rotated(subjects[:2], round), res); err != nil {
		return err
	}

	// What one Boat takes in etcd, and the floor for writes: etcd puts of that size at
	// the same concurrency.
	var size int
	for _, s := range subjects {
		if s.id != sDirect && s.id != sCRD {
			continue
		}
		ns := fmt.Sprintf("bench-%s-%d", s.id, round)
		n, err := storedSize(etcdClient, fmt.Sprintf(s.etcdKey, ns, "boat-00000"))
		if err != nil {
			return err
		}
		res.add(tableMemory, wStored, s.id, "", Sample{Bytes: float64(n)})
		if s.id == sDirect {
			size = n
		}
	}
	m, err := etcdPuts(etcdClient, fmt.Sprintf("/bench-floor/%d/", round), small, cfg.concurrency, size, etcdProc)
	if err != nil {
		return err
	}
	res.add(tableServing, wEtcdPut, sEtcd, "", m.sample())
	return nil
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

// watchFanOutAs opens cfg.watchers watches answered in accept (JSON or protobuf), makes
// cfg.updates writes setting spec.lengthMeters to lengthBase+i%20 (a base no earlier run
// in the namespace used, so that every write changes the object), and measures the
// delivery latency of every event to every watcher from the start of its write.
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

// contentionAttempts bounds the read-modify-write attempts of one update under
// contention: past it the workload fails rather than spin.
const contentionAttempts = 100

// contention runs cfg.concurrency clients that each make 20 read-modify-write updates of
// one of four objects, retrying on 409 (at most contentionAttempts times); it measures
// the successful updates.
func contention(s *subject, cfg servingConfig) (measurement, error) {
	const perClient, objects = 20, 4
	return runOps(cfg.concurrency*perClient, cfg.concurrency, s.procs, func(i int) error {
		return updateWithRetries(s.client, fmt.Sprintf("%s/boat-%05d", s.base, i%objects), 10+i%30, contentionAttempts)
	})
}

// updateWithRetries sets spec.lengthMeters of the object at url to length by reading it
// and writing it back, again on each 409, at most attempts times.
func updateWithRetries(c *http.Client, url string, length, attempts int) error {
	for range attempts {
		data, _, err := do(c, http.MethodGet, url, "", http.StatusOK)
		if err != nil {
			return err
		}
		var o map[string]any
		if err := json.Unmarshal(data, &o); err != nil {
			return err
		}
		spec, ok := o["spec"].(map[string]any)
		if !ok {
			return fmt.Errorf("GET %s: no spec in %s", url, cluster.Tail(string(data), 200))
		}
		spec["lengthMeters"] = length
		body, err := json.Marshal(o)
		if err != nil {
			return err
		}
		_, _, err = do(c, http.MethodPut, url, string(body), http.StatusOK)
		if se, ok := err.(*statusError); ok && se.code == http.StatusConflict {
			continue // someone else updated it first: read it again
		}
		return err
	}
	return fmt.Errorf("PUT %s: still 409 Conflict after %d attempts", url, attempts)
}

// storedSize is the size of the value at key in etcd: what the server stores for one
// object (its encoding, protobuf or JSON, with the envelope).
func storedSize(cli *clientv3.Client, key string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	if len(resp.Kvs) != 1 {
		return 0, fmt.Errorf("etcd has no key %s: the bench reads the size of a stored object there (<etcd prefix>/<group>/<resource>/<namespace>/<name>)", key)
	}
	return len(resp.Kvs[0].Value), nil
}

// etcdPuts makes n puts of size bytes under prefix with c clients on etcd directly.
func etcdPuts(cli *clientv3.Client, prefix string, n, c, size int, proc *cluster.Process) (measurement, error) {
	value := string(bytes.Repeat([]byte("x"), size))
	return runOps(n, c, []*cluster.Process{proc}, func(i int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := cli.Put(ctx, fmt.Sprintf("%s%06d", prefix, i), value)
		return err
	})
}

// installCRD creates the CRD controller-gen v0.23.0 writes for the example's Boat (the
// generated project in dir holds its types), moved to group (the same kube-apiserver serves
// the aggregated marina.example.com) with the short name cbt, and waits until it is served.
func installCRD(ctx context.Context, r *cluster.Runner, admin *rest.Config, dir, group string) error {
	crdDir := r.TempDir()
	cmd := exec.Command(cluster.ControllerGenBinary(r), "crd", "paths=./pkg/apis/...", "output:crd:dir="+crdDir)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("controller-gen: %v\n%s", err, out)
	}
	crd, err := cluster.ReadCRD(filepath.Join(crdDir, "marina.example.com_boats.yaml"))
	if err != nil {
		return err
	}
	crd.Name = "boats." + group
	crd.Spec.Group = group
	crd.Spec.Names.ShortNames = []string{"cbt"}
	crd.Spec.Names.Categories = nil
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
// writes <dir>/<subject>-<workload>-<round>-<server>.pprof. An empty workload is not
// profiled.
func profile(cfg servingConfig, s *subject, workload string, round int) func() {
	if cfg.profileDir == "" || workload == "" {
		return func() {}
	}
	// What each server writes: a CPU profile, and during the watch fan-out an execution
	// trace too (where delivery waits: scheduling, channels, network, locks).
	kinds := []struct{ path, ext string }{{"profile", "pprof"}}
	if workload == "watch" {
		kinds = append(kinds, struct{ path, ext string }{"trace", "trace"})
	}
	var wg sync.WaitGroup
	for _, e := range s.path {
		for _, k := range kinds {
			wg.Go(func() {
				data, _, err := do(e.client, http.MethodGet, fmt.Sprintf("%s/debug/pprof/%s?seconds=%d", e.host, k.path, cfg.profileSeconds), "", http.StatusOK)
				if err == nil {
					name := fmt.Sprintf("%s-%s-%d-%s.%s", s.id, workload, round+1, e.name, k.ext)
					err = os.WriteFile(filepath.Join(cfg.profileDir, name), data, 0o644)
				}
				if err != nil {
					fmt.Fprintf(os.Stderr, "bench: %s %s %s %s: %v\n", k.path, s.id, workload, e.name, err)
				}
			})
		}
	}
	time.Sleep(100 * time.Millisecond)
	return wg.Wait
}

// heapProfile writes <dir>/<subject>-heap-<round>.pprof, the live heap of the process
// that stores the subject's objects, when -profile is set.
func heapProfile(cfg servingConfig, c *http.Client, host, subject string, round int) error {
	if cfg.profileDir == "" {
		return nil
	}
	data, _, err := do(c, http.MethodGet, host+"/debug/pprof/heap?gc=1", "", http.StatusOK)
	if err != nil {
		return fmt.Errorf("heap profile of %s: %w", subject, err)
	}
	return os.WriteFile(filepath.Join(cfg.profileDir, fmt.Sprintf("%s-heap-%d.pprof", subject, round+1)), data, 0o644)
}

// startupNextToSample measures the time from process start to /readyz ok of the generated
// server and of k8s.io/sample-apiserver, repeats times each, alternating which starts
// first, with the same flags: delegated authentication and authorization to cp, a
// self-signed serving certificate, etcdURL under a prefix of its own.
func startupNextToSample(r *cluster.Runner, cp *cluster.ControlPlane, etcdURL, serverBin string, repeats int, res *Results) error {
	type server struct{ id, bin string }
	servers := []server{{sGenerated, serverBin}, {sSample, cluster.SampleAPIServerBinary(r)}}
	for round := range repeats {
		for _, s := range rotated(servers, round) {
			port := cluster.FreePort(r)
			args := []string{
				"--secure-port=" + strconv.Itoa(port), "--bind-address=127.0.0.1", "--cert-dir=" + r.TempDir(),
				"--etcd-servers=" + etcdURL, fmt.Sprintf("--etcd-prefix=/startup/%s/%d", s.id, round),
				"--kubeconfig=" + cp.Kubeconfig, "--authentication-kubeconfig=" + cp.Kubeconfig, "--authorization-kubeconfig=" + cp.Kubeconfig,
			}
			d, err := startupOnce(s.bin, port, args)
			if err != nil {
				return fmt.Errorf("%s: %w", filepath.Base(s.bin), err)
			}
			res.add(tableStartup, wStartup, s.id, "", Sample{Seconds: d.Seconds()})
		}
	}
	return nil
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

// steadyHeaps restarts the processes that store objects, kube-apiserver first (the
// generated servers delegate authentication and authorization to it), waits until each
// answers /readyz, every subject serves its collection again and the processes are quiet
// (settle), and returns each store's live heap. A restarted server's watch cache holds
// every stored object from its initial list and no event window, so the heap a round's
// objects add is what holding them takes, however fast they were written. Read right after
// the writes, it also counted the window: for every write of the last 75 s or more the
// watch cache keeps the event and a copy-on-write snapshot of its B-tree, which cost more
// than a stored object in the profiles, and a run that wrote faster (one without -profile)
// kept more of them.
func steadyHeaps(r *cluster.Runner, kas *cluster.Process, stores []*store, subjects []*subject) (map[*store]int64, error) {
	var restart []*store
	for _, st := range stores {
		if st.proc == kas {
			restart = append([]*store{st}, restart...)
		} else {
			restart = append(restart, st)
		}
	}
	var procs []*cluster.Process
	for _, st := range restart {
		st.proc.Restart(r)
		st.proc.WaitFor(r, st.client, st.host+"/readyz", 3*time.Minute)
		procs = append(procs, st.proc)
	}
	for _, s := range subjects {
		s.store.WaitFor(r, s.client, s.base, 3*time.Minute)
	}
	settle(procs)
	heaps := map[*store]int64{}
	for _, st := range stores {
		heap, err := liveHeap(st.client, st.host)
		if err != nil {
			return nil, err
		}
		heaps[st] = heap
	}
	return heaps, nil
}

// warmUp runs a few lists on every subject, outside the figures, so that the workloads
// after it do not pay for connections and authorization caches.
func warmUp(cfg servingConfig, subjects []*subject) error {
	for _, s := range subjects {
		if _, err := runOps(cfg.concurrency, cfg.concurrency, s.procs, func(i int) error {
			_, _, err := do(s.client, http.MethodGet, s.base, "", http.StatusOK)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// settle waits until procs use less than 5 % of a CPU over a second (what a started server
// does in the background, kube-apiserver's post-start work among it, is over), for at most
// a minute.
func settle(procs []*cluster.Process) {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		before := cpuOf(procs)
		time.Sleep(time.Second)
		if cpuOf(procs)-before < 50*time.Millisecond {
			return
		}
	}
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
