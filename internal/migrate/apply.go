package migrate

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// ApplyOptions are the inputs of Apply.
type ApplyOptions struct {
	// Cluster reaches kube-apiserver; Server the generated server directly.
	Cluster, Server *rest.Config
	Group           string
	Skip            []string
	// Service is where the APIServices of the group are to point: the generated server's
	// Service (namespace, name, port) and the CA bundle of its serving certificate.
	ServiceNamespace, ServiceName string
	ServicePort                   int32
	CABundle                      []byte
	// FreezeTimeout bounds the wait for the freeze to take hold and for the APIServices
	// to become Available (default one minute each).
	FreezeTimeout time.Duration
	Progress      io.Writer
}

// ApplyResult is what Apply did.
type ApplyResult struct {
	Plan        *Plan
	Copy, Delta CopyResult
	// Frozen is how long writes to the group were frozen: from the freeze taking hold to
	// its lift.
	Frozen time.Duration
	// Verification compares the CRD's objects as listed during the freeze with the group
	// as kube-apiserver serves it after the flip.
	Verification *Verification
	// Warnings are what went wrong after the switch without undoing it.
	Warnings []string
}

// apiServices is the resource of the aggregator's APIServices.
var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// automanagedLabel is kube-apiserver's label of the APIServices it manages itself (those of
// CRDs: "true"); "false" leaves an APIService to its user.
const automanagedLabel = "kube-aggregator.kubernetes.io/automanaged"

// The annotations apply leaves on each APIService it points at the generated server, which
// rollback reads and removes: that apply did it, automanagedLabel's value before it, the
// objects apply left out (its Skip, comma-separated: rollback leaves them alone in the
// CRDs), and, from rollback, that the APIService was handed back to the CRDs but their
// objects not yet brought up to date (a rollback run again goes on from there).
const (
	annotationApplied     = "migrate.aagen.dev/applied"
	annotationAutomanaged = "migrate.aagen.dev/automanaged-before"
	annotationSkipped     = "migrate.aagen.dev/skipped"
	annotationRollingBack = "migrate.aagen.dev/rolling-back"
)

