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
