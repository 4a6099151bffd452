package localauth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// snapshot maps file name to content for every credential file.
type snapshot map[string][]byte

func readAll(t *testing.T, f *Files) snapshot {
	t.Helper()
	return read(t, f, false)
}

func read(t *testing.T, f *Files, allowMissing bool) snapshot {
	t.Helper()
	s := snapshot{}
	for _, p := range []string{f.CACert, f.CAKey, f.ServingCert, f.ServingKey, f.ClientCert, f.ClientKey, f.Kubeconfig} {
		data, err := os.ReadFile(p)
		if err != nil && !(allowMissing && os.IsNotExist(err)) {
			t.Fatalf("reading %s: %v", p, err)
		}
		s[filepath.Base(p)] = data
	}
	return s
}

func paths(f *Files) []string {
	return []string{f.Dir, f.CACert, f.CAKey, f.ServingCert, f.ServingKey, f.ClientCert, f.ClientKey, f.Kubeconfig}
}

// changed returns the sorted names of files whose content differs.
func changed(a, b snapshot) []string {
	var names []string
	for _, n := range []string{"ca.crt", "ca.key", "serving.crt", "serving.key", "admin.crt", "admin.key", "kubeconfig"} {
		if !bytes.Equal(a[n], b[n]) {
			names = append(names, n)
		}
	}
	return names
}

func mustEnsure(t *testing.T, opts Options) *Files {
	t.Helper()
	f, err := Ensure(opts)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	return f
}

func parseCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	certs, err := cert.CertsFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(certs) != 1 {
		t.Fatalf("%s holds %d certificates", path, len(certs))
	}
	return certs[0]
}

func caPool(t *testing.T, f *Files) *x509.CertPool {
	t.Helper()
	pool, err := cert.NewPool(f.CACert)
	if err != nil {
		t.Fatal(err)
	}
	return pool
}

func TestEnsureCreatesAndReuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "creds")
	opts := Options{Dir: dir, ServerURL: "https://127.0.0.1:8443", ClusterName: "example-apiserver"}
	f := mustEnsure(t, opts)

	if !filepath.IsAbs(f.Kubeconfig) || filepath.Dir(f.Kubeconfig) != f.Dir {
		t.Errorf("Kubeconfig = %q, want an absolute path in %q", f.Kubeconfig, f.Dir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("dir mode %o, want 700", perm)
	}
	for _, p := range []string{f.CAKey, f.ServingKey, f.ClientKey, f.Kubeconfig} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s mode %o, want 600", filepath.Base(p), perm)
		}
	}

	first := readAll(t, f)
	f2 := mustEnsure(t, opts)
	if a, b := paths(f2), paths(f); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("second Ensure returned paths %v, want %v", a, b)
	}
	if c := changed(first, readAll(t, f2)); len(c) != 0 {
		t.Errorf("second Ensure changed %v, want nothing", c)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}

	ca := parseCert(t, f.CACert)
	if !ca.IsCA {
		t.Error("ca.crt is not a CA")
	}
	if d := ca.NotAfter.Sub(time.Now()); d < 9*365*24*time.Hour {
		t.Errorf("CA valid for %s, want about 10 years", d)
	}
	admin := parseCert(t, f.ClientCert)
	if admin.Subject.CommonName != "aagen-local-admin" || len(admin.Subject.Organization) != 1 || admin.Subject.Organization[0] != "system:masters" {
		t.Errorf("admin subject = %v, want CN=aagen-local-admin O=system:masters", admin.Subject)
	}
	if d := admin.NotAfter.Sub(time.Now()); d < 364*24*time.Hour || d > 366*24*time.Hour {
		t.Errorf("admin cert valid for %s, want about 1 year", d)
	}
}

