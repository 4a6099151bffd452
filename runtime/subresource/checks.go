package subresource

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
)

// Validator checks the body of an action or a view written with PUT or PATCH against the
// schema its OpenAPI definition publishes; old is the current view on a view's update,
// nil for an action's body. The errors are answered as 422 Invalid, before the user's
// function runs.
type Validator func(ctx context.Context, obj, old runtime.Object) field.ErrorList

// Validated is implemented by the storages whose bodies are validated against their
// schema (actions, writable views): package server gives each the validator of its body
// type, built from the server's OpenAPI definitions, before the server serves.
type Validated interface {
	// New returns an empty body, whose type names the schema.
	New() runtime.Object
	// SetValidator sets the validator of the bodies; nil validates nothing.
	SetValidator(Validator)
}

// PatchTypes is implemented by the storages that accept fewer patch types than
// k8s.io/apiserver offers every storage: package server answers the others with 415
// Unsupported Media Type, as kube-apiserver refuses strategic merge patches of custom
// resources.
type PatchTypes interface {
	PatchTypes() []types.PatchType
}

// validate runs v on obj, answering its errors as 422 Invalid of the body's kind.
func validate(ctx context.Context, v Validator, obj, old runtime.Object, name string) error {
	if v == nil {
		return nil
	}
	errs := v(ctx, obj, old)
	if len(errs) == 0 {
		return nil
	}
	gk := obj.GetObjectKind().GroupVersionKind().GroupKind()
	if gk.Kind == "" {
		// A decoded body without apiVersion and kind: its Go type's name is the kind the
		// scheme registers it as (DepartureRequest), not "*v1alpha1.DepartureRequest".
		gk.Kind = reflect.Indirect(reflect.ValueOf(obj)).Type().Name()
	}
	return apierrors.NewInvalid(gk, name, errs)
}

// preconditions are the resourceVersion and uid a body's metadata asks the stored object
// to have (a body without metadata asks nothing).
type preconditions struct {
	resourceVersion string
	uid             types.UID
}

func preconditionsOf(body runtime.Object) preconditions {
	m, err := meta.Accessor(body)
	if err != nil {
		return preconditions{}
	}
	return preconditions{resourceVersion: m.GetResourceVersion(), uid: m.GetUID()}
}

// apply checks the preconditions against next, a copy of the stored object about to be
// changed: a uid or a resourceVersion other than the stored object's is a 409 Conflict,
// with the messages of the generic registry Store (as for /scale and /status), before
// the user's function runs.
func (p preconditions) apply(ctx context.Context, next runtime.Object, name string) error {
	m, err := meta.Accessor(next)
	if err != nil {
		return err
	}
	var msg string
	switch {
	case p.uid != "" && p.uid != m.GetUID():
		msg = fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", p.uid, m.GetUID())
	case p.resourceVersion != "" && p.resourceVersion != m.GetResourceVersion():
		msg = genericregistry.OptimisticLockErrorMsg
	default:
		return nil
	}
	var gr schema.GroupResource
	if info, ok := genericapirequest.RequestInfoFrom(ctx); ok {
		gr = schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
	}
	return apierrors.NewConflict(gr, name, errors.New(msg))
}
