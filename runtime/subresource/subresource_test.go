package subresource

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// object is the parent kind of the tests.
type object = metav1.PartialObjectMetadata

var boats = schema.GroupResource{Group: "marina.example.com", Resource: "boats"}

// memParent is a Parent holding objects in memory; Update applies the object info to the
// stored object like the generic registry Store does (without retries).
type memParent struct {
	objs    map[string]*object
	updates int
}

func (p *memParent) New() runtime.Object { return &object{} }
func (p *memParent) Destroy()            {}

func (p *memParent) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	o, ok := p.objs[name]
	if !ok {
		return nil, apierrors.NewNotFound(boats, name)
	}
	return o.DeepCopy(), nil
}

func (p *memParent) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, _ *metav1.UpdateOptions) (runtime.Object, bool, error) {
	old, ok := p.objs[name]
	if !ok {
		return nil, false, apierrors.NewNotFound(boats, name)
	}
	obj, err := objInfo.UpdatedObject(ctx, old.DeepCopy())
	if err != nil {
		return nil, false, err
	}
	if err := updateValidation(ctx, obj, old); err != nil {
		return nil, false, err
	}
	o := obj.(*object)
	o.ResourceVersion = "2"
	p.objs[name] = o
	p.updates++
	return o.DeepCopy(), false, nil
}

func newParent() *memParent {
	return &memParent{objs: map[string]*object{"aurora": {ObjectMeta: metav1.ObjectMeta{Name: "aurora", ResourceVersion: "1", Labels: map[string]string{}}}}}
}

func TestActionChangesAndAnswers(t *testing.T) {
	parent := newParent()
	a := NewAction(parent, func() *metav1.Status { return &metav1.Status{} }, func(ctx context.Context, obj *object, in *metav1.Status) (runtime.Object, error) {
		if obj.Labels["phase"] == "Departed" {
			return nil, apierrors.NewConflict(boats, obj.Name, errors.New("already departed"))
		}
		obj.Labels["phase"] = "Departed"
		obj.Labels["to"] = in.Message
		return obj, nil
	})
	admitted := 0
	admit := func(ctx context.Context, obj runtime.Object) error { admitted++; return nil }
	out, err := a.Create(context.Background(), "aurora", &metav1.Status{Message: "Brest"}, admit, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*object)
	if got.Labels["to"] != "Brest" || got.ResourceVersion != "2" {
		t.Errorf("answer is not the stored object: %+v", got.ObjectMeta)
	}
	if admitted != 1 || parent.updates != 1 {
		t.Errorf("admission ran %d times, %d updates; want 1 and 1", admitted, parent.updates)
	}
	if _, err := a.Create(context.Background(), "aurora", &metav1.Status{}, admit, &metav1.CreateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("second departure: want 409, got %v", err)
	}
	if _, err := a.Create(context.Background(), "nowhere", &metav1.Status{}, admit, &metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("missing object: want 404, got %v", err)
	}
	refuse := func(ctx context.Context, obj runtime.Object) error {
		return apierrors.NewForbidden(boats, "aurora", errors.New("no"))
	}
	if _, err := a.Create(context.Background(), "aurora", &metav1.Status{}, refuse, &metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("refused by admission: want 403, got %v", err)
	}
}

