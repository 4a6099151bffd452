package server

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// goroutineID is the number runtime.Stack prints for the calling goroutine.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	return string(bytes.Fields(buf)[1])
}

func shortRequest(verb string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/apis/g/v1/namespaces/ns/things/a", nil)
	return r.WithContext(genericapirequest.WithRequestInfo(r.Context(), &genericapirequest.RequestInfo{IsResourceRequest: true, Verb: verb}))
}

func isWatch(_ *http.Request, info *genericapirequest.RequestInfo) bool { return info.Verb == "watch" }

// A short request's handler runs on a worker; a long-running one, and one without request
// info, where it is.
func TestHandlerWorkersRunShortRequestsOnAWorker(t *testing.T) {
	p := newHandlerWorkers()
	var ran string
	h := withHandlerWorkers(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran = goroutineID()
		w.WriteHeader(http.StatusTeapot)
	}), p, isWatch)
	for _, tc := range []struct {
		name     string
		req      *http.Request
		onWorker bool
	}{
		{"get", shortRequest("get"), true},
		{"watch", shortRequest("watch"), false},
		{"no request info", httptest.NewRequest(http.MethodGet, "/healthz", nil), false},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, tc.req)
		if rec.Code != http.StatusTeapot {
			t.Errorf("%s: status %d, want the handler's", tc.name, rec.Code)
		}
		if onWorker := ran != goroutineID(); onWorker != tc.onWorker {
			t.Errorf("%s: ran on a worker: %v, want %v", tc.name, onWorker, tc.onWorker)
		}
	}
}

func panickingHandler(value any) http.Handler {
	return http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(value) })
}

// A panic in the handler is raised again on the caller: http.ErrAbortHandler as it is,
// another value with the stack where the handler panicked; the worker goes on.
func TestHandlerWorkersRaisePanicsOnTheCaller(t *testing.T) {
	p := newHandlerWorkers()
	boom := errors.New("boom")
	for _, value := range []any{http.ErrAbortHandler, boom, "text"} {
		h := withHandlerWorkers(panickingHandler(value), p, isWatch)
		got := func() (got any) {
			defer func() { got = recover() }()
			h.ServeHTTP(httptest.NewRecorder(), shortRequest("get"))
			return nil
		}()
		if value == http.ErrAbortHandler {
			if got != value {
				t.Errorf("recovered %v, want http.ErrAbortHandler itself", got)
			}
			continue
		}
		text := fmt.Sprint(got)
		if !strings.HasPrefix(text, fmt.Sprint(value)) || !strings.Contains(text, "panickingHandler") {
			t.Errorf("recovered %q, want the value and the handler's stack", text)
		}
		if err, ok := value.(error); ok && !errors.Is(got.(error), err) {
			t.Errorf("recovered %v, which does not wrap %v", got, err)
		}
	}
	var n int
	withHandlerWorkers(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n++ }), p, isWatch).ServeHTTP(httptest.NewRecorder(), shortRequest("get"))
	if n != 1 || p.workers != 1 {
		t.Errorf("after the panics: handler ran %d times on %d workers, want 1 and 1", n, p.workers)
	}
}

// runtime.Goexit in the handler ends the caller too, and that worker.
func TestHandlerWorkersGoexit(t *testing.T) {
	p := newHandlerWorkers()
	h := withHandlerWorkers(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { runtime.Goexit() }), p, isWatch)
	after := false
	var wg sync.WaitGroup
	wg.Go(func() {
		h.ServeHTTP(httptest.NewRecorder(), shortRequest("get"))
		after = true
	})
	wg.Wait()
	if after {
		t.Error("the caller went on after the handler's Goexit")
	}
	// The worker tells the caller before its own goroutine has finished unwinding (its
	// count goes down in a deferred call after that), so the count is waited for.
	left := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.workers
	}
	for deadline := time.Now().Add(10 * time.Second); left() != 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := left(); n != 0 {
		t.Errorf("%d workers left 10 s after the Goexit, want 0", n)
	}
}

// Past maxHandlerWorkers busy workers a request runs where it is: it never waits.
func TestHandlerWorkersNeverWait(t *testing.T) {
	p := newHandlerWorkers()
	release := make(chan struct{})
	started := make(chan struct{})
	block := withHandlerWorkers(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		started <- struct{}{}
		<-release
	}), p, isWatch)
	var wg sync.WaitGroup
	for range maxHandlerWorkers {
		wg.Go(func() { block.ServeHTTP(httptest.NewRecorder(), shortRequest("get")) })
		<-started
	}
	var ran string
	withHandlerWorkers(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = goroutineID() }), p, isWatch).
		ServeHTTP(httptest.NewRecorder(), shortRequest("get"))
	if ran != goroutineID() {
		t.Error("with every worker busy the request did not run on its own goroutine")
	}
	close(release)
	wg.Wait()
}

// deepHandler uses about 48 KiB of stack, as the API handler's call chain does.
func deepHandler(w http.ResponseWriter, _ *http.Request) {
	var frame func(depth int) int
	frame = func(depth int) int {
		var pad [480]byte
		pad[depth%len(pad)] = byte(depth)
		if depth == 0 {
			return int(pad[0])
		}
		return frame(depth-1) + int(pad[depth%len(pad)])
	}
	w.WriteHeader(200 + frame(100)%1)
}

// A request handled on the goroutine it arrived on (new for each request, as net/http's
// and the timeout filter's) next to one handed to a worker.
func BenchmarkHandlerWorkers(b *testing.B) {
	serve := func(b *testing.B, h http.Handler) {
		req := shortRequest("get")
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		for b.Loop() {
			go func() {
				h.ServeHTTP(rec, req)
				done <- struct{}{}
			}()
			<-done
		}
	}
	b.Run("own goroutine", func(b *testing.B) { serve(b, http.HandlerFunc(deepHandler)) })
	b.Run("worker", func(b *testing.B) {
		serve(b, withHandlerWorkers(http.HandlerFunc(deepHandler), newHandlerWorkers(), isWatch))
	})
}
