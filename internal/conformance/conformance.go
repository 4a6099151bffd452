// Package conformance proves a generated server on the user's own API: it sends the same
// requests to the server aagen generates and to the CustomResourceDefinition controller-gen
// writes for the same types (on a real kube-apiserver), and reports every difference in the
// answers. The requests (the corpus) are derived from the model's type graph: see
// docs/conformance.md.
package conformance

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"

	"github.com/aagen-dev/aagen/e2e/cluster"
	"github.com/aagen-dev/aagen/generator"
	"github.com/aagen-dev/aagen/internal/serverbuild"
)

// Options configure a run.
type Options struct {
	// Generate are the options of the generation (as aagen up has them); Force is set, so
	// that the model is built.
	Generate generator.Options
	// BinDir is where kube-apiserver and controller-gen are built (DefaultBinDir when empty).
	BinDir string
	// Out receives the table; Log the progress lines.
	Out, Log io.Writer
	// Intended are the differences listed as intended (Intended when nil).
	Intended []IntendedDifference
	// AlterCRD, when set, changes each CRD controller-gen wrote before it is installed. It
	// is a test hook: a broken translation the comparison must report.
	AlterCRD func(*apiextensionsv1.CustomResourceDefinition)
	// Oracle, when set, is the admin configuration of a kube-apiserver already running
	// (on its own etcd): the CRDs are installed there instead of on an etcd and a
	// kube-apiserver the run starts. Runs on APIs of different groups can share one
	// (the end-to-end tests do); kube-apiserver is then not built.
	Oracle *rest.Config
}

// Difference is a case whose answers differ.
type Difference struct {
	ID         string
	AAGen, CRD string
	// Listed names the listed differences (intended or known) that account for it; empty
	// when it is not listed.
	Listed []string
}

// Result is what a run found.
type Result struct {
	Cases, Equal int
	Differences  []Difference
	// Unlisted are the differences not listed as intended.
	Unlisted []Difference
	// ListedSeen counts, by name, the cases each listed difference accounted for.
	ListedSeen map[string]int
	// UnviolatedRules are the CEL rules for which no violating value was found.
	UnviolatedRules []string
	// Skipped says what the corpus could not cover.
	Skipped []string
	// InvalidSamples are the kinds whose valid object (a sample of config/samples, or one
	// synthesized from the schema) the CRD refuses, with its answer: every case that
	// starts by creating it then fails there on both servers alike, and tests nothing.
	InvalidSamples []string
	// Codes holds, by case ID, the status code of the generated server's answer to the
	// case's last step; 0 when a step before it failed (the case was not answered).
	Codes map[string]int
	// checks counts, by kind, the comparisons of the model's scope and /status with the
	// CRD's, which are cases too (in Cases, and in the table's row of the kind).
	checks map[string]int
}

