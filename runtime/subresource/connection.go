package subresource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	remotecommandconsts "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// idleTimeout closes a connection on which nothing has been read or written for this long,
// as kubelet and kube-apiserver do for exec and attach (for a websocket: nothing read from
// stdin nor written by the function).
const idleTimeout = 4 * time.Hour

// Session is the client's end of a connection: what it sends arrives on Stdin (EOF when it
// closes its input), what is written to Stdout and Stderr reaches its output and error
// output. A write blocks while the client does not read and fails once it is gone or has
// not read for the write timeout.
type Session struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// ConnectionFunc serves one connection to obj until it returns or ctx is done (the client
// went away, or the server is shutting down). Its error is sent to the client as the
// connection's status (kubectl prints it and exits non-zero); a nil error is success.
type ConnectionFunc[T runtime.Object] func(ctx context.Context, obj T, s Session) error

// Connection is the storage of a connection subresource: an upgraded bidirectional stream
// on <plural>/<name>/<sub>, like pods/attach, speaking the websocket channel protocol
// v5.channel.k8s.io of client-go's websocket executor and kubectl (channels 0 stdin,
// 1 stdout, 2 stderr, 3 error, 4 resize, and the close signal 255), or the same protocol
// (v5 or v4) over SPDY for clients that still use client-go's SPDY executor. The query parameters
// stdin, stdout and stderr (true or false, as for pods/attach) choose the channels; without
// any, stdin and stdout are open. GET is authorized as verb get and POST as create on
// "<plural>/<sub>", as for pods/exec; admission sees a CONNECT.
type Connection[T runtime.Object] struct {
	connecter[T]
	fn ConnectionFunc[T]
}

var (
	_ rest.Connecter = &Connection[*metav1.Status]{}
	_ Drainer        = &Connection[*metav1.Status]{}
	_ LongRunning    = &Connection[*metav1.Status]{}
)

// NewConnection returns the storage of a connection to parent's objects; newObj returns an
// empty object (the kind discovery shows for the subresource).
func NewConnection[T runtime.Object](parent rest.Getter, newObj func() T, fn ConnectionFunc[T]) *Connection[T] {
	return &Connection[T]{connecter: newConnecter(parent, newObj), fn: fn}
}

// ConnectMethods are GET and POST, as for pods/exec and pods/attach.
func (c *Connection[T]) ConnectMethods() []string { return []string{http.MethodGet, http.MethodPost} }

// Connect looks the object up (a missing one is 404 before any upgrade) and returns the
// handler that upgrades the connection and serves it.
func (c *Connection[T]) Connect(ctx context.Context, name string, _ runtime.Object, _ rest.Responder) (http.Handler, error) {
	obj, err := getParent[T](ctx, c.parent, name)
	if err != nil {
		return nil, err
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		websocket := wsstream.IsWebSocketRequest(req)
		if !websocket && !httpstream.IsUpgradeRequest(req) {
			writeStatus(w, apierrors.NewBadRequest(fmt.Sprintf("%s is a connection (protocol %s over a websocket or SPDY): upgrade the request, "+
				"e.g. with client-go's remotecommand.NewWebSocketExecutor", req.URL.Path, remotecommandconsts.StreamProtocolV5Name)))
			return
		}
		open, err := connectionChannels(req)
		if err != nil {
			writeStatus(w, apierrors.NewBadRequest(err.Error()))
			return
		}
		if websocket {
			c.serve(w, req, obj, open)
		} else {
			c.serveSPDY(w, req, obj, open)
		}
	}), nil
}

// channels says which of stdin, stdout and stderr the client asked for.
type channels struct{ stdin, stdout, stderr bool }

func connectionChannels(req *http.Request) (channels, error) {
	q := req.URL.Query()
	var out channels
	any := false
	for _, p := range []struct {
		name string
		to   *bool
	}{{"stdin", &out.stdin}, {"stdout", &out.stdout}, {"stderr", &out.stderr}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return out, fmt.Errorf("%s=%q: want true or false", p.name, v)
		}
		*p.to, any = b, true
	}
	if !any {
		out.stdin, out.stdout = true, true
	}
	return out, nil
}

