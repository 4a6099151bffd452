package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// RollbackOptions are the inputs of Rollback.
type RollbackOptions struct {
	// Cluster reaches kube-apiserver; Server the generated server directly.
	Cluster, Server *rest.Config
	Group           string
	// FreezeTimeout bounds each wait: for the freeze to take hold, for the APIServices to
	// become Available and for kube-apiserver to serve the CRDs (default one minute).
	FreezeTimeout time.Duration
	Progress      io.Writer
}

// RollbackResult is what Rollback did. Objects are named "<resource> <namespace>/<name>"
// (cluster-scoped: "<resource> <name>").
type RollbackResult struct {
	// Updated names the CRDs' objects brought up to the generated server's content;
	// Recreated those the CRDs did not hold with the server's uid (created on the server
	// after apply): created anew, with a new uid, since the public API cannot keep one;
	// Deleted those the server no longer held; DeletionStarted those being deleted on the
	// server, now being deleted in the CRDs too. Unchanged counts the rest.
	Updated, Recreated, Deleted, DeletionStarted []string
	Unchanged                                    int
	// Frozen is how long writes to the group were frozen: from the freeze taking hold to
	// its lift.
	Frozen time.Duration
	// Verification compares the generated server's objects, listed during the freeze, with
	// the CRDs' after the copy back, by content hash; Partial names the objects whose
	// differences are only those the public API cannot avoid (Kept says which fields).
	Verification *Verification
	Partial      map[string][]string
}

// rollbackResource is one resource of the group, as Rollback reads and writes it.
type rollbackResource struct {
	resource string // <plural>.<group>
	gvr      schema.GroupVersionResource
	status   bool // the CRD's version has /status
}