// Run generates and builds the server, writes and installs the CRDs, sends the corpus to
// both, prints the table to o.Out and returns the result. An error means the comparison
// could not be made; differences are in the result.
func Run(ctx context.Context, o Options) (res *Result, err error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Intended == nil {
		o.Intended = Intended
	}
	if err := checkListed(o.Intended); err != nil {
		return nil, err // before minutes of building: a bad pattern is the caller's to fix
	}
	h := &harness{log: o.Log}
	defer h.close()
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(harnessFailure)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%s", f.msg)
		}
	}()
	binDir := o.BinDir
	if binDir == "" {
		if binDir, err = DefaultBinDir(); err != nil {
			return nil, err
		}
	}
	logf := func(format string, args ...any) { fmt.Fprintf(o.Log, "aagen conformance: "+format+"\n", args...) }

	var kas string
	if o.Oracle == nil {
		if kas, err = kubeAPIServerTool.binary(ctx, binDir, o.Log); err != nil {
			return nil, err
		}
	}
	cg, err := controllerGenTool.binary(ctx, binDir, o.Log)
	if err != nil {
		return nil, err
	}

	// The oracle's CRDs, from the user's types before aagen writes into the module.
	dir := o.Generate.Dir
	if dir == "" {
		dir = "."
	}
	crdDir := h.TempDir()
	logf("writing CRDs with controller-gen %s", ControllerGenVersion)
	// generateEmbeddedObjectMeta: docs/conformance.md, step 2.
	cmd := exec.CommandContext(ctx, cg, "crd:generateEmbeddedObjectMeta=true", "paths="+strings.Join(o.Generate.Patterns, ";"), "output:crd:dir="+crdDir)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("controller-gen: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		crd, err := cluster.ReadCRD(f)
		if err != nil {
			return nil, err
		}
		if o.AlterCRD != nil {
			o.AlterCRD(crd)
		}
		crds = append(crds, crd)
	}
	installNotes := cluster.MakeInstallable(crds)
	for _, n := range installNotes {
		logf("%s", n)
	}

	// The generated server, as aagen up makes it.
	gen := o.Generate
	gen.Force = true
	logf("generating the server")
	g, err := generator.Generate(ctx, gen)
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(h.TempDir(), g.ServerName)
	logf("building %s", g.ServerName)
	if err := serverbuild.Build(ctx, g.ModuleDir, g.ServerName, bin, o.Log); err != nil {
		return nil, err
	}

	const ns = "conformance"
	res = &Result{ListedSeen: map[string]int{}, checks: map[string]int{}}
	b := &builder{types: g.Model.Types, moduleDir: g.ModuleDir, ns: ns}
	ts := targets(g.Model, g.ModuleDir, b)
	res.alignScopes(b, ts, crds, o.Intended)

	admin := o.Oracle
	if admin == nil {
		logf("starting kube-apiserver %s with %d CRDs", KubeVersion, len(crds))
		admin = startOracle(ctx, h, kas, crds)
	} else {
		logf("installing %d CRDs on the running kube-apiserver", len(crds))
		for _, crd := range crds {
			cluster.InstallCRD(h, ctx, admin, crd)
		}
	}
	logf("starting %s", g.ServerName)
	aagenCfg := startServer(h, bin, g.ModuleDir)

	crdSide, err := newServer("crd", admin)
	if err != nil {
		return nil, err
	}
	aagenSide, err := newServer("aagen", aagenCfg)
	if err != nil {
		return nil, err
	}
	if r, err := crdSide.do(ctx, Step{Method: "POST", Path: "/api/v1/namespaces", ContentType: "application/json",
		Body: jsonBody(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}})}, nil); err != nil || r.code != 201 && (o.Oracle == nil || r.code != 409) {
		return nil, fmt.Errorf("creating namespace %s: %v %v", ns, err, r)
	}

	// Every case starts from its kind's valid object: see that the CRD takes it, and
	// repair a synthesized one that a rule refuses (repairSample).
	for _, t := range ts {
		r, err := b.repairSample(ctx, crdSide, t, t.collection(ns))
		if err != nil {
			return nil, err
		}
		if r != nil {
			res.InvalidSamples = append(res.InvalidSamples, fmt.Sprintf("%s: its valid object (%s) is refused by the CRD: %s", t.kind.Name, t.sampleFrom, describe(r)))
		}
	}

	// The corpus.
	for _, t := range ts {
		logf("%s %s: sample %s", t.kind.Name, t.apiVersion(), t.sampleFrom)
		b.walkKind(t)
	}
	logf("looking for values that violate %d CEL rules (dry run on the CRD)", len(b.rules))
	for _, rc := range b.rules {
		if m, ok := resolveRule(ctx, crdSide, b, rc); ok {
			ops := allOps
			if rc.transition {
				ops = []op{opUpdate, opMerge, opJSONPatch, opApply}
			}
			b.opCases(rc.t, fmt.Sprintf("%s rule %q violated", rc.display, rc.rule.Rule), m, ops)
		} else {
			res.UnviolatedRules = append(res.UnviolatedRules, fmt.Sprintf("%s %s: %s", rc.t.kind.Name, rc.display, rc.rule.Rule))
		}
	}
	for _, t := range ts {
		b.kindCases(t)
	}
	res.Skipped = append(installNotes, b.skipped...)

	logf("sending %d cases to both servers", len(b.cases))
	start := time.Now()
	for i, c := range b.cases {
		if c.Skip != "" {
			continue
		}
		if i > 0 && i%100 == 0 {
			logf("%d/%d cases", i, len(b.cases))
		}
		a, cr := aagenSide.run(ctx, c), crdSide.run(ctx, c)
		res.compare(c.ID(), a, cr, o.Intended)
	}
	logf("sent in %s", time.Since(start).Round(time.Millisecond))
	res.print(o.Out, b.cases, o.Intended)
	return res, nil
}

// checkListed reports a listed difference whose Case is not a regular expression.
func checkListed(listed []IntendedDifference) error {
	for _, in := range listed {
		if _, err := regexp.Compile(in.Case); err != nil {
			return fmt.Errorf("listed difference %q: its Case %q is not a regular expression (%v); fix it in the list", in.Name, in.Case, err)
		}
	}
	return nil
}

