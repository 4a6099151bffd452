package main

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
)

// The rendered tables of a results file sit in docs/benchmarks.md between these lines; the
// begin line names the file, relative to the repository root.
const (
	renderBegin = "<!-- rendered by `go run ./e2e/bench render` from "
	renderEnd   = "<!-- end of rendered tables -->"
)

// renderCommand is `go run ./e2e/bench render [-doc FILE]`: it replaces every rendered
// block of the doc with the tables of the results file its begin line names.
func renderCommand(args []string) error {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	doc := fs.String("doc", "docs/benchmarks.md", "the document whose rendered blocks to rewrite")
	if err := fs.Parse(args); err != nil {
		return err
	}
	data, err := os.ReadFile(*doc)
	if err != nil {
		return err
	}
	out, err := renderDoc(data, readResults)
	if err != nil {
		return fmt.Errorf("%s: %w", *doc, err)
	}
	return os.WriteFile(*doc, out, 0o644)
}

// renderDoc returns doc with each rendered block replaced by the tables of its results
// file (read with read).
func renderDoc(doc []byte, read func(path string) (*Results, error)) ([]byte, error) {
	var out bytes.Buffer
	rest := string(doc)
	blocks := 0
	for {
		i := strings.Index(rest, renderBegin)
		if i < 0 {
			break
		}
		line := rest[i:]
		nl := strings.IndexByte(line, '\n')
		if nl < 0 {
			return nil, fmt.Errorf("line %d: the begin line of a rendered block has no end of line", lineOf(doc, len(doc)-len(rest)+i))
		}
		path, ok := strings.CutSuffix(strings.TrimPrefix(line[:nl], renderBegin), " -->")
		if !ok || path == "" {
			return nil, fmt.Errorf("line %d: a rendered block's begin line must be %q<results file> -->", lineOf(doc, len(doc)-len(rest)+i), renderBegin)
		}
		end := strings.Index(line, renderEnd)
		if end < 0 {
			return nil, fmt.Errorf("line %d: the rendered block of %s has no %q line", lineOf(doc, len(doc)-len(rest)+i), path, renderEnd)
		}
		r, err := read(path)
		if err != nil {
			return nil, err
		}
		out.WriteString(rest[:i])
		out.WriteString(line[:nl+1])
		out.WriteString(renderTables(r))
		out.WriteString(renderEnd)
		rest = line[end+len(renderEnd):]
		blocks++
	}
	if blocks == 0 {
		return nil, fmt.Errorf("no rendered block (a line starting %q)", renderBegin)
	}
	out.WriteString(rest)
	return out.Bytes(), nil
}

func lineOf(doc []byte, offset int) int { return bytes.Count(doc[:offset], []byte("\n")) + 1 }