func TestServingCertVerifies(t *testing.T) {
	f := mustEnsure(t, Options{Dir: t.TempDir(), ServerURL: "https://my-box:8443", Hosts: []string{"example.local", "10.1.2.3"}})
	serving := parseCert(t, f.ServingCert)
	for _, name := range []string{"localhost", "127.0.0.1", "::1", "my-box", "example.local", "10.1.2.3"} {
		_, err := serving.Verify(x509.VerifyOptions{
			DNSName:   name,
			Roots:     caPool(t, f),
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		if err != nil {
			t.Errorf("serving cert does not verify for %q: %v", name, err)
		}
	}
	if _, err := serving.Verify(x509.VerifyOptions{DNSName: "other.example", Roots: caPool(t, f)}); err == nil {
		t.Error("serving cert verifies for other.example")
	}
	if _, err := tls.LoadX509KeyPair(f.ServingCert, f.ServingKey); err != nil {
		t.Errorf("serving cert and key do not load as a TLS pair: %v", err)
	}
}

// TestKubeconfigAgainstTLSServer loads the kubeconfig with clientcmd and uses
// the resulting rest.Config against a TLS server that uses the serving cert
// and requires client certs signed by the CA.
func TestKubeconfigAgainstTLSServer(t *testing.T) {
	dir := t.TempDir()
	// Issue the serving cert first: the server's port is needed for the URL.
	f := mustEnsure(t, Options{Dir: dir, ServerURL: "https://127.0.0.1:1"})
	pair, err := tls.LoadX509KeyPair(f.ServingCert, f.ServingKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := r.TLS.PeerCertificates[0]
		fmt.Fprintf(w, "%s %v", c.Subject.CommonName, c.Subject.Organization)
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    caPool(t, f),
	}
	srv.StartTLS()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	for _, host := range []string{"127.0.0.1", "localhost"} {
		t.Run(host, func(t *testing.T) {
			serverURL := "https://" + net.JoinHostPort(host, port)
			before := readAll(t, f)
			f := mustEnsure(t, Options{Dir: dir, ServerURL: serverURL, ClusterName: "example-apiserver"})
			if c := changed(before, readAll(t, f)); len(c) != 1 || c[0] != "kubeconfig" {
				t.Errorf("changing ServerURL changed %v, want only kubeconfig", c)
			}

			raw, err := clientcmd.LoadFromFile(f.Kubeconfig)
			if err != nil {
				t.Fatalf("clientcmd.LoadFromFile: %v", err)
			}
			if raw.CurrentContext != "example-apiserver" || raw.Contexts["example-apiserver"] == nil || raw.Clusters["example-apiserver"] == nil {
				t.Errorf("kubeconfig contexts/clusters = %v/%v, current %q", raw.Contexts, raw.Clusters, raw.CurrentContext)
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", f.Kubeconfig)
			if err != nil {
				t.Fatalf("BuildConfigFromFlags: %v", err)
			}
			if cfg.Host != serverURL {
				t.Errorf("rest.Config.Host = %q, want %q", cfg.Host, serverURL)
			}
			if len(cfg.TLSClientConfig.CAData) == 0 || len(cfg.TLSClientConfig.CertData) == 0 || len(cfg.TLSClientConfig.KeyData) == 0 {
				t.Fatalf("rest.Config lacks embedded TLS data: %+v", cfg.TLSClientConfig)
			}
			if got := get(t, cfg, serverURL); got != "aagen-local-admin [system:masters]" {
				t.Errorf("server saw client %q, want %q", got, "aagen-local-admin [system:masters]")
			}
		})
	}

	// A certificate for another user, from NewClientCert, is accepted too.
	certPEM, keyPEM, err := NewClientCert(f, "jane", []string{"developers"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAFile: f.CACert, CertData: certPEM, KeyData: keyPEM}}
	if got := get(t, cfg, srv.URL); got != "jane [developers]" {
		t.Errorf("server saw client %q, want %q", got, "jane [developers]")
	}
}

func get(t *testing.T, cfg *rest.Config, url string) string {
	t.Helper()
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatalf("rest.HTTPClientFor: %v", err)
	}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

func TestEnsureReissues(t *testing.T) {
	realNow := time.Now()
	at := func(d time.Duration) func() time.Time { return func() time.Time { return realNow.Add(d) } }
	day := 24 * time.Hour

	tests := []struct {
		name   string
		modify func(t *testing.T, f *Files, opts *Options)
		want   []string
	}{
		{
			name:   "leaves expire within a day",
			modify: func(t *testing.T, f *Files, opts *Options) { opts.Now = at(364*day + time.Hour) },
			want:   []string{"serving.crt", "serving.key", "admin.crt", "admin.key", "kubeconfig"},
		},
		{
			name:   "leaves still valid for more than a day",
			modify: func(t *testing.T, f *Files, opts *Options) { opts.Now = at(300 * day) },
			want:   nil,
		},
		{
			name:   "everything expired",
			modify: func(t *testing.T, f *Files, opts *Options) { opts.Now = at(11 * 365 * day) },
			want:   []string{"ca.crt", "ca.key", "serving.crt", "serving.key", "admin.crt", "admin.key", "kubeconfig"},
		},
		{
			name:   "extra host",
			modify: func(t *testing.T, f *Files, opts *Options) { opts.Hosts = []string{"box.example"} },
			want:   []string{"serving.crt", "serving.key"},
		},
		{
			name:   "other user",
			modify: func(t *testing.T, f *Files, opts *Options) { opts.User = "someone" },
			want:   []string{"admin.crt", "admin.key", "kubeconfig"},
		},
		{
			name: "CA replaced by another one",
			modify: func(t *testing.T, f *Files, opts *Options) {
				other := mustEnsure(t, Options{Dir: t.TempDir(), ServerURL: opts.ServerURL})
				copyFile(t, other.CACert, f.CACert)
				copyFile(t, other.CAKey, f.CAKey)
			},
			// The CA itself is valid and reused; everything signed by the
			// old one is reissued.
			want: []string{"ca.crt", "ca.key", "serving.crt", "serving.key", "admin.crt", "admin.key", "kubeconfig"},
		},
		{
			name: "serving key does not match",
			modify: func(t *testing.T, f *Files, opts *Options) {
				writeNewKey(t, f.ServingKey)
			},
			want: []string{"serving.crt", "serving.key"},
		},
		{
			name: "damaged client cert",
			modify: func(t *testing.T, f *Files, opts *Options) {
				if err := os.WriteFile(f.ClientCert, []byte("not a certificate"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"admin.crt", "admin.key", "kubeconfig"},
		},
		{
			name: "missing CA key",
			modify: func(t *testing.T, f *Files, opts *Options) {
				if err := os.Remove(f.CAKey); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"ca.crt", "ca.key", "serving.crt", "serving.key", "admin.crt", "admin.key", "kubeconfig"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Dir: t.TempDir(), ServerURL: "https://127.0.0.1:8443"}
			f := mustEnsure(t, opts)
			before := readAll(t, f)
			tt.modify(t, f, &opts)
			modified := read(t, f, true)
			f = mustEnsure(t, opts)
			after := readAll(t, f)
			// Compare with the state before modify, except for files
			// modify replaced, which count as changed if Ensure did
			// not restore the original.
			got := changed(before, after)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("changed files = %v, want %v", got, tt.want)
			}
			for _, n := range changed(before, modified) {
				if bytes.Equal(modified[n], after[n]) && n != "ca.crt" && n != "ca.key" {
					t.Errorf("%s was modified and Ensure kept it", n)
				}
			}
			checkConsistent(t, f, opts)
			// A further Ensure is a no-op.
			if c := changed(after, readAll(t, mustEnsure(t, opts))); len(c) != 0 {
				t.Errorf("third Ensure changed %v", c)
			}
		})
	}
}

// checkConsistent verifies that the leaves are signed by the CA in f and valid
// at opts.Now.
func checkConsistent(t *testing.T, f *Files, opts Options) {
	t.Helper()
	now := time.Now()
	if opts.Now != nil {
		now = opts.Now()
	}
	for _, c := range []struct {
		path  string
		usage x509.ExtKeyUsage
	}{{f.ServingCert, x509.ExtKeyUsageServerAuth}, {f.ClientCert, x509.ExtKeyUsageClientAuth}} {
		leaf := parseCert(t, c.path)
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: caPool(t, f), CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{c.usage}}); err != nil {
			t.Errorf("%s does not verify at %s: %v", filepath.Base(c.path), now, err)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func writeNewKey(t *testing.T, path string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	data, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestNewClientCert(t *testing.T) {
	f := mustEnsure(t, Options{Dir: t.TempDir(), ServerURL: "https://127.0.0.1:8443"})
	certPEM, keyPEM, err := NewClientCert(f, "jane", []string{"developers", "testers"})
	if err != nil {
		t.Fatal(err)
	}
	certs, err := cert.ParseCertsPEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	c := certs[0]
	if _, err := c.Verify(x509.VerifyOptions{Roots: caPool(t, f), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client cert does not verify for client auth: %v", err)
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: caPool(t, f), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("client cert verifies for server auth")
	}
	// Organizations form an ASN.1 SET, so their order is not kept.
	if c.Subject.CommonName != "jane" || !sameSet(c.Subject.Organization, []string{"developers", "testers"}) {
		t.Errorf("subject = %v, want CN=jane O=developers,testers", c.Subject)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Errorf("cert and key do not match: %v", err)
	}

	// Errors, not panics, on bad input.
	if _, _, err := NewClientCert(nil, "jane", nil); err == nil {
		t.Error("NewClientCert(nil) succeeded")
	}
	if _, _, err := NewClientCert(f, "", nil); err == nil {
		t.Error("NewClientCert with empty user succeeded")
	}
	empty, err := FilesIn(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := NewClientCert(empty, "jane", nil); err == nil || !strings.Contains(err.Error(), "run Ensure first") {
		t.Errorf("NewClientCert without a CA: err = %v, want one that says to run Ensure", err)
	}
}

func TestEnsureInvalidOptions(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no dir", Options{ServerURL: "https://127.0.0.1:8443"}, "Options.Dir is empty"},
		{"no server URL", Options{Dir: dir}, "Options.ServerURL is empty"},
		{"http server URL", Options{Dir: dir, ServerURL: "http://127.0.0.1:8443"}, "not an https URL"},
		{"server URL without scheme", Options{Dir: dir, ServerURL: "127.0.0.1:8443"}, "not an https URL"},
		{"host with port", Options{Dir: dir, ServerURL: "https://127.0.0.1:8443", Hosts: []string{"box:8443"}}, "Options.Hosts[0]"},
		{"host with scheme", Options{Dir: dir, ServerURL: "https://127.0.0.1:8443", Hosts: []string{"localhost", "https://box"}}, "Options.Hosts[1]"},
		{"empty group", Options{Dir: dir, ServerURL: "https://127.0.0.1:8443", Groups: []string{""}}, "Options.Groups[0]"},
		{"dir is a file", Options{Dir: file, ServerURL: "https://127.0.0.1:8443"}, "not a directory"},
		{"dir below a file", Options{Dir: filepath.Join(file, "x"), ServerURL: "https://127.0.0.1:8443"}, "cannot create directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Ensure(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Ensure error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestEnsureConcurrent runs Ensure from several goroutines on one new
// directory: they must agree on one CA.
func TestEnsureConcurrent(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = Ensure(Options{Dir: dir, ServerURL: "https://127.0.0.1:8443"})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	f, err := FilesIn(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkConsistent(t, f, Options{})
}
