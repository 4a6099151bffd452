package subresource

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	remotecommandconsts "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/klog/v2"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// streamCreationTimeout bounds the wait for the client's streams after a SPDY upgrade,
// as kubelet's.
const streamCreationTimeout = 30 * time.Second

// spdyProtocols are the remote command protocols served over SPDY, preferred first: the
// client opens one SPDY stream per channel (header streamType: error, stdin, stdout,
// stderr, resize).
var spdyProtocols = []string{remotecommandconsts.StreamProtocolV5Name, remotecommandconsts.StreamProtocolV4Name}

// spdyStream is a stream the client opened, and the signal that its reply was sent.
type spdyStream struct {
	stream    httpstream.Stream
	replySent <-chan struct{}
}

// serveSPDY serves the connection over SPDY (the protocol of client-go's SPDY executor,
// for clients that cannot use websockets): it negotiates the protocol, upgrades, waits for
// the client's streams, runs the function and writes its status on the error stream.
func (c *Connection[T]) serveSPDY(w http.ResponseWriter, req *http.Request, obj T, open channels) {
	if _, err := httpstream.Handshake(req, w, spdyProtocols); err != nil {
		return // Handshake answered the client
	}
	created := make(chan spdyStream, 8)
	writeTimeout := c.writeTimeout()
	// Every write to the hijacked connection gets the write timeout as its deadline: a
	// client that stops reading fails the write (and so the connection) after it. SPDY
	// frames of all streams go through that one connection, one write at a time.
	w = deadlineHijacker{ResponseWriter: w, timeout: writeTimeout}
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, req, func(s httpstream.Stream, replySent <-chan struct{}) error {
		select {
		case created <- spdyStream{s, replySent}:
			return nil
		default:
			return fmt.Errorf("unexpected stream %q", s.Headers().Get(corev1.StreamType))
		}
	})
	if conn == nil {
		return // the upgrader answered the client
	}
	defer conn.Close()
	conn.SetIdleTimeout(idleTimeout)

	ctx, cancel := c.context(req.Context())
	defer cancel()
	expected := 1 // the error stream
	for _, o := range []bool{open.stdin, open.stdout, open.stderr} {
		if o {
			expected++
		}
	}
	streams := map[string]httpstream.Stream{}
	timeout := time.NewTimer(streamCreationTimeout)
	defer timeout.Stop()
	for len(streams) < expected {
		select {
		case s := <-created:
			typ := s.stream.Headers().Get(corev1.StreamType)
			<-s.replySent
			if typ == corev1.StreamTypeResize {
				// Terminal sizes mean nothing here: read and dropped.
				go func() { _, _ = io.Copy(io.Discard, s.stream) }()
				continue
			}
			streams[typ] = s.stream
		case <-timeout.C:
			klog.FromContext(ctx).Info("SPDY client did not open its streams in time", "path", req.URL.Path, "got", len(streams), "want", expected)
			return
		case <-ctx.Done():
			return
		}
	}
	errStream := streams[corev1.StreamTypeError]
	if errStream == nil {
		return
	}
	s := Session{Stdin: eofReader{}, Stdout: io.Discard, Stderr: io.Discard}
	if st := streams[corev1.StreamTypeStdin]; st != nil && open.stdin {
		s.Stdin = st
	}
	writer := func(st io.Writer) io.Writer {
		return &deadlineWriter{w: st, timeout: writeTimeout, setDeadline: func() {}}
	}
	if st := streams[corev1.StreamTypeStdout]; st != nil && open.stdout {
		s.Stdout = writer(st)
	}
	if st := streams[corev1.StreamTypeStderr]; st != nil && open.stderr {
		s.Stderr = writer(st)
	}
	c.run(ctx, req, obj, s, conn, errStream)
	for _, st := range streams {
		_ = st.Close()
	}
}

// deadlineHijacker hands out the hijacked connection as a deadlineConn.
type deadlineHijacker struct {
	http.ResponseWriter
	timeout time.Duration
}

func (h deadlineHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := h.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("the response writer %T cannot be hijacked", h.ResponseWriter)
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	return &deadlineConn{Conn: conn, timeout: h.timeout}, rw, nil
}

// deadlineConn sets a write deadline of timeout before every write.
type deadlineConn struct {
	net.Conn
	timeout time.Duration
}

func (c *deadlineConn) Write(p []byte) (int, error) {
	_ = c.SetWriteDeadline(time.Now().Add(c.timeout))
	return c.Conn.Write(p)
}
