package subresource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"
)

// connecter is what streams and connections share as rest.Connecter storages: the parent
// storage the object is read from, the kind's constructor, the write timeout, and the
// draining that ends them when the server shuts down.
type connecter[T runtime.Object] struct {
	parent rest.Getter
	newObj func() T
	// WriteTimeout bounds each write to the client (DefaultWriteTimeout when zero).
	WriteTimeout time.Duration
	*draining
}

func newConnecter[T runtime.Object](parent rest.Getter, newObj func() T) connecter[T] {
	return connecter[T]{parent: parent, newObj: newObj, draining: newDraining()}
}

// New returns an empty object of the kind.
func (c *connecter[T]) New() runtime.Object { return c.newObj() }

// Destroy does nothing: the main resource owns the storage.
func (c *connecter[T]) Destroy() {}

// LongRunning is true: a followed stream or a connection stays open.
func (c *connecter[T]) LongRunning() bool { return true }

// NewConnectOptions returns no options object: the subresource reads its query itself.
func (c *connecter[T]) NewConnectOptions() (runtime.Object, bool, string) { return nil, false, "" }

// writeTimeout is WriteTimeout, or DefaultWriteTimeout when it is not set.
func (c *connecter[T]) writeTimeout() time.Duration {
	if c.WriteTimeout <= 0 {
		return DefaultWriteTimeout
	}
	return c.WriteTimeout
}

// DefaultWriteTimeout is how long one write of a stream or connection may block on a client
// that does not read before the stream is ended.
const DefaultWriteTimeout = 30 * time.Second

// StreamOptions are the query parameters of a stream request.
type StreamOptions struct {
	// Follow (?follow=true) asks to keep the stream open, sending what comes, until the
	// client goes away or the server shuts down.
	Follow bool
}

// StreamFunc writes the stream of obj to w until it has nothing more to send (without
// Follow) or ctx is done (the client went away, or the server is shutting down). Every
// write is sent to the client at once (flushed); it blocks while the client does not
// read, and fails once the client is gone or has not read for the write timeout.
// Returning ends the response; an error after the first write can only be logged.
type StreamFunc[T runtime.Object] func(ctx context.Context, obj T, opts StreamOptions, w io.Writer) error

// Stream is the storage of a stream subresource: GET <plural>/<name>/<sub>[?follow=true]
// answers a chunked text/plain body written as it is produced, like pods/log.
// Authorization sees verb get on "<plural>/<sub>"; admission sees a CONNECT.
type Stream[T runtime.Object] struct {
	connecter[T]
	fn StreamFunc[T]
}

var (
	_ rest.Connecter = &Stream[*metav1.Status]{}
	_ Drainer        = &Stream[*metav1.Status]{}
	_ LongRunning    = &Stream[*metav1.Status]{}
)

// NewStream returns the storage of a stream of parent's objects; newObj returns an empty
// object (the kind discovery shows for the subresource).
func NewStream[T runtime.Object](parent rest.Getter, newObj func() T, fn StreamFunc[T]) *Stream[T] {
	return &Stream[T]{connecter: newConnecter(parent, newObj), fn: fn}
}

// ConnectMethods is GET.
func (s *Stream[T]) ConnectMethods() []string { return []string{http.MethodGet} }

// Connect looks the object up (a missing one is 404 before anything is streamed) and
// returns the handler that streams it.
func (s *Stream[T]) Connect(ctx context.Context, name string, _ runtime.Object, _ rest.Responder) (http.Handler, error) {
	obj, err := getParent[T](ctx, s.parent, name)
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		opts, err := streamOptions(req)
		if err != nil {
			writeStatus(w, apierrors.NewBadRequest(err.Error()))
			return
		}
		ctx, cancel := s.context(req.Context())
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusOK)
		fw := newFlushWriter(w, s.writeTimeout())
		fw.flush() // the headers, so that the client sees the stream open
		if err := s.fn(ctx, obj, opts, fw); err != nil && ctx.Err() == nil && !errors.Is(err, fw.err) {
			klog.FromContext(ctx).Error(err, "stream ended with an error", "name", name, "path", req.URL.Path)
		}
	}), nil
}

func streamOptions(req *http.Request) (StreamOptions, error) {
	var opts StreamOptions
	if v := req.URL.Query().Get("follow"); v != "" {
		f, err := strconv.ParseBool(v)
		if err != nil {
			return opts, fmt.Errorf("follow=%q: want true or false", v)
		}
		opts.Follow = f
	}
	return opts, nil
}

func getParent[T runtime.Object](ctx context.Context, parent rest.Getter, name string) (T, error) {
	var zero T
	obj, err := parent.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return zero, err
	}
	o, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("unexpected stored object %T", obj)
	}
	return o, nil
}

// flushWriter sends every write to the client at once, each under a write deadline.
// It keeps no buffer: a write returns when the connection has taken the bytes.
type flushWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	// err is the first write error; every later write returns it.
	err error
}

func newFlushWriter(w http.ResponseWriter, timeout time.Duration) *flushWriter {
	return &flushWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

func (f *flushWriter) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	// Not every ResponseWriter supports deadlines (an error then); the write still
	// blocks only as long as the connection does.
	_ = f.rc.SetWriteDeadline(time.Now().Add(f.timeout))
	n, err := f.w.Write(p)
	if err == nil {
		err = f.rc.Flush()
	}
	if err != nil {
		f.err = fmt.Errorf("writing to the client: %w", err)
		return n, f.err
	}
	return n, nil
}

func (f *flushWriter) flush() {
	_ = f.rc.SetWriteDeadline(time.Now().Add(f.timeout))
	if err := f.rc.Flush(); err != nil {
		f.err = fmt.Errorf("writing to the client: %w", err)
	}
}

// writeStatus answers err as a metav1.Status in JSON.
func writeStatus(w http.ResponseWriter, err apierrors.APIStatus) {
	st := err.Status()
	st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	body, _ := json.Marshal(&st)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_, _ = w.Write(body)
}
