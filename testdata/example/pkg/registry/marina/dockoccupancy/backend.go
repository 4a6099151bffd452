// This file is yours: aagen created it once and never overwrites it.

package dockoccupancy

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientrest "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/aagen-dev/aagen/runtime/backend"

	marinav1alpha1 "example.com/marina/pkg/apis/marina/v1alpha1"
	"example.com/marina/pkg/generated/clientset/versioned"
	"example.com/marina/pkg/generated/informers/externalversions"
	marinalisters "example.com/marina/pkg/generated/listers/marina/v1alpha1"
)

// FullLabel is the label every DockOccupancy carries: "true" when the dock has no free
// berth, else "false" (kubectl get dockoccupancies -l marina.example.com/full=true).
const FullLabel = "marina.example.com/full"

// NewBackend returns what serves dockoccupancies.marina.example.com: the occupancy of each
// Dock, computed from the server's own Docks and Boats, which it reads on the loopback client
// once the server runs (Start). It serves get, list and watch.
func NewBackend() (backend.Reader[*marinav1alpha1.DockOccupancy], error) {
	return &Backend{}, nil
}

// Backend computes DockOccupancies from the Docks in an informer's cache and an index of
// which boats berth at which dock.
type Backend struct {
	mu sync.RWMutex
	// docks is the lister of the Dock informer's cache and boats the index of the Boats;
	// both nil until Start has synced them.
	docks marinalisters.DockLister
	boats *boatsAtDocks
	// changes sends every recomputed occupancy to the watches.
	changes *watch.Broadcaster
}

var (
	_ backend.Reader[*marinav1alpha1.DockOccupancy] = &Backend{}
	_ backend.Watcher                               = &Backend{}
	_ backend.Starter                               = &Backend{}
)

// Start reads Docks through an informer on the server's loopback client and Boats through a
// reflector into a boatsAtDocks index, and tells the watches about the occupancies that change
// with each Dock or Boat event. It returns once both are synced (the server is not ready
// before).
func (b *Backend) Start(ctx context.Context, loopback *clientrest.Config) error {
	cs, err := versioned.NewForConfig(loopback)
	if err != nil {
		return err
	}
	factory := externalversions.NewSharedInformerFactory(cs, 0)
	docks := factory.Marina().V1alpha1().Docks()
	// Each watch buffers 1000 changes; one that falls further behind (a client that stopped
	// reading) misses changes rather than holding up the informers and the other watches.
	changes := watch.NewBroadcaster(1000, watch.DropIfChannelFull)
	if _, err := docks.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { b.dockChanged(watch.Added, obj) },
		UpdateFunc: func(_, obj any) { b.dockChanged(watch.Modified, obj) },
		DeleteFunc: func(obj any) { b.dockChanged(watch.Deleted, obj) },
	}); err != nil {
		return err
	}
	// Of each Boat the index keeps only its key, dock and resourceVersion (about 100 bytes),
	// so that the server holds its Boats once, in its watch cache, and not a second time in an
	// informer's.
	boats := newBoatsAtDocks(b.boatsMoved)
	reflector := boatReflector(cs, boats)
	factory.Start(ctx.Done())
	go reflector.RunWithContext(ctx)
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("the %v cache did not sync", typ)
		}
	}
	select {
	case <-boats.synced:
	case <-ctx.Done():
		return fmt.Errorf("the Boat index did not sync: %w", ctx.Err())
	}
	b.mu.Lock()
	b.docks, b.boats, b.changes = docks.Lister(), boats, changes
	b.mu.Unlock()
	go func() {
		<-ctx.Done()
		factory.Shutdown()
		changes.Shutdown()
	}()
	return nil
}

// boatReflector returns the reflector that keeps boats current with every Boat of the
// server.
func boatReflector(cs versioned.Interface, boats *boatsAtDocks) *cache.Reflector {
	return cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return cs.MarinaV1alpha1().Boats("").List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return cs.MarinaV1alpha1().Boats("").Watch(ctx, opts)
		},
	}, cs), &marinav1alpha1.Boat{}, boats, cache.ReflectorOptions{Name: "dockoccupancy-boats"})
}

// started returns the Dock lister, the Boat index and the broadcaster, or a 503 before Start
// has synced them.
func (b *Backend) started() (marinalisters.DockLister, *boatsAtDocks, *watch.Broadcaster, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.docks == nil {
		return nil, nil, nil, apierrors.NewServiceUnavailable("dock occupancies are not computed yet: the server is starting")
	}
	return b.docks, b.boats, b.changes, nil
}

