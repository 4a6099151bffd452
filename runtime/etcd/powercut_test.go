package etcd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/aagen-dev/aagen/internal/lazyfs"
)

// Environment variables that turn the test binary into one step of the power-cut test:
// start etcd in the directory powerCutDirEnv names, then "put" or "get" (check) the
// keys, then close it.
const (
	powerCutDirEnv  = "AAGEN_ETCD_POWERCUT_DIR"
	powerCutStepEnv = "AAGEN_ETCD_POWERCUT_STEP"
	powerCutKeys    = 20
)

// TestPowerCutKeepsAcknowledgedPuts runs etcd on internal/lazyfs, which drops on a power cut
// every write not fsynced and every directory entry whose directory was not fsynced, and
// reads every acknowledged put back after a cut. etcd creates its member directory
// without syncing the data directory; Start syncs the directories etcd made, or the cut
// takes the whole member with it.
//
// etcd runs in child processes (the test binary, through TestMain), not in the process
// that serves the file system: bbolt maps its database file into memory, and a page
// fault on a FUSE file waits for the FUSE server; with the server in the same process, a
// garbage collection that stops the world while a goroutine waits in such a fault never
// ends (the faulting thread cannot stop, the server's goroutines cannot run). The test
// hung that way once in eleven minutes of a run before.
func TestPowerCutKeepsAcknowledgedPuts(t *testing.T) {
	f, mnt := lazyfs.MountTemp(t)
	dir := filepath.Join(mnt, "etcd")
	powerCutStep(t, dir, "put")
	lost, err := f.Cut()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the cut dropped %+v", lost)
	powerCutStep(t, dir, "get")
}

// powerCutStep runs one step in a child process and fails the test with its output when
// the step fails.
func powerCutStep(t *testing.T, dir, step string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), powerCutDirEnv+"="+dir, powerCutStepEnv+"="+step)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("step %s: %v\n%s", step, err, out)
	}
	// A test binary without the step's dispatch in TestMain would run no test and exit 0.
	if !strings.Contains(string(out), powerCutDone) {
		t.Fatalf("step %s did not run (no %q in its output):\n%s", step, powerCutDone, out)
	}
}

// powerCutDone is what a step prints when it succeeded.
const powerCutDone = "power-cut step done"

// runPowerCutStep is the child's side of powerCutStep.
func runPowerCutStep(dir, step string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, Config{Dir: dir, ReadyTimeout: time.Minute})
	if err != nil {
		return err
	}
	defer s.Close()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{s.ClientURL()}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer c.Close()
	for i := range powerCutKeys {
		key, value := fmt.Sprintf("/k/%d", i), fmt.Sprint(i)
		switch step {
		case "put":
			if _, err := c.Put(ctx, key, value); err != nil {
				return fmt.Errorf("put %s: %w", key, err)
			}
		case "get":
			resp, err := c.Get(ctx, key)
			if err != nil {
				return fmt.Errorf("get %s: %w", key, err)
			}
			var got []string
			for _, kv := range resp.Kvs {
				got = append(got, string(kv.Value))
			}
			if strings.Join(got, ",") != value {
				return fmt.Errorf("after the power cut, %s is %q, want %q (acknowledged)", key, got, value)
			}
		default:
			return fmt.Errorf("no step %q", step)
		}
	}
	c.Close()
	return s.Close()
}
