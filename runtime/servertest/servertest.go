// Package servertest starts a generated server inside a test process: embedded etcd in a
// temporary directory, local mode on a free loopback port, and a client configuration for
// its admin user. Generated projects use it in their own tests:
//
//	spec, err := apiserver.NewSpec()
//	...
//	srv := servertest.Start(t, spec)
//	client := versioned.NewForConfigOrDie(srv.Config)
package servertest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aagen-dev/aagen/runtime/server"
)

// Server is a running test server.
type Server struct {
	// Config reaches the server as its local admin (group system:masters).
	Config *rest.Config
	// Kubeconfig is the path of the admin kubeconfig.
	Kubeconfig string
	// Dir holds the server's etcd data and credentials.
	Dir string
}

// Options tune Start.
type Options struct {
	// Dir is reused when set (to test restarts); default t.TempDir().
	Dir string
	// ReadyTimeout bounds the wait for /readyz; default 2 minutes.
	ReadyTimeout time.Duration
}

// Start runs spec until the test ends and returns once the server is ready.
func Start(t testing.TB, spec server.Spec) *Server {
	t.Helper()
	return StartWithOptions(t, spec, Options{})
}

// StartWithOptions is Start with options.
func StartWithOptions(t testing.TB, spec server.Spec, opts Options) *Server {
	t.Helper()
	srv, stop, err := start(spec, opts, t.TempDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("stopping %s: %v", spec.Name, err)
		}
	})
	return srv
}

func start(spec server.Spec, opts Options, tempDir func() string) (*Server, func() error, error) {
	if opts.Dir == "" {
		opts.Dir = tempDir()
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 2 * time.Minute
	}
	o := server.NewOptions(&spec)
	o.Local = true
	o.LocalDir = opts.Dir + "/local"
	o.EmbeddedEtcdDir = opts.Dir + "/etcd"
	o.Recommended.SecureServing.BindAddress = net.ParseIP("127.0.0.1")
	o.Recommended.SecureServing.BindPort = 0
	pr, pw := io.Pipe()
	o.Stdout = pw
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := server.Run(ctx, spec, o)
		pw.CloseWithError(errors.Join(err, io.EOF))
		done <- err
	}()
	stop := func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(60 * time.Second):
			return fmt.Errorf("server did not stop within 60s")
		}
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if kc, ok := strings.CutPrefix(sc.Text(), "export KUBECONFIG="); ok {
				ready <- kc
			}
		}
		close(ready)
	}()
	select {
	case kc, ok := <-ready:
		if !ok {
			err := <-done
			done <- err
			return nil, stop, fmt.Errorf("%s stopped before it was ready: %v", spec.Name, err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", kc)
		if err != nil {
			_ = stop()
			return nil, nil, err
		}
		return &Server{Config: cfg, Kubeconfig: kc, Dir: opts.Dir}, stop, nil
	case <-time.After(opts.ReadyTimeout):
		_ = stop()
		return nil, nil, fmt.Errorf("%s was not ready within %s", spec.Name, opts.ReadyTimeout)
	}
}
