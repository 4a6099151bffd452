package e2e

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aagen-dev/aagen/e2e/cluster"
	"github.com/aagen-dev/aagen/runtime/server"
)

// TestUpSQLite runs `aagen up --datastore=sqlite` on the example: the server keeps its
// objects in .aagen/sqlite/state.db (no etcd directory), and they survive a restart.
func TestUpSQLite(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata/example"), dir, nil)
	ctx := context.Background()
	for round := 0; round < 2; round++ {
		cmd, kubeconfig, logs := startUpSQLite(t, dir)
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		bc := dynamic.NewForConfigOrDie(cfg).Resource(boats).Namespace("default")
		if round == 0 {
			if _, err := bc.Create(ctx, boat("on-sqlite", nil, 7), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			// No embedded etcd, no etcd snapshot: the database is backed up with its own
			// tools (docs/backup.md), and `backup` says so on the 404.
			hc, err := rest.HTTPClientFor(cfg)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := hc.Get(cfg.Host + server.EtcdSnapshotPath)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s on SQLite: %s, want 404 Not Found", server.EtcdSnapshotPath, resp.Status)
			}
		} else if _, err := bc.Get(ctx, "on-sqlite", metav1.GetOptions{}); err != nil {
			t.Fatalf("after a restart on the same SQLite file: %v", err)
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("aagen up did not exit cleanly after Ctrl-C: %v\n%s", err, cluster.Tail(logs.String(), 3000))
			}
		case <-time.After(90 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatal("aagen up did not stop within 90s of Ctrl-C")
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, ".aagen", "sqlite", "state.db")); err != nil || fi.Size() == 0 {
		t.Errorf("no SQLite database in .aagen/sqlite: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".aagen", "etcd")); !os.IsNotExist(err) {
		t.Errorf("an etcd directory with --datastore=sqlite: %v", err)
	}
}

// startUpSQLite runs `aagen up --datastore=sqlite` in dir and waits for the KUBECONFIG line.
func startUpSQLite(t *testing.T, dir string) (*exec.Cmd, string, *cluster.Buffer) {
	t.Helper()
	cmd := exec.Command(aagen(t), "up", "--datastore=sqlite", "./pkg/apis/...", "--", "--secure-port=0")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &cluster.Buffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		}
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if kc, ok := strings.CutPrefix(sc.Text(), "export KUBECONFIG="); ok {
				ready <- kc
			}
		}
	}()
	select {
	case kc := <-ready:
		return cmd, kc, logs
	case <-time.After(10 * time.Minute):
		t.Fatalf("aagen up --datastore=sqlite: no KUBECONFIG line:\n%s", cluster.Tail(logs.String(), 3000))
	}
	return nil, "", nil
}
