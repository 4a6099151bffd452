package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
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
	_, bin := buildExample(t)
	state := t.TempDir()
	ctx := context.Background()
	acked := map[string]bool{}
	var firstRV string
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
		// A watch from before the crash resumes (the runtime serves it from etcd, which
		// still has the events, although the restarted watch cache starts after them) and
		// delivers every acknowledged write, in order.
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		w, err := bc.Watch(wctx, metav1.ListOptions{ResourceVersion: startRV})
		if err != nil {
			t.Fatal(err)
		}
		// The watch also delivers writes that were in flight at the kill and were stored:
		// wait for every acknowledged one, not for a count.
		pending := map[string]bool{}
		for _, name := range roundAcked {
			pending[name] = true
		}
		lastRV := int64(0)
		for len(pending) > 0 {
			ev, ok := <-w.ResultChan()
			if !ok {
				t.Fatalf("round %d: the resumed watch ended with %d of %d acknowledged writes missed", round, len(pending), len(roundAcked))
			}
			if ev.Type == watch.Error {
				t.Fatalf("round %d: the watch from before the crash did not resume: %v", round, ev.Object)
			}
			o := ev.Object.(*unstructured.Unstructured)
			rv, _ := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
			if ev.Type != watch.Added || rv <= lastRV {
				t.Fatalf("round %d: resumed watch: %s %s at %d after %d", round, ev.Type, o.GetName(), rv, lastRV)
			}
			lastRV = rv
			delete(pending, o.GetName())
		}
		w.Stop()
		cancel()
		if round == 0 {
			firstRV = startRV
		}
		t.Logf("round %d: %d writes acknowledged before SIGKILL, all stored, all delivered by the watch resumed after the restart", round, len(roundAcked))
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}

	// Once etcd has compacted the revision a watch asks for, nothing can resume it: the
	// watch gets 410 Gone, and a relist (what informers do) recovers every write; a watch
	// from the relist's resourceVersion delivers new writes.
	cmd, dyn, _ := startBinary(t, bin, state, "--etcd-compaction-interval=2s")
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	bc := dyn.Resource(boats).Namespace("harbour")
	for i := 0; i < 3; i++ {
		// The compactor compacts to the revision it saw one interval earlier.
		if _, err := bc.Create(ctx, boat(fmt.Sprintf("compacted-%d", i), nil, 1), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		acked[fmt.Sprintf("compacted-%d", i)] = true
		time.Sleep(2500 * time.Millisecond)
	}
	w, err := bc.Watch(ctx, metav1.ListOptions{ResourceVersion: firstRV})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		status, _ := ev.Object.(*metav1.Status)
		if ev.Type != watch.Error || status == nil || status.Code != 410 {
			t.Fatalf("watch from a compacted resourceVersion: want 410 Gone, got %s %v", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("watch from a compacted resourceVersion: no event")
	}
	w.Stop()
	relist, err := bc.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	relisted := map[string]bool{}
	for _, item := range relist.Items {
		relisted[item.GetName()] = true
	}
	for name := range acked {
		if !relisted[name] {
			t.Errorf("%s missing from the relist", name)
		}
	}
	w2, err := bc.Watch(ctx, metav1.ListOptions{ResourceVersion: relist.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	if _, err := bc.Create(ctx, boat("after-relist", nil, 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w2.ResultChan():
		if ev.Type != watch.Added || ev.Object.(*unstructured.Unstructured).GetName() != "after-relist" {
			t.Errorf("watch after relist got %s %v", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("watch after relist saw nothing")
	}
}
