package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
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
	// Progress receives a line per resource and every 1,000 objects (nil: none).
	Progress io.Writer
}

// CopyResult counts what Copy did per resource ("<plural>.<group>").
type CopyResult struct {
	// Copied counts the objects imported, Skipped those --skip named.
	Copied, Skipped map[string]int
}

// Copy imports every object of the group's CRDs, read from the cluster in each CRD's
// storage version, into the generated server. The import keeps each object's identity and
// changes nothing when the server holds it already, so Copy may be run again after an
// interruption and finishes with the same result. An object the server refuses does not
// stop the others; Copy returns every refusal at the end.
func Copy(ctx context.Context, o CopyOptions) (CopyResult, error) {
	res := CopyResult{Copied: map[string]int{}, Skipped: map[string]int{}}
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
	var refused []error
	for _, crd := range crds {
		resource := crd.Spec.Names.Plural + "." + crd.Spec.Group
		version := o.Versions[resource]
		if version == "" {
			version = storageVersion(crd)
		}
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
		start := time.Now()
		opts := metav1.ListOptions{Limit: 500}
		for {
			list, err := objects.Resource(gvr).List(ctx, opts)
			if err != nil {
				return res, fmt.Errorf("listing %s in the cluster: %w", resource, err)
			}
			for i := range list.Items {
				obj := &list.Items[i]
				name := obj.GetName()
				if obj.GetNamespace() != "" {
					name = obj.GetNamespace() + "/" + name
				}
				if skip[resource+"/"+name] {
					res.Skipped[resource]++
					continue
				}
				if _, err := o.Importer.Import(ctx, obj); err != nil {
					if ctx.Err() != nil {
						return res, ctx.Err()
					}
					refused = append(refused, fmt.Errorf("%s %s: %w", resource, name, err))
					continue
				}
				res.Copied[resource]++
				if n := res.Copied[resource]; n%1000 == 0 {
					fmt.Fprintf(progress, "%s: %d copied (%.0f/s)\n", resource, n, float64(n)/time.Since(start).Seconds())
				}
			}
			if list.GetContinue() == "" {
				break
			}
			opts.Continue = list.GetContinue()
		}
		fmt.Fprintf(progress, "%s: %d copied, %d skipped in %v\n", resource, res.Copied[resource], res.Skipped[resource], time.Since(start).Round(time.Millisecond))
	}
	if len(refused) > 0 {
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
