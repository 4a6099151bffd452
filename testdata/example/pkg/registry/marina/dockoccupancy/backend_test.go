package dockoccupancy

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	marinav1alpha1 "example.com/marina/pkg/apis/marina/v1alpha1"
	"example.com/marina/pkg/generated/clientset/versioned/fake"
)

func boat(namespace, name, dock, rv string) *marinav1alpha1.Boat {
	return &marinav1alpha1.Boat{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, ResourceVersion: rv, Labels: map[string]string{"fleet": "blue"}},
		Spec:       marinav1alpha1.BoatSpec{Dock: dock, LengthMeters: 8, Crew: []string{"ann"}},
	}
}

// TestBoatsAtDocks: the index the Boat reflector keeps tells which boats berth at each dock,
// sorted, with the largest of their resourceVersions, through creates, a move to another
// dock, a move to no dock, deletes (also of a tombstone) and relists; after each change it
// reports the docks whose boats changed, and only those.
func TestBoatsAtDocks(t *testing.T) {
	var moved [][]string
	s := newBoatsAtDocks(func(docks []string) { moved = append(moved, docks) })
	step := func(what string, err error, wantMoved []string, want map[string]berthed) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(moved) != 1 || !slices.Equal(moved[0], wantMoved) {
			t.Errorf("%s: moved %q, want once %q", what, moved, wantMoved)
		}
		moved = nil
		for dock, w := range want {
			if got := s.at(dock); !reflect.DeepEqual(got, w) {
				t.Errorf("%s: at(%q) = %+v, want %+v", what, dock, got, w)
			}
		}
	}
	none := berthed{}

	step("create", s.Add(boat("harbour", "kestrel", "east", "5")), []string{"east"},
		map[string]berthed{"east": {keys: []string{"harbour/kestrel"}, resourceVersion: 5}})
	step("create", s.Add(boat("bay", "tern", "east", "7")), []string{"east"},
		map[string]berthed{"east": {keys: []string{"bay/tern", "harbour/kestrel"}, resourceVersion: 7}})
	step("create without a dock", s.Add(boat("bay", "skiff", "", "8")), nil,
		map[string]berthed{"": none, "east": {keys: []string{"bay/tern", "harbour/kestrel"}, resourceVersion: 7}})
	step("update at the same dock", s.Update(boat("harbour", "kestrel", "east", "9")), []string{"east"},
		map[string]berthed{"east": {keys: []string{"bay/tern", "harbour/kestrel"}, resourceVersion: 9}})
	step("move", s.Update(boat("bay", "tern", "west", "10")), []string{"east", "west"},
		map[string]berthed{"east": {keys: []string{"harbour/kestrel"}, resourceVersion: 9}, "west": {keys: []string{"bay/tern"}, resourceVersion: 10}})
	step("move to no dock", s.Update(boat("bay", "tern", "", "11")), []string{"west"},
		map[string]berthed{"west": none})
	step("delete", s.Delete(boat("harbour", "kestrel", "east", "9")), []string{"east"},
		map[string]berthed{"east": none})
	if len(s.dockOf) != 0 || len(s.docks) != 0 {
		t.Errorf("after every boat left: %d boats, %d docks kept", len(s.dockOf), len(s.docks))
	}

	select {
	case <-s.synced:
		t.Fatal("synced before the first list")
	default:
	}
	step("list", s.Replace([]any{boat("a", "one", "north", "20"), boat("a", "two", "south", "21")}, "21"), []string{"north", "south"},
		map[string]berthed{"north": {keys: []string{"a/one"}, resourceVersion: 20}, "south": {keys: []string{"a/two"}, resourceVersion: 21}})
	select {
	case <-s.synced:
	default:
		t.Fatal("not synced after the first list")
	}
	step("relist", s.Replace([]any{boat("a", "one", "north", "20"), boat("a", "three", "west", "30")}, "30"), []string{"south", "west"},
		map[string]berthed{"north": {keys: []string{"a/one"}, resourceVersion: 20}, "south": none, "west": {keys: []string{"a/three"}, resourceVersion: 30}})

	if err := s.Add(&marinav1alpha1.Dock{}); err == nil {
		t.Error("a Dock was taken for a Boat")
	}
}