// compare counts a case and records it as a difference when the answers differ, or when
// the generated server's breaks a protocol rule (a WatchList without its
// initial-events-end bookmark), even if the CRD's answer breaks it too.
func (res *Result) compare(id string, a, cr answer, listed []IntendedDifference) {
	res.Cases++
	if res.Codes == nil {
		res.Codes = map[string]int{}
	}
	res.Codes[id] = 0
	if a.r != nil {
		res.Codes[id] = a.r.code
	}
	if a.String() == cr.String() && a.violation() == "" {
		res.Equal++
		return
	}
	res.classify(id, a, cr, listed)
}

// classify records a difference: listed when one listed difference names the case, or when
// the rewrites of listed differences, together, make the answers equal; a protocol
// violation of the generated server is never listed.
func (res *Result) classify(id string, a, cr answer, listed []IntendedDifference) {
	d := Difference{ID: id, AAGen: a.String(), CRD: cr.String()}
	violation := a.violation()
	var reasons []string
	for _, in := range listed {
		if in.Case != "" && !regexp.MustCompile(in.Case).MatchString(id) {
			continue
		}
		if in.Rewrite == nil {
			reasons = []string{in.Name}
			a, cr = answer{}, answer{}
			break
		}
		na, nc := a.rewritten(func(m map[string]any) { in.Rewrite(m, true) }), cr.rewritten(func(m map[string]any) { in.Rewrite(m, false) })
		if na.String() != a.String() || nc.String() != cr.String() {
			reasons = append(reasons, in.Name)
			a, cr = na, nc
		}
	}
	if len(reasons) > 0 && a.String() == cr.String() && violation == "" {
		d.Listed = reasons
		for _, n := range reasons {
			res.ListedSeen[n]++
		}
	}
	res.Differences = append(res.Differences, d)
	if len(d.Listed) == 0 {
		res.Unlisted = append(res.Unlisted, d)
	}
}

// alignScopes compares each CRD's scope and /status subresource with the kind's in the
// model, records a difference where they differ, and gives the CRD the model's, so that the
// requests reach both and are compared.
func (res *Result) alignScopes(b *builder, ts []*target, crds []*apiextensionsv1.CustomResourceDefinition, listed []IntendedDifference) {
	for _, t := range ts {
		for _, crd := range crds {
			if crd.Spec.Group != t.group || crd.Spec.Names.Kind != t.kind.Name {
				continue
			}
			want := apiextensionsv1.ClusterScoped
			if t.namespaced {
				want = apiextensionsv1.NamespaceScoped
			}
			res.Cases++
			res.checks[t.kind.Name]++
			if crd.Spec.Scope == want {
				res.Equal++
				continue
			}
			res.classify(t.kind.Name+" | scope | CRD", answer{failed: string(want)}, answer{failed: string(crd.Spec.Scope)}, listed)
			crd.Spec.Scope = want
		}
		for _, crd := range crds {
			if crd.Spec.Group != t.group || crd.Spec.Names.Kind != t.kind.Name {
				continue
			}
			for i := range crd.Spec.Versions {
				v := &crd.Spec.Versions[i]
				if v.Name != t.version {
					continue
				}
				has := v.Subresources != nil && v.Subresources.Status != nil
				res.Cases++
				res.checks[t.kind.Name]++
				if has == t.hasStatus {
					res.Equal++
					continue
				}
				res.classify(t.kind.Name+" | status subresource | CRD", answer{failed: fmt.Sprint(t.hasStatus)}, answer{failed: fmt.Sprint(has)}, listed)
				if t.hasStatus {
					if v.Subresources == nil {
						v.Subresources = &apiextensionsv1.CustomResourceSubresources{}
					}
					v.Subresources.Status = &apiextensionsv1.CustomResourceSubresourceStatus{}
				} else {
					v.Subresources.Status = nil
				}
			}
		}
	}
}

