// This file is yours: aagen created it once and never overwrites it.

package dockoccupancy

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
// Dock, computed from the server's own Docks and Boats, which it reads through informers on
// the loopback client once the server runs (Start). It serves get, list and watch.
func NewBackend() (backend.Reader[*marinav1alpha1.DockOccupancy], error) {
	return &Backend{}, nil
}

// Backend computes DockOccupancies from the Docks and Boats in the server's informer caches.
type Backend struct {
	mu sync.RWMutex
	// docks and boats are the listers of the informer caches; nil until Start has synced them.
	docks marinalisters.DockLister
	boats marinalisters.BoatLister
	// changes sends every recomputed occupancy to the watches.
	changes *watch.Broadcaster
}

var (
	_ backend.Reader[*marinav1alpha1.DockOccupancy] = &Backend{}
	_ backend.Watcher                               = &Backend{}
	_ backend.Starter                               = &Backend{}
)

// Start reads Docks and Boats through informers on the server's loopback client, and tells
// the watches about the occupancies that change with each Dock or Boat event. It returns once
// the caches are synced (the server is not ready before).
func (b *Backend) Start(ctx context.Context, loopback *clientrest.Config) error {
	cs, err := versioned.NewForConfig(loopback)
	if err != nil {
		return err
	}
	factory := externalversions.NewSharedInformerFactory(cs, 0)
	docks := factory.Marina().V1alpha1().Docks()
	boats := factory.Marina().V1alpha1().Boats()
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
	// The cache keeps of each Boat only what occupancy reads, so that the server holds its
	// Boats once (in its watch cache), not twice.
	if err := boats.Informer().SetTransform(boatInDock); err != nil {
		return err
	}
	if _, err := boats.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { b.boatChanged(obj) },
		UpdateFunc: func(old, obj any) { b.boatChanged(old, obj) },
		DeleteFunc: func(obj any) { b.boatChanged(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("the %v cache did not sync", typ)
		}
	}
	b.mu.Lock()
	b.docks, b.boats, b.changes = docks.Lister(), boats.Lister(), changes
	b.mu.Unlock()
	go func() {
		<-ctx.Done()
		factory.Shutdown()
		changes.Shutdown()
	}()
	return nil
}

// boatInDock is the informer's transform of a Boat: its name, namespace, uid,
// resourceVersion and dock, what occupancy and boatChanged read. Anything else (a
// tombstone of a deleted Boat) is kept as it is.
func boatInDock(obj any) (any, error) {
	boat, ok := obj.(*marinav1alpha1.Boat)
	if !ok {
		return obj, nil
	}
	return &marinav1alpha1.Boat{
		ObjectMeta: metav1.ObjectMeta{Name: boat.Name, Namespace: boat.Namespace, UID: boat.UID, ResourceVersion: boat.ResourceVersion},
		Spec:       marinav1alpha1.BoatSpec{Dock: boat.Spec.Dock},
	}, nil
}

// listers returns the listers, or a 503 before Start has synced them.
func (b *Backend) listers() (marinalisters.DockLister, marinalisters.BoatLister, *watch.Broadcaster, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.docks == nil {
		return nil, nil, nil, apierrors.NewServiceUnavailable("dock occupancies are not computed yet: the server is starting")
	}
	return b.docks, b.boats, b.changes, nil
}

// Get returns the occupancy of the dock named name.
func (b *Backend) Get(_ context.Context, _, name string) (*marinav1alpha1.DockOccupancy, error) {
	docks, boats, _, err := b.listers()
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
	all, err := boats.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return occupancy(dock, all), nil
}

// List returns the occupancy of every dock.
func (b *Backend) List(_ context.Context, _ string) ([]*marinav1alpha1.DockOccupancy, error) {
	docks, boats, _, err := b.listers()
	if err != nil {
		return nil, err
	}
	ds, err := docks.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	all, err := boats.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]*marinav1alpha1.DockOccupancy, 0, len(ds))
	for _, d := range ds {
		out = append(out, occupancy(d, all))
	}
	return out, nil
}

// Watch reports the occupancies that change from now on. Occupancies are computed, not
// stored, so there is no history to replay from resourceVersion: the watch starts with the
// occupancies whose inputs changed after it (as MODIFIED), so that a client that listed at
// resourceVersion and then watches from there misses no change in between (a dock deleted in
// between is not reported).
func (b *Backend) Watch(ctx context.Context, _, resourceVersion string) (watch.Interface, error) {
	_, _, changes, err := b.listers()
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
	_, boats, changes, err := b.listers()
	if err != nil {
		return // not started yet: the first list computes it
	}
	all, err := boats.List(labels.Everything())
	if err != nil {
		return
	}
	_ = changes.Action(typ, occupancy(dock, all))
}

// boatChanged tells the watches about the occupancy of the docks of the boats given (a
// boat's old and new version, which may name different docks).
func (b *Backend) boatChanged(objs ...any) {
	docks, _, _, err := b.listers()
	if err != nil {
		return
	}
	var names []string
	for _, obj := range objs {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if boat, ok := obj.(*marinav1alpha1.Boat); ok && !slices.Contains(names, boat.Spec.Dock) {
			names = append(names, boat.Spec.Dock)
		}
	}
	for _, name := range names {
		dock, err := docks.Get(name)
		if err != nil {
			continue // a boat at a dock that does not exist
		}
		b.dockChanged(watch.Modified, dock)
	}
}

// occupancy computes the occupancy of dock from every boat. Its resourceVersion is the
// largest of the dock's and its boats', so that it changes whenever they do.
func occupancy(dock *marinav1alpha1.Dock, boats []*marinav1alpha1.Boat) *marinav1alpha1.DockOccupancy {
	o := &marinav1alpha1.DockOccupancy{
		ObjectMeta: metav1.ObjectMeta{
			Name:              dock.Name,
			CreationTimestamp: dock.CreationTimestamp,
			Labels:            map[string]string{},
		},
		Berths: dock.Spec.Berths,
	}
	for k, v := range dock.Labels {
		o.Labels[k] = v
	}
	rv := parseRV(dock.ResourceVersion)
	for _, boat := range boats {
		if boat.Spec.Dock != dock.Name {
			continue
		}
		o.Boats = append(o.Boats, boat.Namespace+"/"+boat.Name)
		rv = max(rv, parseRV(boat.ResourceVersion))
	}
	slices.Sort(o.Boats)
	o.Occupied = int32(len(o.Boats))
	o.Free = o.Berths - o.Occupied
	o.Full = o.Free <= 0
	o.Labels[FullLabel] = strconv.FormatBool(o.Full)
	o.ResourceVersion = strconv.FormatUint(rv, 10)
	return o
}

func parseRV(rv string) uint64 {
	n, _ := strconv.ParseUint(rv, 10, 64)
	return n
}
