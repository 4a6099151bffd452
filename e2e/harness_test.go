package e2e

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aagen-dev/aagen/e2e/cluster"
	"github.com/aagen-dev/aagen/internal/gocmd"
	"github.com/aagen-dev/aagen/internal/gotrim"
	"github.com/aagen-dev/aagen/internal/testskip"
	"github.com/aagen-dev/aagen/runtime/etcd"
)

// repoRoot is the aagen checkout.
func repoRoot(t testing.TB) string {
	t.Helper()
	return cluster.RepoRoot(t)
}

// skipShort skips an end-to-end test under -short (never under CI: internal/testskip).
func skipShort(t *testing.T) {
	t.Helper()
	testskip.Short(t, "end-to-end test; runs without -short")
}

// TestMain builds every Go program of the run with -trimpath (internal/gotrim says why),
// builds the tools the tests run in the background while they start (cluster.Prebuild:
// on a cold machine most of the run's building) when the whole package runs, and removes
// what the package's tests share once they have all run: the aagen binary (90 MB a run; a
// full disk once failed CI).
func TestMain(m *testing.M) {
	os.Exit(gotrim.Main(func() int {
		flag.Parse()
		if flag.Lookup("test.run").Value.String() == "" && !testing.Short() {
			root, err := os.Getwd()
			if err == nil {
				defer cluster.Prebuild(filepath.Dir(root), cluster.E2ETools, os.Stderr).Stop()
			}
		}
		code := m.Run()
		if aagenBin != "" {
			_ = os.RemoveAll(filepath.Dir(aagenBin))
		}
		return code
	}))
}

// toolSlots are the two places of the tests of runsTools that run: each takes one, a test
// of runsToolsAlone both. Waiters are served in turn, so one that runs alone is not
// passed over.
var toolSlots = semaphore.NewWeighted(2)

// runsTools marks a test that runs a binary built from Go modules into .cache/bin
// (cluster.KubeBinary and the rest: kube-apiserver alone builds for over ten minutes on a
// cold 2-core machine): it runs after the package's other tests, so that on a cold machine
// cluster.Prebuild builds the binaries while the others run, and beside at most one other
// test of runsTools (the tool tests leave half the CPU idle, waiting for their servers); the
// order is Go's. A test with a time bound, faults, or a resource of the machine (the node's
// port 53, bridge and iptables rules) calls runsToolsAlone instead. Their elapsed times
// include the wait for the tests before them. TestToolTestsRunAfterTheOthers finds the tests
// that must call one of them.
func runsTools(t *testing.T) {
	t.Helper()
	holdToolSlots(t, 1)
}

// runsToolsAlone is runsTools for a test that runs with no other test beside it.
func runsToolsAlone(t *testing.T) {
	t.Helper()
	holdToolSlots(t, 2)
}

// holdToolSlots pauses t until the package's other tests have run, then holds n tool slots
// until it ends.
func holdToolSlots(t *testing.T, n int64) {
	t.Helper()
	t.Parallel()
	if err := toolSlots.Acquire(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { toolSlots.Release(n) })
}

var (
	aagenOnce sync.Once
	aagenBin  string
	aagenErr  error
)

// aagen builds the aagen command once per test binary.
func aagen(t testing.TB) string {
	t.Helper()
	aagenOnce.Do(func() {
		dir, err := os.MkdirTemp("", "aagen-bin-")
		if err != nil {
			aagenErr = err
			return
		}
		aagenBin = filepath.Join(dir, "aagen")
		// -trimpath=false over TestMain's GOFLAGS: aagen finds the checkout its generated
		// projects replace the runtime with by the paths its build recorded.
		if _, err := (gocmd.Cmd{Args: []string{"build", "-trimpath=false", "-o", aagenBin, "./cmd/aagen"}, Dir: repoRoot(t)}).Run(context.Background()); err != nil {
			aagenErr = fmt.Errorf("building aagen: %w", err)
		}
	})
	if aagenErr != nil {
		t.Fatal(aagenErr)
	}
	return aagenBin
}

// copyTree copies src to dst, skipping local state; keep decides which files to take.
func copyTree(t testing.TB, src, dst string, keep func(rel string) bool) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if d.Name() == ".aagen" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if keep != nil && !keep(filepath.ToSlash(rel)) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// buildExample copies the example to a temporary directory, generates it with aagen and
// builds its server there, as a user would; it returns the directory and the binary.
func buildExample(t *testing.T) (dir, bin string) {
	t.Helper()
	dir = t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata/example"), dir, nil)
	run(t, dir, aagen(t), "generate", "./pkg/apis/...")
	bin = filepath.Join(dir, "marina-apiserver")
	run(t, dir, "go", "build", "-o", bin, "./cmd/marina-apiserver")
	return dir, bin
}

