package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
)

// Results are the raw figures of one bench run: every repetition of every measurement,
// with what it ran on. `go run ./e2e/bench` writes them (-results) and `go run ./e2e/bench
// render` turns them into the tables of docs/benchmarks.md.
type Results struct {
	Run    Run      `json:"run"`
	Series []Series `json:"series"`
}

// Run says when, where and on what a bench ran.
type Run struct {
	// Label says what kind of run it was (a full run, a -smoke run).
	Label    string   `json:"label"`
	Started  string   `json:"started"`  // RFC 3339, UTC
	Finished string   `json:"finished"` // RFC 3339, UTC
	Commit   string   `json:"commit"`   // of the checkout, "+dirty" when it had changes
	Command  []string `json:"command"`
	Repeats  int      `json:"repeats"`
	Machine  Machine  `json:"machine"`
	Versions Versions `json:"versions"`
	Config   Config   `json:"config"`
}

// Machine is what the bench ran on.
type Machine struct {
	OS, Arch string
	CPUs     int
	CPUModel string `json:"cpuModel"`
	MemoryKB int64  `json:"memoryKB"`
	// LoadBefore is /proc/loadavg when the run started.
	LoadBefore string `json:"loadBefore"`
}

// Versions are the versions of what the bench compares.
type Versions struct {
	Go              string `json:"go"`
	K8sIO           string `json:"k8sIO"` // k8s.io/apimachinery linked into the bench (every k8s.io/* library is pinned to one version)
	KubeAPIServer   string `json:"kubeAPIServer"`
	Etcd            string `json:"etcd"`
	SampleAPIServer string `json:"sampleAPIServer"`
}

// Config sizes the serving workloads.
type Config struct {
	Objects     int `json:"objects"`
	Concurrency int `json:"concurrency"`
	Watchers    int `json:"watchers"`
	Updates     int `json:"updates"`
}

// Series is one measurement (a workload on a subject, in a format) repeated: Samples[i]
// is repetition i.
type Series struct {
	// Table is the table the series belongs to (tableServing, ...).
	Table string `json:"table"`
	// Workload and Subject are stable names (wCreate, sDirect, ...); Format is the media
	// type of a format comparison.
	Workload string   `json:"workload"`
	Subject  string   `json:"subject"`
	Format   string   `json:"format,omitempty"`
	Samples  []Sample `json:"samples"`
}

// Sample is one repetition of a measurement.
type Sample struct {
	Ops     int     `json:"ops,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`    // elapsed
	P50     float64 `json:"p50Seconds,omitempty"` // latency of one operation
	P99     float64 `json:"p99Seconds,omitempty"`
	CPU     float64 `json:"cpuSeconds,omitempty"` // of the processes on the subject's path
	Bytes   float64 `json:"bytes,omitempty"`      // memory and size measurements
}

// The tables.
const (
	tableGeneration = "generation"
	tableServing    = "serving"
	tableFormats    = "formats"
	tableStartup    = "startup"
	tableMemory     = "memory"
)

// Stable names of subjects.
const (
	sDirect     = "direct"
	sAggregated = "aggregated"
	sCRD        = "crd"
	sPostgres   = "postgres"
	sEtcd       = "etcd"
	sGenerated  = "generated"
	sSample     = "sample-apiserver"
	sAagen      = "aagen"
	sScript     = "script"
	sLoad       = "load"
)

var subjectTitles = map[string]string{
	sDirect: "generated server, direct", sAggregated: "generated server, via aggregator", sCRD: "CRD on kube-apiserver",
	sPostgres: "generated server on PostgreSQL, direct", sEtcd: "etcd", sGenerated: "generated server", sSample: "sample-apiserver",
	sAagen: "aagen generate", sScript: "script-driven generators", sLoad: "one package load",
}

// Stable names of workloads.
const (
	wCreate     = "create"
	wGet        = "get"
	wGet1       = "get-1"
	wListSmall  = "list-small"
	wListLarge  = "list-large"
	wSelector   = "list-selector"
	wWatch      = "watch"
	wContention = "update-contention"
	wEtcdPut    = "etcd-put"
	wStartup    = "startup"
	wHeap       = "heap-per-object"
	wPeakRSS    = "peak-rss-added"
	wStored     = "stored-size"
	// Generation: "generate-<api>-cold" and "generate-<api>-noop".
)

