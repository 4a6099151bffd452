//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package localauth

// lockDir does nothing on platforms without flock: concurrent Ensure calls on
// one directory are not serialised there. Each file is still replaced
// atomically.
func lockDir(string) (unlock func(), err error) {
	return func() {}, nil
}
