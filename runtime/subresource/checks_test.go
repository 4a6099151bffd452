package subresource

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
)

// tooLong refuses a label "to" longer than 3 characters, at labels.to.
func tooLong(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	if to := obj.(*object).Labels["to"]; len(to) > 3 {
		return field.ErrorList{field.TooLong(field.NewPath("labels", "to"), to, 3)}
	}
	return nil
}

// A view with metadata: its resourceVersion and uid are preconditions (409), and it is
// validated before Set runs (422).
func TestWritableViewPreconditionsAndValidation(t *testing.T) {
	parent := newParent()
	parent.objs["aurora"].UID = "u1"
	sets := 0
	s := NewView(parent, ViewFuncs[*object, *object]{
		New: func() *object { return &object{} },
		Get: func(ctx context.Context, obj *object) (*object, error) { return obj.DeepCopy(), nil },
		Set: func(ctx context.Context, obj *object, v *object) error {
			sets++
			obj.Labels = v.Labels
			return nil
		},
	}).(*WritableView[*object, *object])
	s.SetValidator(tooLong)
	ctx := context.Background()
	put := func(rv, uid, to string) error {
		v := &object{ObjectMeta: metav1.ObjectMeta{Name: "aurora", ResourceVersion: rv, Labels: map[string]string{"to": to}}}
		v.UID = typesUID(uid)
		_, _, err := s.Update(ctx, "aurora", rest.DefaultUpdatedObjectInfo(v), nil, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		return err
	}
	if err := put("1", "u1", "Rye"); err != nil {
		t.Fatalf("PUT with the current resourceVersion and uid: %v", err)
	}
	if err := put("1", "", "Fal"); !apierrors.IsConflict(err) {
		t.Errorf("PUT with a stale resourceVersion: want 409, got %v", err)
	}
	if err := put("", "u2", "Fal"); !apierrors.IsConflict(err) {
		t.Errorf("PUT with another uid: want 409, got %v", err)
	}
	before := sets
	if err := put("", "", "Falmouth"); !apierrors.IsInvalid(err) || err.(*apierrors.StatusError).ErrStatus.Details.Causes[0].Field != "labels.to" {
		t.Errorf("PUT breaking the schema: want 422 at labels.to, got %v", err)
	}
	if sets != before {
		t.Error("Set ran on a view that failed validation")
	}
	if got := parent.objs["aurora"].Labels["to"]; got != "Rye" {
		t.Errorf("stored %q; want the first write's Rye", got)
	}
}

// An action's body is validated before the function runs (422), and a body with metadata
// makes its resourceVersion and uid preconditions (409).
func TestActionPreconditionsAndValidation(t *testing.T) {
	parent := newParent()
	parent.objs["aurora"].UID = "u1"
	runs := 0
	a := NewAction(parent, func() *object { return &object{} }, func(ctx context.Context, obj *object, in *object) (runtime.Object, error) {
		runs++
		obj.Labels["to"] = in.Labels["to"]
		return obj, nil
	})
	a.SetValidator(tooLong)
	ctx := context.Background()
	do := func(rv, uid, to string) error {
		in := &object{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv, UID: typesUID(uid), Labels: map[string]string{"to": to}}}
		_, err := a.Create(ctx, "aurora", in, nil, &metav1.CreateOptions{})
		return err
	}
	if err := do("", "", "Brest"); !apierrors.IsInvalid(err) || runs != 0 {
		t.Errorf("a body breaking the schema: want 422 before the function runs, got %v after %d runs", err, runs)
	}
	if err := do("7", "", "Rye"); !apierrors.IsConflict(err) || runs != 0 {
		t.Errorf("a stale resourceVersion: want 409 before the function runs, got %v after %d runs", err, runs)
	}
	if err := do("", "u2", "Rye"); !apierrors.IsConflict(err) || runs != 0 {
		t.Errorf("another uid: want 409 before the function runs, got %v after %d runs", err, runs)
	}
	if err := do("1", "u1", "Rye"); err != nil || parent.objs["aurora"].Labels["to"] != "Rye" {
		t.Errorf("current resourceVersion and uid: %v, stored %v", err, parent.objs["aurora"].Labels)
	}
}

func typesUID(s string) types.UID { return types.UID(s) }