func TestWritableView(t *testing.T) {
	parent := newParent()
	s := NewView(parent, ViewFuncs[*object, *metav1.Status]{
		New: func() *metav1.Status { return &metav1.Status{} },
		Get: func(ctx context.Context, obj *object) (*metav1.Status, error) {
			return &metav1.Status{Message: obj.Labels["dock"]}, nil
		},
		Set: func(ctx context.Context, obj *object, v *metav1.Status) error {
			obj.Labels["dock"] = v.Message
			return nil
		},
	})
	v, ok := s.(*WritableView[*object, *metav1.Status])
	if !ok {
		t.Fatalf("a view with Set is a %T", s)
	}
	var sawOld string
	validate := func(ctx context.Context, obj, old runtime.Object) error {
		sawOld = old.(*metav1.Status).Message + "->" + obj.(*metav1.Status).Message
		return nil
	}
	out, _, err := v.Update(context.Background(), "aurora", rest.DefaultUpdatedObjectInfo(&metav1.Status{Message: "east"}), nil, validate, false, &metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out.(*metav1.Status).Message != "east" || parent.objs["aurora"].Labels["dock"] != "east" || sawOld != "->east" {
		t.Errorf("update: answer %v, stored %v, admission saw %q", out, parent.objs["aurora"].Labels, sawOld)
	}
	got, err := v.Get(context.Background(), "aurora", &metav1.GetOptions{})
	if err != nil || got.(*metav1.Status).Message != "east" {
		t.Errorf("get: %v %v", got, err)
	}
	if _, ok := NewView(parent, ViewFuncs[*object, *metav1.Status]{New: func() *metav1.Status { return nil }}).(rest.Updater); ok {
		t.Error("a view without Set takes updates")
	}
}

// serveConnecter serves c's handler for the object aurora on an HTTP server.
func serveConnecter(t *testing.T, c rest.Connecter, tls bool) *httptest.Server {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		handler, err := c.Connect(req.Context(), "aurora", nil, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		handler.ServeHTTP(w, req)
	})
	var srv *httptest.Server
	if tls {
		srv = httptest.NewTLSServer(h)
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(srv.Close)
	return srv
}

// A client that stops reading blocks the stream's writer: what the server accepted stays
// bounded by the connection's buffers, and the stalled stream ends after the write timeout.
func TestStreamStalledReaderIsBounded(t *testing.T) {
	if DefaultWriteTimeout != 30*time.Second {
		t.Errorf("DefaultWriteTimeout is %v; README says a write blocked for 30 s ends the stream", DefaultWriteTimeout)
	}
	var written atomic.Int64
	done := make(chan error, 1)
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	s := NewStream(newParent(), func() *object { return &object{} }, func(ctx context.Context, obj *object, opts StreamOptions, w io.Writer) error {
		for {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				done <- err
				return err
			}
		}
	})
	s.WriteTimeout = 2 * time.Second
	srv := serveConnecter(t, s, false)
	resp, err := http.Get(srv.URL + "?follow=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Read a little, then stall.
	if _, err := io.ReadFull(resp.Body, make([]byte, 1024)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !strings.Contains(err.Error(), "writing to the client") {
			t.Errorf("stalled stream ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the writer of a stalled stream never gave up (%d bytes accepted)", written.Load())
	}
	// Kernel socket buffers on both ends hold a few MiB at most; without flow control the
	// writer would have produced gigabytes in the same time.
	const bound = 64 << 20
	if w := written.Load(); w > bound {
		t.Errorf("a stalled reader let the stream write %d bytes; want at most %d", w, bound)
	}
}

func TestStreamFollowEndsOnDrain(t *testing.T) {
	s := NewStream(newParent(), func() *object { return &object{} }, func(ctx context.Context, obj *object, opts StreamOptions, w io.Writer) error {
		if _, err := io.WriteString(w, "logbook of "+obj.Name+"\n"); err != nil || !opts.Follow {
			return err
		}
		<-ctx.Done()
		_, _ = io.WriteString(w, "harbour closing\n")
		return nil
	})
	srv := serveConnecter(t, s, false)
	resp, err := http.Get(srv.URL + "?follow=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q", ct)
	}
	r := bufio.NewReader(resp.Body)
	if line, err := r.ReadString('\n'); err != nil || line != "logbook of aurora\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	ended := make(chan string, 1)
	go func() {
		rest, _ := io.ReadAll(r)
		ended <- string(rest)
	}()
	select {
	case <-ended:
		t.Fatal("the followed stream ended before the drain")
	case <-time.After(300 * time.Millisecond):
	}
	s.Drain()
	select {
	case rest := <-ended:
		if rest != "harbour closing\n" {
			t.Errorf("after the drain: %q", rest)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the followed stream did not end after Drain")
	}
	// Without follow the stream ends by itself; a bad follow is 400.
	resp2, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp2.Body)
	resp2.Body.Close()
	if string(body) != "logbook of aurora\n" {
		t.Errorf("without follow: %q", body)
	}
	resp3, err := http.Get(srv.URL + "?follow=maybe")
	if err != nil {
		t.Fatal(err)
	}
	resp3.Body.Close()
	if resp3.StatusCode != http.StatusBadRequest {
		t.Errorf("follow=maybe: %d", resp3.StatusCode)
	}
}

func radio(ctx context.Context, obj *object, s Session) error {
	lines := bufio.NewScanner(s.Stdin)
	for lines.Scan() {
		if _, err := io.WriteString(s.Stdout, obj.Name+" copies: "+lines.Text()+"\n"); err != nil {
			return err
		}
		if lines.Text() == "mayday" {
			return apierrors.NewBadRequest("not on this channel")
		}
	}
	return lines.Err()
}

func executor(t *testing.T, srv *httptest.Server, query string) remotecommand.Executor {
	t.Helper()
	exec, err := remotecommand.NewWebSocketExecutor(&restclient.Config{Host: srv.URL, TLSClientConfig: restclient.TLSClientConfig{Insecure: true}}, "GET", srv.URL+query)
	if err != nil {
		t.Fatal(err)
	}
	return exec
}

func TestConnectionWebSocket(t *testing.T) {
	c := NewConnection(newParent(), func() *object { return &object{} }, radio)
	srv := serveConnecter(t, c, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var out bytes.Buffer
	err := executor(t, srv, "?stdin=true&stdout=true").StreamWithContext(ctx, remotecommand.StreamOptions{
		Stdin: strings.NewReader("radio check\nsecurite\n"), Stdout: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "aurora copies: radio check\naurora copies: securite\n"; out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}

	// The function's error reaches the client as the connection's status.
	out.Reset()
	err = executor(t, srv, "").StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("mayday\n"), Stdout: &out})
	if err == nil || !strings.Contains(err.Error(), "not on this channel") {
		t.Errorf("error status: got %v", err)
	}

	// A plain GET is told to upgrade.
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("GET without upgrade: %d", resp.StatusCode)
	}
}

