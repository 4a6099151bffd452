package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap/zapcore"

	"github.com/aagen-dev/aagen/runtime/atomicfile"
	"github.com/aagen-dev/aagen/runtime/filelock"
	"github.com/aagen-dev/aagen/runtime/socketdir"
)

const (
	// DefaultLogLevel is the etcd log level used when Config.LogLevel is empty.
	DefaultLogLevel = "error"
	// DefaultReadyTimeout bounds how long Start waits for etcd to serve when
	// Config.ReadyTimeout is zero.
	DefaultReadyTimeout = 60 * time.Second

	// memberName is the etcd member name. It is recorded in the data
	// directory's membership; keep it stable.
	memberName = "aagen"

	// socketName is the name of the client socket inside the private
	// socket directory.
	socketName = "client.sock"

	// socketDirPattern is the os.MkdirTemp pattern of the private socket
	// directory.
	socketDirPattern = "aagen-etcd-"

	// maxSocketPath is the longest path a unix socket may have on Linux
	// (sizeof(sun_path) minus the terminating NUL).
	maxSocketPath = 107

	// unusedPeerURL is the peer URL the member advertises. A single member
	// has no peers, so nothing listens on it and nothing dials it; etcd
	// only needs it to record the member in its cluster membership.
	unusedPeerURL = "http://127.0.0.1:2380"

	// singleMemberCatchUpEntries is how many raft entries the member keeps in memory
	// after a snapshot (etcd's default, for clusters with followers, is 5000).
	singleMemberCatchUpEntries = 100

	// singleMemberSnapshotCount is how many raft entries the member applies between two
	// snapshots; they stay in memory until the next one (etcd's default is 10000).
	singleMemberSnapshotCount = 5000

	// errBufferSize is the capacity of the channel returned by Server.Err.
	errBufferSize = 8
)

// Config configures an embedded single-member etcd.
type Config struct {
	// Dir is the data directory. It is required. It is created with mode
	// 0700 if missing, and its contents survive restarts: starting again
	// on the same Dir reopens the same member with the same keys.
	Dir string
	// SocketParent is the directory in which Start creates a private
	// directory (mode 0700) holding etcd's client socket. It must be short
	// enough for a unix socket path (about 80 bytes). Default: the system's
	// temporary directory (os.TempDir).
	SocketParent string
	// UnsafeNoFsync disables fsync. Data may be lost on a crash; use it in
	// tests only.
	UnsafeNoFsync bool
	// LogLevel is the etcd log level: "debug", "info", "warn" or "error".
	// Default "error".
	LogLevel string
	// LogOutput receives etcd's log lines. Default: logs are discarded.
	// Errors that matter after Start has returned are also sent to
	// Server.Err, whatever LogOutput is.
	LogOutput io.Writer
	// ReadyTimeout bounds how long Start waits for etcd to become ready.
	// Default 60s.
	ReadyTimeout time.Duration
}

// Server is a running embedded etcd. Create it with Start and stop it with
// Close.
type Server struct {
	etcd      *embed.Etcd
	dir       string
	socketDir *socketdir.Dir
	clientURL string
	log       *logState
	lock      *filelock.Lock

	errc        chan error
	forwardDone chan struct{}
	closeOnce   sync.Once
}

// Start starts etcd and returns once it is ready to serve client requests.
//
// ctx bounds the startup only; once Start has returned, the server runs until
// Close is called. Start returns an error, never a half-started server, when
// the configuration is invalid, the data directory cannot be used, etcd fails
// while starting, ctx is done, or etcd is not ready within ReadyTimeout.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	c, err := cfg.complete()
	if err != nil {
		return nil, err
	}
	if err := prepareDir(c.dir); err != nil {
		return nil, err
	}
	lock, err := lockDataDir(c.dir)
	if err != nil {
		return nil, err
	}
	keepLock := false
	defer func() {
		if !keepLock {
			lock.Release()
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("etcd: start in %q cancelled: %w", c.dir, err)
	}
	var s *Server
	s, keepLock, err = start(ctx, c, lock)
	return s, err
}

// ClientURL returns the URL clients use to reach etcd, a unix socket such as
// "unix:///tmp/aagen-etcd-123/client.sock". Pass it to k8s.io/apiserver as an
// etcd server (--etcd-servers accepts it; etcd's client dials unix:// URLs).
// Only processes running as the user that called Start can open the socket:
// it lies in a directory with mode 0700.
func (s *Server) ClientURL() string {
	if s == nil {
		return ""
	}
	return s.clientURL
}