// Get returns the occupancy of the dock named name.
func (b *Backend) Get(_ context.Context, _, name string) (*marinav1alpha1.DockOccupancy, error) {
	docks, boats, _, err := b.started()
	if err != nil {
		return nil, err
	}
	dock, err := docks.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("no dock %q: %w", name, backend.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return occupancy(dock, boats.at(name)), nil
}

// List returns the occupancy of every dock.
func (b *Backend) List(_ context.Context, _ string) ([]*marinav1alpha1.DockOccupancy, error) {
	docks, boats, _, err := b.started()
	if err != nil {
		return nil, err
	}
	ds, err := docks.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]*marinav1alpha1.DockOccupancy, 0, len(ds))
	for _, d := range ds {
		out = append(out, occupancy(d, boats.at(d.Name)))
	}
	return out, nil
}

// Watch reports the occupancies that change from now on. Occupancies are computed, not
// stored, so there is no history to replay from resourceVersion: the watch starts with the
// occupancies whose inputs changed after it (as MODIFIED), so that a client that listed at
// resourceVersion and then watches from there misses no change in between (a dock deleted in
// between is not reported).
func (b *Backend) Watch(ctx context.Context, _, resourceVersion string) (watch.Interface, error) {
	_, _, changes, err := b.started()
	if err != nil {
		return nil, err
	}
	from := parseRV(resourceVersion)
	if from == 0 {
		return changes.Watch()
	}
	current, err := b.List(ctx, "")
	if err != nil {
		return nil, err
	}
	var newer []watch.Event
	for _, o := range current {
		if parseRV(o.ResourceVersion) > from {
			newer = append(newer, watch.Event{Type: watch.Modified, Object: o})
		}
	}
	return changes.WatchWithPrefix(newer)
}

// dockChanged tells the watches about the occupancy of a dock that was added, changed or
// deleted.
func (b *Backend) dockChanged(typ watch.EventType, obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	dock, ok := obj.(*marinav1alpha1.Dock)
	if !ok {
		return
	}
	_, boats, changes, err := b.started()
	if err != nil {
		return // not started yet: the first list computes it
	}
	_ = changes.Action(typ, occupancy(dock, boats.at(dock.Name)))
}

// boatsMoved tells the watches about the occupancy of the docks whose boats changed (a
// boat's old and new dock, say).
func (b *Backend) boatsMoved(names []string) {
	docks, _, _, err := b.started()
	if err != nil {
		return // not started yet: the first list computes it
	}
	for _, name := range names {
		dock, err := docks.Get(name)
		if err != nil {
			continue // a boat at a dock that does not exist
		}
		b.dockChanged(watch.Modified, dock)
	}
}

// occupancy computes the occupancy of dock from the boats that berth at it. Its
// resourceVersion is the largest of the dock's and its boats', so that it changes whenever
// they do.
func occupancy(dock *marinav1alpha1.Dock, boats berthed) *marinav1alpha1.DockOccupancy {
	o := &marinav1alpha1.DockOccupancy{
		ObjectMeta: metav1.ObjectMeta{
			Name:              dock.Name,
			CreationTimestamp: dock.CreationTimestamp,
			Labels:            map[string]string{},
		},
		Berths: dock.Spec.Berths,
		Boats:  boats.keys,
	}
	for k, v := range dock.Labels {
		o.Labels[k] = v
	}
	o.Occupied = int32(len(o.Boats))
	o.Free = o.Berths - o.Occupied
	o.Full = o.Free <= 0
	o.Labels[FullLabel] = strconv.FormatBool(o.Full)
	o.ResourceVersion = strconv.FormatUint(max(parseRV(dock.ResourceVersion), boats.resourceVersion), 10)
	return o
}

func parseRV(rv string) uint64 {
	n, _ := strconv.ParseUint(rv, 10, 64)
	return n
}

// boatsAtDocks is the Boat reflector's store: which boats berth at which dock. Of a boat it
// keeps its key (namespace/name), its dock and its resourceVersion, all that occupancy reads
// (two map entries and the key, about 100 bytes a boat).
// After each change it calls moved, outside its lock, with the docks whose boats changed.
type boatsAtDocks struct {
	moved func(docks []string)
	// synced is closed by the first Replace (the reflector's first list).
	synced   chan struct{}
	syncOnce sync.Once

	mu sync.RWMutex
	// dockOf is a boat's dock by the boat's key; docks the boats at a dock by its name.
	// A dock without boats, and a boat without a dock, are in neither.
	dockOf map[string]*dockBoats
	docks  map[string]*dockBoats
}

// dockBoats are the boats at the dock name: the resourceVersion of each by its key.
type dockBoats struct {
	name  string
	boats map[string]uint64
}

// berthed is what occupancy reads of the boats at a dock: their keys, sorted, and the
// largest of their resourceVersions.
type berthed struct {
	keys            []string
	resourceVersion uint64
}

var _ cache.TransformingStore = &boatsAtDocks{}

