package subresource

import (
	"context"
	"fmt"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/registry/rest"
)

// ViewFuncs compute a view of an object and, for a writable view, apply one to it.
type ViewFuncs[T runtime.Object, V runtime.Object] struct {
	// New returns an empty view.
	New func() V
	// Get returns the view of obj.
	Get func(ctx context.Context, obj T) (V, error)
	// Set changes obj, a copy of the stored object, to what the view v says; the change is
	// stored as an update of the object (validation, resourceVersion, watch). Nil makes
	// the view read-only.
	Set func(ctx context.Context, obj T, v V) error
}

// View is the storage of a read-only view subresource: GET <plural>/<name>/<sub> answers
// another representation of the object (verb get).
type View[T runtime.Object, V runtime.Object] struct {
	parent   Parent
	funcs    ViewFuncs[T, V]
	validate Validator
}

// WritableView is the storage of a view that also takes PUT and PATCH (verbs update and
// patch), the way /scale does: the view of the request is applied to the stored object.
type WritableView[T runtime.Object, V runtime.Object] struct {
	View[T, V]
}

var (
	_ rest.Getter  = &View[*metav1.Status, *metav1.Status]{}
	_ rest.Updater = &WritableView[*metav1.Status, *metav1.Status]{}
	_ rest.Patcher = &WritableView[*metav1.Status, *metav1.Status]{}
	_ Validated    = &WritableView[*metav1.Status, *metav1.Status]{}
	_ PatchTypes   = &WritableView[*metav1.Status, *metav1.Status]{}
)

// SetValidator sets the validator of the views written (PUT, PATCH).
func (v *WritableView[T, V]) SetValidator(f Validator) { v.validate = f }

// PatchTypes are JSON patch and merge patch. A strategic merge patch is refused (415), as
// kube-apiserver refuses it for custom resources, and so is server-side apply: a view has
// no managed fields of its own, what it would own lies in the object.
func (v *WritableView[T, V]) PatchTypes() []types.PatchType {
	return []types.PatchType{types.JSONPatchType, types.MergePatchType}
}

// NewView returns the storage of a view of parent's objects: a *View, or a *WritableView
// when funcs.Set is set.
func NewView[T runtime.Object, V runtime.Object](parent Parent, funcs ViewFuncs[T, V]) rest.Storage {
	v := View[T, V]{parent: parent, funcs: funcs}
	if funcs.Set != nil {
		return &WritableView[T, V]{v}
	}
	return &v
}

// New returns an empty view.
func (v *View[T, V]) New() runtime.Object { return v.funcs.New() }

// Destroy does nothing: the main resource owns the storage.
func (v *View[T, V]) Destroy() {}

// Get returns the view of the named object.
func (v *View[T, V]) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	obj, err := v.parent.Get(ctx, name, options)
	if err != nil {
		return nil, err
	}
	o, ok := obj.(T)
	if !ok {
		return nil, fmt.Errorf("unexpected stored object %T", obj)
	}
	return v.funcs.Get(ctx, o)
}

// Update applies the view of the request (a PUT, or a patch applied to the current view) to
// the named object. Admission sees views, old and new. The new view is validated against its
// schema before Set runs, and its metadata is a precondition, as for /scale: a
// resourceVersion other than the stored object's, or another uid, is a 409 Conflict.
func (v *WritableView[T, V]) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	info := updateFunc(func(ctx context.Context, old runtime.Object) (runtime.Object, error) {
		cur, ok := old.(T)
		if !ok {
			return nil, fmt.Errorf("unexpected stored object %T", old)
		}
		// The stored object is a fresh decoding whose label map the storage codec may share
		// with other objects; the view's functions get one of their own, as upstream's
		// updates give them a private object.
		if m, err := meta.Accessor(cur); err == nil && m.GetLabels() != nil {
			m.SetLabels(maps.Clone(m.GetLabels()))
		}
		oldView, err := v.funcs.Get(ctx, cur)
		if err != nil {
			return nil, err
		}
		updated, err := objInfo.UpdatedObject(ctx, oldView)
		if err != nil {
			return nil, err
		}
		newView, ok := updated.(V)
		if !ok {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the body must be a %T, not %T", v.funcs.New(), updated))
		}
		if err := validate(ctx, v.validate, newView, oldView, name); err != nil {
			return nil, err
		}
		if updateValidation != nil {
			if err := updateValidation(ctx, newView, oldView); err != nil {
				return nil, err
			}
		}
		next := cur.DeepCopyObject().(T)
		if err := preconditionsOf(newView).apply(ctx, next, name); err != nil {
			return nil, err
		}
		if err := v.funcs.Set(ctx, next, newView); err != nil {
			return nil, err
		}
		return next, nil
	})
	// Subresources never create the parent.
	stored, _, err := v.parent.Update(ctx, name, info, nil, rest.ValidateAllObjectUpdateFunc, false, options)
	if err != nil {
		return nil, false, err
	}
	o, ok := stored.(T)
	if !ok {
		return nil, false, fmt.Errorf("unexpected stored object %T", stored)
	}
	out, err := v.funcs.Get(ctx, o)
	return out, false, err
}