func (c *Connection[T]) serve(w http.ResponseWriter, req *http.Request, obj T, open channels) {
	kinds := make([]wsstream.ChannelType, 5)
	kinds[remotecommandconsts.StreamStdIn] = channelType(open.stdin, wsstream.ReadChannel)
	kinds[remotecommandconsts.StreamStdOut] = channelType(open.stdout, wsstream.WriteChannel)
	kinds[remotecommandconsts.StreamStdErr] = channelType(open.stderr, wsstream.WriteChannel)
	kinds[remotecommandconsts.StreamErr] = wsstream.WriteChannel
	// Terminal sizes mean nothing here: they are read and dropped.
	kinds[remotecommandconsts.StreamResize] = wsstream.IgnoreChannel
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		remotecommandconsts.StreamProtocolV5Name: {Binary: true, Channels: kinds},
	})
	// No idle timeout of the library's: it sets the deadline of reads and writes alike to
	// the idle timeout before each read and write, which would replace the write
	// deadline. The idle timer below does its work.
	conn.SetIdleTimeout(0)
	_, streams, err := conn.Open(w, req)
	if err != nil {
		klog.FromContext(req.Context()).Error(err, "opening websocket connection", "path", req.URL.Path)
		return
	}
	defer conn.Close()
	idle := time.AfterFunc(idleTimeout, func() { conn.Close() })
	defer idle.Stop()
	active := func() { idle.Reset(idleTimeout) }
	timeout := c.writeTimeout()
	writer := func(i int) io.Writer {
		return &deadlineWriter{w: streams[i], timeout: timeout, setDeadline: func() { active(); conn.SetWriteDeadline(timeout) }, done: active}
	}
	// An empty message on the lowest writable channel tells the client the connection is
	// established (as kube-apiserver and kubelet do).
	first := remotecommandconsts.StreamErr
	switch {
	case open.stdout:
		first = remotecommandconsts.StreamStdOut
	case open.stderr:
		first = remotecommandconsts.StreamStdErr
	}
	if _, err := writer(first).Write([]byte{}); err != nil {
		return
	}
	s := Session{Stdin: eofReader{}, Stdout: io.Discard, Stderr: io.Discard}
	if open.stdin {
		s.Stdin = activeReader{r: streams[remotecommandconsts.StreamStdIn], active: active}
	}
	if open.stdout {
		s.Stdout = writer(remotecommandconsts.StreamStdOut)
	}
	if open.stderr {
		s.Stderr = writer(remotecommandconsts.StreamStdErr)
	}
	ctx, cancel := c.context(req.Context())
	defer cancel()
	c.run(ctx, req, obj, s, conn, writer(remotecommandconsts.StreamErr))
}

// run runs the function on the session and writes its status to errOut unless the client
// is gone. Closing conn when ctx ends unblocks a function reading stdin.
func (c *Connection[T]) run(ctx context.Context, req *http.Request, obj T, s Session, conn io.Closer, errOut io.Writer) {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	fnErr := c.fn(ctx, obj, s)
	if ctx.Err() != nil && req.Context().Err() != nil {
		return // the client is gone
	}
	body, err := statusJSON(ctx, fnErr)
	if err != nil {
		return
	}
	_, _ = errOut.Write(body)
}

// statusJSON is the status of a connection whose function returned fnErr, as the error
// channel carries it: a metav1.Status in JSON.
func statusJSON(ctx context.Context, fnErr error) ([]byte, error) {
	st := metav1.Status{Status: metav1.StatusSuccess}
	if fnErr != nil {
		if ctx.Err() != nil {
			fnErr = fmt.Errorf("the server is shutting down: %w", fnErr)
		}
		st = apierrors.NewInternalError(fnErr).Status()
		if se, ok := fnErr.(apierrors.APIStatus); ok {
			st = se.Status()
		}
	}
	return json.Marshal(&st)
}

func channelType(open bool, t wsstream.ChannelType) wsstream.ChannelType {
	if open {
		return t
	}
	return wsstream.IgnoreChannel
}

// deadlineWriter sets the connection's write deadline before every write, and calls done
// after it.
type deadlineWriter struct {
	w           io.Writer
	timeout     time.Duration
	setDeadline func()
	done        func()
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	d.setDeadline()
	n, err := d.w.Write(p)
	if d.done != nil {
		d.done()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("writing to the client: no progress for %s: %w", d.timeout, err)
	}
	return n, err
}

// activeReader calls active after every read.
type activeReader struct {
	r      io.Reader
	active func()
}

func (a activeReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	a.active()
	return n, err
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }
