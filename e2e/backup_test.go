package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// TestBackupRestore backs up the example's embedded etcd with `marina-apiserver backup`
// while the server serves (and takes writes), restores the snapshot into a new data
// directory with `marina-apiserver restore`, starts the server on it, and finds every
// object written before the backup.
func TestBackupRestore(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata/example"), dir, nil)
	up := startUp(t, dir, 20*time.Minute)
	bin := filepath.Join(dir, ".aagen", "bin", "marina-apiserver")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dyn := dynamic.NewForConfigOrDie(up.restConfig(t))
	bc := dyn.Resource(boats).Namespace("default")

	const before = 30
	for i := range before {
		if _, err := bc.Create(ctx, boat(fmt.Sprintf("before-%02d", i), nil, int64(5+i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dock := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "marina.example.com/v1alpha1", "kind": "Dock",
		"metadata": map[string]any{"name": "north"}, "spec": map[string]any{"berths": int64(12)},
	}}
	if _, err := dyn.Resource(docks).Create(ctx, dock, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Writes go on while the snapshot is taken.
	var wg sync.WaitGroup
	var during atomic.Int64
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := bc.Create(ctx, boat(fmt.Sprintf("during-%03d", i), nil, 7), metav1.CreateOptions{}); err != nil {
				t.Errorf("write during the backup: %v", err)
				return
			}
			during.Add(1)
		}
	}()
	snapshot := filepath.Join(t.TempDir(), "marina.db")
	out := run(t, dir, bin, "backup", "--to", snapshot, "--kubeconfig", up.kubeconfig)
	close(stop)
	wg.Wait()
	t.Logf("%s(%d writes ran during the backup)", out, during.Load())
	if !strings.Contains(out, "saved snapshot "+snapshot) {
		t.Errorf("backup output: %q", out)
	}
	if _, err := bc.Create(ctx, boat("after", nil, 9), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("refusals", func(t *testing.T) {
		anonymous := filepath.Join(t.TempDir(), "kubeconfig")
		data, err := os.ReadFile(up.kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		// The same server, without the client certificate.
		var kept []string
		for _, line := range strings.Split(string(data), "\n") {
			if !strings.Contains(line, "client-certificate") && !strings.Contains(line, "client-key") {
				kept = append(kept, line)
			}
		}
		if err := os.WriteFile(anonymous, []byte(strings.Join(kept, "\n")), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := runFails(t, dir, bin, "backup", "--to", filepath.Join(t.TempDir(), "x.db"), "--kubeconfig", anonymous)
		if !strings.Contains(cmd, "401") {
			t.Errorf("backup without credentials: %s", cmd)
		}
		if out := runFails(t, dir, bin, "restore", "--from", snapshot, "--data-dir", filepath.Join(dir, ".aagen", "etcd")); !strings.Contains(out, "not empty") {
			t.Errorf("restore over the live data: %s", out)
		}
	})

	restored := filepath.Join(t.TempDir(), "restored-etcd")
	out = run(t, dir, bin, "restore", "--from", snapshot, "--data-dir", restored)
	t.Log(out)
	up.stop(t)

	again := startUp(t, dir, 5*time.Minute, "--embedded-etcd-dir="+restored)
	dyn = dynamic.NewForConfigOrDie(again.restConfig(t))
	bc = dyn.Resource(boats).Namespace("default")
	list, err := bc.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	var duringRestored int
	for _, b := range list.Items {
		names[b.GetName()] = true
		if strings.HasPrefix(b.GetName(), "during-") {
			duringRestored++
		}
	}
	for i := range before {
		if name := fmt.Sprintf("before-%02d", i); !names[name] {
			t.Errorf("boat %s, written before the backup, is missing after the restore", name)
		}
	}
	if names["after"] {
		t.Errorf("boat 'after', written after the backup, is in the restored data")
	}
	if got, err := bc.Get(ctx, "before-07", metav1.GetOptions{}); err != nil {
		t.Error(err)
	} else if l, _, _ := unstructured.NestedInt64(got.Object, "spec", "lengthMeters"); l != 12 {
		t.Errorf("before-07 lengthMeters %d, want 12", l)
	}
	if _, err := dyn.Resource(docks).Get(ctx, "north", metav1.GetOptions{}); err != nil {
		t.Errorf("dock north after the restore: %v", err)
	}
	// The restored server takes writes.
	if _, err := bc.Create(ctx, boat("after-restore", nil, 9), metav1.CreateOptions{}); err != nil {
		t.Errorf("write after the restore: %v", err)
	}
	if _, err := bc.Create(ctx, boat("before-00", nil, 9), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("create of a restored name: want AlreadyExists, got %v", err)
	}
	t.Logf("restored %d boats (%d of them written during the backup)", len(list.Items), duringRestored)
}

// runFails runs a command that must fail and returns its combined output.
func runFails(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("%s %s succeeded, want an error:\n%s", name, strings.Join(args, " "), out)
	}
	return string(out)
}
