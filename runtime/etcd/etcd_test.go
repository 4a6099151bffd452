package etcd

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func testConfig(t *testing.T, dir string) Config {
	t.Helper()
	return Config{Dir: dir, UnsafeNoFsync: true, ReadyTimeout: 30 * time.Second}
}

func mustStart(t *testing.T, cfg Config) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newClient(t *testing.T, s *Server) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{s.ClientURL()},
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("clientv3.New(%s): %v", s.ClientURL(), err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func put(t *testing.T, c *clientv3.Client, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, key, value); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

func get(t *testing.T, c *clientv3.Client, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("Get(%q): got %d keys, want 1", key, len(resp.Kvs))
	}
	return string(resp.Kvs[0].Value)
}

func TestStartPutGetRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // does not exist yet
	cfg := testConfig(t, dir)

	s := mustStart(t, cfg)
	if !strings.HasPrefix(s.ClientURL(), "unix:///") || !strings.HasSuffix(s.ClientURL(), "/client.sock") {
		t.Errorf("ClientURL() = %q, want unix:///<dir>/client.sock", s.ClientURL())
	}
	socketDir := filepath.Dir(strings.TrimPrefix(s.ClientURL(), "unix://"))
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("data dir mode = %o, want 700", perm)
	}
	c := newClient(t, s)
	put(t, c, "/registry/a", "one")
	if got := get(t, c, "/registry/a"); got != "one" {
		t.Errorf("Get = %q, want %q", got, "one")
	}
	firstURL := s.ClientURL()
	c.Close()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, ok := <-s.Err(); ok {
		t.Errorf("Err() channel still open after Close, or Close reported an error")
	}
	if _, err := os.Stat(socketDir); !os.IsNotExist(err) {
		t.Errorf("socket directory %s still there after Close (stat: %v)", socketDir, err)
	}

	// Restart on the same directory. A new socket is made; the data must
	// still be there.
	s2 := mustStart(t, cfg)
	t.Logf("first run %s, second run %s", firstURL, s2.ClientURL())
	c2 := newClient(t, s2)
	if got := get(t, c2, "/registry/a"); got != "one" {
		t.Errorf("after restart Get = %q, want %q", got, "one")
	}
	put(t, c2, "/registry/b", "two")
	if got := get(t, c2, "/registry/b"); got != "two" {
		t.Errorf("after restart Get = %q, want %q", got, "two")
	}
	select {
	case err := <-s2.Err():
		t.Errorf("unexpected error from Err(): %v", err)
	default:
	}
}

func TestTwoServersInOneProcess(t *testing.T) {
	var (
		wg      sync.WaitGroup
		servers [2]*Server
		errs    [2]error
	)
	for i := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			servers[i], errs[i] = Start(context.Background(), testConfig(t, t.TempDir()))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Start #%d: %v", i, err)
		}
		t.Cleanup(func() { servers[i].Close() })
	}
	if servers[0].ClientURL() == servers[1].ClientURL() {
		t.Fatalf("both servers use %s", servers[0].ClientURL())
	}
	c0, c1 := newClient(t, servers[0]), newClient(t, servers[1])
	put(t, c0, "k", "zero")
	put(t, c1, "k", "one")
	if got := get(t, c0, "k"); got != "zero" {
		t.Errorf("server 0: Get = %q, want zero", got)
	}
	if got := get(t, c1, "k"); got != "one" {
		t.Errorf("server 1: Get = %q, want one", got)
	}
	// Closing one leaves the other working.
	c0.Close()
	servers[0].Close()
	if got := get(t, c1, "k"); got != "one" {
		t.Errorf("server 1 after closing server 0: Get = %q, want one", got)
	}
}

func TestStartUnusableDir(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir, want string
	}{
		{"empty", "", "Config.Dir is empty"},
		{"regular file", file, "not a directory"},
		{"below a regular file", filepath.Join(file, "data"), "cannot create data directory"},
	}
	if os.Geteuid() != 0 { // root may write anywhere
		ro := filepath.Join(tmp, "readonly")
		if err := os.Mkdir(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		tests = append(tests, struct{ name, dir, want string }{"read-only", ro, "not writable"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Start(context.Background(), Config{Dir: tt.dir})
			if err == nil {
				s.Close()
				t.Fatalf("Start(%q) succeeded, want error", tt.dir)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Start(%q) error = %q, want it to contain %q", tt.dir, err, tt.want)
			}
		})
	}
}

