package registry

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// Watches resume across a restart of the server.
//
// The watch cache of k8s.io/apiserver starts with a list of the current state, so after a
// restart (or once its history window has passed) a watch from an earlier resourceVersion
// gets 410 Gone from it, and every informer relists everything, although etcd still has the
// events it asks for. resumingGetter decorates each store so that such a watch is served
// from etcd directly instead: it resumes exactly where it left off, without missing an
// event, as long as etcd has not compacted that revision; after a compaction etcd answers
// 410 Gone and clients relist, as always.

// resumingGetter wraps the RESTOptionsGetter of a store (see above).
type resumingGetter struct {
	generic.RESTOptionsGetter
}

func (g resumingGetter) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := g.RESTOptionsGetter.GetRESTOptions(resource, example)
	if err != nil || opts.Decorator == nil {
		return opts, err
	}
	decorate := opts.Decorator
	opts.Decorator = func(config *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(runtime.Object) (string, error),
		newFunc, newListFunc func() runtime.Object, attrs storage.AttrFunc, triggers storage.IndexerFuncs, indexers *cache.Indexers,
	) (storage.Interface, factory.DestroyFunc, error) {
		s, destroy, err := decorate(config, resourcePrefix, keyFunc, newFunc, newListFunc, attrs, triggers, indexers)
		if err != nil {
			return s, destroy, err
		}
		r := &resumingStorage{Interface: s, newDirect: func() (storage.Interface, factory.DestroyFunc, error) {
			return generic.NewRawStorage(config, newFunc, newListFunc, resourcePrefix)
		}}
		return r, func() { destroy(); r.close() }, nil
	}
	return opts, nil
}

// resumingStorage serves watches the watch cache answers with 410 Gone from etcd.
type resumingStorage struct {
	storage.Interface
	newDirect func() (storage.Interface, factory.DestroyFunc, error)

	mu      sync.Mutex
	direct  storage.Interface // created on the first such watch
	destroy factory.DestroyFunc
}

func (s *resumingStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	w, err := s.Interface.Watch(ctx, key, opts)
	if err != nil || opts.ResourceVersion == "" || opts.ResourceVersion == "0" {
		return w, err
	}
	// The watch cache answers a resourceVersion it no longer holds with a watch whose
	// first event, ready at once, is the 410 error. An event that is ready at once but is
	// not that error is handed back in front of the rest (prepend): a goroutine and a
	// channel hop more for that watch, accepted for the rare watch whose events are
	// already queued when Watch returns.
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			return w, nil
		}
		if ev.Type == watch.Error && gone(ev.Object) {
			direct, err := s.directStorage()
			if err == nil {
				w.Stop()
				return direct.Watch(ctx, key, opts)
			}
		}
		return prepend(ev, w), nil
	default:
		return w, nil
	}
}

func gone(obj runtime.Object) bool {
	err := apierrors.FromObject(obj)
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

func (s *resumingStorage) directStorage() (storage.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.direct == nil {
		direct, destroy, err := s.newDirect()
		if err != nil {
			return nil, err
		}
		s.direct, s.destroy = direct, destroy
	}
	return s.direct, nil
}

func (s *resumingStorage) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.destroy != nil {
		s.destroy()
		s.direct, s.destroy = nil, nil
	}
}

// prepended is a watch whose first event was already read from w.
type prepended struct {
	w    watch.Interface
	ch   chan watch.Event
	stop chan struct{}
	once sync.Once
}

func prepend(first watch.Event, w watch.Interface) watch.Interface {
	p := &prepended{w: w, ch: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(p.ch)
		select {
		case p.ch <- first:
		case <-p.stop:
			return
		}
		for ev := range w.ResultChan() {
			select {
			case p.ch <- ev:
			case <-p.stop:
				return
			}
		}
	}()
	return p
}

func (p *prepended) ResultChan() <-chan watch.Event { return p.ch }

func (p *prepended) Stop() {
	p.once.Do(func() {
		close(p.stop)
		p.w.Stop()
	})
}