// renderTables is the Markdown of a run: what it ran on, then its tables.
func renderTables(r *Results) string {
	var b strings.Builder
	run := r.Run
	m := run.Machine
	fmt.Fprintf(&b, "\nRun: %s, %s to %s, commit %s, `%s`, %d repetitions of each measurement, subjects in rotating order.\n",
		run.Label, run.Started, run.Finished, run.Commit, strings.Join(run.Command, " "), run.Repeats)
	fmt.Fprintf(&b, "Machine: %s/%s, %d CPUs (%s), %d MiB, load average before the run %s.\n", m.OS, m.Arch, m.CPUs, m.CPUModel, m.MemoryKB/1024, m.LoadBefore)
	v := run.Versions
	fmt.Fprintf(&b, "Versions: %s, k8s.io/* %s, kube-apiserver %s, etcd %s, sample-apiserver %s.\n", v.Go, v.K8sIO, v.KubeAPIServer, v.Etcd, v.SampleAPIServer)
	if len(r.tableSeries(tableServing)) > 0 {
		fmt.Fprintf(&b, "Serving: %d objects, %d concurrent clients, %d watchers, %d writes watched.\n", run.Config.Objects, run.Config.Concurrency, run.Config.Watchers, run.Config.Updates)
	}
	b.WriteString("Each cell is the median of the repetitions and, in brackets, their range; a ratio is taken\nrepetition by repetition (the two figures of one round) before its median and range.\n")

	if rows := r.tableSeries(tableGeneration); len(rows) > 0 {
		b.WriteString("\n| workload | subject | time | peer | peer time | ratio |\n| --- | --- | --- | --- | --- | --- |\n")
		for _, s := range rows {
			if s.Subject != sAagen {
				continue
			}
			peer := sScript
			if strings.HasSuffix(s.Workload, "-noop") {
				peer = sLoad
			}
			p := r.series(tableGeneration, s.Workload, peer, "")
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", workloadTitle(s.Workload, run.Config), subjectTitles[s.Subject],
				fmtSeconds(spreadOf(values(s, seconds))), subjectTitles[peer], fmtSeconds(spreadOf(values(p, seconds))),
				fmtRatio(spreadOf(ratios(s, p, seconds))))
		}
	}

	if rows := r.tableSeries(tableServing); len(rows) > 0 {
		b.WriteString("\nRatios are to the CRD in the same round (lower is better for latency and CPU, higher for rate).\n\n")
		b.WriteString("| workload | subject | ops | ops/s | p50 | p99 | server CPU per op | rate vs CRD | p50 vs CRD | CPU vs CRD |\n")
		b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
		for _, s := range rows {
			ops := 0
			if len(s.Samples) > 0 {
				ops = s.Samples[0].Ops
			}
			crd := r.series(tableServing, s.Workload, sCRD, "")
			vsCRD := func(m metric) string {
				if crd == nil || s.Subject == sCRD {
					return ""
				}
				return fmtRatio(spreadOf(ratios(s, crd, m)))
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", workloadTitle(s.Workload, run.Config), subjectTitles[s.Subject], ops,
				fmtRate(spreadOf(values(s, rate))), fmtMillis(spreadOf(values(s, p50))), fmtMillis(spreadOf(values(s, p99))),
				fmtMillis(spreadOf(values(s, cpuPerOp))), vsCRD(rate), vsCRD(p50), vsCRD(cpuPerOp))
		}
	}

	if rows := r.tableSeries(tableFormats); len(rows) > 0 {
		b.WriteString("\nOther formats next to JSON, same subject, same objects, in the same round (the order of the\nformats alternating from round to round); the CRD is left out (no protobuf; CBOR is alpha).\n\n")
		b.WriteString("| workload | subject | format | ops/s | p50 | server CPU per op | rate vs JSON | CPU vs JSON |\n")
		b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- |\n")
		for _, s := range rows {
			if s.Format == jsonMediaType {
				continue
			}
			j := r.series(tableFormats, s.Workload, s.Subject, jsonMediaType)
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", workloadTitle(s.Workload, run.Config), subjectTitles[s.Subject], s.Format,
				fmtRate(spreadOf(values(s, rate))), fmtMillis(spreadOf(values(s, p50))), fmtMillis(spreadOf(values(s, cpuPerOp))),
				fmtRatio(spreadOf(ratios(s, j, rate))), fmtRatio(spreadOf(ratios(s, j, cpuPerOp))))
		}
	}

	if gen, sample := r.series(tableStartup, wStartup, sGenerated, ""), r.series(tableStartup, wStartup, sSample, ""); gen != nil && sample != nil {
		b.WriteString("\n| startup | generated server | sample-apiserver | ratio |\n| --- | --- | --- | --- |\n")
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", workloadTitle(wStartup, run.Config), fmtSeconds(spreadOf(values(gen, seconds))),
			fmtSeconds(spreadOf(values(sample, seconds))), fmtRatio(spreadOf(ratios(gen, sample, seconds))))
	}

	if rows := r.tableSeries(tableMemory); len(rows) > 0 {
		b.WriteString("\n| memory and size | generated server | CRD (kube-apiserver) | ratio |\n| --- | --- | --- | --- |\n")
		for _, w := range []string{wHeap, wPeakRSS, wStored} {
			g, c := r.series(tableMemory, w, sDirect, ""), r.series(tableMemory, w, sCRD, "")
			if g == nil || c == nil {
				continue
			}
			format := fmtBytes
			if w == wPeakRSS {
				format = fmtMiB
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", workloadTitle(w, run.Config), format(spreadOf(values(g, bytesOf))),
				format(spreadOf(values(c, bytesOf))), fmtRatio(spreadOf(ratios(g, c, bytesOf))))
		}
	}

	b.WriteString("\nTargets: met only when every repetition meets it.")
	if strings.HasPrefix(run.Label, smokeLabel) {
		b.WriteString(" A smoke run's targets show the computation, not results.")
	}
	b.WriteString("\n\n| target | measured | met |\n| --- | --- | --- |\n")
	for _, t := range targets(run.Config) {
		vs := t.values(r)
		if len(vs) == 0 {
			continue // not measured in this run (-generation=false, -serving=false)
		}
		met := "NO"
		if t.met(vs) {
			met = "yes"
		}
		cmp := ">="
		if t.atMost {
			cmp = "<="
		}
		unit := t.unit
		if unit != "x" {
			unit = " " + unit
		}
		measured := fmtSpread(spreadOf(vs), 1, "%.2f", strings.TrimPrefix(unit, "x"))
		fmt.Fprintf(&b, "| %s %s %g%s | %s | %s |\n", t.name, cmp, t.limit, unit, measured, met)
	}
	b.WriteString("\n")
	return b.String()
}

// tableSeries returns the series of table in the order they were recorded.
func (r *Results) tableSeries(table string) []*Series {
	var out []*Series
	for i := range r.Series {
		if r.Series[i].Table == table {
			out = append(out, &r.Series[i])
		}
	}
	return out
}

// fmtSpread writes a spread scaled by scale in verb, then unit: "1.23 [1.10-1.40]ms", or
// "1.23ms" for one repetition.
func fmtSpread(s spread, scale float64, verb, unit string) string {
	if s.n == 0 || math.IsNaN(s.median) {
		return "-"
	}
	f := func(v float64) string { return fmt.Sprintf(verb, v*scale) }
	if s.n == 1 {
		return f(s.median) + unit
	}
	return fmt.Sprintf("%s [%s-%s]%s", f(s.median), f(s.min), f(s.max), unit)
}

// The formats of the tables' cells.
func fmtRatio(s spread) string   { return fmtSpread(s, 1, "%.2f", "") }
func fmtRate(s spread) string    { return fmtSpread(s, 1, "%.0f", "") }
func fmtMillis(s spread) string  { return fmtSpread(s, 1000, "%.2f", "ms") }
func fmtSeconds(s spread) string { return fmtSpread(s, 1, "%.2f", "s") }
func fmtBytes(s spread) string   { return fmtSpread(s, 1, "%.0f", " B") }
func fmtMiB(s spread) string     { return fmtSpread(s, 1.0/(1<<20), "%.1f", " MiB") }
