package server

import (
	"fmt"
	"net/http"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// Bounds of the handler workers.
const (
	// maxHandlerWorkers bounds the goroutines kept for handlers; past it a request runs
	// on its own goroutine, as without workers. Max-in-flight admits 600 requests, but
	// the CPU serves far fewer at once.
	maxHandlerWorkers = 64
	// handlerWorkerIdle is how long a worker waits for a request before it ends.
	handlerWorkerIdle = 30 * time.Second
)

// handlerWorkers runs the API handler of short requests on long-lived goroutines.
//
// Why: net/http and k8s.io/apiserver's timeout filter start a goroutine for every
// request, and the runtime starts a goroutine's stack at the average size of the stacks
// it scanned, which the server's many idle goroutines (watches, informers, connections)
// keep at a few kilobytes. The handler (go-restful, the registry, the storage, the etcd
// client and its interceptors) then grows that stack three or four times by copying it,
// 12-15 % of the server's CPU on a get in the bench's profiles. A worker's stack has
// already grown: the garbage collector halves an idle worker's stack at most once per
// cycle, so a busy worker grows it again about once per cycle rather than per request.
// grpc-go's server workers (NumStreamWorkers) exist for the same reason.
//
// A request is handed to an idle worker when there is one, else to a new worker while
// there are fewer than maxHandlerWorkers, else it runs where it is: a request never
// waits for a worker. The calling goroutine waits for the handler to return; a panic in
// the handler is raised again on the calling goroutine, so the filters above it (timeout,
// panic recovery) handle it as without workers: http.ErrAbortHandler as it is, any other
// value as a *handlerPanic that prints the value and the worker's stack at the panic (the
// timeout filter logs "%v" of the value with the stack it recovers on, which would
// otherwise be the caller's, not the handler's).
// Long-running requests (watches, proxies, open subresources) and requests without
// request info run where they are.
type handlerWorkers struct {
	idle chan *handlerJob // unbuffered: a send succeeds only to a waiting worker
	jobs sync.Pool

	mu      sync.Mutex
	workers int
}

type handlerJob struct {
	h    http.Handler
	w    http.ResponseWriter
	r    *http.Request
	done chan handlerOutcome
}

// handlerOutcome is how a handler ended: returned, panicked (with value) or called
// runtime.Goexit.
type handlerOutcome struct {
	panicked bool
	value    any
	goexit   bool
}

func newHandlerWorkers() *handlerWorkers {
	p := &handlerWorkers{idle: make(chan *handlerJob)}
	p.jobs.New = func() any { return &handlerJob{done: make(chan handlerOutcome, 1)} }
	return p
}

// withHandlerWorkers runs h on the workers for requests longRunning says are short.
func withHandlerWorkers(h http.Handler, p *handlerWorkers, longRunning func(*http.Request, *genericapirequest.RequestInfo) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok := genericapirequest.RequestInfoFrom(r.Context())
		if !ok || longRunning == nil || longRunning(r, info) {
			h.ServeHTTP(w, r)
			return
		}
		p.serve(h, w, r)
	})
}

// serve runs h on a worker, or here when none can take it.
func (p *handlerWorkers) serve(h http.Handler, w http.ResponseWriter, r *http.Request) {
	j := p.jobs.Get().(*handlerJob)
	j.h, j.w, j.r = h, w, r
	select {
	case p.idle <- j:
	default:
		if !p.start(j) {
			j.h, j.w, j.r = nil, nil, nil
			p.jobs.Put(j)
			h.ServeHTTP(w, r)
			return
		}
	}
	out := <-j.done
	j.h, j.w, j.r = nil, nil, nil
	p.jobs.Put(j)
	switch {
	case out.goexit:
		runtime.Goexit()
	case out.panicked:
		panic(out.value)
	}
}

// start starts a worker with j as its first job, unless there are maxHandlerWorkers.
func (p *handlerWorkers) start(j *handlerJob) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.workers >= maxHandlerWorkers {
		return false
	}
	p.workers++
	go p.work(j)
	return true
}

// work runs jobs until it has waited handlerWorkerIdle for one.
func (p *handlerWorkers) work(j *handlerJob) {
	defer func() {
		p.mu.Lock()
		p.workers--
		p.mu.Unlock()
	}()
	idle := time.NewTimer(handlerWorkerIdle)
	defer idle.Stop()
	for {
		p.run(j) // a handler's runtime.Goexit ends this goroutine here, through the defers
		idle.Reset(handlerWorkerIdle)
		select {
		case j = <-p.idle:
		case <-idle.C:
			return
		}
	}
}

// run runs one job and reports its outcome to the waiting caller.
func (p *handlerWorkers) run(j *handlerJob) {
	ended := false
	defer func() {
		if ended {
			j.done <- handlerOutcome{}
			return
		}
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				v = &handlerPanic{value: v, stack: debug.Stack()}
			}
			j.done <- handlerOutcome{panicked: true, value: v}
			return
		}
		j.done <- handlerOutcome{goexit: true}
	}()
	j.h.ServeHTTP(j.w, j.r)
	ended = true
}

// handlerPanic is a panic of a handler that ran on a worker, raised again on the caller.
type handlerPanic struct {
	value any
	stack []byte // the worker's, where the handler panicked
}

// Error implements error.
func (p *handlerPanic) Error() string {
	return fmt.Sprintf("%v\n\nthe handler's goroutine:\n%s", p.value, p.stack)
}

// Unwrap returns the value when it is an error.
func (p *handlerPanic) Unwrap() error {
	err, _ := p.value.(error)
	return err
}
