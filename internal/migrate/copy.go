package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// CopyOptions are the inputs of Copy.
type CopyOptions struct {
	// Cluster reaches kube-apiserver, which serves the CRDs.
	Cluster *rest.Config
	// Importer writes into the generated server (its migration state in progress).
	Importer *Importer
	// Group is the API group to copy.
	Group string
	// Skip names objects left out, as PlanOptions.Skip.
	Skip []string
	// Versions names, by resource ("<plural>.<group>"), the version to read the objects in
	// (a plan's DryRunVersion: one the server serves); default the CRD's storage version.
	Versions map[string]string
	// Server reaches the generated server directly (for Prune).
	Server *rest.Config
	// Prune removes from the generated server the objects the cluster no longer holds (or
	// that Skip names): what a copy after an earlier one must do for the objects deleted
	// in between.
	Prune bool
	// Since is a former copy's CopyResult.Copies: the objects it copied, by uid, at the
	// resourceVersion it read; those the cluster still holds at that resourceVersion are not
	// sent again.
	Since map[types.UID]string
	// Progress receives a line per resource and every 1,000 objects (nil: none).
	Progress io.Writer
}

// CopyResult counts what Copy did per resource ("<plural>.<group>").
type CopyResult struct {
	// Copied counts the objects imported, Unchanged those Since said were copied already
	// at the resourceVersion the cluster still has, Skipped those --skip named, Removed those
	// Prune removed from the server.
	Copied, Unchanged, Skipped, Removed map[string]int
	// Replaced counts the objects the server held with another uid, removed before their
	// import (with Prune).
	Replaced map[string]int
	// Copies is, by uid, the cluster's resourceVersion of every object the server holds
	// after the copy: what a later copy passes as Since.
	Copies map[types.UID]string
	// Stored maps the content hash (ContentHash) of an object copied to that of the object
	// the server stored, where the two differ: the server's types store some objects
	// otherwise than the CRD did (a zero value under omitempty is dropped, for one), and
	// a verification compares the CRD's object as the server stores it.
	Stored map[string]string
	// Elapsed is how long the copy took.
	Elapsed time.Duration
}

// copyWorkers is how many imports Copy sends at a time.
const copyWorkers = 8