// Rollback moves the group back from the generated server to its CRDs, after Apply: it
// reads the group's APIServices (those Apply pointed at the server, with its annotations);
// freezes writes to the group but the rollback's own (the policy holds on the server too,
// whose admission evaluates it); lists the server's objects; gives the CRDs' versions their
// deprecation back (restoreCRDs); hands the APIServices back to
// kube-apiserver (their automanaged label as before Apply, no Service) and waits until
// kube-apiserver serves the CRDs, whose objects are as Apply left them; brings every CRD
// object up to the server's content (metadata, spec, status, managed fields) and deletes
// those the server deleted, leaving alone what Apply skipped; checks both sides equal but
// for what the public API cannot keep (Partial); tells the generated server the group was
// handed back, which ends the watches it serves, and waits until their clients watch the
// CRDs; removes its annotations; and lifts the freeze, whatever happened. The generated server keeps its objects.
//
// A rollback that fails after handing the APIServices back leaves them marked
// (annotationRollingBack); run again, it goes on from there. uids the CRDs already hold are
// kept; an object created on the server after Apply gets a new one (Recreated).
func Rollback(ctx context.Context, o RollbackOptions) (res *RollbackResult, err error) {
	res = &RollbackResult{Partial: map[string][]string{}}
	progress, timeout := orDefaults(o.Progress, o.FreezeTimeout)
	crds, err := groupCRDs(ctx, o.Cluster, o.Group)
	if err != nil {
		return res, err
	}
	var resources []rollbackResource
	var versions []string
	for _, crd := range crds {
		v := storageVersion(crd)
		resources = append(resources, rollbackResource{
			resource: crd.Spec.Names.Plural + "." + crd.Spec.Group,
			gvr:      schema.GroupVersionResource{Group: crd.Spec.Group, Version: v, Resource: crd.Spec.Names.Plural},
			status:   hasStatus(crd, v),
		})
		for _, sv := range crd.Spec.Versions {
			if sv.Served && !contains(versions, sv.Name) {
				versions = append(versions, sv.Name)
			}
		}
	}
	sort.Strings(versions)
	asClient, err := dynamic.NewForConfig(o.Cluster)
	if err != nil {
		return res, err
	}
	services, skip, resuming, err := appliedAPIServices(ctx, asClient, o.Group, versions)
	if err != nil {
		return res, err
	}
	cluster, err := dynamic.NewForConfig(o.Cluster)
	if err != nil {
		return res, err
	}
	server, err := dynamic.NewForConfig(o.Server)
	if err != nil {
		return res, err
	}
	kube, err := kubernetes.NewForConfig(o.Cluster)
	if err != nil {
		return res, err
	}
	review, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return res, fmt.Errorf("asking kube-apiserver who runs the rollback (the freeze lets that user's writes through): %w", err)
	}
	user := review.Status.UserInfo.Username

	// The freeze, probed through kube-apiserver with one of the server's objects until the
	// hand-back (when kube-apiserver still routes the group to the server), with one of
	// the CRDs' after it.
	holder := server
	if resuming {
		holder = cluster // handed back already
	}
	probe := rollbackProbe(ctx, cluster, holder, resources)
	fmt.Fprintf(progress, "freezing writes to %s (but those of %s)\n", o.Group, user)
	if err := Freeze(ctx, o.Cluster, o.Group, probe, timeout, user); err != nil {
		return res, err
	}
	frozen := time.Now()
	handedBack := false
	defer func() {
		if err != nil && handedBack {
			// The CRDs serve, not yet brought up to the server's objects: writes stay
			// frozen, so that a rollback run again finds what it left.
			err = fmt.Errorf("%w\nwrites to %s stay frozen: run aagen migrate rollback again (it goes on from the hand-back), or lift the freeze by hand: kubectl delete validatingadmissionpolicybinding,validatingadmissionpolicy %s", err, o.Group, freezeName(o.Group))
			return
		}
		var lerr error
		if res.Frozen, lerr = liftFreeze(ctx, o.Cluster, o.Group, frozen, progress); lerr != nil {
			err = errors.Join(err, lerr)
		}
	}()
	snapshot := map[string]map[string]*unstructured.Unstructured{}
	for _, r := range resources {
		if snapshot[r.resource], err = listByName(ctx, server, r.gvr); err != nil {
			return res, fmt.Errorf("listing %s on the generated server: %w", r.resource, err)
		}
	}
	// Before the hand-back: changing the CRDs routes nothing to them.
	if err := restoreCRDs(ctx, o.Cluster, o.Group); err != nil {
		return res, fmt.Errorf("restoring the deprecation of the CRDs' versions: %w", err)
	}
	handedBack = true // from here on, the CRDs may serve
	if !resuming {
		fmt.Fprintf(progress, "handing the APIServices of %s back to kube-apiserver\n", o.Group)
		if err := handBack(ctx, asClient, services, timeout); err != nil {
			return res, err
		}
	}
	if err := awaitCRDs(ctx, cluster, resources, snapshot, timeout); err != nil {
		return res, err
	}
	if probe := rollbackProbe(ctx, cluster, cluster, resources); probe != nil {
		if err := awaitFrozen(ctx, o.Group, probe, timeout); err != nil {
			return res, fmt.Errorf("on the CRDs after the hand-back: %w", err)
		}
	}
	for _, r := range resources {
		if err := copyBack(ctx, cluster, r, snapshot[r.resource], skip, res, progress); err != nil {
			return res, err
		}
	}
	res.Verification = &Verification{Objects: map[string]int{}, Server: map[string]int{}}
	for _, r := range resources {
		got, err := listByName(ctx, cluster, r.gvr)
		if err != nil {
			return res, fmt.Errorf("listing %s through kube-apiserver after the copy back: %w", r.resource, err)
		}
		for name := range got {
			if skip[r.resource+"/"+name] {
				delete(got, name)
			}
		}
		compareBack(r.resource, snapshot[r.resource], got, res)
	}
	if !res.Verification.Equal() {
		return res, fmt.Errorf("after the copy back, the CRDs differ from the generated server: %+v", res.Verification)
	}
	// The watches the generated server still serves (kube-apiserver proxies them, opened
	// before the hand-back) would see no event again: the server ends them, every replica,
	// and their clients watch the CRDs.
	im, err := NewImporter(o.Server)
	if err != nil {
		return res, err
	}
	if _, err := im.SetState(ctx, MigrationState{HandedBack: true, Source: "aagen migrate rollback: CustomResourceDefinitions of " + o.Group}); err != nil {
		return res, fmt.Errorf("ending the watches the generated server serves: %w", err)
	}
	awaitWatchesSettled(ctx, o.Cluster, o.Group, 30*time.Second, progress)
	for _, as := range services {
		if err := unmark(ctx, asClient, as.GetName()); err != nil {
			return res, err
		}
	}
	return res, nil
}