// Apply moves the group from its CRDs to the generated server: it runs the plan and stops
// when it blocks; starts the migration on the server; copies every object while the CRDs
// still serve; freezes writes to the group; copies again (what changed, and removing what
// was deleted) and checks both sides equal; points the group's APIServices at the
// generated server (label kube-aggregator.kubernetes.io/automanaged "false", so that
// kube-apiserver leaves them alone); checks what kube-apiserver then serves against the
// CRD's objects listed during the freeze (counts and content hashes), having marked the
// CRDs' versions deprecated, which ends the watches kube-apiserver serves from them
// (retireCRDs), and waits until they have ended; lifts the freeze, whatever happened; and
// ends the migration on the server.
func Apply(ctx context.Context, o ApplyOptions) (res *ApplyResult, err error) {
	res = &ApplyResult{}
	progress, timeout := orDefaults(o.Progress, o.FreezeTimeout)
	if res.Plan, err = RunPlan(ctx, PlanOptions{Cluster: o.Cluster, Server: o.Server, Group: o.Group, Skip: o.Skip}); err != nil {
		return res, err
	}
	if res.Plan.Blocking() {
		res.Plan.Print(progress)
		return res, fmt.Errorf("the plan for %s blocks the migration: fix the problems and refused objects, or --skip them", o.Group)
	}
	for _, r := range res.Plan.Resources {
		for _, n := range r.Notes {
			fmt.Fprintf(progress, "plan: %s: %s\n", r.Resource, n)
		}
	}
	versions := map[string]string{}
	var crdVersions []string
	for _, r := range res.Plan.Resources {
		versions[r.Resource] = r.DryRunVersion
		for _, v := range r.CRDVersions {
			if !contains(crdVersions, v) {
				crdVersions = append(crdVersions, v)
			}
		}
	}
	im, err := NewImporter(o.Server)
	if err != nil {
		return res, err
	}
	state, err := im.SetState(ctx, MigrationState{InProgress: true, Source: "aagen migrate apply: CustomResourceDefinitions of " + o.Group})
	if err != nil {
		return res, err
	}
	copyOpts := CopyOptions{Cluster: o.Cluster, Server: o.Server, Importer: im, Group: o.Group, Skip: o.Skip, Versions: versions, Prune: true, Progress: progress}
	fmt.Fprintf(progress, "copying while the CRDs serve\n")
	if res.Copy, err = Copy(ctx, copyOpts); err != nil {
		return res, err
	}
	probe, err := freezeProbe(ctx, o.Cluster, res.Plan)
	if err != nil {
		return res, err
	}
	fmt.Fprintf(progress, "freezing writes to %s\n", o.Group)
	// The generated server enforces the freeze too: the removals of the copy below, made
	// on it as the server's user (state.By), must pass.
	if err := Freeze(ctx, o.Cluster, o.Group, probe, timeout, state.By); err != nil {
		return res, err
	}
	frozen := time.Now()
	defer func() {
		var lerr error
		if res.Frozen, lerr = liftFreeze(ctx, o.Cluster, o.Group, frozen, progress); lerr != nil {
			err = errors.Join(err, lerr)
		}
	}()
	// The generated server enforces the freeze once its admission has loaded the policy,
	// asynchronously as kube-apiserver does: before the flip routes writes to it, a dry-run
	// write sent to it directly (dry runs are refused for every user) must be refused too.
	// Without this wait, a write routed to the server right after the flip got through.
	serverProbe, err := freezeProbe(ctx, o.Server, res.Plan)
	if err != nil {
		return res, err
	}
	if serverProbe != nil {
		if err := awaitFrozen(ctx, o.Group+" on the generated server (its admission evaluates the cluster's ValidatingAdmissionPolicies; aagen up runs without)", serverProbe, timeout); err != nil {
			return res, err
		}
	}
	// Only what changed since the first copy: the freeze lasts as long as the changes.
	copyOpts.Since = res.Copy.Copies
	if res.Delta, err = Copy(ctx, copyOpts); err != nil {
		return res, err
	}
	stored := maps.Clone(res.Copy.Stored)
	maps.Copy(stored, res.Delta.Stored)
	verifyOpts := VerifyOptions{Cluster: o.Cluster, Server: o.Server, Group: o.Group, Skip: o.Skip, Versions: versions}
	before, snapshot, err := verify(ctx, verifyOpts, stored)
	if err != nil {
		return res, err
	}
	if !before.Equal() {
		return res, fmt.Errorf("after the copy during the freeze, the generated server differs from the CRDs (nothing switched): %+v", before)
	}
	fmt.Fprintf(progress, "pointing the APIServices of %s at %s/%s\n", o.Group, o.ServiceNamespace, o.ServiceName)
	if err := flip(ctx, o, crdVersions, timeout); err != nil {
		return res, err
	}
	if err := awaitRouting(ctx, o, res.Plan, versions, timeout); err != nil {
		return res, err
	}
	// Before the verification, so that kube-apiserver's teardown of the CRDs' storage (a
	// second at least) overlaps with it.
	// The group is switched already: a failure here leaves watches on the CRDs to end at
	// their timeout, which is worth a warning, not a failed apply. The watches to move are
	// counted first (-1: unknown).
	moving, err := servedWatches(ctx, o.Cluster, o.Group)
	if err != nil {
		moving = -1
	}
	if err := retireCRDs(ctx, o.Cluster, o.Group, "the Service "+o.ServiceNamespace+"/"+o.ServiceName); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the watches kube-apiserver serves from the CRDs were not ended (their clients see the generated server's changes only once they time out, within 10 minutes): %v", err))
		fmt.Fprintf(progress, "warning: %s\n", res.Warnings[len(res.Warnings)-1])
	}
	after, err := clusterHashes(ctx, o.Cluster, res.Plan, versions, nil)
	if err != nil {
		return res, fmt.Errorf("reading %s through kube-apiserver after the switch: %w", o.Group, err)
	}
	res.Verification = compareHashes(snapshot, after, stored)
	if !res.Verification.Equal() {
		return res, fmt.Errorf("after the switch, kube-apiserver serves other objects than the CRDs held: %+v", res.Verification)
	}
	if awaitWatchesEnded(ctx, o.Cluster, o.Group, 30*time.Second, progress) && moving > 0 {
		awaitWatchesOnServer(ctx, o.Server, o.Group, moving, 30*time.Second, progress)
	}
	if _, err := im.SetState(ctx, MigrationState{}); err != nil {
		return res, err
	}
	return res, nil
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// freezeProbe returns a dry-run update of one existing object of the group (nil when the
// group holds none: the freeze is then not waited for).
func freezeProbe(ctx context.Context, cfg *rest.Config, plan *Plan) (func(context.Context) error, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	for _, r := range plan.Resources {
		gr := schema.ParseGroupResource(r.Resource)
		gvr := gr.WithVersion(r.DryRunVersion)
		list, err := client.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(list.Items) == 0 {
			continue
		}
		ns, name := list.Items[0].GetNamespace(), list.Items[0].GetName()
		return func(ctx context.Context) error {
			obj, err := client.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			_, err = client.Resource(gvr).Namespace(ns).Update(ctx, obj, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}, nil
	}
	return nil, nil
}

// clusterHashes lists every resource of the plan through cfg and hashes each object.
func clusterHashes(ctx context.Context, cfg *rest.Config, plan *Plan, versions map[string]string, skip []string) (map[string]map[string]string, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	skipped := map[string]bool{}
	for _, s := range skip {
		skipped[s] = true
	}
	out := map[string]map[string]string{}
	for _, r := range plan.Resources {
		h, err := hashes(ctx, client, schema.ParseGroupResource(r.Resource).WithVersion(versions[r.Resource]))
		if err != nil {
			return nil, err
		}
		for name := range h {
			if skipped[r.Resource+"/"+name] {
				delete(h, name)
			}
		}
		out[r.Resource] = h
	}
	return out, nil
}

// compareHashes compares the content hashes of each resource's objects, want (the CRD's)
// with got (the generated server's), by "<namespace>/<name>"; stored maps a CRD object's
// hash to that of the object the server stored for it, where they differ (a copy's
// CopyResult.Stored).
func compareHashes(want, got map[string]map[string]string, stored map[string]string) *Verification {
	v := &Verification{Objects: map[string]int{}, Server: map[string]int{}}
	for resource, w := range want {
		g := got[resource]
		v.Objects[resource], v.Server[resource] = len(w), len(g)
		for name, h := range w {
			switch gh, ok := g[name]; {
			case !ok:
				v.Missing = append(v.Missing, resource+" "+name)
			case gh != h && gh != stored[h]:
				v.Differ = append(v.Differ, resource+" "+name)
			}
		}
		for name := range g {
			if _, ok := w[name]; !ok {
				v.Extra = append(v.Extra, resource+" "+name)
			}
		}
	}
	for _, l := range [][]string{v.Differ, v.Missing, v.Extra} {
		sort.Strings(l)
	}
	return v
}

// flip points the APIService of each version of the group at the generated server's
// Service and waits until each is Available.
func flip(ctx context.Context, o ApplyOptions, versions []string, timeout time.Duration) error {
	client, err := dynamic.NewForConfig(o.Cluster)
	if err != nil {
		return err
	}
	for _, v := range versions {
		name := v + "." + o.Group
		as, err := client.Resource(apiServices).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("the APIService %s: %w", name, err)
		}
		labels, annotations := as.GetLabels(), as.GetAnnotations()
		if labels == nil {
			labels = map[string]string{}
		}
		if annotations == nil {
			annotations = map[string]string{}
		}
		if _, again := annotations[annotationApplied]; !again {
			// What rollback restores and leaves alone (an apply run again keeps the first's).
			annotations[annotationAutomanaged] = labels[automanagedLabel]
		}
		annotations[annotationApplied] = "true"
		delete(annotations, annotationRollingBack) // of a rollback that failed before this apply
		annotations[annotationSkipped] = strings.Join(o.Skip, ",")
		labels[automanagedLabel] = "false"
		as.SetLabels(labels)
		as.SetAnnotations(annotations)
		if err := unstructured.SetNestedMap(as.Object, map[string]any{"namespace": o.ServiceNamespace, "name": o.ServiceName, "port": int64(o.ServicePort)}, "spec", "service"); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(as.Object, base64.StdEncoding.EncodeToString(o.CABundle), "spec", "caBundle"); err != nil {
			return err
		}
		unstructured.RemoveNestedField(as.Object, "spec", "insecureSkipTLSVerify")
		if _, err := client.Resource(apiServices).Update(ctx, as, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("pointing the APIService %s at %s/%s: %w", name, o.ServiceNamespace, o.ServiceName, err)
		}
	}
	for _, v := range versions {
		if err := awaitAvailable(ctx, client, v+"."+o.Group, "", timeout); err != nil {
			return err
		}
	}
	return nil
}

// awaitAvailable waits until the APIService name is Available (with reason, when not
// empty: "Local" for one kube-apiserver serves itself).
func awaitAvailable(ctx context.Context, client dynamic.Interface, name, reason string, timeout time.Duration) error {
	var last any
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		as, err := client.Resource(apiServices).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		conds, _, _ := unstructured.NestedSlice(as.Object, "status", "conditions")
		last = conds
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Available" && m["status"] == "True" && (reason == "" || m["reason"] == reason) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		want := "Available"
		if reason != "" {
			want += " (" + reason + ")"
		}
		return fmt.Errorf("the APIService %s did not become %s within %v: %v", name, want, timeout, last)
	}
	return nil
}

