package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// syntheticResults are the figures of a made-up run of three rounds: the generated server
// creating at 110, 100 and 90 % of the CRD's rate with 40, 45 and 60 % of its CPU, and
// lists through protobuf, a watch, memory, startup and generation.
func syntheticResults() *Results {
	r := &Results{Run: Run{Label: "synthetic", Started: "2026-11-26T00:00:00Z", Finished: "2026-11-26T00:10:00Z", Commit: "abc",
		Command: []string{"go run ./e2e/bench"}, Repeats: 3, Machine: Machine{OS: "linux", Arch: "amd64", CPUs: 2, CPUModel: "cpu", MemoryKB: 2048, LoadBefore: "0.1 0.2 0.3"},
		Versions: Versions{Go: "go1", K8sIO: "v0.37.2", KubeAPIServer: "v1.37.2", Etcd: "v3.7.3", SampleAPIServer: "v0.37.2"},
		Config:   Config{Objects: 1000, Concurrency: 16, Watchers: 10, Updates: 5}}}
	for i, f := range []struct{ rate, cpu, p50 float64 }{{1.1, 0.4, 0.0001}, {1.0, 0.45, 0.0002}, {0.9, 0.6, 0.0004}} {
		r.add(tableServing, wCreate, sCRD, "", Sample{Ops: 100, Seconds: 1, P50: 0.010, P99: 0.020, CPU: 0.2})
		r.add(tableServing, wCreate, sDirect, "", Sample{Ops: 100, Seconds: 1 / f.rate, P50: 0.008, P99: 0.015, CPU: 0.2 * f.cpu})
		r.add(tableServing, wCreate, sAggregated, "", Sample{Ops: 100, Seconds: 1 / (f.rate + 0.2), P50: 0.009, P99: 0.03, CPU: 0.3})
		r.add(tableServing, wGet1, sCRD, "", Sample{Ops: 50, Seconds: 0.05, P50: 0.001})
		r.add(tableServing, wGet1, sAggregated, "", Sample{Ops: 50, Seconds: 0.06, P50: 0.001 + f.p50})
		r.add(tableServing, wListLarge, sCRD, "", Sample{Ops: 5, Seconds: 1, CPU: 1.0})
		r.add(tableServing, wEtcdPut, sEtcd, "", Sample{Ops: 100, Seconds: 0.1})
		r.add(tableFormats, wListLarge, sDirect, jsonMediaType, Sample{Ops: 5, Seconds: 0.5, CPU: 0.3})
		r.add(tableFormats, wListLarge, sDirect, protobufMediaType, Sample{Ops: 5, Seconds: 0.2, CPU: 0.05 + 0.02*float64(i)})
		r.add(tableMemory, wHeap, sDirect, "", Sample{Bytes: 3000})
		r.add(tableMemory, wHeap, sCRD, "", Sample{Bytes: 10000})
		r.add(tableStartup, wStartup, sGenerated, "", Sample{Seconds: 0.3})
		r.add(tableStartup, wStartup, sSample, "", Sample{Seconds: 0.4})
		r.add(tableGeneration, "generate-example-cold", sAagen, "", Sample{Seconds: 3})
		r.add(tableGeneration, "generate-example-cold", sScript, "", Sample{Seconds: 10})
	}
	return r
}

func targetNamed(t *testing.T, c Config, prefix string) target {
	t.Helper()
	for _, tg := range targets(c) {
		if strings.HasPrefix(tg.name, prefix) {
			return tg
		}
	}
	t.Fatalf("no target %q", prefix)
	return target{}
}

// Ratios are taken round by round; the median and the range are those of the rounds' ratios.
func TestRatiosRoundByRound(t *testing.T) {
	r := syntheticResults()
	got := ratios(r.series(tableServing, wCreate, sDirect, ""), r.series(tableServing, wCreate, sCRD, ""), rate)
	want := []float64{1.1, 1.0, 0.9}
	for i := range want {
		if d := got[i] - want[i]; d > 1e-9 || d < -1e-9 {
			t.Fatalf("create rate ratios %v, want %v", got, want)
		}
	}
	s := spreadOf(got)
	if s.n != 3 || s.median != got[1] || s.min != got[2] || s.max != got[0] {
		t.Errorf("spread %+v of %v", s, got)
	}
	if even := spreadOf([]float64{4, 1, 3, 2}); even.median != 2.5 || even.min != 1 || even.max != 4 {
		t.Errorf("spread of four: %+v, want median 2.5 in [1, 4]", even)
	}
	// A round whose peer figure is 0 (no CPU tick) has no ratio, and the cell none.
	zero := &Series{Samples: []Sample{{Ops: 1, CPU: 0.01}, {Ops: 1, CPU: 0}}}
	if got := ratios(zero, zero, cpuPerOp); got[0] != 1 || !math.IsNaN(got[1]) {
		t.Errorf("ratios with a zero peer: %v, want [1 NaN]", got)
	}
	if cell := fmtRatio(spreadOf(ratios(zero, zero, cpuPerOp))); cell != "-" {
		t.Errorf("a spread over some rounds only: %q, want -", cell)
	}
}