// workloadTitle is the row title of a workload for the run's configuration.
func workloadTitle(w string, c Config) string {
	switch w {
	case wCreate:
		return fmt.Sprintf("create, %d clients", c.Concurrency)
	case wGet:
		return fmt.Sprintf("get, %d clients", c.Concurrency)
	case wGet1:
		return "get, 1 client"
	case wListSmall:
		return fmt.Sprintf("list %d", c.Objects/10)
	case wListLarge:
		return fmt.Sprintf("list %d", c.Objects)
	case wSelector:
		return fmt.Sprintf("list %d of %d (label selector)", c.Objects/10, c.Objects)
	case wWatch:
		return fmt.Sprintf("watch fan-out (%d watchers, %d writes)", c.Watchers, c.Updates)
	case wContention:
		return fmt.Sprintf("update under contention (%d clients, 4 objects)", c.Concurrency)
	case wEtcdPut:
		return fmt.Sprintf("etcd put, %d clients (floor for writes)", c.Concurrency)
	case wStartup:
		return "process start to /readyz ok, delegating to kube-apiserver, same etcd"
	case wHeap:
		return "live heap per stored object"
	case wPeakRSS:
		return "peak RSS added by the workloads"
	case wStored:
		return "one Boat's value in etcd"
	}
	if rest, ok := strings.CutPrefix(w, "generate-"); ok {
		api, mode, _ := strings.Cut(rest, "-")
		if mode == "noop" {
			mode = "no-op"
		}
		return fmt.Sprintf("generate %s, %s", api, mode)
	}
	return w
}

// series returns the series of table, workload, subject and format, or nil.
func (r *Results) series(table, workload, subject, format string) *Series {
	for i := range r.Series {
		s := &r.Series[i]
		if s.Table == table && s.Workload == workload && s.Subject == subject && s.Format == format {
			return s
		}
	}
	return nil
}

// add appends sample as the next repetition of its series, creating the series.
func (r *Results) add(table, workload, subject, format string, sample Sample) {
	s := r.series(table, workload, subject, format)
	if s == nil {
		r.Series = append(r.Series, Series{Table: table, Workload: workload, Subject: subject, Format: format})
		s = &r.Series[len(r.Series)-1]
	}
	s.Samples = append(s.Samples, sample)
}

// metric reads one figure of a sample.
type metric func(Sample) float64

func rate(s Sample) float64 {
	if s.Seconds == 0 {
		return math.NaN()
	}
	return float64(s.Ops) / s.Seconds
}
func p50(s Sample) float64     { return s.P50 }
func p99(s Sample) float64     { return s.P99 }
func seconds(s Sample) float64 { return s.Seconds }
func bytesOf(s Sample) float64 { return s.Bytes }
func cpuPerOp(s Sample) float64 {
	if s.Ops == 0 {
		return math.NaN()
	}
	return s.CPU / float64(s.Ops)
}

// spread is the median and the range of repeated figures.
type spread struct {
	median, min, max float64
	n                int
}

// spreadOf is the spread of values; NaN (no median, no range) when one of them is NaN: a
// spread over some rounds only would look like one over all.
func spreadOf(values []float64) spread {
	if len(values) == 0 || slices.ContainsFunc(values, math.IsNaN) {
		return spread{median: math.NaN(), min: math.NaN(), max: math.NaN()}
	}
	s := slices.Clone(values)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{median: m, min: s[0], max: s[len(s)-1], n: len(s)}
}

// values returns metric of every repetition of s.
func values(s *Series, m metric) []float64 {
	if s == nil {
		return nil
	}
	out := make([]float64, len(s.Samples))
	for i, x := range s.Samples {
		out[i] = m(x)
	}
	return out
}

// ratios returns, repetition by repetition, m of a over m of b (b's repetition i ran in
// the same round as a's), NaN where b's is 0 or less: a figure of 0 (CPU under one 10 ms
// tick) or below (RSS that shrank) has no ratio.
func ratios(a, b *Series, m metric) []float64 {
	return roundByRound(a, b, m, func(x, y float64) float64 {
		if y > 0 {
			return x / y
		}
		return math.NaN()
	})
}

// differences returns, repetition by repetition, m of a minus m of b.
func differences(a, b *Series, m metric) []float64 {
	return roundByRound(a, b, m, func(x, y float64) float64 { return x - y })
}

// roundByRound combines m of a's and b's repetitions of the same round with f.
func roundByRound(a, b *Series, m metric, f func(x, y float64) float64) []float64 {
	if a == nil || b == nil {
		return nil
	}
	out := make([]float64, min(len(a.Samples), len(b.Samples)))
	for i := range out {
		out[i] = f(m(a.Samples[i]), m(b.Samples[i]))
	}
	return out
}

