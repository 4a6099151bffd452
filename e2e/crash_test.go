package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// startBinary runs the server binary in local mode on dir's state and waits for the
// KUBECONFIG line.
func startBinary(t *testing.T, bin, state string, extra ...string) (*exec.Cmd, dynamic.Interface, *rest.Config) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--local", "--secure-port=0", "--local-dir=" + filepath.Join(state, "local"), "--embedded-etcd-dir=" + filepath.Join(state, "etcd")}, extra...)...)
	stdout, _ := cmd.StdoutPipe()
	logs := &cluster.Buffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
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
		cfg, err := clientcmd.BuildConfigFromFlags("", kc)
		if err != nil {
			t.Fatal(err)
		}
		cfg.QPS, cfg.Burst = 500, 1000
		return cmd, dynamic.NewForConfigOrDie(cfg), cfg
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("server not ready:\n%s", cluster.Tail(logs.String(), 3000))
	}
	return nil, nil, nil
}

// TestCrashRecovery kills the server with SIGKILL in the middle of a stream of writes on
// its embedded etcd, restarts it, and checks that every acknowledged write survived and
// that a watch from before the crash resumes and sees every one of them.
func TestCrashRecovery(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata/example"), dir, nil)
	run(t, dir, aagen(t), "generate", "./pkg/apis/...")
	bin := filepath.Join(dir, "server")
	run(t, dir, "go", "build", "-o", bin, "./cmd/marina-apiserver")
	state := t.TempDir()
	ctx := context.Background()
	acked := map[string]bool{}
	for round := 0; round < 3; round++ {
		cmd, dyn, _ := startBinary(t, bin, state)
		bc := dyn.Resource(boats).Namespace("harbour")
		list, err := bc.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(list.Items); got != len(acked) {
			t.Fatalf("round %d: %d boats stored, %d acknowledged before", round, got, len(acked))
		}
		for _, item := range list.Items {
			if !acked[item.GetName()] {
				t.Errorf("round %d: %s stored but never acknowledged (allowed only for the write in flight)", round, item.GetName())
			}
		}
		startRV := list.GetResourceVersion()

		var mu sync.Mutex
		var wg sync.WaitGroup
		stop := make(chan struct{})
		var roundAcked []string
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					name := fmt.Sprintf("r%d-w%d-%d", round, w, i)
					if _, err := bc.Create(ctx, boat(name, nil, int64(i)), metav1.CreateOptions{}); err != nil {
						return // the server is gone
					}
					mu.Lock()
					roundAcked = append(roundAcked, name)
					mu.Unlock()
				}
			}(w)
		}
		time.Sleep(1500 * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		close(stop)
		wg.Wait()
		if len(roundAcked) == 0 {
			t.Fatalf("round %d: no write was acknowledged", round)
		}

		cmd, dyn, _ = startBinary(t, bin, state)
		bc = dyn.Resource(boats).Namespace("harbour")
		stored := map[string]bool{}
		list, err = bc.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range list.Items {
			stored[item.GetName()] = true
		}
		for _, name := range roundAcked {
			acked[name] = true
			if !stored[name] {
				t.Errorf("round %d: acknowledged write %s lost", round, name)
			}
		}
		// Writes that were in flight at the kill may or may not be there; count them as acknowledged now.
		for name := range stored {
			acked[name] = true
		}
		// A watch from before the crash either resumes and delivers every write made since,
		// or, when its resourceVersion predates the restarted watch cache, gets 410 Gone;
		// then a relist (what informers do) recovers every write.
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		w, err := bc.Watch(wctx, metav1.ListOptions{ResourceVersion: startRV})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		gone := false
		for len(seen) < len(roundAcked) && !gone {
			ev, ok := <-w.ResultChan()
			if !ok {
				break
			}
			switch ev.Type {
			case watch.Added:
				seen[ev.Object.(*unstructured.Unstructured).GetName()] = true
			case watch.Error:
				status, _ := ev.Object.(*metav1.Status)
				if status == nil || status.Code != 410 {
					t.Fatalf("round %d: watch error %v", round, ev.Object)
				}
				gone = true
			}
		}
		w.Stop()
		cancel()
		how := "the resumed watch"
		if gone {
			how = "a relist after 410 Gone"
			relist, err := bc.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, item := range relist.Items {
				seen[item.GetName()] = true
			}
			// A watch from the relist's resourceVersion works and sees new writes.
			w2, err := bc.Watch(ctx, metav1.ListOptions{ResourceVersion: relist.GetResourceVersion()})
			if err != nil {
				t.Fatal(err)
			}
			next := fmt.Sprintf("r%d-after-relist", round)
			if _, err := bc.Create(ctx, boat(next, nil, 1), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			acked[next] = true
			select {
			case ev := <-w2.ResultChan():
				if ev.Type != watch.Added || ev.Object.(*unstructured.Unstructured).GetName() != next {
					t.Errorf("round %d: watch after relist got %s", round, ev.Type)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("round %d: watch after relist saw nothing", round)
			}
			w2.Stop()
		}
		for _, name := range roundAcked {
			if !seen[name] {
				t.Errorf("round %d: %s missed by %s", round, name, how)
			}
		}
		t.Logf("round %d: %d writes acknowledged before SIGKILL, all stored, all recovered by %s", round, len(roundAcked), how)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
}
