// This file is yours: aagen created it once and never overwrites it.

package boat

import (
	"context"
	"fmt"

	marinav1alpha1 "example.com/marina/pkg/apis/marina/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Depart runs the action depart (POST boats/<name>/depart with a DepartureRequest). obj is a copy of the
// stored object: what you change in it is stored as an update (validated like any update;
// nothing is written when you leave it as it was). Return obj (answered as stored), another
// object of the API or a *metav1.Status. The function runs again when the object changed
// meanwhile (a conflict): keep effects outside obj idempotent. Errors of
// k8s.io/apimachinery/pkg/api/errors keep their code; others are 500.
//
// The boat leaves its berth: its phase becomes Departed, its berth is freed and a Departed
// condition says where it is heading. A boat that has already left gets 409 Conflict.
func (Hooks) Depart(ctx context.Context, obj *marinav1alpha1.Boat, in *marinav1alpha1.DepartureRequest) (runtime.Object, error) {
	if obj.Status.Phase == "Departed" {
		return nil, apierrors.NewConflict(marinav1alpha1.Resource("boats"), obj.Name, fmt.Errorf("the boat has already departed"))
	}
	destination := in.Destination
	if destination == "" {
		destination = "open sea"
	}
	obj.Status.Phase = "Departed"
	obj.Status.Berth = 0
	apimeta.SetStatusCondition(&obj.Status.Conditions, metav1.Condition{
		Type:               "Departed",
		Status:             metav1.ConditionTrue,
		Reason:             "DepartureRequested",
		Message:            "bound for " + destination,
		ObservedGeneration: obj.Generation,
	})
	return obj, nil
}
