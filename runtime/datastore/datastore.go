// Package datastore runs kine (github.com/k3s-io/kine) inside the current process, so that a
// generated server can keep its objects in PostgreSQL, MySQL or SQLite instead of etcd.
//
// kine translates the etcd v3 API that k8s.io/apiserver speaks into SQL. Start opens the
// database named by a DSN, serves kine's etcd API on a unix socket in a private temporary
// directory (mode 0700, so that only this process's user can reach it) and returns the URL
// to give the apiserver as its only etcd server:
//
//	ds, err := datastore.Start(ctx, datastore.Config{Endpoint: "postgres://u:p@db:5432/marina"})
//	if err != nil {
//		return err
//	}
//	defer ds.Close()
//	storageConfig.Transport.ServerList = []string{ds.ClientURL()}
//
// Compaction is left to the apiserver (--etcd-compaction-interval), as on etcd: kine's own
// compactor is off and kine keeps no revisions beyond the one the apiserver compacts to,
// so a watch from a compacted resourceVersion gets 410 Gone after the same interval as on
// etcd.
//
// SQLite goes through github.com/mattn/go-sqlite3 when the binary is built with cgo and
// through the pure-Go modernc.org/sqlite when it is not (kine picks by build tag). It runs
// with synchronous=FULL unless the DSN names a mode, so that an acknowledged write survives
// a power cut (sqliteDSN).
package datastore

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/k3s-io/kine/pkg/drivers/generic"
	"github.com/k3s-io/kine/pkg/drivers/sqlite"
	"github.com/k3s-io/kine/pkg/endpoint"

	"github.com/aagen-dev/aagen/runtime/atomicfile"
	"github.com/aagen-dev/aagen/runtime/socketdir"
)

// SupportedSchemes lists the DSN schemes Start accepts, for messages.
const SupportedSchemes = "postgres, postgresql, mysql, sqlite"

// Defaults of kine's tuning, as kine's own command sets them.
const (
	defaultNotifyInterval      = 5 * time.Second
	defaultPollInterval        = time.Second
	defaultCompactTimeout      = 5 * time.Second
	defaultCompactBatchSize    = 1000
	defaultPollBatchSize       = 500
	defaultMaxIdleConnections  = 20
	defaultConnectionIdleTime  = 2 * time.Minute
	defaultEmulatedEtcdVersion = "3.6.11"
)

// Config configures an in-process kine.
type Config struct {
	// Endpoint is the database DSN: postgres://user:password@host:port/db?sslmode=...,
	// mysql://user:password@tcp(host:port)/db or sqlite:///path/to/state.db. Required.
	Endpoint string
	// SocketDir is the directory for kine's unix socket. Default: a new directory under
	// os.TempDir(), removed by Close. A socket path must be shorter than 108 bytes.
	SocketDir string
}

// Server is a running in-process kine.
type Server struct {
	url       string
	socketDir string
	ownDir    *socketdir.Dir // the socket directory New made; nil when Config.SocketDir was given
	cancel    context.CancelFunc
	wg        *sync.WaitGroup
	closeOnce sync.Once
}

// Scheme returns the scheme of a datastore DSN ("postgres", "sqlite", ...), or an error that
// says what a valid one looks like.
func Scheme(dsn string) (string, error) {
	scheme, _, ok := strings.Cut(dsn, "://")
	if !ok {
		return "", fmt.Errorf("datastore endpoint %q: want <scheme>://..., with scheme one of %s (e.g. sqlite:///var/lib/marina/state.db)", redact(dsn), SupportedSchemes)
	}
	switch scheme {
	case "postgres", "postgresql", "mysql", "sqlite":
		return scheme, nil
	}
	return "", fmt.Errorf("datastore endpoint %s: unsupported scheme %q, want one of %s (for etcd, use --etcd-servers)", redact(dsn), scheme, SupportedSchemes)
}

// schemaSetupAttempts is how many times Start tries kine's schema setup that failed because
// another server was setting it up in the same database at the same moment.
const schemaSetupAttempts = 5

// ConcurrentSchemaSetup reports whether err is PostgreSQL's refusal of a CREATE ... IF NOT
// EXISTS that raced with the same statement of another connection: unique_violation (23505,
// on the catalog) or duplicate_table/duplicate_object (42P07, 42710). Two replicas of a
// Deployment starting together on an empty database meet it in kine's table setup (seen on
// the node: e2e TestNodeDeploysServer); the loser's retry finds the tables made.
func ConcurrentSchemaSetup(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	for _, code := range []string{"(SQLSTATE 23505)", "(SQLSTATE 42P07)", "(SQLSTATE 42710)"} {
		if strings.Contains(msg, code) {
			return true
		}
	}
	return false
}