// Dir returns the absolute path of the data directory.
func (s *Server) Dir() string {
	if s == nil {
		return ""
	}
	return s.dir
}

// Err returns a channel that receives errors etcd reports after Start has
// returned, for example when its client listener fails or the member stops
// on its own. Such errors mean the server no longer works: the caller should
// shut down. Shutdown noise caused by Close is not reported. The channel is
// closed once Close has finished.
func (s *Server) Err() <-chan error {
	if s == nil {
		return nil
	}
	return s.errc
}

// Close stops etcd: it stops serving clients, waits for in-flight requests
// (up to etcd's request timeout), and closes the data files so that a later
// Start on the same Dir can reopen them. Close is idempotent and safe to call
// from several goroutines; calls after the first wait for the first one.
//
// Clients that still hold streams open (watches, such as those of a running
// k8s.io/apiserver) make Close wait for etcd's request timeout, about 7s,
// before it cuts them; stop such clients first for a fast shutdown.
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	s.closeOnce.Do(func() {
		s.log.closing.Store(true)
		s.etcd.Close()
		<-s.forwardDone
		s.socketDir.Remove()
		s.lock.Release()
	})
	return nil
}

// completed is a validated Config with defaults applied.
type completed struct {
	dir          string
	socketParent string
	noFsync      bool
	level        zapcore.Level
	logOutput    io.Writer
	readyTimeout time.Duration
}

func (cfg Config) complete() (completed, error) {
	c := completed{
		noFsync:      cfg.UnsafeNoFsync,
		logOutput:    cfg.LogOutput,
		readyTimeout: cfg.ReadyTimeout,
	}
	if strings.TrimSpace(cfg.Dir) == "" {
		return c, errors.New("etcd: Config.Dir is empty: set it to the directory that should hold etcd's data (it is created if missing)")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return c, fmt.Errorf("etcd: cannot make Config.Dir %q absolute: %w", cfg.Dir, err)
	}
	c.dir = dir

	c.socketParent = cfg.SocketParent
	if c.socketParent == "" {
		c.socketParent = os.TempDir()
	}
	if p, err := filepath.Abs(c.socketParent); err == nil {
		c.socketParent = p
	}
	// MkdirTemp adds up to 20 characters to the pattern.
	if n := len(filepath.Join(c.socketParent, socketDirPattern+"12345678901234567890", socketName)); n > maxSocketPath {
		return c, fmt.Errorf("etcd: Config.SocketParent %q is too long for a unix socket path (%d bytes, at most %d): set it to a shorter directory, such as /tmp", c.socketParent, n, maxSocketPath)
	}

	levelName := cfg.LogLevel
	if levelName == "" {
		levelName = DefaultLogLevel
	}
	switch strings.ToLower(levelName) {
	case "debug", "info", "warn", "error":
		// zapcore.ParseLevel also accepts dpanic, panic and fatal, which
		// would hide errors; etcd itself only offers these four.
		c.level, _ = zapcore.ParseLevel(strings.ToLower(levelName))
	default:
		return c, fmt.Errorf("etcd: Config.LogLevel %q is not valid: use one of debug, info, warn, error", cfg.LogLevel)
	}

	if c.readyTimeout < 0 {
		return c, fmt.Errorf("etcd: Config.ReadyTimeout %s is negative: use a positive duration, or 0 for the default %s", c.readyTimeout, DefaultReadyTimeout)
	}
	if c.readyTimeout == 0 {
		c.readyTimeout = DefaultReadyTimeout
	}
	return c, nil
}

// lockFile is the name of the lock file Start keeps in the data directory.
const lockFile = ".lock"

// lockDataDir locks dir without waiting, for as long as an etcd may have it open. The lock
// belongs to the open file, so a second Server in the same process is refused just like
// one in another process. Where flock is missing (filelock.Supported), two etcds on one
// data directory are not detected up front: etcd's own database lock makes the second one
// wait until ReadyTimeout.
func lockDataDir(dir string) (*filelock.Lock, error) {
	path := filepath.Join(dir, lockFile)
	lock, err := filelock.TryAcquire(path)
	if errors.Is(err, filelock.ErrLocked) {
		return nil, fmt.Errorf("etcd: data directory %q is in use by another etcd, in this process or another one (or an earlier start in this process crashed on it): stop that etcd or set Config.Dir to another directory", dir)
	}
	if err != nil {
		return nil, fmt.Errorf("etcd: cannot lock %q: %w", path, err)
	}
	return lock, nil
}

