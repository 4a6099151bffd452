package datastore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/k3s-io/kine/pkg/drivers/sqlite"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestScheme(t *testing.T) {
	for _, ok := range []string{"postgres://u@h/db", "postgresql://h/db", "mysql://u:p@tcp(h:3306)/db", "sqlite:///x/state.db"} {
		if _, err := Scheme(ok); err != nil {
			t.Errorf("Scheme(%q): %v", ok, err)
		}
	}
	for in, want := range map[string]string{
		"state.db":                 "want <scheme>://",
		"http://127.0.0.1:2379":    "use --etcd-servers",
		"postgres:/u:secret@h/db":  "want <scheme>://",
		"nats://u:secret@h:4222/x": "unsupported scheme",
	} {
		_, err := Scheme(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Scheme(%q) = %v, want an error with %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Scheme(%q): the error shows the password: %v", in, err)
		}
	}
}

// TestSQLite starts kine on a new SQLite file, writes through its etcd API, restarts it on the
// same file and reads the write back.
func TestSQLite(t *testing.T) {
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "sub", "state.db")
	var rev int64
	for round := 0; round < 2; round++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s, err := Start(ctx, Config{Endpoint: dsn})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(s.ClientURL(), "unix://") {
			t.Errorf("ClientURL %q: want a unix socket", s.ClientURL())
		}
		sock := strings.TrimPrefix(s.ClientURL(), "unix://")
		if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("socket %s: %v, mode %v; want 0600", sock, err, fi.Mode().Perm())
		}
		if fi, err := os.Stat(filepath.Dir(sock)); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("socket directory: %v, mode %v; want 0700", err, fi.Mode().Perm())
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{s.ClientURL()}, DialTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			resp, err := cli.Put(ctx, "/registry/test/a", "one")
			if err != nil {
				t.Fatal(err)
			}
			rev = resp.Header.Revision
		}
		got, err := cli.Get(ctx, "/registry/test/a")
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "one" || got.Kvs[0].ModRevision != rev {
			t.Fatalf("round %d: got %v, want one at revision %d", round, got.Kvs, rev)
		}
		cli.Close()
		s.Close()
		s.Close() // idempotent
		cancel()
		if _, err := os.Stat(filepath.Dir(sock)); !os.IsNotExist(err) {
			t.Errorf("socket directory left behind: %v", err)
		}
	}
}

// TestSQLiteDSNSyncsEveryCommit: an SQLite DSN runs with synchronous=FULL (every commit
// synced) unless it names a mode itself; without parameters it also gets kine's other
// defaults.
func TestSQLiteDSNSyncsEveryCommit(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"sqlite:///x/state.db", "sqlite:///x/state.db?_journal_mode=WAL&_busy_timeout=30000&_txlock=immediate&_stmt_cache_size=20&cache=shared&_synchronous=FULL"},
		{"sqlite:///x/state.db?_journal_mode=WAL", "sqlite:///x/state.db?_journal_mode=WAL&_synchronous=FULL"},
		{"sqlite:///x/state.db?_journal_mode=WAL&_synchronous=NORMAL", "sqlite:///x/state.db?_journal_mode=WAL&_synchronous=NORMAL"},
		{"sqlite:///x/state.db?_sync=OFF", "sqlite:///x/state.db?_sync=OFF"},
	} {
		if got := sqliteDSN(c.in); got != c.want {
			t.Errorf("sqliteDSN(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// The first case spells out kine's defaults but synchronous: they are still kine's.
	if want := "_journal_mode=WAL&_busy_timeout=30000&_synchronous=NORMAL&_txlock=immediate&_stmt_cache_size=20&cache=shared"; sqlite.DefaultParams != want {
		t.Errorf("kine's SQLite defaults are now %q, not %q: update the first case", sqlite.DefaultParams, want)
	}
}

// The errors of a schema setup that raced another server's (as two replicas starting on an
// empty PostgreSQL database meet them) are retried; others are not.
func TestConcurrentSchemaSetup(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{errors.New(`failed to create driver for configured endpoint: ERROR: duplicate key value violates unique constraint "pg_class_relname_nsp_index" (SQLSTATE 23505)`), true},
		{errors.New(`ERROR: relation "kine" already exists (SQLSTATE 42P07)`), true},
		{errors.New(`ERROR: password authentication failed for user "aagen" (SQLSTATE 28P01)`), false},
		{errors.New("dial tcp 10.0.0.1:5432: connect: connection refused"), false},
		{nil, false},
	} {
		if got := ConcurrentSchemaSetup(c.err); got != c.want {
			t.Errorf("ConcurrentSchemaSetup(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
