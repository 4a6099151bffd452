package migrate

import (
	"context"
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// annotationDeprecationBefore is on each CRD Apply retired: the deprecation of its
// versions before (JSON, by version), which Rollback restores.
const annotationDeprecationBefore = "migrate.aagen.dev/deprecation-before"

// versionDeprecation is a CRD version's deprecated and deprecationWarning.
type versionDeprecation struct {
	Deprecated bool    `json:"deprecated,omitempty"`
	Warning    *string `json:"deprecationWarning,omitempty"`
}

// retireCRDs marks every version of the group's CRDs deprecated, with a warning that says
// where the group is served now, once kube-apiserver routes the group to the generated
// server. Any change of a CRD's spec makes kube-apiserver tear down the storage it serves
// the CRD's objects from, and that ends the watches it still serves from it (the
// aggregator's new routes do not reach them): their clients (informers, the garbage
// collector, controllers) watch again and land on the generated server. Left open, those
// watches would see no event again until their timeout, up to 10 minutes later.
func retireCRDs(ctx context.Context, cfg *rest.Config, group, servedBy string) error {
	warning := fmt.Sprintf("%s is served by %s since aagen migrate apply; this CustomResourceDefinition keeps its objects as they were then", group, servedBy)
	return eachCRD(ctx, cfg, group, func(crd *apiextensionsv1.CustomResourceDefinition) (bool, error) {
		if _, retired := crd.Annotations[annotationDeprecationBefore]; retired {
			return false, nil // by an apply before (rolled back but for this)
		}
		before := map[string]versionDeprecation{}
		for i := range crd.Spec.Versions {
			v := &crd.Spec.Versions[i]
			before[v.Name] = versionDeprecation{Deprecated: v.Deprecated, Warning: v.DeprecationWarning}
			v.Deprecated, v.DeprecationWarning = true, &warning
		}
		data, err := json.Marshal(before)
		if err != nil {
			return false, err
		}
		metav1.SetMetaDataAnnotation(&crd.ObjectMeta, annotationDeprecationBefore, string(data))
		return true, nil
	})
}

// restoreCRDs undoes retireCRDs: each CRD's versions get their deprecation back.
func restoreCRDs(ctx context.Context, cfg *rest.Config, group string) error {
	return eachCRD(ctx, cfg, group, func(crd *apiextensionsv1.CustomResourceDefinition) (bool, error) {
		data, retired := crd.Annotations[annotationDeprecationBefore]
		if !retired {
			return false, nil
		}
		var before map[string]versionDeprecation
		if err := json.Unmarshal([]byte(data), &before); err != nil {
			return false, fmt.Errorf("the annotation %s of the CustomResourceDefinition %s: %w", annotationDeprecationBefore, crd.Name, err)
		}
		for i := range crd.Spec.Versions {
			v := &crd.Spec.Versions[i]
			if b, ok := before[v.Name]; ok {
				v.Deprecated, v.DeprecationWarning = b.Deprecated, b.Warning
			}
		}
		delete(crd.Annotations, annotationDeprecationBefore)
		return true, nil
	})
}

// eachCRD updates each CRD of group that change changes (true), again on a conflict.
func eachCRD(ctx context.Context, cfg *rest.Config, group string, change func(*apiextensionsv1.CustomResourceDefinition) (bool, error)) error {
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	list, err := groupCRDs(ctx, cfg, group)
	if err != nil {
		return err
	}
	for _, c := range list {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd, err := crds.Get(ctx, c.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if changed, err := change(crd); err != nil || !changed {
				return err
			}
			_, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("the CustomResourceDefinition %s: %w", c.Name, err)
		}
	}
	return nil
}
