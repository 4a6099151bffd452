package deploycerts

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func parseTestCert(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatal("not PEM")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestEnsureEtcd checks the etcd material: the member certificate serves and
// authenticates for the members' names, the client certificate only authenticates, both
// are signed by the etcd CA, and a second run keeps the files.
func TestEnsureEtcd(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	names := []string{"e-0.e.ns.svc", "*.e.ns.svc"}
	secrets := EtcdSecrets{Member: "e-member", Client: "e-client"}
	m, err := EnsureEtcd(dir, "certs", secrets, "ns", "srv", names, now)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string][]byte{}
	for _, f := range m.Files {
		byName[filepath.Base(f.Path)] = f.Content
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f.Path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.Path), f.Content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(byName[etcdCACert])
	member := parseTestCert(t, byName[etcdMemberCert])
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := member.Verify(x509.VerifyOptions{DNSName: "e-0.e.ns.svc", Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("member certificate, usage %v: %v", usage, err)
		}
	}
	client := parseTestCert(t, byName[etcdClientCert])
	if _, err := client.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("client certificate also serves; want client authentication only")
	}
	secretsYAML := string(byName[EtcdSecretsFile])
	if !strings.Contains(secretsYAML, "name: e-member") || !strings.Contains(secretsYAML, "name: e-client") {
		t.Errorf("secrets:\n%s", secretsYAML)
	}

	again, err := EnsureEtcd(dir, "certs", secrets, "ns", "srv", names, now)
	if err != nil {
		t.Fatal(err)
	}
	// The second run issues nothing: it lists the Secrets and the existing keys (private,
	// with the content they have, so that the writer tightens their mode).
	var names2 []string
	for _, f := range again.Files {
		names2 = append(names2, filepath.Base(f.Path))
		if base := filepath.Base(f.Path); base != EtcdSecretsFile && (!f.Private || string(f.Content) != string(byName[base])) {
			t.Errorf("second run: %s private %v, content unchanged %v", base, f.Private, string(f.Content) == string(byName[base]))
		}
	}
	if got := strings.Join(names2, " "); got != strings.Join([]string{etcdCAKey, etcdMemberKey, etcdClientKey, EtcdSecretsFile}, " ") {
		t.Errorf("second run listed %s; want the keys and the Secrets only", got)
	}
	if _, err := EnsureEtcd(dir, "certs", secrets, "ns", "srv", []string{"other.svc"}, now); err == nil || !strings.Contains(err.Error(), "does not cover other.svc") {
		t.Errorf("renamed members: err = %v, want a 'does not cover' error", err)
	}
}

// TestEtcdMemberCoversLoopback checks that the member certificate also serves localhost
// and the loopback addresses, as kubeadm's etcd certificates do.
func TestEtcdMemberCoversLoopback(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m, err := EnsureEtcd(t.TempDir(), "certs", EtcdSecrets{Member: "m", Client: "c"}, "ns", "srv", []string{"e-0.e.ns.svc"}, now)
	if err != nil {
		t.Fatal(err)
	}
	var caPEM, memberPEM []byte
	for _, f := range m.Files {
		switch filepath.Base(f.Path) {
		case etcdCACert:
			caPEM = f.Content
		case etcdMemberCert:
			memberPEM = f.Content
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	member := parseTestCert(t, memberPEM)
	for _, name := range []string{"localhost", "127.0.0.1", "::1", "e-0.e.ns.svc"} {
		if _, err := member.Verify(x509.VerifyOptions{DNSName: name, Roots: pool, CurrentTime: now}); err != nil {
			t.Errorf("member certificate for %s: %v", name, err)
		}
	}
}

// TestKeysArePrivate checks that the keys and the Secrets holding them are marked private
// (written with mode 0600) and the certificates are not.
func TestKeysArePrivate(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m, err := Ensure(dir, "certs", "s", "ns", []string{"s.ns.svc"}, now)
	if err != nil {
		t.Fatal(err)
	}
	e, err := EnsureEtcd(dir, "certs", EtcdSecrets{Member: "m", Client: "c"}, "ns", "srv", []string{"e-0.e.ns.svc"}, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(m.Files, e.Files...) {
		private := strings.HasSuffix(f.Path, ".key") || strings.HasSuffix(f.Path, ".yaml")
		if f.Private != private {
			t.Errorf("%s: Private = %v, want %v", f.Path, f.Private, private)
		}
	}
}
