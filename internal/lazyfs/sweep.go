package lazyfs

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// sweepDeadMounts detaches the lazyfs mounts whose serving process is gone (a test process
// killed before its cleanups ran leaves one: every access answers ENOTCONN) and removes the
// temporary directory that held such a mount and its backing directory, so that killed runs
// do not accumulate mounts and etcd data in the temporary directory. Mounts of live
// processes, and directories outside os.TempDir, are left alone. Errors are ignored: the
// sweep is housekeeping, and the new mount does not depend on it.
func sweepDeadMounts() {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	type dead struct{ mountpoint, source string }
	var found []dead
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// mountinfo: id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, w := range fields {
			if w == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+2 >= len(fields) || fields[sep+1] != "fuse.lazyfs" {
			continue
		}
		mp := unescapeMountinfo(fields[4])
		var st syscall.Stat_t
		if err := syscall.Stat(mp, &st); errors.Is(err, syscall.ENOTCONN) {
			found = append(found, dead{mountpoint: mp, source: unescapeMountinfo(fields[sep+2])})
		}
	}
	tmp := filepath.Clean(os.TempDir())
	for _, d := range found {
		if err := syscall.Unmount(d.mountpoint, syscall.MNT_DETACH); err != nil {
			continue
		}
		// MountTemp's layout: the mountpoint and the backing directory are two directories
		// of one test's temporary directory, directly under os.TempDir.
		parent := filepath.Dir(d.mountpoint)
		if filepath.Dir(parent) == tmp && filepath.Dir(d.source) == parent {
			_ = os.RemoveAll(parent)
		}
	}
}

// unescapeMountinfo undoes mountinfo's octal escapes of space, tab, newline and backslash.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }
