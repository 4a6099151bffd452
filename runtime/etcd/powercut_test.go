package etcd

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/aagen-dev/aagen/internal/lazyfs"
)

// TestPowerCutKeepsAcknowledgedPuts runs etcd on internal/lazyfs, which drops on a power cut
// every write not fsynced and every directory entry whose directory was not fsynced, and
// reads every acknowledged put back after a cut. etcd creates its member directory
// without syncing the data directory; Start syncs the directories etcd made, or the cut
// takes the whole member with it.
func TestPowerCutKeepsAcknowledgedPuts(t *testing.T) {
	f, mnt := lazyfs.MountTemp(t) // unmounted after the restarted etcd's Close
	cfg := Config{Dir: filepath.Join(mnt, "etcd"), ReadyTimeout: time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, s)
	const n = 20
	for i := 0; i < n; i++ {
		put(t, c, fmt.Sprintf("/k/%d", i), fmt.Sprint(i))
	}
	c.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	lost, err := f.Cut()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the cut dropped %+v", lost)
	s = mustStart(t, cfg)
	c = newClient(t, s)
	for i := 0; i < n; i++ {
		if got := get(t, c, fmt.Sprintf("/k/%d", i)); got != fmt.Sprint(i) {
			t.Fatalf("after the power cut, /k/%d is %q, want %q (acknowledged)", i, got, fmt.Sprint(i))
		}
	}
}
