package server

import (
	"context"
	"net/http"
	"sync"

	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// watchEnds ends the watches the server serves on demand: when the group is handed back
// to its CRDs (objectimport.State.HandedBack), a watch kept open here would see no event
// again, so each is ended and its client (an informer's reflector) watches again, through
// kube-apiserver, on the CRDs.
type watchEnds struct {
	mu  sync.Mutex
	end chan struct{}
}

func newWatchEnds() *watchEnds { return &watchEnds{end: make(chan struct{})} }

// current is closed when the watches open now are to end.
func (e *watchEnds) current() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.end
}

// endAll ends every watch open now; later watches are not affected.
func (e *watchEnds) endAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	close(e.end)
	e.end = make(chan struct{})
}

// withWatchEnds gives each watch request a context that endAll cancels: the watch handler
// then ends the response as it does at its timeout, and the client watches again from its
// last resourceVersion.
func withWatchEnds(h http.Handler, ends *watchEnds) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		info, ok := genericapirequest.RequestInfoFrom(req.Context())
		if !ok || !info.IsResourceRequest || info.Verb != "watch" {
			h.ServeHTTP(w, req)
			return
		}
		ctx, cancel := context.WithCancel(req.Context())
		defer cancel()
		end := ends.current()
		go func() {
			select {
			case <-end:
				cancel()
			case <-ctx.Done():
			}
		}()
		h.ServeHTTP(w, req.WithContext(ctx))
	})
}
