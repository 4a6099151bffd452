package dockoccupancy

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	marinav1alpha1 "example.com/marina/pkg/apis/marina/v1alpha1"
)

// TestBoatInDock: the Boat informer's cache keeps a Boat's name, namespace, uid,
// resourceVersion and dock, and nothing else; a tombstone is kept as it is.
func TestBoatInDock(t *testing.T) {
	full := &marinav1alpha1.Boat{
		ObjectMeta: metav1.ObjectMeta{
			Name: "kestrel", Namespace: "harbour", UID: "u1", ResourceVersion: "42",
			Labels:        map[string]string{"fleet": "blue"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		},
		Spec: marinav1alpha1.BoatSpec{Dock: "east", LengthMeters: 8, Crew: []string{"ann"}},
	}
	got, err := boatInDock(full)
	if err != nil {
		t.Fatal(err)
	}
	want := &marinav1alpha1.Boat{
		ObjectMeta: metav1.ObjectMeta{Name: "kestrel", Namespace: "harbour", UID: "u1", ResourceVersion: "42"},
		Spec:       marinav1alpha1.BoatSpec{Dock: "east"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("boatInDock = %+v, want %+v", got, want)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "harbour/kestrel", Obj: full}
	if got, err := boatInDock(tomb); err != nil || !reflect.DeepEqual(got, tomb) {
		t.Errorf("boatInDock(tombstone) = %+v, %v; want it unchanged", got, err)
	}
}