func newBoatsAtDocks(moved func(docks []string)) *boatsAtDocks {
	return &boatsAtDocks{moved: moved, synced: make(chan struct{}), dockOf: map[string]*dockBoats{}, docks: map[string]*dockBoats{}}
}

// at returns the boats at dock.
func (s *boatsAtDocks) at(dock string) berthed {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d := s.docks[dock]
	if d == nil {
		return berthed{}
	}
	out := berthed{keys: make([]string, 0, len(d.boats))}
	for key, rv := range d.boats {
		out.keys = append(out.keys, key)
		out.resourceVersion = max(out.resourceVersion, rv)
	}
	slices.Sort(out.keys)
	return out
}

// Add berths a Boat that was created.
func (s *boatsAtDocks) Add(obj any) error { return s.Update(obj) }

// Update berths a Boat that changed, at its dock now.
func (s *boatsAtDocks) Update(obj any) error {
	boat, err := asBoat(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	moved := s.put(boat.Namespace+"/"+boat.Name, boat.Spec.Dock, parseRV(boat.ResourceVersion))
	s.mu.Unlock()
	s.moved(moved)
	return nil
}

// Delete removes a Boat that was deleted from its dock.
func (s *boatsAtDocks) Delete(obj any) error {
	boat, err := asBoat(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	moved := s.put(boat.Namespace+"/"+boat.Name, "", 0)
	s.mu.Unlock()
	s.moved(moved)
	return nil
}

// Replace berths the Boats of a list, and only those.
func (s *boatsAtDocks) Replace(list []any, _ string) error {
	boats := make([]*marinav1alpha1.Boat, 0, len(list))
	for _, obj := range list {
		boat, err := asBoat(obj)
		if err != nil {
			return err
		}
		boats = append(boats, boat)
	}
	s.mu.Lock()
	before := s.docks
	s.dockOf, s.docks = make(map[string]*dockBoats, len(boats)), map[string]*dockBoats{}
	for _, boat := range boats {
		s.put(boat.Namespace+"/"+boat.Name, boat.Spec.Dock, parseRV(boat.ResourceVersion))
	}
	var moved []string
	for name, d := range before {
		if now := s.docks[name]; now == nil || !maps.Equal(d.boats, now.boats) {
			moved = append(moved, name)
		}
	}
	for name := range s.docks {
		if before[name] == nil {
			moved = append(moved, name)
		}
	}
	s.mu.Unlock()
	s.syncOnce.Do(func() { close(s.synced) })
	slices.Sort(moved)
	s.moved(moved)
	return nil
}

// Resync does nothing: there is nothing to resend.
func (s *boatsAtDocks) Resync() error { return nil }

// Transformer is what the reflector applies to the Boats of a streamed list (a watch with
// sendInitialEvents) while it gathers them before Replace, so that not even a first list or
// a relist holds whole Boats (cache.TransformingStore).
func (s *boatsAtDocks) Transformer() cache.TransformFunc { return slimBoat }

// slimBoat keeps of a Boat what the index reads: its name, namespace, resourceVersion and
// dock. Anything else is kept as it is.
func slimBoat(obj any) (any, error) {
	boat, ok := obj.(*marinav1alpha1.Boat)
	if !ok {
		return obj, nil
	}
	return &marinav1alpha1.Boat{
		ObjectMeta: metav1.ObjectMeta{Name: boat.Name, Namespace: boat.Namespace, ResourceVersion: boat.ResourceVersion},
		Spec:       marinav1alpha1.BoatSpec{Dock: boat.Spec.Dock},
	}, nil
}

// put berths the boat key at dock, or at none when dock is "", and returns the docks whose
// boats changed. The caller holds s.mu.
func (s *boatsAtDocks) put(key, dock string, resourceVersion uint64) []string {
	var moved []string
	if old := s.dockOf[key]; old != nil && old.name != dock {
		delete(old.boats, key)
		if len(old.boats) == 0 {
			delete(s.docks, old.name)
		}
		delete(s.dockOf, key)
		moved = append(moved, old.name)
	}
	if dock == "" {
		return moved
	}
	d := s.docks[dock]
	if d == nil {
		d = &dockBoats{name: dock, boats: map[string]uint64{}}
		s.docks[dock] = d
	}
	d.boats[key] = resourceVersion
	s.dockOf[key] = d
	return append(moved, dock)
}

// asBoat is the Boat obj is (a reflector hands its store the objects of list and watch,
// never a tombstone).
func asBoat(obj any) (*marinav1alpha1.Boat, error) {
	boat, ok := obj.(*marinav1alpha1.Boat)
	if !ok {
		return nil, fmt.Errorf("the index of Boats at docks was given a %T, not a Boat", obj)
	}
	return boat, nil
}