func TestStartInvalidConfig(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"socket parent too long", Config{Dir: dir, SocketParent: "/" + strings.Repeat("x", 100)}, "Config.SocketParent"},
		{"socket parent missing", Config{Dir: dir, SocketParent: filepath.Join(dir, "missing")}, "Config.SocketParent"},
		{"bad log level", Config{Dir: dir, LogLevel: "loud"}, `Config.LogLevel "loud"`},
		{"negative timeout", Config{Dir: dir, ReadyTimeout: -time.Second}, "Config.ReadyTimeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Start(context.Background(), tt.cfg)
			if err == nil {
				s.Close()
				t.Fatal("Start succeeded, want error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestStartCorruptDataDir(t *testing.T) {
	dir := t.TempDir()
	wal := filepath.Join(dir, "member", "wal")
	if err := os.MkdirAll(wal, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wal, "0000000000000000-0000000000000000.wal"), bytes.Repeat([]byte("garbage!"), 100), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, dir)
	cfg.ReadyTimeout = 10 * time.Second
	// After a crash the socket directory stays until the process exits (etcd may still
	// hold it); keep it under the test's directory so that it is removed.
	cfg.SocketParent = t.TempDir()
	s, err := Start(context.Background(), cfg)
	if err == nil {
		s.Close()
		t.Fatal("Start succeeded on a corrupt data dir")
	}
	t.Logf("error: %v", err)
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("error = %q, want it to name the data dir", err)
	}
	// etcd could not clean up after crashing; a second Start must fail
	// at once instead of blocking on etcd's database lock.
	done := make(chan error, 1)
	go func() {
		s, err := Start(context.Background(), cfg)
		if err == nil {
			s.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "in use") {
			t.Errorf("second Start: err = %v, want an \"in use\" error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("second Start on the crashed data dir blocked")
	}
}

func TestSameDirTwice(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	s := mustStart(t, cfg)
	s2, err := Start(context.Background(), cfg)
	if err == nil {
		s2.Close()
		t.Fatal("second Start on a data dir in use succeeded")
	}
	if !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), cfg.Dir) {
		t.Errorf("error = %q, want it to say that %s is in use", err, cfg.Dir)
	}
	// After Close the directory is free again.
	s.Close()
	mustStart(t, cfg)
}

func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, err := Start(ctx, testConfig(t, t.TempDir()))
	if err == nil {
		s.Close()
		t.Fatal("Start succeeded with a cancelled context")
	}
	if !strings.Contains(err.Error(), "cancel") {
		t.Errorf("error = %q, want it to mention the cancellation", err)
	}
}

// TestQuietShutdown checks that Close does not log "server closed" noise to
// LogOutput at the default level.
func TestQuietShutdown(t *testing.T) {
	var buf syncBuffer
	cfg := testConfig(t, t.TempDir())
	cfg.LogOutput = &buf
	s := mustStart(t, cfg)
	c := newClient(t, s)
	put(t, c, "k", "v")
	c.Close()
	s.Close()
	if out := buf.String(); out != "" {
		t.Errorf("etcd logged at error level during a clean start/stop:\n%s", out)
	}
}

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

func TestLoggerDropsShutdownNoiseOnlyWhileClosing(t *testing.T) {
	var buf syncBuffer
	state := &logState{}
	lg := newLogger(&buf, zap.ErrorLevel, state)
	lg.Error("setting up serving from embedded etcd failed.", zap.Error(http.ErrServerClosed))
	if !strings.Contains(buf.String(), "http: Server closed") {
		t.Errorf("error before Close was dropped; log = %q", buf.String())
	}
	state.closing.Store(true)
	before := buf.String()
	lg.Error("setting up serving from embedded etcd failed.", zap.Error(errors.New("accept tcp 127.0.0.1:1: use of closed network connection")))
	lg.With(zap.String("k", "v")).Error("x", zap.Error(http.ErrServerClosed))
	if got := buf.String(); got != before {
		t.Errorf("shutdown noise logged while closing: %q", strings.TrimPrefix(got, before))
	}
	lg.Error("real problem", zap.Error(errors.New("disk full")))
	if !strings.Contains(buf.String(), "disk full") {
		t.Errorf("real error while closing was dropped; log = %q", buf.String())
	}
}

func TestFatalDuringStartBecomesError(t *testing.T) {
	state := &logState{}
	lg := newLogger(nil, zap.ErrorLevel, state)
	state.starting.Store(true)
	var got error
	func() {
		defer func() {
			if a, ok := recover().(*startupAbort); ok {
				got = a
			}
		}()
		lg.Fatal("failed to open WAL", zap.Error(errors.New("permission denied")))
	}()
	if got == nil || got.Error() != "failed to open WAL: permission denied" {
		t.Errorf("recovered %v, want startupAbort \"failed to open WAL: permission denied\"", got)
	}
}
