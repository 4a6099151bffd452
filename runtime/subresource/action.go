package subresource

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Parent is the storage of the kind a subresource belongs to, through which the subresource
// reads the object and writes its changes: a k8s.io/apiserver generic registry Store (for
// actions, the one registry.REST.ObjectUpdater returns, which writes spec and status together).
type Parent interface {
	rest.Getter
	rest.Updater
}

// ActionFunc runs an action on obj, a copy of the stored object, with the request's body.
// Changes it makes to obj are stored as an update of the object (validated, versioned and
// watched like any update; nothing is written when obj is left as it was). It returns the
// response: obj itself (answered as stored, with its new resourceVersion), another
// registered object, or a *metav1.Status. When the object changes concurrently, the update
// conflicts and the function runs again on the new object: effects outside obj must be
// idempotent. An error from k8s.io/apimachinery/pkg/api/errors keeps its code; others are 500.
type ActionFunc[T runtime.Object, In runtime.Object] func(ctx context.Context, obj T, in In) (runtime.Object, error)

// Action is the storage of an action subresource: POST <plural>/<name>/<sub> with a body of
// type In, like pods/eviction. Authorization sees verb create on "<plural>/<sub>"; admission
// sees a create of the body (operation CREATE, the subresource's name, object In).
type Action[T runtime.Object, In runtime.Object] struct {
	parent   Parent
	newIn    func() In
	do       ActionFunc[T, In]
	validate Validator
}

var (
	_ rest.NamedCreater = &Action[*metav1.Status, *metav1.Status]{}
	_ Validated         = &Action[*metav1.Status, *metav1.Status]{}
)

// SetValidator sets the validator of the bodies.
func (a *Action[T, In]) SetValidator(f Validator) { a.validate = f }

// NewAction returns the storage of an action on parent's objects; newIn returns an empty body.
func NewAction[T runtime.Object, In runtime.Object](parent Parent, newIn func() In, do ActionFunc[T, In]) *Action[T, In] {
	return &Action[T, In]{parent: parent, newIn: newIn, do: do}
}

// New returns an empty body.
func (a *Action[T, In]) New() runtime.Object { return a.newIn() }

// Destroy does nothing: the main resource owns the storage.
func (a *Action[T, In]) Destroy() {}

// Create runs the action on the named object. The body is validated against its schema
// before anything else; a body with object metadata makes its resourceVersion and uid
// preconditions on the object, as a view's are (409 Conflict when they do not hold).
func (a *Action[T, In]) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	in, ok := obj.(In)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of this action must be a %T, not %T", a.newIn(), obj))
	}
	if err := validate(ctx, a.validate, obj, nil, name); err != nil {
		return nil, err
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj); err != nil {
			return nil, err
		}
	}
	pre := preconditionsOf(in)
	var (
		out     runtime.Object
		changed T
	)
	info := updateFunc(func(ctx context.Context, old runtime.Object) (runtime.Object, error) {
		cur, ok := old.(T)
		if !ok {
			return nil, fmt.Errorf("unexpected stored object %T", old)
		}
		cur = cur.DeepCopyObject().(T)
		if err := pre.apply(ctx, cur, name); err != nil {
			return nil, err
		}
		res, err := a.do(ctx, cur, in)
		if err != nil {
			return nil, err
		}
		out, changed = res, cur
		return cur, nil
	})
	update := &metav1.UpdateOptions{}
	if options != nil {
		update.DryRun = options.DryRun
	}
	stored, _, err := a.parent.Update(ctx, name, info, nil, rest.ValidateAllObjectUpdateFunc, false, update)
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, fmt.Errorf("action on %q returned no response", name)
	}
	if runtime.Object(changed) == out {
		// The object itself: answer it as stored.
		return stored, nil
	}
	return out, nil
}

// updateFunc is a rest.UpdatedObjectInfo computing the new object from the stored one.
type updateFunc func(ctx context.Context, old runtime.Object) (runtime.Object, error)

func (f updateFunc) Preconditions() *metav1.Preconditions { return nil }

func (f updateFunc) UpdatedObject(ctx context.Context, old runtime.Object) (runtime.Object, error) {
	return f(ctx, old)
}
