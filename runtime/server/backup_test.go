package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// A server without embedded etcd (--etcd-servers, or --datastore-endpoint with kine on a SQL
// database) answers 404 on the snapshot path; backup's error then says how to back up
// such a store, and no snapshot file is left behind.
func TestBackupOfServerWithoutEmbeddedEtcd(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != EtcdSnapshotPath {
			t.Errorf("backup asked for %s, want %s", r.URL.Path, EtcdSnapshotPath)
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: srv.URL}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "x"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	to := filepath.Join(dir, "snap.db")
	err := backup(context.Background(), kubeconfig, to, io.Discard)
	if err == nil {
		t.Fatal("backup of a server answering 404 succeeded")
	}
	for _, want := range []string{"404", "etcdctl snapshot save", "--datastore-endpoint", "the database's own tools"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("backup error %q does not contain %q", err, want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("backup left files: %v", entries)
	}
}

// backupKubeconfig writes a kubeconfig for srv in dir and returns its path.
func backupKubeconfig(t *testing.T, dir, server string) string {
	t.Helper()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: server}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "x"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// TestBackupCutStreamLeavesNoFile checks docs/backup.md's "a cut connection never leaves a
// partial backup under the target name": a snapshot stream the server cuts half-way, and
// one that arrives whole but does not verify, are errors of backup that leave neither a
// file at --to nor a temporary file, and an older backup there untouched.
func TestBackupCutStreamLeavesNoFile(t *testing.T) {
	chunk := strings.Repeat("x", 64<<10)
	for _, c := range []struct {
		name  string
		serve func(w http.ResponseWriter)
		want  string
	}{
		{"cut half-way", func(w http.ResponseWriter) {
			w.Header().Set("Content-Length", "1000000")
			_, _ = io.WriteString(w, chunk)
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the connection is closed mid-body
		}, "receiving the snapshot after"},
		{"whole but not a snapshot", func(w http.ResponseWriter) {
			_, _ = io.WriteString(w, chunk)
		}, "snapshot"},
	} {
		for _, older := range []bool{false, true} {
			name := c.name
			if older {
				name += ", over an older backup"
			}
			t.Run(name, func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { c.serve(w) }))
				defer srv.Close()
				dir := t.TempDir()
				kubeconfig := backupKubeconfig(t, dir, srv.URL)
				to := filepath.Join(dir, "snap.db")
				if older {
					if err := os.WriteFile(to, []byte("older backup"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				err := backup(context.Background(), kubeconfig, to, io.Discard)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("backup: %v, want an error containing %q", err, c.want)
				}
				entries, _ := os.ReadDir(dir)
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				want := "kubeconfig"
				if older {
					want = "kubeconfig snap.db"
				}
				if got := strings.Join(names, " "); got != want {
					t.Errorf("files left: %s, want %s", got, want)
				}
				if older {
					if data, _ := os.ReadFile(to); string(data) != "older backup" {
						t.Errorf("the older backup became %d bytes", len(data))
					}
				}
			})
		}
	}
}