// awaitRouting waits until kube-apiserver answers for every resource of the plan with the
// generated server's objects, since the aggregator's routes follow the APIServices
// asynchronously: one object of each resource read through kube-apiserver has the
// server's resourceVersion (the CRD's object has another one). A resource the server holds
// no object of has nothing to tell the two apart: the APIService's Available condition,
// which flip waited for, is all there is.
func awaitRouting(ctx context.Context, o ApplyOptions, plan *Plan, versions map[string]string, timeout time.Duration) error {
	cluster, err := dynamic.NewForConfig(o.Cluster)
	if err != nil {
		return err
	}
	server, err := dynamic.NewForConfig(o.Server)
	if err != nil {
		return err
	}
	var last string
	for _, r := range plan.Resources {
		gvr := schema.ParseGroupResource(r.Resource).WithVersion(versions[r.Resource])
		one, err := server.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return fmt.Errorf("listing %s on the generated server: %w", r.Resource, err)
		}
		if len(one.Items) == 0 {
			continue
		}
		want := &one.Items[0]
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			via, err := cluster.Resource(gvr).Namespace(want.GetNamespace()).Get(ctx, want.GetName(), metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			if via.GetResourceVersion() != want.GetResourceVersion() {
				last = fmt.Sprintf("%s %s: kube-apiserver answers resourceVersion %s, the generated server %s", r.Resource, objectName(want), via.GetResourceVersion(), want.GetResourceVersion())
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("kube-apiserver did not route %s to the generated server within %v (%s): %w", o.Group, timeout, last, err)
		}
	}
	return nil
}

// orDefaults is progress, or io.Discard for nil, and timeout, or one minute for 0.
func orDefaults(progress io.Writer, timeout time.Duration) (io.Writer, time.Duration) {
	if progress == nil {
		progress = io.Discard
	}
	if timeout == 0 {
		timeout = time.Minute
	}
	return progress, timeout
}

// liftFreeze lifts the freeze of group that took hold at frozen, says so on progress, and
// returns how long writes were frozen.
func liftFreeze(ctx context.Context, cfg *rest.Config, group string, frozen time.Time, progress io.Writer) (time.Duration, error) {
	err := Lift(context.WithoutCancel(ctx), cfg, group)
	d := time.Since(frozen)
	if err == nil {
		fmt.Fprintf(progress, "writes to %s frozen for %v, now lifted\n", group, d.Round(time.Millisecond))
	}
	return d, err
}
