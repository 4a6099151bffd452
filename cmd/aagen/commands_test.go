package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/generator/deploycerts"
	"github.com/aagen-dev/aagen/internal/testskip"
)

// example copies the example project (types and generated tree) to a temporary module.
func example(t *testing.T) string {
	t.Helper()
	src, err := filepath.Abs("../../testdata/example")
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs("../..")
	dst := t.TempDir()
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
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
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel == "go.mod" {
			data = bytes.ReplaceAll(data, []byte("=> ../.."), []byte("=> "+root))
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// aagen runs the command line with args; stderr is a buffer, as when piped.
func aagen(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newRootCommand()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// TestCertsRenew checks that certs keeps the certificates, --renew replaces them, and the
// APIServices' caBundle follows the CA.
func TestCertsRenew(t *testing.T) {
	testskip.Short(t, "runs the generators")
	dir := example(t)
	certs := filepath.Join(dir, "config/deploy/certs")
	caBefore, _ := os.ReadFile(filepath.Join(certs, "ca.crt"))
	keyBefore, _ := os.ReadFile(filepath.Join(certs, "tls.key"))
	etcdCABefore, _ := os.ReadFile(filepath.Join(certs, "etcd-ca.crt"))
	etcdClientBefore, _ := os.ReadFile(filepath.Join(certs, "etcd-client.key"))
	before := map[string][]byte{}
	for _, name := range deploycerts.FileNames() {
		before[name], _ = os.ReadFile(filepath.Join(certs, name))
	}
	if len(etcdCABefore) == 0 || len(etcdClientBefore) == 0 {
		t.Fatalf("the example has no etcd certificates in %s to renew", certs)
	}
	if _, stderr, err := aagen(t, "certs", "--no-go-mod", "-C", dir, "./pkg/apis/..."); err != nil {
		t.Fatalf("certs: %v\n%s", err, stderr)
	}
	if ca, _ := os.ReadFile(filepath.Join(certs, "ca.crt")); !bytes.Equal(ca, caBefore) {
		t.Errorf("certs without --renew replaced the CA")
	}
	if _, stderr, err := aagen(t, "certs", "--renew", "--no-go-mod", "-C", dir, "./pkg/apis/..."); err != nil {
		t.Fatalf("certs --renew: %v\n%s", err, stderr)
	}
	ca, _ := os.ReadFile(filepath.Join(certs, "ca.crt"))
	key, _ := os.ReadFile(filepath.Join(certs, "tls.key"))
	if bytes.Equal(ca, caBefore) || bytes.Equal(key, keyBefore) || len(ca) == 0 || len(key) == 0 {
		t.Fatalf("certs --renew kept the CA or the serving key")
	}
	etcdCA, _ := os.ReadFile(filepath.Join(certs, "etcd-ca.crt"))
	etcdClient, _ := os.ReadFile(filepath.Join(certs, "etcd-client.key"))
	if bytes.Equal(etcdCA, etcdCABefore) || bytes.Equal(etcdClient, etcdClientBefore) || len(etcdCA) == 0 || len(etcdClient) == 0 {
		t.Errorf("certs --renew kept etcd's CA or the server's etcd client key")
	}
	// All of them (README): every certificate, key and Secret file is new.
	for _, name := range deploycerts.FileNames() {
		now, _ := os.ReadFile(filepath.Join(certs, name))
		if len(now) == 0 || bytes.Equal(now, before[name]) {
			t.Errorf("certs --renew kept %s (or left it empty)", name)
		}
	}
	// The directory keeps its keys out of version control (README).
	if ignore, _ := os.ReadFile(filepath.Join(certs, ".gitignore")); !strings.Contains(string(ignore), "\n*\n!.gitignore\n") {
		t.Errorf("config/deploy/certs/.gitignore does not ignore everything but itself:\n%s", ignore)
	}
	apiservices, _ := os.ReadFile(filepath.Join(dir, "config/deploy/zz_generated.apiservices.yaml"))
	if !strings.Contains(string(apiservices), "caBundle: "+base64.StdEncoding.EncodeToString(ca)) {
		t.Errorf("the APIServices' caBundle is not the new CA:\n%s", apiservices)
	}
	secret, _ := os.ReadFile(filepath.Join(certs, "serving-cert.yaml"))
	if !strings.Contains(string(secret), base64.StdEncoding.EncodeToString(key)) {
		t.Errorf("the Secret does not carry the new serving key")
	}
}

// TestProgress checks that generate is quiet when its output is not a terminal and
// reports its steps with -v.
func TestProgress(t *testing.T) {
	testskip.Short(t, "runs the generators")
	dir := example(t)
	// The example's keys as a generated tree has them (0600): a copy's 0644 keys would be
	// tightened, with a note each (TestExistingKeysMadePrivate).
	keys, err := filepath.Glob(filepath.Join(dir, "config", "deploy", "certs", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.HasSuffix(k, ".key") || strings.HasSuffix(k, ".yaml") {
			if err := os.Chmod(k, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, stderr, err := aagen(t, "generate", "--no-go-mod", "-C", dir, "./pkg/apis/...")
	if err != nil {
		t.Fatalf("generate: %v\n%s", err, stderr)
	}
	if stderr != "" {
		t.Errorf("generate printed progress to a pipe:\n%s", stderr)
	}
	_, stderr, err = aagen(t, "generate", "-v", "--force", "--no-go-mod", "-C", dir, "./pkg/apis/...")
	if err != nil {
		t.Fatalf("generate -v: %v\n%s", err, stderr)
	}
	for _, want := range []string{"aagen: loading ./pkg/apis/...", "aagen: model: marina.example.com/v1alpha1", "aagen: running code generators", "package load", "aagen: done in"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("generate -v lacks %q:\n%s", want, stderr)
		}
	}
}

func TestVersion(t *testing.T) {
	stdout, _, err := aagen(t, "version")
	if err != nil || !strings.HasPrefix(stdout, "aagen ") {
		t.Fatalf("version: %v %q", err, stdout)
	}
}

func TestCompletion(t *testing.T) {
	stdout, _, err := aagen(t, "completion", "bash")
	if err != nil || !strings.Contains(stdout, "__start_aagen") {
		t.Fatalf("completion bash: %v\n%.200s", err, stdout)
	}
}

// TestExistingKeysMadePrivate checks issue #29's first hole: the keys and Secret manifests
// an earlier run (or a copy) left readable by every local user (0644) are made 0600 by the
// next generate and certs, which --verify reports without changing them; certificates stay
// 0644.
func TestExistingKeysMadePrivate(t *testing.T) {
	testskip.Short(t, "runs the generators")
	dir := example(t) // every file 0644, the keys and Secrets included
	certs := filepath.Join(dir, "config/deploy/certs")
	private := []string{"ca.key", "tls.key", "serving-cert.yaml", "etcd-ca.key", "etcd-member.key", "etcd-client.key", "etcd-certs.yaml"}
	public := []string{"ca.crt", "tls.crt", "etcd-ca.crt", "etcd-member.crt", "etcd-client.crt"}
	loosen := func() {
		for _, name := range private {
			if err := os.Chmod(filepath.Join(certs, name), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(after string) {
		t.Helper()
		for _, name := range append(slices.Clone(private), public...) {
			fi, err := os.Stat(filepath.Join(certs, name))
			if err != nil {
				t.Fatal(err)
			}
			want := os.FileMode(0o600)
			if slices.Contains(public, name) {
				want = 0o644
			}
			if fi.Mode().Perm() != want {
				t.Errorf("after %s: %s has mode %v, want %v", after, name, fi.Mode().Perm(), want)
			}
		}
	}
	loosen()
	_, stderr, err := aagen(t, "generate", "--verify", "--no-go-mod", "-C", dir, "./pkg/apis/...")
	if err == nil || !strings.Contains(stderr+err.Error(), "config/deploy/certs/etcd-ca.key") {
		t.Errorf("generate --verify with keys readable by all: %v\n%s; want them listed", err, stderr)
	}
	if fi, err := os.Stat(filepath.Join(certs, "etcd-ca.key")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("generate --verify changed etcd-ca.key: %v, %v", fi.Mode().Perm(), err)
	}
	if _, stderr, err := aagen(t, "generate", "--no-go-mod", "-C", dir, "./pkg/apis/..."); err != nil {
		t.Fatalf("generate: %v\n%s", err, stderr)
	}
	check("generate")
	// Again after the run was recorded (the run cache must not skip the change), by certs.
	loosen()
	if _, stderr, err := aagen(t, "certs", "--no-go-mod", "-C", dir, "./pkg/apis/..."); err != nil {
		t.Fatalf("certs: %v\n%s", err, stderr)
	}
	check("certs")
}
