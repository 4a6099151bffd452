package etcd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestSnapshotRestore takes a snapshot of a serving etcd, restores it into a new data
// directory, and starts etcd there: every key is back. Damaged snapshots and non-empty
// target directories are refused.
func TestSnapshotRestore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := func(dir string) (*Server, *clientv3.Client) {
		t.Helper()
		s, err := Start(ctx, Config{Dir: dir, UnsafeNoFsync: true, ReadyTimeout: 30 * time.Second})
		if err != nil {
			t.Fatalf("Start(%s): %v", dir, err)
		}
		t.Cleanup(func() { s.Close() })
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{s.ClientURL()}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return s, c
	}
	_, client := start(t.TempDir())
	for i := range 100 {
		if _, err := client.Put(ctx, fmt.Sprintf("/registry/k%03d", i), fmt.Sprintf("v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	snap := filepath.Join(t.TempDir(), "backup.db")
	f, err := os.Create(snap)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WriteSnapshot(ctx, client, f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Writes after the snapshot are not in it.
	if _, err := client.Put(ctx, "/registry/after", "x"); err != nil {
		t.Fatal(err)
	}
	st, err := VerifySnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	if st.Keys < 100 || st.Revision < 101 {
		t.Errorf("status %+v: want at least 100 keys at revision 101", st)
	}

	restored := filepath.Join(t.TempDir(), "restored")
	if err := Restore(snap, restored); err != nil {
		t.Fatal(err)
	}
	_, rc := start(restored)
	resp, err := rc.Get(ctx, "/registry/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 100 {
		t.Fatalf("restored etcd holds %d keys, want 100", len(resp.Kvs))
	}
	if got := string(resp.Kvs[42].Value); got != "v42" {
		t.Errorf("k042 = %q", got)
	}

	t.Run("refusals", func(t *testing.T) {
		if err := Restore(snap, restored); err == nil || !strings.Contains(err.Error(), "not empty") {
			t.Errorf("restore into a used directory: %v", err)
		}
		data, err := os.ReadFile(snap)
		if err != nil {
			t.Fatal(err)
		}
		truncated := filepath.Join(t.TempDir(), "truncated.db")
		if err := os.WriteFile(truncated, data[:len(data)-100], 0o600); err != nil {
			t.Fatal(err)
		}
		if err := Restore(truncated, filepath.Join(t.TempDir(), "x")); err == nil || !strings.Contains(err.Error(), "truncated") {
			t.Errorf("truncated snapshot: %v", err)
		}
		data[100] ^= 0xff
		damaged := filepath.Join(t.TempDir(), "damaged.db")
		if err := os.WriteFile(damaged, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := VerifySnapshot(damaged); err == nil || !strings.Contains(err.Error(), "SHA-256") {
			t.Errorf("damaged snapshot: %v", err)
		}
	})
}
