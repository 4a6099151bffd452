package e2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
)

// TestServerVersionAndPublicInfo runs the example through `aagen up` from a git checkout
// tagged v1.2.3 and checks what kube-apiserver users expect around the API: /version and
// `kubectl version` report the module's version from its build information, the server's
// --version agrees with `aagen version` on aagen's own version, and the health checks and
// /version are readable without credentials while nothing else is.
func TestServerVersionAndPublicInfo(t *testing.T) {
	skipShort(t)
	kubectlPath, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("this test runs kubectl: install it (apt-get install kubectl or a release binary): %v", err)
	}
	dir := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata/example"), dir, nil)
	// Generate first (go.mod's replace points at this checkout then), so that the tagged
	// commit is exactly what `aagen up` builds: Go stamps the tag as the main module's
	// version only for a clean tree.
	run(t, dir, aagen(t), "generate", "./pkg/apis/...")
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(".aagen/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		t.Helper()
		run(t, dir, "git", append([]string{"-c", "user.name=e2e", "-c", "user.email=e2e@example.com", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "marina")
	git("tag", "v1.2.3")

	// Go stamps version-control information (and so the tag) only with -buildvcs on; this
	// machine's go env turns it off, as sandboxes often do. aagen up's build inherits it.
	t.Setenv("GOFLAGS", "-buildvcs=true")
	up := startUp(t, dir, 20*time.Minute)
	cfg := up.restConfig(t)

	t.Run("kubectl version", func(t *testing.T) {
		cmd := exec.Command(kubectlPath, "--kubeconfig", up.kubeconfig, "version", "-o", "json")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("kubectl version: %v\n%s%s", err, stdout.String(), stderr.String())
		}
		var got struct {
			ServerVersion *version.Info `json:"serverVersion"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
			t.Fatalf("kubectl version -o json: %v\n%s", err, stdout.String())
		}
		if got.ServerVersion == nil || got.ServerVersion.GitVersion != "v1.2.3" {
			t.Fatalf("serverVersion: %+v, want gitVersion v1.2.3", got.ServerVersion)
		}
		if got.ServerVersion.GitCommit == "" || got.ServerVersion.GitTreeState != "clean" || got.ServerVersion.GoVersion == "" {
			t.Errorf("serverVersion lacks the build's revision, tree state or Go version: %+v", got.ServerVersion)
		}
		t.Logf("kubectl version: %s", strings.Join(strings.Fields(stdout.String()), " "))
	})

	t.Run("aagen version agrees with --version", func(t *testing.T) {
		aagenLine := strings.SplitN(run(t, dir, aagen(t), "version"), "\n", 2)[0]
		aagenVersion := strings.Fields(aagenLine)[1]
		out := run(t, dir, filepath.Join(dir, ".aagen", "bin", "marina-apiserver"), "--version")
		lines := strings.Split(out, "\n")
		if lines[0] != "marina-apiserver v1.2.3" {
			t.Errorf("--version first line %q, want the server's version", lines[0])
		}
		if !strings.Contains(out, "\naagen "+aagenVersion+"\n") {
			t.Errorf("--version does not report aagen %s (from `aagen version`: %q):\n%s", aagenVersion, aagenLine, out)
		}
	})

	t.Run("public information without credentials", func(t *testing.T) {
		anon := rest.AnonymousClientConfig(cfg)
		for _, path := range []string{"/livez", "/readyz", "/healthz", "/version", "/readyz?verbose"} {
			if code := statusOf(t, anon, path); code != http.StatusOK {
				t.Errorf("anonymous GET %s: %d, want 200", path, code)
			}
		}
		for _, path := range []string{"/apis", "/api", "/openapi/v2", "/metrics", "/livez/etcd", "/apis/marina.example.com/v1alpha1/boats", "/apis/marina.example.com/v1alpha1/namespaces/default/boats/x", "/backup/etcd-snapshot", "/storage-versions"} {
			if code := statusOf(t, anon, path); code != http.StatusUnauthorized {
				t.Errorf("anonymous GET %s: %d, want 401", path, code)
			}
		}
		// The admin still reads everything.
		for _, path := range []string{"/apis", "/version", "/livez/etcd"} {
			if code := statusOf(t, cfg, path); code != http.StatusOK {
				t.Errorf("admin GET %s: %d, want 200", path, code)
			}
		}
	})
}