// Copy imports every object of the group's CRDs, read from the cluster in each CRD's
// storage version, into the generated server, copyWorkers at a time. The import keeps each
// object's identity and changes nothing when the server holds it already, so Copy may be
// run again after an interruption and finishes with the same result. With Since (a former
// copy's Copies), an object whose resourceVersion has not changed since is not sent again:
// what makes the copy during a freeze as short as the changes since the copy before. An
// object the server refuses does not stop the others; Copy returns every refusal at the
// end. With Prune, a copy after an earlier one also removes from the server what the
// cluster deleted in between.
func Copy(ctx context.Context, o CopyOptions) (res CopyResult, err error) {
	res = CopyResult{Copied: map[string]int{}, Unchanged: map[string]int{}, Skipped: map[string]int{}, Removed: map[string]int{}, Replaced: map[string]int{}, Copies: map[types.UID]string{}, Stored: map[string]string{}}
	began := time.Now()
	defer func() { res.Elapsed = time.Since(began) }()
	crds, err := groupCRDs(ctx, o.Cluster, o.Group)
	if err != nil {
		return res, err
	}
	objects, err := dynamic.NewForConfig(o.Cluster)
	if err != nil {
		return res, err
	}
	skip := map[string]bool{}
	for _, s := range o.Skip {
		skip[s] = true
	}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	var serverObjects dynamic.Interface
	if o.Prune {
		if o.Server == nil {
			return res, fmt.Errorf("pruning needs the generated server's configuration (CopyOptions.Server)")
		}
		if serverObjects, err = dynamic.NewForConfig(o.Server); err != nil {
			return res, err
		}
	}
	var refused []error
	for _, crd := range crds {
		keep := map[types.UID]bool{}
		resource := crd.Spec.Names.Plural + "." + crd.Spec.Group
		version := o.Versions[resource]
		if version == "" {
			version = storageVersion(crd)
		}
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
		start := time.Now()
		imports := make(chan *unstructured.Unstructured)
		type outcome struct {
			obj *unstructured.Unstructured
			err error
		}
		outcomes := make(chan outcome)
		var workers sync.WaitGroup
		var copiesMu sync.Mutex // res.Copies: the collector and the listing write it
		var resultMu sync.Mutex // res.Replaced and res.Stored: the workers write them
		for range copyWorkers {
			workers.Add(1)
			go func() {
				defer workers.Done()
				for obj := range imports {
					stored, err := o.Importer.Import(ctx, obj)
					if isOtherUID(err) && o.Prune {
						// The server's object of that name is not the cluster's (left by
						// an apply since rolled back): replace it, as Prune removes what the
						// cluster does not hold.
						if err = removeOther(ctx, serverObjects.Resource(gvr).Namespace(obj.GetNamespace()), obj); err == nil {
							stored, err = o.Importer.Import(ctx, obj)
							resultMu.Lock()
							res.Replaced[resource]++
							resultMu.Unlock()
						}
					}
					if err == nil {
						// Hashing cannot fail on objects decoded from JSON; if it did, the
						// verification would name the object as differing.
						from, ferr := ContentHash(obj)
						to, terr := ContentHash(stored)
						if ferr == nil && terr == nil && from != to {
							resultMu.Lock()
							res.Stored[from] = to
							resultMu.Unlock()
						}
					}
					outcomes <- outcome{obj, err}
				}
			}()
		}
		collected := make(chan struct{})
		go func() {
			defer close(collected)
			for out := range outcomes {
				if out.err != nil {
					if ctx.Err() == nil {
						refused = append(refused, fmt.Errorf("%s %s: %w", resource, objectName(out.obj), out.err))
					}
					continue
				}
				res.Copied[resource]++
				copiesMu.Lock()
				res.Copies[out.obj.GetUID()] = out.obj.GetResourceVersion()
				copiesMu.Unlock()
				if n := res.Copied[resource]; n%1000 == 0 {
					fmt.Fprintf(progress, "%s: %d copied (%.0f/s)\n", resource, n, float64(n)/time.Since(start).Seconds())
				}
			}
		}()
		listErr := func() error {
			defer func() {
				close(imports)
				workers.Wait()
				close(outcomes)
				<-collected
			}()
			opts := metav1.ListOptions{Limit: 500}
			for {
				list, err := objects.Resource(gvr).List(ctx, opts)
				if err != nil {
					return fmt.Errorf("listing %s in the cluster: %w", resource, err)
				}
				for i := range list.Items {
					obj := &list.Items[i]
					if skip[resource+"/"+objectName(obj)] {
						res.Skipped[resource]++
						continue
					}
					keep[obj.GetUID()] = true
					if rv, ok := o.Since[obj.GetUID()]; ok && rv == obj.GetResourceVersion() {
						res.Unchanged[resource]++
						copiesMu.Lock()
						res.Copies[obj.GetUID()] = rv
						copiesMu.Unlock()
						continue
					}
					select {
					case imports <- obj:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				if list.GetContinue() == "" {
					return nil
				}
				opts.Continue = list.GetContinue()
			}
		}()
		if listErr != nil {
			return res, listErr
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if o.Prune {
			n, err := prune(ctx, serverObjects, gvr, func(obj *unstructured.Unstructured) bool { return keep[obj.GetUID()] })
			res.Removed[resource] = n
			if err != nil {
				return res, err
			}
		}
		elapsed := time.Since(start)
		fmt.Fprintf(progress, "%s: %d copied (%.0f/s; %d replacing another object of the name), %d unchanged, %d skipped, %d removed in %v\n", resource, res.Copied[resource],
			float64(res.Copied[resource])/elapsed.Seconds(), res.Replaced[resource], res.Unchanged[resource], res.Skipped[resource], res.Removed[resource], elapsed.Round(time.Millisecond))
	}
	if len(refused) > 0 {
		sort.Slice(refused, func(i, j int) bool { return refused[i].Error() < refused[j].Error() })
		return res, fmt.Errorf("the generated server refused %d object(s) (run aagen migrate plan; fix them or --skip them):\n%w", len(refused), errors.Join(refused...))
	}
	return res, nil
}

// groupCRDs returns the cluster's CRDs of group (an error when there are none).
func groupCRDs(ctx context.Context, cfg *rest.Config, group string) ([]apiextensionsv1.CustomResourceDefinition, error) {
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	crds, err := client.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the cluster's CustomResourceDefinitions: %w", err)
	}
	var out []apiextensionsv1.CustomResourceDefinition
	for _, crd := range crds.Items {
		if crd.Spec.Group == group {
			out = append(out, crd)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the cluster has no CustomResourceDefinition of group %s: nothing to migrate", group)
	}
	return out, nil
}

// storageVersion is the version a CRD stores its objects in.
func storageVersion(crd apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return crd.Spec.Versions[0].Name
}

// prune removes from one side of a migration the objects of gvr that the other no longer
// holds (those keep does not keep), through the public API: a delete with the object's uid
// as precondition, then, when finalizers hold it, an update without them (they ran on the
// other side, which deleted it). It returns how many it removed.
func prune(ctx context.Context, server dynamic.Interface, gvr schema.GroupVersionResource, keep func(*unstructured.Unstructured) bool) (int, error) {
	removed := 0
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := server.Resource(gvr).List(ctx, opts)
		if err != nil {
			return removed, fmt.Errorf("listing %s: %w", gvr.GroupResource(), err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			if keep(obj) {
				continue
			}
			client := server.Resource(gvr).Namespace(obj.GetNamespace())
			if err := removeObject(ctx, client, obj); err != nil {
				return removed, fmt.Errorf("removing %s %s: %w", gvr.GroupResource(), objectName(obj), err)
			}
			removed++
		}
		if list.GetContinue() == "" {
			return removed, nil
		}
		opts.Continue = list.GetContinue()
	}
}

// removeOther removes from the server (client) the object of obj's name whose uid is not
// obj's: a delete with its uid as precondition, its finalizers removed (the cluster does
// not hold it), and waits until it is gone.
func removeOther(ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	cur, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if cur.GetUID() == obj.GetUID() {
		return nil
	}
	if err := removeObject(ctx, client, cur); err != nil {
		return fmt.Errorf("removing the server's other object of the name: %w", err)
	}
	return awaitGone(ctx, client, cur)
}

// removeObject deletes obj through client with its uid as precondition and, when finalizers
// hold it, removes them: it is gone from the other side of the migration, whose finalizers
// have run (or will not: the other side does not hold it).
func removeObject(ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
	uid := obj.GetUID()
	err := client.Delete(ctx, obj.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(obj.GetFinalizers()) == 0 {
		return nil
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := client.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil || cur.GetUID() != uid {
			return err
		}
		cur.SetFinalizers(nil)
		_, err = client.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing its finalizers: %w", err)
	}
	return nil
}