func TestConnectionEndsOnDrain(t *testing.T) {
	c := NewConnection(newParent(), func() *object { return &object{} }, radio)
	srv := serveConnecter(t, c, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stdin, stdinW := io.Pipe()
	defer stdinW.Close()
	result := make(chan error, 1)
	var out syncBuffer
	go func() {
		result <- executor(t, srv, "").StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: &out})
	}()
	if _, err := io.WriteString(stdinW, "radio check\n"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "copies: radio check") {
		if time.Now().After(deadline) {
			t.Fatalf("no answer on the connection: %q", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.Drain()
	select {
	case <-result:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection did not end after Drain")
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestConnectionSPDY(t *testing.T) {
	c := NewConnection(newParent(), func() *object { return &object{} }, radio)
	srv := serveConnecter(t, c, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := &restclient.Config{Host: srv.URL, TLSClientConfig: restclient.TLSClientConfig{Insecure: true}}
	spdyExec := func(query string) remotecommand.Executor {
		ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", mustParse(t, srv.URL+query))
		if err != nil {
			t.Fatal(err)
		}
		return ex
	}
	var out bytes.Buffer
	if err := spdyExec("?stdin=true&stdout=true").StreamWithContext(ctx, remotecommand.StreamOptions{
		Stdin: strings.NewReader("radio check\n"), Stdout: &out,
	}); err != nil {
		t.Fatal(err)
	}
	if want := "aurora copies: radio check\n"; out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
	out.Reset()
	err := spdyExec("").StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("mayday\n"), Stdout: &out})
	if err == nil || !strings.Contains(err.Error(), "not on this channel") {
		t.Errorf("error status over SPDY: got %v", err)
	}
}

func mustParse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestConnectionWebSocketStalledReaderTimesOut checks that a websocket connection whose
// client stops reading ends after the write timeout, with the timeout as the writer's
// error: the library's 4-hour idle timeout, which it sets as the deadline of reads and
// writes alike before each of them, must not replace it.
func TestConnectionWebSocketStalledReaderTimesOut(t *testing.T) {
	done := make(chan error, 1)
	var written atomic.Int64
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	c := NewConnection(newParent(), func() *object { return &object{} }, func(ctx context.Context, obj *object, s Session) error {
		for {
			n, err := s.Stdout.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				done <- err
				return err
			}
		}
	})
	c.WriteTimeout = time.Second
	srv := serveConnecter(t, c, false)
	cfg, err := websocket.NewConfig("ws"+strings.TrimPrefix(srv.URL, "http")+"?stdout=true", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Protocol = []string{"v5.channel.k8s.io"}
	ws, err := websocket.DialConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	// Read the message that says the connection is established, then stall.
	var first []byte
	if err := websocket.Message.Receive(ws, &first); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "writing to the client") {
			t.Errorf("the stalled connection's writer ended with %v; want the write timeout", err)
		}
	case <-time.After(20 * time.Second): // generous: the write timeout is 1 s
		t.Fatalf("the writer of a stalled connection never gave up (%d bytes accepted)", written.Load())
	}
	// The connection is closed: the client reads what was buffered, then the end.
	_ = ws.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		var msg []byte
		if err := websocket.Message.Receive(ws, &msg); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Errorf("after the timeout the client read %v; want the end of the connection", err)
			}
			break
		}
	}
}

// blockingWriter blocks every write until release is closed.
type blockingWriter struct{ release chan struct{} }

func (b blockingWriter) Write(p []byte) (int, error) {
	<-b.release
	return 0, io.ErrClosedPipe
}

// TestConnectionSPDYStalledReaderTimesOut is the SPDY counterpart of
// TestConnectionWebSocketStalledReaderTimesOut: client-go's SPDY executor whose stdout
// stops taking data stops reading the connection, and the server's writer must end after
// the write timeout with the timeout as its error.
func TestConnectionSPDYStalledReaderTimesOut(t *testing.T) {
	done := make(chan error, 1)
	var written atomic.Int64
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	c := NewConnection(newParent(), func() *object { return &object{} }, func(ctx context.Context, obj *object, s Session) error {
		for {
			n, err := s.Stdout.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				done <- err
				return err
			}
		}
	})
	c.WriteTimeout = time.Second
	srv := serveConnecter(t, c, true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	defer close(release)
	cfg := &restclient.Config{Host: srv.URL, TLSClientConfig: restclient.TLSClientConfig{Insecure: true}}
	ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", mustParse(t, srv.URL+"?stdout=true"))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: blockingWriter{release}}) }()
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "writing to the client") {
			t.Errorf("the stalled SPDY connection's writer ended with %v; want the write timeout", err)
		}
	case <-time.After(20 * time.Second): // generous: the write timeout is 1 s
		t.Fatalf("the writer of a stalled SPDY connection never gave up (%d bytes accepted)", written.Load())
	}
}
