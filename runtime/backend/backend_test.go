package backend

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

var configmaps = schema.GroupResource{Group: "test.example.com", Resource: "configmaps"}

// memory is a read-write, watchable backend in memory with resourceVersions.
type memory struct {
	mu      sync.Mutex
	rv      int64
	objs    map[string]*corev1.ConfigMap
	watches []*watch.RaceFreeFakeWatcher
}

func newMemory() *memory { return &memory{objs: map[string]*corev1.ConfigMap{}} }

func key(ns, name string) string { return ns + "/" + name }

func (m *memory) Get(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[key(ns, name)]
	if !ok {
		return nil, fmt.Errorf("configmap %s: %w", key(ns, name), ErrNotFound)
	}
	return o.DeepCopy(), nil
}

func (m *memory) List(_ context.Context, ns string) ([]*corev1.ConfigMap, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*corev1.ConfigMap
	for _, o := range m.objs {
		if ns == "" || o.Namespace == ns {
			out = append(out, o.DeepCopy())
		}
	}
	return out, nil
}

func (m *memory) Watch(ctx context.Context, ns, _ string) (watch.Interface, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := watch.NewRaceFreeFake()
	m.watches = append(m.watches, w)
	return w, nil
}

// store writes o under the lock and tells the watchers; m.mu is held.
func (m *memory) store(typ watch.EventType, o *corev1.ConfigMap) *corev1.ConfigMap {
	m.rv++
	o.ResourceVersion = strconv.FormatInt(m.rv, 10)
	if typ == watch.Deleted {
		delete(m.objs, key(o.Namespace, o.Name))
	} else {
		m.objs[key(o.Namespace, o.Name)] = o.DeepCopy()
	}
	for _, w := range m.watches {
		w.Action(typ, o.DeepCopy())
	}
	return o
}

func (m *memory) Create(_ context.Context, o *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objs[key(o.Namespace, o.Name)]; ok {
		return nil, ErrAlreadyExists
	}
	return m.store(watch.Added, o.DeepCopy()), nil
}

func (m *memory) Update(_ context.Context, o *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.objs[key(o.Namespace, o.Name)]
	if !ok {
		return nil, ErrNotFound
	}
	if cur.ResourceVersion != o.ResourceVersion {
		return nil, fmt.Errorf("resourceVersion %s, stored %s: %w", o.ResourceVersion, cur.ResourceVersion, ErrConflict)
	}
	return m.store(watch.Modified, o.DeepCopy()), nil
}

func (m *memory) Delete(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.objs[key(ns, name)]
	if !ok {
		return nil, ErrNotFound
	}
	return m.store(watch.Deleted, cur.DeepCopy()), nil
}

// computed is a read-only backend: get and list only.
type computed struct{ m *memory }

func (c computed) Get(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	return c.m.Get(ctx, ns, name)
}
func (c computed) List(ctx context.Context, ns string) ([]*corev1.ConfigMap, error) {
	return c.m.List(ctx, ns)
}

// watchable is a read-only backend that also watches.
type watchable struct{ computed }

func (w watchable) Watch(ctx context.Context, ns, rv string) (watch.Interface, error) {
	return w.m.Watch(ctx, ns, rv)
}

func config(b Reader[*corev1.ConfigMap]) Config[*corev1.ConfigMap] {
	return Config[*corev1.ConfigMap]{
		Resource: configmaps, SingularName: "configmap", NamespaceScoped: true,
		NewFunc:          func() *corev1.ConfigMap { return &corev1.ConfigMap{} },
		NewListFunc:      func() runtime.Object { return &corev1.ConfigMapList{} },
		SelectableFields: func(o *corev1.ConfigMap) fields.Set { return fields.Set{"data.colour": mapGet(o, "colour")} },
		Backend:          b,
	}
}

func mapGet(o *corev1.ConfigMap, k string) string {
	if o == nil {
		return ""
	}
	return o.Data[k]
}

func cm(name, colour string, lbls map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}, Data: map[string]string{"colour": colour}}
}

// TestVerbs: the storage implements exactly the rest interfaces of what the backend
// implements, which is what the apiserver's discovery verbs and routes (405 otherwise) follow.
// Patch comes with get and update (rest.Patcher is the two); deletecollection is never served.
func TestVerbs(t *testing.T) {
	for _, c := range []struct {
		name         string
		backend      Reader[*corev1.ConfigMap]
		watch, write bool
	}{
		{"read-only", computed{newMemory()}, false, false},
		{"read-only-watch", watchable{computed{newMemory()}}, true, false},
		{"read-write-watch", newMemory(), true, true},
	} {
		s, err := New(config(c.backend))
		if err != nil {
			t.Fatal(err)
		}
		_, getter := s.(rest.Getter)
		_, lister := s.(rest.Lister)
		_, watcher := s.(rest.Watcher)
		_, creater := s.(rest.Creater)
		_, updater := s.(rest.Updater)
		_, deleter := s.(rest.GracefulDeleter)
		_, collectionDeleter := s.(rest.CollectionDeleter)
		_, patcher := s.(rest.Patcher)
		if !getter || !lister || watcher != c.watch || creater != c.write || updater != c.write || deleter != c.write || collectionDeleter || patcher != c.write {
			t.Errorf("%s: get %v list %v watch %v create %v update %v delete %v deletecollection %v", c.name, getter, lister, watcher, creater, updater, deleter, collectionDeleter)
		}
	}
}