// TestOccupancy: a dock's occupancy counts the boats at it, and its resourceVersion is the
// largest of the dock's and its boats'.
func TestOccupancy(t *testing.T) {
	dock := &marinav1alpha1.Dock{
		ObjectMeta: metav1.ObjectMeta{Name: "east", ResourceVersion: "12", Labels: map[string]string{"side": "sea"}},
		Spec:       marinav1alpha1.DockSpec{Berths: 2},
	}
	for _, c := range []struct {
		boats berthed
		want  marinav1alpha1.DockOccupancy
	}{
		{berthed{}, marinav1alpha1.DockOccupancy{Berths: 2, Free: 2,
			ObjectMeta: metav1.ObjectMeta{Name: "east", ResourceVersion: "12", Labels: map[string]string{"side": "sea", FullLabel: "false"}}}},
		{berthed{keys: []string{"a/one", "b/two"}, resourceVersion: 40}, marinav1alpha1.DockOccupancy{Berths: 2, Occupied: 2, Free: 0, Full: true, Boats: []string{"a/one", "b/two"},
			ObjectMeta: metav1.ObjectMeta{Name: "east", ResourceVersion: "40", Labels: map[string]string{"side": "sea", FullLabel: "true"}}}},
	} {
		if got := occupancy(dock, c.boats); !reflect.DeepEqual(*got, c.want) {
			t.Errorf("occupancy(%+v) = %+v, want %+v", c.boats, *got, c.want)
		}
	}
}

// TestSlimBoat: what the reflector's temporary store of a streamed list keeps of a Boat is
// its name, namespace, resourceVersion and dock, and nothing else.
func TestSlimBoat(t *testing.T) {
	full := boat("harbour", "kestrel", "east", "42")
	full.UID, full.ManagedFields = "u1", []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	got, err := newBoatsAtDocks(func([]string) {}).Transformer()(full)
	if err != nil {
		t.Fatal(err)
	}
	want := &marinav1alpha1.Boat{ObjectMeta: metav1.ObjectMeta{Name: "kestrel", Namespace: "harbour", ResourceVersion: "42"}, Spec: marinav1alpha1.BoatSpec{Dock: "east"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("slimBoat = %+v, want %+v", got, want)
	}
}

// TestBoatReflector runs the index under the reflector Start uses, against a fake clientset
// (list, then watch): the index follows creates, a move and a delete, and reports the docks
// whose boats changed.
func TestBoatReflector(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := fake.NewClientset(boat("harbour", "kestrel", "east", ""))
	var mu sync.Mutex
	var moved []string
	s := newBoatsAtDocks(func(docks []string) {
		mu.Lock()
		defer mu.Unlock()
		moved = append(moved, docks...)
	})
	go boatReflector(cs, s).RunWithContext(ctx)
	select {
	case <-s.synced:
	case <-time.After(time.Minute):
		t.Fatal("the reflector did not list")
	}
	until := func(what string, want map[string][]string, wantMoved []string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			for dock, keys := range want {
				if got := s.at(dock).keys; !slices.Equal(got, keys) {
					return false, nil
				}
			}
			mu.Lock()
			defer mu.Unlock()
			return slices.Equal(moved, wantMoved), nil
		})
		if err != nil {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("%s: east %q, west %q, moved %q; want %v, moved %q", what, s.at("east").keys, s.at("west").keys, moved, want, wantMoved)
		}
		mu.Lock()
		moved = nil
		mu.Unlock()
	}
	until("list", map[string][]string{"east": {"harbour/kestrel"}, "west": nil}, []string{"east"})
	boats := cs.MarinaV1alpha1().Boats("harbour")
	if _, err := boats.Create(ctx, boat("harbour", "tern", "west", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	until("create", map[string][]string{"east": {"harbour/kestrel"}, "west": {"harbour/tern"}}, []string{"west"})
	if _, err := boats.Update(ctx, boat("harbour", "kestrel", "west", ""), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	until("move", map[string][]string{"east": nil, "west": {"harbour/kestrel", "harbour/tern"}}, []string{"east", "west"})
	if err := boats.Delete(ctx, "tern", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	until("delete", map[string][]string{"west": {"harbour/kestrel"}}, []string{"west"})
}
