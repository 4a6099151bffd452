//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package etcd

// dirLock does nothing on platforms without flock: there, two etcds on one
// data directory are not detected up front (etcd's own database lock makes
// the second one wait until ReadyTimeout).
type dirLock struct{}

func lockDataDir(string) (*dirLock, error) { return &dirLock{}, nil }

func (*dirLock) release() {}