// run runs a command and returns its combined output, failing the test on error.
func run(t testing.TB, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// awaitKubeconfig reads a server's stdout until its `export KUBECONFIG=<path>` line and
// returns the path; the rest of the output is drained in the background. It fails after
// timeout or when the output ends first.
func awaitKubeconfig(stdout io.Reader, timeout time.Duration) (string, error) {
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(timeout)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return "", fmt.Errorf("the output ended before a KUBECONFIG line")
			}
			if kc, found := strings.CutPrefix(line, "export KUBECONFIG="); found {
				go func() {
					for range lines {
					}
				}()
				return kc, nil
			}
		case <-deadline:
			return "", fmt.Errorf("no KUBECONFIG line after %s", timeout)
		}
	}
}

// httpGet sends GET path to the server cfg points at, with cfg's credentials, and returns
// the status code and body.
func httpGet(t testing.TB, cfg *rest.Config, path string) (int, []byte) {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(cfg.Host + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, body
}

// upProcess is a running `aagen up`.
type upProcess struct {
	cmd        *exec.Cmd
	kubeconfig string
	stderr     *cluster.Buffer
	done       chan error
}

// startUp runs `aagen up ./pkg/apis/...` in dir and waits for the KUBECONFIG line.
func startUp(t *testing.T, dir string, timeout time.Duration, serverArgs ...string) *upProcess {
	t.Helper()
	return startUpPattern(t, dir, "./pkg/apis/...", timeout, serverArgs...)
}

// startUpPattern runs `aagen up <pattern>` in dir and waits for the KUBECONFIG line.
func startUpPattern(t *testing.T, dir, pattern string, timeout time.Duration, serverArgs ...string) *upProcess {
	t.Helper()
	return startUpPatterns(t, dir, []string{pattern}, timeout, serverArgs...)
}

// startUpPatterns runs `aagen up <patterns...>` in dir and waits for the KUBECONFIG line.
func startUpPatterns(t *testing.T, dir string, patterns []string, timeout time.Duration, serverArgs ...string) *upProcess {
	t.Helper()
	args := append(append([]string{"up"}, patterns...), append([]string{"--", "--secure-port=0"}, serverArgs...)...)
	cmd := exec.Command(aagen(t), args...)
	cmd.Dir = dir
	// A process group of its own, so that stop can signal it the way a terminal does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &upProcess{cmd: cmd, stderr: &cluster.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() { p.stop(t) })
	kc, err := awaitKubeconfig(stdout, timeout)
	if err != nil {
		t.Fatalf("aagen up: %v:\n%s", err, p.stderr.String())
	}
	if !filepath.IsAbs(kc) {
		t.Fatalf("KUBECONFIG path %q is not absolute", kc)
	}
	p.kubeconfig = kc
	return p
}

// stop sends SIGINT to the process group, as Ctrl-C on a terminal does, and waits for a
// clean exit (status 0: the server stopped in time and cleanly).
func (p *upProcess) stop(t testing.TB) {
	if p.cmd.ProcessState != nil {
		return
	}
	select {
	case err := <-p.done:
		p.done <- err
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("aagen up did not exit cleanly after Ctrl-C: %v\n%s", err, cluster.Tail(p.stderr.String(), 3000))
		}
		p.done <- err
	case <-time.After(90 * time.Second):
		_ = p.cmd.Process.Kill()
		t.Errorf("aagen up did not stop within 90s of Ctrl-C")
	}
}

func (p *upProcess) restConfig(t testing.TB) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", p.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// kubectl runs kubectl, built from the Kubernetes release e2e/tools/kube-apiserver pins
// (cluster.KubeVersion) into .cache/bin, with the given kubeconfig.
func kubectl(t *testing.T, kubeconfig string, stdin string, args ...string) (string, error) {
	t.Helper()
	path := cluster.KubeBinary(t, "kubectl")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// startControlPlane starts an embedded etcd (no fsync: a test's data) and, on it,
// kube-apiserver with kube-controller-manager (cluster.StartControlPlane), both stopped
// when the test ends; it returns the control plane and etcd's client URL (a generated
// server the test deploys may store there too). A test's deadline starts after it: on a
// cold cache, building kube-apiserver and kube-controller-manager takes many minutes.
func startControlPlane(t testing.TB, controllers ...string) (*cluster.ControlPlane, string) {
	t.Helper()
	e, err := etcd.Start(context.Background(), etcd.Config{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return cluster.StartControlPlane(t, e.ClientURL(), controllers...), e.ClientURL()
}