func TestReadWrite(t *testing.T) {
	m := newMemory()
	s, err := New(config(m))
	if err != nil {
		t.Fatal(err)
	}
	ctx := genericapirequest.WithNamespace(context.Background(), "harbour")
	creater, getter, lister := s.(rest.Creater), s.(rest.Getter), s.(rest.Lister)
	updater, deleter, watcher := s.(rest.Updater), s.(rest.GracefulDeleter), s.(rest.Watcher)

	w, err := watcher.Watch(ctx, &metainternalversion.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"watched": "yes"})})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	created, err := creater.Create(ctx, cm("a", "red", map[string]string{"watched": "yes"}), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := created.(*corev1.ConfigMap)
	if a.Namespace != "harbour" || a.UID == "" || a.ResourceVersion != "1" || a.CreationTimestamp.IsZero() {
		t.Errorf("created: %+v", a.ObjectMeta)
	}
	if _, err := creater.Create(ctx, cm("a", "red", nil), nil, nil); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: want 409 AlreadyExists, got %v", err)
	}
	if _, err := creater.Create(ctx, cm("b", "blue", nil), nil, nil); err != nil {
		t.Fatal(err)
	}

	// Update with the current resourceVersion, then with the stale one: 409.
	next := a.DeepCopy()
	next.Data["colour"] = "green"
	updated, _, err := updater.Update(ctx, "a", rest.DefaultUpdatedObjectInfo(next), nil, rest.ValidateAllObjectUpdateFunc, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := updated.(*corev1.ConfigMap); got.ResourceVersion != "3" || got.UID != a.UID {
		t.Errorf("updated: %+v", got.ObjectMeta)
	}
	stale := a.DeepCopy()
	stale.Data["colour"] = "black"
	_, _, err = updater.Update(ctx, "a", rest.DefaultUpdatedObjectInfo(stale), nil, nil, false, nil)
	if !apierrors.IsConflict(err) {
		t.Fatalf("update with a stale resourceVersion: want 409 Conflict, got %v", err)
	}
	if status := err.(apierrors.APIStatus).Status(); status.Details == nil || status.Details.Name != "a" || status.Details.Group != configmaps.Group {
		t.Errorf("conflict Status details: %+v", status.Details)
	}

	// Selectors.
	for _, c := range []struct {
		opts metainternalversion.ListOptions
		want int
	}{
		{metainternalversion.ListOptions{}, 2},
		{metainternalversion.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"watched": "yes"})}, 1},
		{metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("data.colour", "blue")}, 1},
		{metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "a")}, 1},
		{metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("data.colour", "red")}, 0},
	} {
		list, err := lister.List(ctx, &c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(list.(*corev1.ConfigMapList).Items); n != c.want {
			t.Errorf("list %v %v: %d items, want %d", c.opts.LabelSelector, c.opts.FieldSelector, n, c.want)
		}
	}
	if _, err := lister.List(ctx, &metainternalversion.ListOptions{FieldSelector: fields.OneTermEqualSelector("data.size", "1")}); !apierrors.IsBadRequest(err) {
		t.Errorf("unknown field selector: want 400, got %v", err)
	}
	list, _ := lister.List(ctx, &metainternalversion.ListOptions{})
	if rv := list.(*corev1.ConfigMapList).ResourceVersion; rv != "3" {
		t.Errorf("list resourceVersion %q, want 3", rv)
	}
	if _, err := lister.ConvertToTable(ctx, list, nil); err != nil {
		t.Errorf("table: %v", err)
	}

	// Delete: a stale resourceVersion precondition is a 409; then 200 and 404.
	staleRV := "1"
	if _, _, err := deleter.Delete(ctx, "a", nil, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &staleRV}}); !apierrors.IsConflict(err) {
		t.Errorf("delete with a stale precondition: want 409, got %v", err)
	}
	if _, done, err := deleter.Delete(ctx, "a", rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}); err != nil || !done {
		t.Fatalf("delete: %v %v", done, err)
	}
	if _, err := getter.Get(ctx, "a", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: want 404, got %v", err)
	}

	// The watch saw a's life and nothing of b (label selector).
	for _, want := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted} {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != want || ev.Object.(*corev1.ConfigMap).Name != "a" {
				t.Fatalf("watch: %s %s, want %s a", ev.Type, ev.Object.(*corev1.ConfigMap).Name, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("watch: no %s event", want)
		}
	}
}

func TestReadOnlyNotFound(t *testing.T) {
	s, err := New(config(computed{newMemory()}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.(rest.Getter).Get(genericapirequest.WithNamespace(context.Background(), "x"), "nope", &metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("want 404, got %v", err)
	}
	if d := err.(apierrors.APIStatus).Status().Details; d == nil || d.Kind != "configmaps" || d.Name != "nope" {
		t.Errorf("404 Status details: %+v", d)
	}
}