// target is a goal for figures of a run: each repetition's value of it must be at most
// (or at least) limit. It is met only when every repetition's is: the whole spread.
type target struct {
	name   string
	unit   string // "x" for a ratio, "ms" for a difference of latencies
	atMost bool
	limit  float64
	values func(r *Results) []float64
}

// met reports whether every value meets the target (and there is at least one).
func (t target) met(values []float64) bool {
	if len(values) == 0 {
		return false
	}
	for _, v := range values {
		if math.IsNaN(v) || (t.atMost && v > t.limit) || (!t.atMost && v < t.limit) {
			return false
		}
	}
	return true
}

// targets are the goals of the bench (issue 28's acceptance, and the earlier ones still
// kept), in the order the Targets table lists them.
func targets(c Config) []target {
	ratio := func(table, workload, subject, peerWorkload, peer string, m metric) func(r *Results) []float64 {
		return func(r *Results) []float64 {
			return ratios(r.series(table, workload, subject, ""), r.series(table, peerWorkload, peer, ""), m)
		}
	}
	serving := func(workload, subject string, m metric) func(r *Results) []float64 {
		return ratio(tableServing, workload, subject, workload, sCRD, m)
	}
	protobufList := func(subject string) func(r *Results) []float64 {
		return func(r *Results) []float64 {
			return ratios(r.series(tableFormats, wListLarge, subject, protobufMediaType), r.series(tableServing, wListLarge, sCRD, ""), cpuPerOp)
		}
	}
	ms := func(v []float64) []float64 {
		for i := range v {
			v[i] *= 1000
		}
		return v
	}
	out := []target{
		{name: "server CPU per create, direct", unit: "x", atMost: true, limit: 0.5, values: serving(wCreate, sDirect, cpuPerOp)},
		{name: "server CPU per get, direct", unit: "x", atMost: true, limit: 0.5, values: serving(wGet, sDirect, cpuPerOp)},
		{name: "create rate via aggregator", unit: "x", limit: 1.0, values: serving(wCreate, sAggregated, rate)},
		{name: fmt.Sprintf("get rate via aggregator, %d clients", c.Concurrency), unit: "x", limit: 1.0, values: serving(wGet, sAggregated, rate)},
		{name: "watch fan-out rate via aggregator", unit: "x", limit: 1.0, values: serving(wWatch, sAggregated, rate)},
		{name: "get p50 via aggregator, 1 client, minus the CRD's", unit: "ms", atMost: true, limit: 0.3, values: func(r *Results) []float64 {
			return ms(differences(r.series(tableServing, wGet1, sAggregated, ""), r.series(tableServing, wGet1, sCRD, ""), p50))
		}},
		{name: fmt.Sprintf("server CPU per list of %d, JSON, direct", c.Objects), unit: "x", atMost: true, limit: 0.5, values: serving(wListLarge, sDirect, cpuPerOp)},
		{name: fmt.Sprintf("server CPU per list of %d, JSON, via aggregator", c.Objects), unit: "x", atMost: true, limit: 0.5, values: serving(wListLarge, sAggregated, cpuPerOp)},
		{name: fmt.Sprintf("server CPU per list of %d, protobuf, direct (to the CRD's JSON)", c.Objects), unit: "x", atMost: true, limit: 0.1, values: protobufList(sDirect)},
		{name: fmt.Sprintf("server CPU per list of %d, protobuf, via aggregator (to the CRD's JSON)", c.Objects), unit: "x", atMost: true, limit: 0.1, values: protobufList(sAggregated)},
		{name: "live heap per stored object", unit: "x", atMost: true, limit: 0.35, values: ratio(tableMemory, wHeap, sDirect, wHeap, sCRD, bytesOf)},
		{name: "create rate, direct, to etcd's put rate", unit: "x", limit: 0.5, values: ratio(tableServing, wCreate, sDirect, wEtcdPut, sEtcd, rate)},
	}
	for _, api := range generationAPIs() {
		out = append(out,
			target{name: "generate " + api.name + ", cold, to the script-driven run", unit: "x", atMost: true, limit: 0.2,
				values: ratio(tableGeneration, "generate-"+api.name+"-cold", sAagen, "generate-"+api.name+"-cold", sScript, seconds)},
			target{name: "generate " + api.name + ", no-op, to one package load", unit: "x", atMost: true, limit: 1.2,
				values: ratio(tableGeneration, "generate-"+api.name+"-noop", sAagen, "generate-"+api.name+"-noop", sLoad, seconds)})
	}
	return out
}

// writeResults writes r to path as indented JSON.
func writeResults(path string, r *Results) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// readResults reads a results file.
func readResults(path string) (*Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}
