package test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	marinav1alpha1 "example.com/marina/pkg/apis/marina/v1alpha1"
	"example.com/marina/pkg/generated/informers/externalversions"
	"example.com/marina/pkg/registry/marina/dockoccupancy"
)

// TestDockOccupancy checks the computed kind (+aagen:backend) through the generated
// clientset: occupancies follow docks and boats, a watch sees a boat arrive, label and field
// selectors apply, discovery lists get, list and watch only, and a create is 405.
func TestDockOccupancy(t *testing.T) {
	cs := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := cs.MarinaV1alpha1()
	for name, berths := range map[string]int32{"east": 2, "west": 1} {
		d := &marinav1alpha1.Dock{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: marinav1alpha1.DockSpec{Berths: berths}}
		if _, err := m.Docks().Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	boat := func(name, dock string) {
		t.Helper()
		b := &marinav1alpha1.Boat{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "harbour"}, Spec: marinav1alpha1.BoatSpec{Dock: dock, LengthMeters: 8}}
		if _, err := m.Boats("harbour").Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	boat("a", "west")
	occ := m.DockOccupancies()
	var west *marinav1alpha1.DockOccupancy
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		west, err = occ.Get(ctx, "west", metav1.GetOptions{})
		return err == nil && west.Occupied == 1, nil
	}); err != nil {
		t.Fatalf("occupancy of west: %+v, %v", west, err)
	}
	if west.Berths != 1 || west.Free != 0 || !west.Full || !slices.Equal(west.Boats, []string{"harbour/a"}) || west.Labels[dockoccupancy.FullLabel] != "true" {
		t.Errorf("west: %+v", west)
	}
	if _, err := occ.Get(ctx, "nowhere", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get of a dock that does not exist: want 404, got %v", err)
	}
	full, err := occ.List(ctx, metav1.ListOptions{LabelSelector: dockoccupancy.FullLabel + "=true"})
	if err != nil || len(full.Items) != 1 || full.Items[0].Name != "west" {
		t.Errorf("label selector: %v %+v", err, full)
	}
	notFull, err := occ.List(ctx, metav1.ListOptions{FieldSelector: "full=false"})
	if err != nil || len(notFull.Items) != 1 || notFull.Items[0].Name != "east" {
		t.Errorf("field selector: %v %+v", err, notFull)
	}
	if _, err := occ.List(ctx, metav1.ListOptions{FieldSelector: "berths=2"}); !apierrors.IsBadRequest(err) {
		t.Errorf("field selector on a field that is not selectable: want 400, got %v", err)
	}

	w, err := occ.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=east"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	boat("b", "east")
	// A watch without a resourceVersion starts with the current state, as on etcd storage.
	var events []string
	timeout := time.After(30 * time.Second)
	for len(events) < 2 {
		select {
		case ev := <-w.ResultChan():
			o, ok := ev.Object.(*marinav1alpha1.DockOccupancy)
			if !ok {
				t.Fatalf("watch: %s %+v", ev.Type, ev.Object)
			}
			events = append(events, fmt.Sprintf("%s %s %d/%d", ev.Type, o.Name, o.Occupied, o.Berths))
		case <-timeout:
			t.Fatalf("watch: events %v, then nothing after a boat arrived at east", events)
		}
	}
	if want := []string{"ADDED east 0/2", "MODIFIED east 1/2"}; !slices.Equal(events, want) {
		t.Errorf("watch: events %v, want %v", events, want)
	}

	// A watch from a list's resourceVersion (as kubectl get -w opens it) starts with what
	// changed since.
	before, err := occ.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=west"})
	if err != nil {
		t.Fatal(err)
	}
	boat("d", "west")
	w2, err := occ.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=west", ResourceVersion: before.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	select {
	case ev := <-w2.ResultChan():
		if o, ok := ev.Object.(*marinav1alpha1.DockOccupancy); ev.Type != "MODIFIED" || !ok || o.Name != "west" || o.Occupied != 2 {
			t.Errorf("watch from resourceVersion %s: %s %+v", before.ResourceVersion, ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("watch from resourceVersion %s: no event for the boat that arrived at west before it", before.ResourceVersion)
	}

	// An informer from the generated factory syncs (list, then watch) and sees the change.
	factory := externalversions.NewSharedInformerFactory(cs, 0)
	lister := factory.Marina().V1alpha1().DockOccupancies().Lister()
	stop := make(chan struct{})
	factory.Start(stop)
	defer func() {
		close(stop)
		factory.Shutdown()
	}()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer of %v did not sync", typ)
		}
	}
	boat("c", "east")
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		o, err := lister.Get("east")
		return err == nil && o.Occupied == 2, nil
	}); err != nil {
		t.Errorf("informer: east never had 2 boats: %v", err)
	}

	list, err := cs.Discovery().ServerResourcesForGroupVersion("marina.example.com/v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list.APIResources {
		if r.Name == "dockoccupancies" {
			verbs := slices.Sorted(slices.Values(r.Verbs))
			if strings.Join(verbs, ",") != "get,list,watch" || r.Namespaced || !slices.Equal(r.ShortNames, []string{"occ"}) {
				t.Errorf("discovery: %+v", r)
			}
		}
	}
	// OpenAPI v3 publishes the kind's schema and only its read paths' operations.
	doc, err := cs.MarinaV1alpha1().RESTClient().Get().AbsPath("/openapi/v3/apis/marina.example.com/v1alpha1").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"/apis/marina.example.com/v1alpha1/dockoccupancies"`, `"operationId":"listMarinaExampleComV1alpha1DockOccupancy"`,
		`"com.example.marina.pkg.apis.marina.v1alpha1.DockOccupancy"`, `"Free is the number of free berths`} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("OpenAPI v3 lacks %s", want)
		}
	}
	if strings.Contains(string(doc), `"createMarinaExampleComV1alpha1DockOccupancy"`) {
		t.Error("OpenAPI v3 has a create operation for dockoccupancies")
	}

	body := `{"apiVersion":"marina.example.com/v1alpha1","kind":"DockOccupancy","metadata":{"name":"x"}}`
	res := cs.MarinaV1alpha1().RESTClient().Post().AbsPath("/apis/marina.example.com/v1alpha1/dockoccupancies").
		SetHeader("Content-Type", "application/json").Body([]byte(body)).Do(ctx)
	var code int
	res.StatusCode(&code)
	if code != http.StatusMethodNotAllowed || !apierrors.IsMethodNotSupported(res.Error()) {
		t.Errorf("create: want 405 MethodNotAllowed, got %d %v", code, res.Error())
	}
}