// A target is met only when every round meets it, not when the median does.
func TestTargetMetOnlyByTheWholeSpread(t *testing.T) {
	r := syntheticResults()
	c := r.Run.Config
	for _, tc := range []struct {
		target string
		met    bool
	}{
		// CPU per create 0.4, 0.45, 0.6 of the CRD's: the median meets 0.5, the spread does not.
		{"server CPU per create, direct", false},
		// Rate 1.3, 1.2, 1.1 of the CRD's.
		{"create rate via aggregator", true},
		// p50 +0.1, +0.2, +0.4 ms.
		{"get p50 via aggregator, 1 client", false},
		// Protobuf list CPU 0.05, 0.07, 0.09 of the CRD's JSON list CPU.
		{"server CPU per list of 1000, protobuf, direct", true},
		// Heap 0.3 of the CRD's.
		{"live heap per stored object", true},
		{"generate example, cold", false},
		// Not measured in this run: never met.
		{"watch fan-out rate via aggregator", false},
	} {
		tg := targetNamed(t, c, tc.target)
		vs := tg.values(r)
		if got := tg.met(vs); got != tc.met {
			t.Errorf("%s: met %v with %v, want %v", tg.name, got, vs, tc.met)
		}
	}
	tg := targetNamed(t, c, "server CPU per create, direct")
	if !tg.met([]float64{0.4, 0.5}) || tg.met([]float64{0.4, 0.51}) || tg.met(nil) {
		t.Error("an at-most target must be met by values up to its limit only, and not by no values")
	}
}

// Subjects and the sides of a comparison rotate from round to round.
func TestRotatedOrder(t *testing.T) {
	xs := []string{"a", "b", "c"}
	for round, want := range [][]string{{"a", "b", "c"}, {"b", "c", "a"}, {"c", "a", "b"}, {"a", "b", "c"}} {
		if got := rotated(xs, round); !slices.Equal(got, want) {
			t.Errorf("round %d: %v, want %v", round, got, want)
		}
	}
	if !slices.Equal(xs, []string{"a", "b", "c"}) {
		t.Error("rotated changed its argument")
	}
}

// -smoke gives small sizes to the flags the command line does not set.
func TestSmokeSizes(t *testing.T) {
	o := options{smoke: true, repeats: 3, generation: true, objects: 10000, concurrency: 16, watchers: 200, updates: 100}
	o.applySmoke(map[string]bool{"concurrency": true})
	if o.repeats != 2 || o.generation || o.objects != 100 || o.concurrency != 16 || o.watchers != 4 || o.updates != 10 {
		t.Errorf("-smoke -concurrency=16 gave %+v", o)
	}
}

// The tables show medians and ranges, ratios to the CRD and to JSON, and the targets with
// whether they are met.
func TestRenderTables(t *testing.T) {
	out := renderTables(syntheticResults())
	for _, want := range []string{
		"Run: synthetic, 2026-11-26T00:00:00Z to 2026-11-26T00:10:00Z, commit abc",
		"| create, 16 clients | generated server, direct | 100 | 100 [90-110] | 8.00 [8.00-8.00]ms | 15.00 [15.00-15.00]ms | 0.90 [0.80-1.20]ms | 1.00 [0.90-1.10] | 0.80 [0.80-0.80] | 0.45 [0.40-0.60] |",
		"| list 1000 | generated server, direct | application/vnd.kubernetes.protobuf | 25 [25-25] | 0.00 [0.00-0.00]ms | 14.00 [10.00-18.00]ms | 2.50 [2.50-2.50] | 0.23 [0.17-0.30] |",
		"| process start to /readyz ok, delegating to kube-apiserver, same etcd | 0.30 [0.30-0.30]s | 0.40 [0.40-0.40]s | 0.75 [0.75-0.75] |",
		"| live heap per stored object | 3000 [3000-3000] B | 10000 [10000-10000] B | 0.30 [0.30-0.30] |",
		"| server CPU per create, direct <= 0.5x | 0.45 [0.40-0.60] | NO |",
		"| get p50 via aggregator, 1 client, minus the CRD's <= 0.3 ms | 0.20 [0.10-0.40] ms | NO |",
		"| generate example, cold | aagen generate | 3.00 [3.00-3.00]s | script-driven generators | 10.00 [10.00-10.00]s | 0.30 [0.30-0.30] |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered tables lack\n%s\nin\n%s", want, out)
		}
	}
	if strings.Contains(out, "watch fan-out rate via aggregator") {
		t.Error("a target the run did not measure is listed")
	}
}

// render replaces each rendered block with its file's tables and refuses a doc without
// one or with a block that does not end.
func TestRenderDoc(t *testing.T) {
	read := func(path string) (*Results, error) {
		if path != "docs/bench/x.json" {
			t.Fatalf("read %s", path)
		}
		return syntheticResults(), nil
	}
	doc := "# B\n\nbefore\n" + renderBegin + "docs/bench/x.json -->\nstale\n" + renderEnd + "\nafter\n"
	out, err := renderDoc([]byte(doc), read)
	if err != nil {
		t.Fatal(err)
	}
	want := "# B\n\nbefore\n" + renderBegin + "docs/bench/x.json -->\n" + renderTables(syntheticResults()) + renderEnd + "\nafter\n"
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	again, err := renderDoc(out, read)
	if err != nil || string(again) != string(out) {
		t.Errorf("rendering twice changed the doc (%v)", err)
	}
	for _, bad := range []string{"no block\n", "x\n" + renderBegin + "docs/bench/x.json -->\nno end\n"} {
		if _, err := renderDoc([]byte(bad), read); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
}

// docs/benchmarks.md's rendered tables are what `go run ./e2e/bench render` makes of the
// results files they name: a doc edited by hand, or a results file changed without
// rendering again, fails here.
func TestBenchmarksDocMatchesItsResults(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs/benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := renderDoc(doc, func(path string) (*Results, error) { return readResults(filepath.Join(root, path)) })
	if err != nil {
		t.Fatalf("docs/benchmarks.md: %v", err)
	}
	if string(out) != string(doc) {
		t.Error("docs/benchmarks.md's rendered tables differ from their results files: run `go run ./e2e/bench render` from the repository root")
	}
}
