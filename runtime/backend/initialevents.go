package backend

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// sendsInitialEvents reports whether a watch starts with the current objects: when it asks
// for them (sendInitialEvents=true: client-go's reflectors do, for informers, when the
// WatchList feature is on), and, as a watch on etcd storage does, when it gives no
// resourceVersion ("get state and start at most recent").
func sendsInitialEvents(opts *metainternalversion.ListOptions) bool {
	if opts == nil {
		return true
	}
	if opts.SendInitialEvents != nil {
		return *opts.SendInitialEvents
	}
	return opts.ResourceVersion == ""
}

// withInitialEvents returns a watch that sends an ADDED event for every object of the list
// the reader returns for opts (with its selectors), then, when the watch asked for initial
// events and bookmarks, the bookmark that ends the initial events (annotated
// k8s.io/initial-events-end, with the list's resourceVersion), then the events of changes.
// changes must be opened before the list is read, so that nothing changes unseen between the
// two.
func (w watching[T]) withInitialEvents(ctx context.Context, opts *metainternalversion.ListOptions, changes watch.Interface) (watch.Interface, error) {
	var listOpts metainternalversion.ListOptions
	if opts != nil {
		listOpts = *opts
	}
	listOpts.ResourceVersion, listOpts.ResourceVersionMatch, listOpts.SendInitialEvents = "", "", nil
	list, err := w.r.List(ctx, &listOpts)
	if err != nil {
		changes.Stop()
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		changes.Stop()
		return nil, err
	}
	rv := ""
	if lm, err := meta.ListAccessor(list); err == nil {
		rv = lm.GetResourceVersion()
	}
	var bookmark runtime.Object
	if opts != nil && opts.SendInitialEvents != nil && opts.AllowWatchBookmarks {
		b := w.r.cfg.NewFunc()
		b.SetResourceVersion(rv)
		b.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		bookmark = b
	}
	out := &initialEvents{changes: changes, result: make(chan watch.Event), done: make(chan struct{})}
	go out.run(items, bookmark)
	return out, nil
}

// initialEvents is the watch withInitialEvents returns.
type initialEvents struct {
	changes  watch.Interface
	result   chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
}

func (w *initialEvents) run(items []runtime.Object, bookmark runtime.Object) {
	defer close(w.result)
	defer w.changes.Stop()
	send := func(ev watch.Event) bool {
		select {
		case w.result <- ev:
			return true
		case <-w.done:
			return false
		}
	}
	for _, item := range items {
		if !send(watch.Event{Type: watch.Added, Object: item}) {
			return
		}
	}
	if bookmark != nil && !send(watch.Event{Type: watch.Bookmark, Object: bookmark}) {
		return
	}
	for {
		select {
		case ev, ok := <-w.changes.ResultChan():
			if !ok || !send(ev) {
				return
			}
		case <-w.done:
			return
		}
	}
}

// ResultChan returns the events.
func (w *initialEvents) ResultChan() <-chan watch.Event { return w.result }

// Stop ends the watch.
func (w *initialEvents) Stop() { w.stopOnce.Do(func() { close(w.done) }) }