// Start opens the database and serves kine's etcd API until Close is called. ctx bounds
// the startup only, as for runtime/etcd's Start: a server shutting down gracefully still
// reads and watches through kine until it closes it.
// It retries kine's schema setup when another server raced it there (ConcurrentSchemaSetup).
func Start(ctx context.Context, cfg Config) (*Server, error) {
	scheme, err := Scheme(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	if scheme == "sqlite" {
		if err := ensureSQLiteDir(cfg.Endpoint); err != nil {
			return nil, err
		}
		cfg.Endpoint = sqliteDSN(cfg.Endpoint)
	}
	s := &Server{socketDir: cfg.SocketDir, wg: &sync.WaitGroup{}}
	if s.socketDir == "" {
		// socketdir also removes the directories of kines whose process was killed.
		if s.ownDir, err = socketdir.Make("", "aagen-kine-"); err != nil {
			return nil, fmt.Errorf("kine: %w", err)
		}
		s.socketDir = s.ownDir.Path
	} else if err := os.MkdirAll(s.socketDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating kine's socket directory: %w", err)
	}
	var etcdCfg endpoint.ETCDConfig
	for attempt := 1; ; attempt++ {
		kctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		s.cancel, s.wg = cancel, &sync.WaitGroup{}
		etcdCfg, err = endpoint.Listen(kctx, endpoint.Config{
			WaitGroup: s.wg,
			Listener:  "unix://" + filepath.Join(s.socketDir, "kine.sock"),
			Endpoint:  cfg.Endpoint,
			ConnectionPoolConfig: generic.ConnectionPoolConfig{
				MaxIdle:     defaultMaxIdleConnections,
				MaxIdleTime: defaultConnectionIdleTime,
			},
			NotifyInterval:      defaultNotifyInterval,
			EmulatedETCDVersion: defaultEmulatedEtcdVersion,
			// The apiserver's compactor decides, as with etcd: kine's own is off
			// (interval 0) and honours the apiserver's Compact calls to the revision asked.
			CompactInterval:  0,
			CompactMinRetain: 0,
			CompactTimeout:   defaultCompactTimeout,
			CompactBatchSize: defaultCompactBatchSize,
			PollBatchSize:    defaultPollBatchSize,
			PollInterval:     defaultPollInterval,
		})
		if err == nil {
			break
		}
		cancel()
		s.wg.Wait()
		if !ConcurrentSchemaSetup(err) || attempt == schemaSetupAttempts {
			s.Close()
			return nil, fmt.Errorf("starting kine on %s: %w", redact(cfg.Endpoint), err)
		}
		// Another replica is creating kine's tables in the same database right now:
		// once it has, the next attempt finds them.
		select {
		case <-ctx.Done():
			s.Close()
			return nil, fmt.Errorf("starting kine on %s: %w", redact(cfg.Endpoint), err)
		case <-time.After(time.Duration(attempt) * 250 * time.Millisecond):
		}
	}
	if len(etcdCfg.Endpoints) != 1 {
		s.Close()
		return nil, fmt.Errorf("kine on %s: want one endpoint, got %d", redact(cfg.Endpoint), len(etcdCfg.Endpoints))
	}
	s.url = etcdCfg.Endpoints[0]
	return s, nil
}

// ClientURL is the etcd URL of kine (unix://...), for the apiserver's --etcd-servers.
func (s *Server) ClientURL() string { return s.url }

// Close stops kine, waits for its goroutines and closes the database. It is safe to call
// more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.cancel()
		s.wg.Wait()
		s.ownDir.Remove()
	})
}

// durableSynchronous is the SQLite synchronous mode that syncs every commit to disk.
const durableSynchronous = "_synchronous=FULL"

// sqliteDSN completes an SQLite DSN. Without parameters it gets kine's defaults (WAL, busy
// timeout, immediate transactions), which kine applies only to its own default file. And
// it gets synchronous=FULL unless it names a synchronous mode itself: kine's defaults say
// NORMAL, and NORMAL is also what both SQLite drivers' builds use in WAL mode, where it
// does not sync a commit; a power cut then loses writes the clients were told had
// succeeded (e2e TestPowerCut lost every acknowledged write that way).
func sqliteDSN(dsn string) string {
	base, params, _ := strings.Cut(dsn, "?")
	var segs []string
	if params == "" {
		for _, seg := range strings.Split(sqlite.DefaultParams, "&") {
			if !isSynchronousParam(seg) {
				segs = append(segs, seg)
			}
		}
	} else {
		segs = strings.Split(params, "&")
	}
	if !slices.ContainsFunc(segs, isSynchronousParam) {
		segs = append(segs, durableSynchronous)
	}
	return base + "?" + strings.Join(segs, "&")
}

// isSynchronousParam says whether a DSN parameter (key=value) sets the synchronous mode.
func isSynchronousParam(seg string) bool {
	key, _, _ := strings.Cut(seg, "=")
	return key == "_synchronous" || key == "_sync"
}

// ensureSQLiteDir creates the directory of an SQLite database file, which SQLite does not,
// durably (SQLite syncs the database's directory, not the directories above it).
func ensureSQLiteDir(dsn string) error {
	path, _, _ := strings.Cut(strings.TrimPrefix(dsn, "sqlite://"), "?")
	if path == "" {
		return fmt.Errorf("datastore endpoint %s: name the database file, e.g. sqlite:///var/lib/marina/state.db", dsn)
	}
	if err := atomicfile.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating the directory of SQLite database %s: %w", path, err)
	}
	return nil
}

// redact hides the password of a DSN for error messages and logs.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err == nil && u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "***")
		}
		return u.String()
	}
	at := strings.LastIndex(dsn, "@")
	if at < 0 {
		return dsn
	}
	// Not a URL (mysql's tcp(host:port) is not): hide everything before the host.
	if i := strings.Index(dsn, "://"); i >= 0 && i < at {
		return dsn[:i+3] + "***" + dsn[at:]
	}
	return "***" + dsn[at:]
}
