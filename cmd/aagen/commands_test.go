package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
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

// TestCertsRenew checks that certs keeps the certificates; that --renew issues a new serving
// CA and certificate and keeps the previous CA in the APIServices' caBundle, after the new
// one, until ca-previous.crt is deleted, leaving etcd's certificates as they are; and that
// --renew-etcd replaces etcd's alone.
func TestCertsRenew(t *testing.T) {
	testskip.Short(t, "runs the generators")
	dir := example(t)
	certs := filepath.Join(dir, "config/deploy/certs")
	read := func(name string) []byte {
		data, _ := os.ReadFile(filepath.Join(certs, name))
		return data
	}
	snapshot := func() map[string][]byte {
		files := map[string][]byte{}
		for _, name := range deploycerts.FileNames() {
			files[name] = read(name)
		}
		return files
	}
	bundle := func() string {
		apiservices, _ := os.ReadFile(filepath.Join(dir, "config/deploy/zz_generated.apiservices.yaml"))
		_, after, ok := strings.Cut(string(apiservices), "caBundle: ")
		if !ok {
			t.Fatalf("the APIServices have no caBundle:\n%s", apiservices)
		}
		b64, _, _ := strings.Cut(after, "\n")
		data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	etcdFiles := []string{"etcd-ca.crt", "etcd-ca.key", "etcd-member.crt", "etcd-member.key", "etcd-client.crt", "etcd-client.key", "etcd-certs.yaml"}
	servingFiles := []string{"ca.crt", "ca.key", "tls.crt", "tls.key", "serving-cert.yaml"}
	changed := func(before map[string][]byte, names []string, want bool, what string) {
		t.Helper()
		for _, name := range names {
			now := read(name)
			if len(now) == 0 {
				t.Errorf("%s left %s empty or missing", what, name)
			} else if got := !bytes.Equal(now, before[name]); got != want {
				t.Errorf("%s: %s changed %v, want %v", what, name, got, want)
			}
		}
	}

	before := snapshot()
	if len(before["etcd-ca.crt"]) == 0 || len(before["etcd-client.key"]) == 0 {
		t.Fatalf("the example has no etcd certificates in %s to renew", certs)
	}
	if _, stderr, err := aagen(t, "certs", "--no-go-mod", "-C", dir, "./pkg/apis/..."); err != nil {
		t.Fatalf("certs: %v\n%s", err, stderr)
	}
	changed(before, append(servingFiles, etcdFiles...), false, "certs without --renew")
	if got := bundle(); got != string(before["ca.crt"]) {
		t.Errorf("the caBundle before any renewal is not the CA:\n%s", got)
	}

	// --renew: the serving CA, certificate and key and their Secret are new; etcd's are kept;
	// the caBundle trusts the new CA and the previous one.
	_, stderr, err := aagen(t, "certs", "--renew", "--no-go-mod", "-C", dir, "./pkg/apis/...")
	if err != nil {
		t.Fatalf("certs --renew: %v\n%s", err, stderr)
	}
	changed(before, servingFiles, true, "certs --renew")
	changed(before, etcdFiles, false, "certs --renew")
	if !bytes.Equal(read("ca-previous.crt"), before["ca.crt"]) {
		t.Errorf("certs --renew did not keep the previous CA as ca-previous.crt")
	}
	if !strings.Contains(stderr, "ca-previous.crt") {
		t.Errorf("certs --renew does not say what to do with the previous CA:\n%s", stderr)
	}
	if newCA, oldCA := firstCert(t, read("ca.crt")).Subject.String(), firstCert(t, before["ca.crt"]).Subject.String(); newCA == oldCA {
		t.Errorf("the renewed CA has the previous one's subject %q: an operator cannot tell the two in the caBundle apart", newCA)
	}
	if got, want := bundle(), string(read("ca.crt"))+string(before["ca.crt"]); got != want {
		t.Errorf("the caBundle after --renew:\n%s\nwant the new CA, then the previous:\n%s", got, want)
	}
	// Both certificates verify against the bundle: the Pods that still serve the old one
	// and those that serve the new one are trusted alike; the old one does not verify
	// against the new CA alone.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(bundle()))
	newOnly := x509.NewCertPool()
	newOnly.AppendCertsFromPEM(read("ca.crt"))
	for what, leaf := range map[string][]byte{"the previous serving certificate": before["tls.crt"], "the new serving certificate": read("tls.crt")} {
		cert := firstCert(t, leaf)
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "marina-apiserver.marina-apiserver.svc"}); err != nil {
			t.Errorf("%s does not verify against the caBundle after --renew: %v", what, err)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: newOnly}); (err == nil) != (what == "the new serving certificate") {
			t.Errorf("%s against the new CA alone: %v", what, err)
		}
	}
	secret := string(read("serving-cert.yaml"))
	if !strings.Contains(secret, base64.StdEncoding.EncodeToString(read("tls.key"))) {
		t.Errorf("the Secret does not carry the new serving key")
	}
	if !strings.Contains(secret, "ca.crt: "+base64.StdEncoding.EncodeToString([]byte(bundle()))) {
		t.Errorf("the Secret's ca.crt is not the caBundle (the new CA, then the previous):\n%s", secret)
	}
	// A second renewal while ca-previous.crt exists would drop the CA that Pods may still
	// serve a certificate of: refused, nothing changed.
	midway := snapshot()
	if _, stderr, err := aagen(t, "certs", "--renew", "--no-go-mod", "-C", dir, "./pkg/apis/..."); err == nil || !strings.Contains(err.Error()+stderr, "ca-previous.crt exists") {
		t.Errorf("certs --renew while ca-previous.crt exists: %v, want it refused naming ca-previous.crt\n%s", err, stderr)
	}
	changed(midway, servingFiles, false, "a refused second renewal")

	// Once ca-previous.crt is deleted, generating again trusts the new CA alone.
	if err := os.Remove(filepath.Join(certs, "ca-previous.crt")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := aagen(t, "generate", "--no-go-mod", "-C", dir, "./pkg/apis/..."); err != nil {
		t.Fatalf("generate: %v\n%s", err, stderr)
	}
	if got := bundle(); got != string(read("ca.crt")) {
		t.Errorf("the caBundle once ca-previous.crt is deleted:\n%s\nwant the new CA alone", got)
	}

	// A renewal whose generation fails leaves the certificates as they were (and no
	// ca-previous.crt): the manifests still name files that exist.
	renewed := snapshot()
	if _, stderr, err := aagen(t, "certs", "--renew", "--renew-etcd", "--no-go-mod", "-C", dir, "./pkg/nothing/..."); err == nil || !strings.Contains(err.Error(), "the certificates are as they were") {
		t.Errorf("certs --renew of packages that do not exist: %v, want an error saying the certificates are as they were\n%s", err, stderr)
	}
	changed(renewed, append(servingFiles, etcdFiles...), false, "a renewal whose generation failed")
	if _, err := os.Stat(filepath.Join(certs, "ca-previous.crt")); !os.IsNotExist(err) {
		t.Errorf("a renewal whose generation failed left ca-previous.crt: %v", err)
	}
	// With --cert-manager there is nothing local to renew.
	if _, _, err := aagen(t, "certs", "--renew", "--cert-manager", "--no-go-mod", "-C", dir, "./pkg/apis/..."); err == nil || !strings.Contains(err.Error(), "cert-manager renews them") {
		t.Errorf("certs --renew --cert-manager: %v, want it refused", err)
	}
	changed(renewed, servingFiles, false, "certs --renew --cert-manager")

	// --renew-etcd: etcd's certificates are new, the serving ones kept.
	if _, stderr, err := aagen(t, "certs", "--renew-etcd", "--no-go-mod", "-C", dir, "./pkg/apis/..."); err != nil {
		t.Fatalf("certs --renew-etcd: %v\n%s", err, stderr)
	}
	changed(renewed, etcdFiles, true, "certs --renew-etcd")
	changed(renewed, servingFiles, false, "certs --renew-etcd")

	// certs takes generate's datastore flags (README): with --datastore=sql the manifests
	// it regenerates keep the server on SQL, with no etcd StatefulSet.
	if _, stderr, err := aagen(t, "certs", "--datastore=sql", "--no-go-mod", "-C", dir, "./pkg/apis/..."); err != nil {
		t.Fatalf("certs --datastore=sql: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "config/deploy/zz_generated.etcd.yaml")); !os.IsNotExist(err) {
		t.Errorf("certs --datastore=sql left the etcd StatefulSet's manifest: %v", err)
	}
	if d, _ := os.ReadFile(filepath.Join(dir, "config/deploy/zz_generated.apiserver.yaml")); !strings.Contains(string(d), "DATASTORE_ENDPOINT") {
		t.Errorf("certs --datastore=sql: the Deployment takes no DSN")
	}

	// The directory keeps its keys out of version control (README).
	if ignore := read(".gitignore"); !strings.Contains(string(ignore), "\n*\n!.gitignore\n") {
		t.Errorf("config/deploy/certs/.gitignore does not ignore everything but itself:\n%s", ignore)
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

// firstCert is the first certificate of a PEM file.
func firstCert(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("no PEM block in %q", data)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