// prepareDir creates the data directory if needed (durably: atomicfile.MkdirAll) and
// checks that it is a writable directory, so that etcd does not fail later in
// harder-to-read ways.
func prepareDir(dir string) error {
	if err := atomicfile.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("etcd: cannot create data directory %q: %w; set Config.Dir to a directory this process can write", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("etcd: cannot use data directory %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("etcd: data directory %q exists but is not a directory; set Config.Dir to a directory", dir)
	}
	f, err := os.CreateTemp(dir, ".write-check-*")
	if err != nil {
		return fmt.Errorf("etcd: data directory %q is not writable: %w; fix its permissions or set Config.Dir to a writable directory", dir, err)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("etcd: data directory %q: cannot remove write-check file: %w", dir, err)
	}
	return nil
}

// start makes one attempt to start etcd and wait for it to be ready. keepLock
// reports that the caller must not release lock: on success the Server owns
// it; after a crash or an abandoned start, etcd may still hold the data
// directory open.
func start(ctx context.Context, c completed, lock *filelock.Lock) (s *Server, keepLock bool, err error) {
	socketDir, err := socketdir.Make(c.socketParent, socketDirPattern)
	if err != nil {
		return nil, false, fmt.Errorf("etcd: %w; set Config.SocketParent to a writable directory", err)
	}
	keepSocketDir := false
	defer func() {
		if !keepSocketDir {
			socketDir.Remove()
		}
	}()
	clientURL := url.URL{Scheme: "unix", Path: filepath.Join(socketDir.Path, socketName)}
	peerURL, err := url.Parse(unusedPeerURL)
	if err != nil {
		return nil, false, fmt.Errorf("etcd: internal error: peer URL %q: %w", unusedPeerURL, err)
	}

	state := &logState{}
	ec := embed.NewConfig()
	ec.Name = memberName
	ec.Dir = c.dir
	ec.ListenClientUrls = []url.URL{clientURL}
	ec.AdvertiseClientUrls = []url.URL{clientURL}
	// No peer listener: a single member has no peers, and an open peer
	// port would let anyone who can reach it talk raft to the member.
	ec.ListenPeerUrls = nil
	ec.AdvertisePeerUrls = []url.URL{*peerURL}
	// No separate HTTP or metrics listeners either: the socket is the only
	// way in.
	ec.ListenClientHttpUrls = nil
	ec.ListenMetricsUrls = nil
	// Only used when the member is new; a member already in Dir keeps its
	// stored cluster membership.
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	ec.UnsafeNoFsync = c.noFsync
	// etcd keeps this many raft entries in memory after each snapshot so that slow
	// followers can catch up without a snapshot transfer. A single member has no
	// followers: keeping etcd's default of 5000 would only hold memory.
	ec.SnapshotCatchUpEntries = singleMemberCatchUpEntries
	ec.SnapshotCount = singleMemberSnapshotCount
	ec.LogLevel = c.level.String()
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(newLogger(c.logOutput, c.level, state))

	timer := time.NewTimer(c.readyTimeout)
	defer timer.Stop()

	// embed.StartEtcd cannot be cancelled and may block (opening the
	// database waits for its file lock), so it runs in its own goroutine.
	type result struct {
		e   *embed.Etcd
		err error
	}
	started := make(chan result, 1)
	go func() {
		e, err := startEtcd(ec, state)
		started <- result{e, err}
	}()
	abandon := func(why error) (*Server, bool, error) {
		// etcd may still create and serve the socket; the goroutine
		// below removes the directory once etcd is closed.
		keepSocketDir = true
		go func() {
			r := <-started
			if r.e != nil {
				state.closing.Store(true)
				r.e.Close()
			}
			if !isCrash(r.err) {
				socketDir.Remove()
				lock.Release()
			}
		}()
		return nil, true, why
	}
	var e *embed.Etcd
	select {
	case r := <-started:
		if r.err != nil {
			// After a crash etcd's listener may stay open until the
			// process exits; keep its directory with it.
			keepSocketDir = isCrash(r.err)
			return nil, isCrash(r.err), fmt.Errorf("etcd: cannot start in %q (client %s): %w", c.dir, clientURL.String(), r.err)
		}
		e = r.e
	case <-ctx.Done():
		return abandon(fmt.Errorf("etcd: start in %q cancelled while etcd was opening its data: %w", c.dir, ctx.Err()))
	case <-timer.C:
		return abandon(fmt.Errorf("etcd: still opening its data in %q after %s; set Config.LogOutput and Config.LogLevel \"info\" to see why, or raise Config.ReadyTimeout", c.dir, c.readyTimeout))
	}

	fail := func(err error) (*Server, bool, error) {
		state.closing.Store(true)
		e.Close()
		return nil, false, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		if err == nil {
			err = errors.New("a listener stopped")
		}
		return fail(fmt.Errorf("etcd: failed while starting in %q: %w", c.dir, err))
	case <-e.Server.StopNotify():
		return fail(fmt.Errorf("etcd: stopped before it became ready in %q; set Config.LogOutput and Config.LogLevel \"info\" to see why", c.dir))
	case <-ctx.Done():
		return fail(fmt.Errorf("etcd: start in %q cancelled before it became ready: %w", c.dir, ctx.Err()))
	case <-timer.C:
		return fail(fmt.Errorf("etcd: not ready after %s in %q; set Config.LogOutput and Config.LogLevel \"info\" to see why, or raise Config.ReadyTimeout", c.readyTimeout, c.dir))
	}

	// etcd creates its member directory without syncing the data directory (and its
	// snapshot directory and database likewise): a power cut before the file system
	// happens to write them would take the whole member. Sync them before the first
	// write can be acknowledged (TestPowerCutKeepsAcknowledgedPuts).
	if err := atomicfile.SyncTree(c.dir); err != nil {
		return fail(fmt.Errorf("etcd: syncing its data directory %q: %w", c.dir, err))
	}

	// The directory already keeps others out; a private socket mode is a
	// second wall should the directory's mode ever be widened.
	if err := os.Chmod(clientURL.Path, 0o600); err != nil {
		return fail(fmt.Errorf("etcd: cannot restrict the client socket %q: %w", clientURL.Path, err))
	}

	keepSocketDir = true
	s = &Server{
		etcd:        e,
		dir:         c.dir,
		socketDir:   socketDir,
		clientURL:   clientURL.String(),
		log:         state,
		lock:        lock,
		errc:        make(chan error, errBufferSize),
		forwardDone: make(chan struct{}),
	}
	go s.forwardErrors()
	return s, true, nil
}

// startEtcd calls embed.StartEtcd. Fatal and panic log calls made by etcd
// while it starts (for example on a corrupt write-ahead log) would otherwise
// exit or crash the process; the logger turns them into a panic carrying a
// *startupAbort, recovered here and returned. Runtime panics inside etcd (it
// dereferences nil on some damaged data directories) are recovered too.
//
// After such a crash etcd cannot clean up: its listeners and its open
// database stay behind until the process exits. Start therefore keeps the
// data directory lock, so later Starts on the same Dir fail at once instead
// of blocking on the database's file lock.
func startEtcd(ec *embed.Config, state *logState) (e *embed.Etcd, err error) {
	state.starting.Store(true)
	defer state.starting.Store(false)
	defer func() {
		if r := recover(); r != nil {
			e = nil
			if abort, ok := r.(*startupAbort); ok {
				err = abort
				return
			}
			// etcd does not check everything it reads from the
			// data directory; a damaged or foreign directory can
			// make it dereference nil.
			err = &startupAbort{
				msg: fmt.Sprintf("etcd crashed while opening its data (%v); the data directory is probably damaged or was not written by etcd: move it aside to start with an empty one, or restore it from a backup", r),
			}
		}
	}()
	return embed.StartEtcd(ec)
}

// isCrash reports whether err comes from a recovered etcd crash.
func isCrash(err error) bool {
	var abort *startupAbort
	return errors.As(err, &abort)
}

// forwardErrors copies errors from etcd to s.errc until etcd's error channel
// is closed by Close.
func (s *Server) forwardErrors() {
	defer close(s.forwardDone)
	defer close(s.errc)
	etcdErrs := s.etcd.Err()
	stopped := s.etcd.Server.StopNotify()
	for {
		select {
		case err, ok := <-etcdErrs:
			if !ok {
				return
			}
			if err == nil || s.log.closing.Load() {
				continue
			}
			s.report(fmt.Errorf("etcd at %s: %w", s.clientURL, err))
		case <-stopped:
			stopped = nil
			if !s.log.closing.Load() {
				s.report(fmt.Errorf("etcd at %s stopped unexpectedly (data dir %q); set Config.LogOutput to see why", s.clientURL, s.dir))
			}
		}
	}
}

// report sends err to s.errc without blocking; when nobody reads the channel
// and it is full, later errors are dropped, since the first ones already say
// that the server is broken.
func (s *Server) report(err error) {
	select {
	case s.errc <- err:
	default:
	}
}
