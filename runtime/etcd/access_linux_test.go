package etcd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// probeURLEnv names the environment variable that turns the test binary into
// a probe: instead of running tests it tries to write and read the etcd at the
// URL it holds, prints what happened and exits 0 on success, 3 on failure.
const probeURLEnv = "AAGEN_ETCD_PROBE_URL"

// probeKey is the key the probe writes.
const probeKey = "/registry/probe"

func TestMain(m *testing.M) {
	if u := os.Getenv(probeURLEnv); u != "" {
		os.Exit(probe(u))
	}
	if dir := os.Getenv(powerCutDirEnv); dir != "" {
		if err := runPowerCutStep(dir, os.Getenv(powerCutStepEnv)); err != nil {
			fmt.Println(err)
			os.Exit(3)
		}
		fmt.Println(powerCutDone)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// probe tries to open the socket behind etcdURL, then to put and get a key
// through etcd's client. It reports each step on stdout.
func probe(etcdURL string) int {
	path := strings.TrimPrefix(etcdURL, "unix://")
	conn, err := net.DialTimeout("unix", path, 3*time.Second)
	if err != nil {
		fmt.Printf("dial: %v\n", err)
		return 3
	}
	conn.Close()
	fmt.Println("dial: ok")
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdURL}, DialTimeout: 3 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		fmt.Printf("client: %v\n", err)
		return 3
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, probeKey, fmt.Sprintf("written by uid %d", os.Getuid())); err != nil {
		fmt.Printf("put: %v\n", err)
		return 3
	}
	resp, err := c.Get(ctx, probeKey)
	if err != nil || len(resp.Kvs) != 1 {
		fmt.Printf("get: %v (%d keys)\n", err, len(resp.Kvs))
		return 3
	}
	fmt.Printf("put and get: ok (%s)\n", resp.Kvs[0].Value)
	return 0
}

// TestOnlyTheOwnerCanReachEtcd starts etcd and checks that
//   - the process holds no listening TCP socket (no client, peer or metrics
//     port: the unix socket is the only way in);
//   - a process of the same user can write and read through ClientURL;
//   - a process of another local user (nobody) can neither connect to the
//     socket nor write or read a key.
//
// Starting a process as another user needs root; the test fails, rather than
// skips, without it.
func TestOnlyTheOwnerCanReachEtcd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("this test starts a process as user nobody and needs to run as root (euid %d)", os.Geteuid())
	}
	before := listeningTCPInodes(t)
	s := mustStart(t, testConfig(t, t.TempDir()))
	for inode := range listeningTCPInodes(t) {
		if !before[inode] {
			t.Errorf("etcd opened a listening TCP socket (inode %s); want none", inode)
		}
	}
	sock := strings.TrimPrefix(s.ClientURL(), "unix://")
	for _, p := range []struct {
		path string
		mode os.FileMode
	}{{filepath.Dir(sock), 0o700}, {sock, 0o600}} {
		fi, err := os.Stat(p.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != p.mode {
			t.Errorf("%s: mode %o, want %o", p.path, got, p.mode)
		}
	}

	bin := probeBinary(t)
	out, err := runProbe(t, bin, s.ClientURL(), nil)
	if err != nil {
		t.Fatalf("probe as the owner (uid %d) failed, want success: %v\n%s", os.Getuid(), err, out)
	}
	t.Logf("as the owner: %s", out)

	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("look up user nobody: %v", err)
	}
	uid, _ := strconv.ParseUint(nobody.Uid, 10, 32)
	gid, _ := strconv.ParseUint(nobody.Gid, 10, 32)
	out, err = runProbe(t, bin, s.ClientURL(), &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)})
	if err == nil {
		t.Fatalf("probe as user nobody (uid %d) reached etcd, want refused:\n%s", uid, out)
	}
	if !strings.Contains(out, "permission denied") {
		t.Errorf("probe as nobody failed, but not with permission denied: %v\n%s", err, out)
	}
	t.Logf("as nobody: %s", out)

	// The owner's write is the only one stored.
	c := newClient(t, s)
	if got := get(t, c, probeKey); got != fmt.Sprintf("written by uid %d", os.Getuid()) {
		t.Errorf("%s = %q, want the owner's write", probeKey, got)
	}
}

// probeBinary copies the test binary to a directory every user can read, so
// that a process of another user can run it as a probe.
func probeBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "aagen-etcd-probe-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin := filepath.Join(dir, "probe")
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}

// runProbe runs the probe binary against etcdURL, as cred when it is not nil.
func runProbe(t *testing.T, bin, etcdURL string, cred *syscall.Credential) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Dir = filepath.Dir(bin)
	cmd.Env = append(os.Environ(), probeURLEnv+"="+etcdURL)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// listeningTCPInodes returns the socket inodes of this process's TCP sockets
// (IPv4 and IPv6) that are in the LISTEN state.
func listeningTCPInodes(t *testing.T) map[string]bool {
	t.Helper()
	mine := map[string]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
		}
	}
	listening := map[string]bool{}
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
			if len(fields) > 9 && fields[3] == "0A" && mine[fields[9]] {
				listening[fields[9]] = true
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return listening
}
