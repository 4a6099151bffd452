package registry

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// ObjectUpdater returns a store on the same storage whose updates write the whole object
// (metadata, spec and status together), validated, prepared by the hooks and versioned like
// an update of the main resource. The subresources of package
// github.com/aagen-dev/aagen/runtime/subresource (actions, views) write through it, since
// an action may change the spec, the status or both.
func (r *REST) ObjectUpdater() *genericregistry.Store {
	s := *r.Store
	if w, ok := r.Store.UpdateStrategy.(wholeObjectUpdater); ok {
		s.UpdateStrategy = w.wholeObject()
		s.ResetFieldsStrategy = nil
	}
	return &s
}

// wholeObjectUpdater is implemented by the main strategy.
type wholeObjectUpdater interface {
	wholeObject() rest.RESTUpdateStrategy
}

func (s *strategy[T]) wholeObject() rest.RESTUpdateStrategy { return wholeObjectStrategy[T]{s} }

// wholeObjectStrategy is the main strategy without the reset of the status: the updates of
// subresources keep what they changed anywhere in the object.
type wholeObjectStrategy[T Object] struct {
	*strategy[T]
}

func (s wholeObjectStrategy[T]) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	o, prev := obj.(T), old.(T)
	ownLabels(objectMeta(prev))
	bumpGeneration(s.res, o, prev)
	if s.hooks.prepareUpdate != nil {
		s.hooks.prepareUpdate.PrepareForUpdate(ctx, o, prev)
	}
}

func (s wholeObjectStrategy[T]) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set { return nil }