// hasStatus reports whether the CRD's version has the /status subresource.
func hasStatus(crd apiextensionsv1.CustomResourceDefinition, version string) bool {
	for _, v := range crd.Spec.Versions {
		if v.Name == version {
			return v.Subresources != nil && v.Subresources.Status != nil
		}
	}
	return false
}

// appliedAPIServices returns the group's APIServices as Apply left them (or as a rollback
// that handed them back left them: resuming), and the objects Apply skipped by
// "<resource>/<namespace>/<name>".
func appliedAPIServices(ctx context.Context, client dynamic.Interface, group string, versions []string) (out []*unstructured.Unstructured, skip map[string]bool, resuming bool, err error) {
	skip = map[string]bool{}
	rollingBack := 0
	for _, v := range versions {
		name := v + "." + group
		as, err := client.Resource(apiServices).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, nil, false, fmt.Errorf("the APIService %s: %w", name, err)
		}
		annotations := as.GetAnnotations()
		if annotations[annotationApplied] != "true" {
			return nil, nil, false, fmt.Errorf("the APIService %s was not pointed at a generated server by aagen migrate apply (it has no annotation %s): nothing to roll back", name, annotationApplied)
		}
		if annotations[annotationRollingBack] != "" {
			rollingBack++
		}
		for _, s := range strings.Split(annotations[annotationSkipped], ",") {
			if s != "" {
				skip[s] = true
			}
		}
		out = append(out, as)
	}
	return out, skip, rollingBack == len(out), nil
}