// resolveRule looks for a mutation of the sample that the CRD rejects with the rule's
// message: each candidate is sent with dryRun=All (for a transition rule, as an update of a
// probe object, which is deleted afterwards).
func resolveRule(ctx context.Context, crd *server, b *builder, rc *ruleCase) (mutation, bool) {
	t := rc.t
	coll := t.collection(b.ns)
	want := rc.rule.Message
	if want == "" {
		want = rc.rule.Rule
	}
	probe := "cf-rule-probe"
	var base map[string]any
	if rc.transition {
		r, err := crd.do(ctx, Step{Method: "POST", Path: coll, ContentType: "application/json", Body: jsonBody(t.object(probe, b.ns))}, nil)
		if err != nil || r.code != 201 {
			return mutation{}, false
		}
		base = r.body
		defer crd.do(ctx, Step{Method: "DELETE", Path: coll + "/" + probe}, nil) //nolint:errcheck
	}
	for i, m := range rc.candidates {
		if i >= 80 {
			break
		}
		var st Step
		if rc.transition {
			c := deepCopy(base).(map[string]any)
			setAt(c, m.path, m.value, m.remove)
			st = Step{Method: "PUT", Path: coll + "/" + probe, Query: "dryRun=All", ContentType: "application/json", Body: jsonBody(c)}
		} else {
			c := t.object(probe, b.ns)
			setAt(c, m.path, m.value, m.remove)
			st = Step{Method: "POST", Path: coll, Query: "dryRun=All", ContentType: "application/json", Body: jsonBody(c)}
		}
		r, err := crd.do(ctx, st, nil)
		if err == nil && r.code == 422 && strings.Contains(r.raw, jsonEscape(want)) {
			return m, true
		}
	}
	return mutation{}, false
}

func jsonEscape(s string) string {
	b := jsonBody(s)
	return string(b[1 : len(b)-1])
}

// print writes the table: per kind the cases, the equal and the different ones, then each
// difference with both answers, the listed differences seen, the CEL rules not violated
// and what the corpus skipped.
func (r *Result) print(w io.Writer, cases []*Case, listed []IntendedDifference) {
	type row struct{ cases, equal, different, listed int }
	rows := map[string]*row{}
	var kinds []string
	for _, c := range cases {
		if c.Skip != "" {
			continue
		}
		if rows[c.Kind] == nil {
			rows[c.Kind] = &row{}
			kinds = append(kinds, c.Kind)
		}
		rows[c.Kind].cases++
	}
	for k, n := range r.checks { // the model's scope and /status against the CRD's
		if rows[k] == nil {
			rows[k] = &row{}
			kinds = append(kinds, k)
		}
		rows[k].cases += n
	}
	for _, d := range r.Differences {
		k := strings.SplitN(d.ID, " | ", 2)[0]
		if rows[k] == nil {
			rows[k] = &row{}
			kinds = append(kinds, k)
		}
		rows[k].different++
		if len(d.Listed) > 0 {
			rows[k].listed++
		}
	}
	fmt.Fprintf(w, "%-20s %7s %7s %10s %7s %9s\n", "KIND", "CASES", "EQUAL", "DIFFERENT", "LISTED", "UNLISTED")
	tot := row{}
	for _, k := range kinds {
		x := rows[k]
		x.equal = x.cases - x.different
		fmt.Fprintf(w, "%-20s %7d %7d %10d %7d %9d\n", k, x.cases, x.equal, x.different, x.listed, x.different-x.listed)
		tot.cases += x.cases
		tot.equal += x.equal
		tot.different += x.different
		tot.listed += x.listed
	}
	fmt.Fprintf(w, "%-20s %7d %7d %10d %7d %9d\n", "TOTAL", tot.cases, tot.equal, tot.different, tot.listed, tot.different-tot.listed)
	for _, d := range r.Differences {
		tag := "DIFFERENT"
		if len(d.Listed) > 0 {
			tag = "LISTED (" + strings.Join(d.Listed, ", ") + ")"
		}
		fmt.Fprintf(w, "\n%s %s\n  aagen: %s\n  crd:   %s\n", tag, d.ID, d.AAGen, d.CRD)
	}
	if len(r.ListedSeen) > 0 {
		fmt.Fprintf(w, "\nlisted differences seen (internal/conformance/intended.go):\n")
		for _, in := range listed {
			if n := r.ListedSeen[in.Name]; n > 0 {
				what := "intended"
				if in.Known {
					what = "known, not fixed"
				}
				fmt.Fprintf(w, "  %s (%s, %d cases): %s\n", in.Name, what, n, in.Reason)
			}
		}
	}
	for _, s := range r.InvalidSamples {
		fmt.Fprintf(w, "not covered, its cases fail at their first step: %s\n", s)
	}
	for _, s := range r.UnviolatedRules {
		fmt.Fprintf(w, "no violating value found for CEL rule %s\n", s)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "not covered: %s\n", s)
	}
	fmt.Fprintf(w, "\n%d cases, %d equal, %d different (%d listed, %d not listed)\n", r.Cases, r.Equal, len(r.Differences), len(r.Differences)-len(r.Unlisted), len(r.Unlisted))
}
