package etcd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// restorePeerURL is the peer URL a restored member is created with. A single member never
// talks to peers, and Start reopens a data directory with the ports it picks, whatever
// the stored membership says.
const restorePeerURL = "http://127.0.0.1:2380"

// WriteSnapshot streams a consistent snapshot of the etcd that client reaches (the whole
// keyspace at one revision, taken by etcd's Maintenance.Snapshot while it keeps serving)
// to w. The stream ends with the SHA-256 of the database, which VerifySnapshot and
// Restore check.
func WriteSnapshot(ctx context.Context, client *clientv3.Client, w io.Writer) (int64, error) {
	if len(client.Endpoints()) == 0 {
		return 0, fmt.Errorf("etcd snapshot: the client has no endpoints")
	}
	rc, err := client.Snapshot(ctx)
	if err != nil {
		return 0, fmt.Errorf("etcd snapshot from %v: %w", client.Endpoints(), err)
	}
	defer rc.Close()
	n, err := io.Copy(w, rc)
	if err != nil {
		return n, fmt.Errorf("etcd snapshot from %v: after %d bytes: %w", client.Endpoints(), n, err)
	}
	return n, nil
}

// SnapshotStatus describes a verified snapshot file.
type SnapshotStatus struct {
	// Revision is the etcd revision the snapshot was taken at.
	Revision int64
	// Keys is the number of keys in it.
	Keys int
	// Bytes is the size of the database in it.
	Bytes int64
}

// VerifySnapshot checks that path holds a whole snapshot as WriteSnapshot (or etcdctl
// snapshot save) writes it: a database followed by its SHA-256. A truncated or altered
// file is an error.
func VerifySnapshot(path string) (SnapshotStatus, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return SnapshotStatus{}, fmt.Errorf("reading snapshot: %w", err)
	}
	// etcd appends the hash to a database whose size is a multiple of 512 bytes.
	if len(data) < sha256.Size || (len(data)-sha256.Size)%512 != 0 {
		return SnapshotStatus{}, fmt.Errorf("snapshot %s: %d bytes is not a database plus its SHA-256: the file is truncated or not an etcd snapshot; take it again", path, len(data))
	}
	db, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if got := sha256.Sum256(db); !bytes.Equal(got[:], sum) {
		return SnapshotStatus{}, fmt.Errorf("snapshot %s: SHA-256 mismatch: the file is damaged; take it again", path)
	}
	st, err := snapshot.NewV3(zap.NewNop()).Status(path)
	if err != nil {
		return SnapshotStatus{}, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return SnapshotStatus{Revision: st.Revision, Keys: st.TotalKey, Bytes: st.TotalSize}, nil
}

// Restore creates, in dir, an etcd data directory holding the keys of the snapshot at
// path, for Start to open (Config.Dir). dir must not exist or be empty: a restore never
// overwrites data. The snapshot's hash is checked first.
func Restore(path, dir string) error {
	if _, err := VerifySnapshot(path); err != nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("restore: data directory %q: %w", dir, err)
	}
	if entries, err := os.ReadDir(abs); err == nil && len(entries) > 0 {
		return fmt.Errorf("restore: data directory %s is not empty: restore into a new directory, then start the server with it (--embedded-etcd-dir)", abs)
	}
	err = snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath:        path,
		Name:                memberName,
		OutputDataDir:       abs,
		PeerURLs:            []string{restorePeerURL},
		InitialCluster:      memberName + "=" + restorePeerURL,
		InitialClusterToken: "etcd-cluster",
	})
	if err != nil {
		return fmt.Errorf("restoring %s into %s: %w", path, abs, err)
	}
	return os.Chmod(abs, 0o700)
}
