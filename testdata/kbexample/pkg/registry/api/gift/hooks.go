// This file is yours: aagen created it once and never overwrites it.

package gift

import (
	"context"

	apiv1 "example.com/kbexample/api/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Hooks adds the behaviour of gifts that markers cannot express. Every method is optional:
// delete the ones you do not need. The generated strategy calls them at the points where
// Kubernetes' built-in strategies run their own code (see package
// github.com/aagen-dev/aagen/runtime/registry for each method's contract). A method whose
// name matches but whose signature does not is reported when the server starts.
type Hooks struct{}

// Validate checks a new or updated object. Return every problem: they are sent back together,
// with field paths, as one 422 Invalid. Example:
//
//	if obj.Spec.Size < 0 {
//		errs = append(errs, field.Invalid(field.NewPath("spec", "size"), obj.Spec.Size, "must not be negative"))
//	}
func (Hooks) Validate(ctx context.Context, obj *apiv1.Gift) field.ErrorList {
	var errs field.ErrorList
	return errs
}

// ValidateUpdate checks an update against the stored object (immutable fields, allowed transitions).
func (Hooks) ValidateUpdate(ctx context.Context, obj, old *apiv1.Gift) field.ErrorList {
	return nil
}

// PrepareForCreate may change an object before it is validated and stored on create.
func (Hooks) PrepareForCreate(ctx context.Context, obj *apiv1.Gift) {}

// PrepareForUpdate may change an object before an update is validated and stored.
func (Hooks) PrepareForUpdate(ctx context.Context, obj, old *apiv1.Gift) {}

// Canonicalize normalises a valid object just before it is stored (sorting a list whose
// order does not matter, say), on create and on update.
func (Hooks) Canonicalize(obj *apiv1.Gift) {}

// WarningsOnCreate returns warnings for a valid new object (a deprecated field in use, say);
// kubectl and client-go show them to the user. They never reject the request.
func (Hooks) WarningsOnCreate(ctx context.Context, obj *apiv1.Gift) []string {
	return nil
}

// WarningsOnUpdate returns warnings for a valid update.
func (Hooks) WarningsOnUpdate(ctx context.Context, obj, old *apiv1.Gift) []string {
	return nil
}