// rollbackProbe returns a dry-run update, through kube-apiserver (cluster), of one object
// of the group that holder holds (nil when it holds none).
func rollbackProbe(ctx context.Context, cluster, holder dynamic.Interface, resources []rollbackResource) func(context.Context) error {
	for _, r := range resources {
		list, err := holder.Resource(r.gvr).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil || len(list.Items) == 0 {
			continue
		}
		ns, name, gvr := list.Items[0].GetNamespace(), list.Items[0].GetName(), r.gvr
		return func(ctx context.Context) error {
			obj, err := cluster.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			_, err = cluster.Resource(gvr).Namespace(ns).Update(ctx, obj, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}
	}
	return nil
}

// handBack gives each APIService back to kube-apiserver (automanagedLabel as before Apply,
// "true" when it had none; no Service, so that kube-apiserver serves the group itself),
// marked annotationRollingBack, and waits until each is Available.
func handBack(ctx context.Context, client dynamic.Interface, services []*unstructured.Unstructured, timeout time.Duration) error {
	for _, as := range services {
		as = as.DeepCopy()
		labels, annotations := as.GetLabels(), as.GetAnnotations()
		if labels == nil {
			labels = map[string]string{}
		}
		before := annotations[annotationAutomanaged]
		if before == "" || before == "false" {
			before = "true" // what kube-apiserver gives the APIService of a CRD
		}
		labels[automanagedLabel] = before
		annotations[annotationRollingBack] = time.Now().UTC().Format(time.RFC3339)
		as.SetLabels(labels)
		as.SetAnnotations(annotations)
		unstructured.RemoveNestedField(as.Object, "spec", "service")
		unstructured.RemoveNestedField(as.Object, "spec", "caBundle")
		if _, err := client.Resource(apiServices).Update(ctx, as, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("handing the APIService %s back to kube-apiserver: %w", as.GetName(), err)
		}
	}
	for _, as := range services {
		if err := awaitAvailable(ctx, client, as.GetName(), "Local", timeout); err != nil {
			return err
		}
	}
	return nil
}

// unmark removes the migration's annotations from the APIService.
func unmark(ctx context.Context, client dynamic.Interface, name string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null,%q:null,%q:null,%q:null}}}`, annotationApplied, annotationAutomanaged, annotationSkipped, annotationRollingBack)
	if _, err := client.Resource(apiServices).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("removing the migration's annotations from the APIService %s: %w", name, err)
	}
	return nil
}

// awaitCRDs waits until kube-apiserver answers for every resource from the CRDs, not the
// generated server (the aggregator's routes follow the APIServices asynchronously): one of
// the server's objects read through kube-apiserver has another resourceVersion, or is not
// found (created on the server after apply). A resource the server holds no object of has
// nothing to tell the two apart: the APIService's condition is all there is.
func awaitCRDs(ctx context.Context, cluster dynamic.Interface, resources []rollbackResource, snapshot map[string]map[string]*unstructured.Unstructured, timeout time.Duration) error {
	for _, r := range resources {
		var probe *unstructured.Unstructured
		for _, obj := range snapshot[r.resource] {
			probe = obj
			break
		}
		if probe == nil {
			continue
		}
		var last string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			via, err := cluster.Resource(r.gvr).Namespace(probe.GetNamespace()).Get(ctx, probe.GetName(), metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				return true, nil
			case err != nil:
				last = err.Error()
				return false, nil
			case via.GetResourceVersion() == probe.GetResourceVersion():
				last = fmt.Sprintf("%s %s has the generated server's resourceVersion %s", r.resource, objectName(probe), via.GetResourceVersion())
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			return fmt.Errorf("kube-apiserver did not serve the CRDs again within %v (%s): %w", timeout, last, err)
		}
	}
	return nil
}

// listByName lists gvr and returns its objects by "<namespace>/<name>" (cluster-scoped:
// "<name>").
func listByName(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource) (map[string]*unstructured.Unstructured, error) {
	out := map[string]*unstructured.Unstructured{}
	err := eachObject(ctx, client, gvr, func(obj *unstructured.Unstructured) error {
		out[objectName(obj)] = obj
		return nil
	})
	return out, err
}

// objectName is "<namespace>/<name>" (cluster-scoped: "<name>").
func objectName(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() != "" {
		return obj.GetNamespace() + "/" + obj.GetName()
	}
	return obj.GetName()
}

// rollbackFieldManager names the rollback's writes on the CRDs (their managed fields are
// then set to the server's, so it does not stay in them).
const rollbackFieldManager = "aagen-migrate-rollback"

// copyBack brings the CRD's objects of r up to the generated server's (want, by name),
// leaving alone those Apply skipped.
func copyBack(ctx context.Context, cluster dynamic.Interface, r rollbackResource, want map[string]*unstructured.Unstructured, skip map[string]bool, res *RollbackResult, progress io.Writer) error {
	start := time.Now()
	updated, recreated, unchanged := len(res.Updated), len(res.Recreated), res.Unchanged
	have, err := listByName(ctx, cluster, r.gvr)
	if err != nil {
		return fmt.Errorf("listing %s through kube-apiserver: %w", r.resource, err)
	}
	uids := map[types.UID]bool{}
	names := make([]string, 0, len(want))
	for name, obj := range want {
		uids[obj.GetUID()] = true
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if skip[r.resource+"/"+name] {
			continue
		}
		w, c := want[name], have[name]
		client := cluster.Resource(r.gvr).Namespace(w.GetNamespace())
		id := r.resource + " " + name
		switch {
		case c != nil && c.GetUID() == w.GetUID():
			if same, err := sameContent(c, w); err != nil {
				return err
			} else if same {
				res.Unchanged++
				continue
			}
			if err := writeBack(ctx, client, r, c, w); err != nil {
				return fmt.Errorf("updating %s in its CRD: %w", id, err)
			}
			res.Updated = append(res.Updated, id)
		default:
			if c != nil { // another object of that name, deleted on the server since
				if err := removeObject(ctx, client, c); err != nil {
					return fmt.Errorf("replacing %s in its CRD: %w", id, err)
				}
				if err := awaitGone(ctx, client, c); err != nil {
					return fmt.Errorf("replacing %s in its CRD: %w", id, err)
				}
			}
			created := w.DeepCopy()
			for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds"} {
				unstructured.RemoveNestedField(created.Object, "metadata", f)
			}
			got, err := client.Create(ctx, created, metav1.CreateOptions{FieldManager: rollbackFieldManager})
			if err != nil {
				return fmt.Errorf("creating %s in its CRD: %w", id, err)
			}
			if err := writeBack(ctx, client, r, got, w); err != nil {
				return fmt.Errorf("creating %s in its CRD: %w", id, err)
			}
			res.Recreated = append(res.Recreated, id)
			uids[got.GetUID()] = true
		}
		if w.GetDeletionTimestamp() != nil {
			cur, err := client.Get(ctx, w.GetName(), metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("reading %s in its CRD: %w", id, err)
			}
			if cur.GetDeletionTimestamp() == nil {
				uid := cur.GetUID()
				if err := client.Delete(ctx, w.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("deleting %s in its CRD (being deleted on the server): %w", id, err)
				}
				res.DeletionStarted = append(res.DeletionStarted, id)
			}
		}
	}
	removed, err := prune(ctx, cluster, r.gvr, func(o *unstructured.Unstructured) bool {
		keep := uids[o.GetUID()] || skip[r.resource+"/"+objectName(o)]
		if !keep {
			res.Deleted = append(res.Deleted, r.resource+" "+objectName(o))
		}
		return keep
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "%s: %d updated, %d created anew, %d deleted, %d unchanged in %v\n", r.resource, len(res.Updated)-updated, len(res.Recreated)-recreated, removed, res.Unchanged-unchanged, time.Since(start).Round(time.Millisecond))
	return nil
}

// awaitGone waits until obj (its uid) is no longer stored.
func awaitGone(ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cur, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return cur.GetUID() != obj.GetUID(), nil
	})
}

// writeBack writes want's content over cur, the CRD's object of the same uid: metadata and
// spec by an update, status through /status when the CRD has it, and then want's managed
// fields, which the writes before extended by the rollback's own (an update that changes
// nothing but the managed fields sets them as sent).
func writeBack(ctx context.Context, client dynamic.ResourceInterface, r rollbackResource, cur, want *unstructured.Unstructured) error {
	body := func(rv string) *unstructured.Unstructured {
		b := &unstructured.Unstructured{Object: WithoutNulls(want.Object)} // a CRD may refuse a null
		b.SetResourceVersion(rv)
		b.SetUID(cur.GetUID()) // a uid in the body is a precondition; one created anew has its own
		for _, f := range []string{"creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds"} {
			unstructured.RemoveNestedField(b.Object, "metadata", f)
		}
		return b
	}
	got, err := client.Update(ctx, body(cur.GetResourceVersion()), metav1.UpdateOptions{FieldManager: rollbackFieldManager})
	if err != nil {
		return err
	}
	if r.status && !reflect.DeepEqual(nonEmptyStatus(got), nonEmptyStatus(want)) {
		if got, err = client.UpdateStatus(ctx, body(got.GetResourceVersion()), metav1.UpdateOptions{FieldManager: rollbackFieldManager}); err != nil {
			return fmt.Errorf("its status: %w", err)
		}
	}
	if !reflect.DeepEqual(got.GetManagedFields(), want.GetManagedFields()) && len(want.GetManagedFields()) > 0 {
		if _, err = client.Update(ctx, body(got.GetResourceVersion()), metav1.UpdateOptions{FieldManager: rollbackFieldManager}); err != nil {
			return fmt.Errorf("its managed fields: %w", err)
		}
	}
	return nil
}

// nonEmptyStatus is obj's status without nulls, nil when absent or then empty (as
// ContentHash counts it).
func nonEmptyStatus(obj *unstructured.Unstructured) any {
	s, ok := obj.Object["status"].(map[string]any)
	if !ok {
		return obj.Object["status"]
	}
	if s = WithoutNulls(s); len(s) == 0 {
		return nil
	}
	return s
}

// sameContent reports whether a and b have the same ContentHash.
func sameContent(a, b *unstructured.Unstructured) (bool, error) {
	ha, err := ContentHash(a)
	if err != nil {
		return false, err
	}
	hb, err := ContentHash(b)
	return ha == hb, err
}

// compareBack compares the generated server's objects of resource (want, listed during the
// freeze) with the CRD's after the copy back (got) into res.Verification and res.Partial:
// an object recreated may differ in uid, creationTimestamp and generation; one whose
// deletion started in the copy back in deletionTimestamp; any object in generation when
// the CRD's is behind (the server counted several changes of its spec where the copy back
// made one); any other difference is a Differ.
func compareBack(resource string, want, got map[string]*unstructured.Unstructured, res *RollbackResult) {
	v := res.Verification
	v.Server[resource], v.Objects[resource] = len(want), len(got)
	recreated, deleting := map[string]bool{}, map[string]bool{}
	for _, id := range res.Recreated {
		recreated[id] = true
	}
	for _, id := range res.DeletionStarted {
		deleting[id] = true
	}
	for name, w := range want {
		id := resource + " " + name
		g, ok := got[name]
		if !ok {
			v.Missing = append(v.Missing, id)
			continue
		}
		var kept, other []string
		for _, f := range differingFields(w, g) {
			switch {
			case recreated[id] && (f == "metadata.uid" || f == "metadata.creationTimestamp" || f == "metadata.generation"),
				deleting[id] && (f == "metadata.deletionTimestamp" || f == "metadata.deletionGracePeriodSeconds"),
				f == "metadata.generation" && g.GetGeneration() < w.GetGeneration():
				kept = append(kept, f)
			default:
				other = append(other, f)
			}
		}
		if len(other) > 0 {
			v.Differ = append(v.Differ, id+" ("+strings.Join(other, ", ")+")")
		} else if len(kept) > 0 {
			res.Partial[id] = kept
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			v.Extra = append(v.Extra, resource+" "+name)
		}
	}
	for _, l := range [][]string{v.Differ, v.Missing, v.Extra} {
		sort.Strings(l)
	}
}

// differingFields names the fields in which a and b differ, but resourceVersion: each
// field of metadata ("metadata.<field>") and each other top-level field; nulls and an empty
// status count as absent.
func differingFields(a, b *unstructured.Unstructured) []string {
	a, b = &unstructured.Unstructured{Object: WithoutNulls(a.Object)}, &unstructured.Unstructured{Object: WithoutNulls(b.Object)}
	var out []string
	ma, _ := a.Object["metadata"].(map[string]any)
	mb, _ := b.Object["metadata"].(map[string]any)
	for _, k := range unionKeys(ma, mb) {
		if k != "resourceVersion" && !reflect.DeepEqual(ma[k], mb[k]) {
			out = append(out, "metadata."+k)
		}
	}
	for _, k := range unionKeys(a.Object, b.Object) {
		if k == "metadata" {
			continue
		}
		va, vb := a.Object[k], b.Object[k]
		if k == "status" {
			va, vb = nonEmptyStatus(a), nonEmptyStatus(b)
		}
		if !reflect.DeepEqual(va, vb) {
			out = append(out, k)
		}
	}
	return out
}

// unionKeys is the sorted keys of a and b.
func unionKeys(a, b map[string]any) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
