package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// testCA is a CA that issues client certificates for the tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a client certificate for cn valid until notAfter.
func (ca *testCA) issue(t *testing.T, cn string, notAfter time.Time) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// frontProxyFixture serves the cached front-proxy authenticator over real TLS (the
// server requests, but does not itself verify, client certificates, as
// k8s.io/apiserver's secure serving does) and answers each request with the user name.
type frontProxyFixture struct {
	verifier *cachedChainVerifier
	server   *httptest.Server
	verifies atomic.Int32

	mu      sync.Mutex
	options x509.VerifyOptions
	names   []string
	now     time.Time
}

func newFrontProxyFixture(t *testing.T, ca *testCA, allowed ...string) *frontProxyFixture {
	t.Helper()
	f := &frontProxyFixture{names: allowed, now: time.Now()}
	f.setCA(t, ca)
	headers := headerrequest.NewDynamic(
		headerrequest.StaticStringSlice{"X-Remote-User"}, headerrequest.StaticStringSlice{"X-Remote-Uid"},
		headerrequest.StaticStringSlice{"X-Remote-Group"}, headerrequest.StaticStringSlice{"X-Remote-Extra-"})
	f.verifier = newCachedChainVerifier(func() (x509.VerifyOptions, bool) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.options, true
	}, headers, headerrequest.StringSliceProviderFunc(func() []string {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.names
	}))
	verify := f.verifier.verify
	f.verifier.verify = func(cert *x509.Certificate, opts x509.VerifyOptions) ([][]*x509.Certificate, error) {
		f.verifies.Add(1)
		return verify(cert, opts)
	}
	f.verifier.now = func() time.Time {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.now
	}
	f.server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := f.verifier.AuthenticateRequest(r)
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusUnauthorized)
		case !ok:
			http.Error(w, "no opinion", http.StatusUnauthorized)
		default:
			fmt.Fprint(w, resp.User.GetName())
		}
	}))
	f.server.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	f.server.StartTLS()
	t.Cleanup(f.server.Close)
	return f
}

// setCA replaces the CA bundle, as the dynamic providers do when its content changes:
// with a new pool.
func (f *frontProxyFixture) setCA(t *testing.T, ca *testCA) {
	t.Helper()
	provider, err := dynamiccertificates.NewStaticCAContent("front-proxy", ca.pem)
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := provider.VerifyOptions()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.options = opts
}

// client returns an HTTP client presenting cert that keeps its connection.
func (f *frontProxyFixture) client(cert tls.Certificate) *http.Client {
	tr := f.server.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.Certificates = []tls.Certificate{cert}
	tr.MaxConnsPerHost = 1
	return &http.Client{Transport: tr}
}

// get sends one request as the front proxy would and returns the status and body.
func (f *frontProxyFixture) get(t *testing.T, c *http.Client, user string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.server.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Remote-User", user)
	return roundTrip(t, c, req)
}

// roundTrip sends req and returns the status and the trimmed body.
func roundTrip(t *testing.T, c *http.Client, req *http.Request) (int, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, strings.TrimSpace(string(body))
}

func TestCachedFrontProxyVerifiesAChainOnce(t *testing.T) {
	ca := newTestCA(t, "front-proxy-ca")
	f := newFrontProxyFixture(t, ca, "front-proxy-client")
	c := f.client(ca.issue(t, "front-proxy-client", time.Now().Add(time.Hour)))
	for i, u := range []string{"alice", "bob", "alice"} {
		if code, body := f.get(t, c, u); code != http.StatusOK || body != u {
			t.Fatalf("request %d: got %d %q, want 200 %q", i, code, body, u)
		}
	}
	if n := f.verifies.Load(); n != 1 {
		t.Errorf("crypto/x509 Verify ran %d times for three requests with one certificate, want 1", n)
	}
}

func TestCachedFrontProxyRefusesAnotherCAEveryTime(t *testing.T) {
	f := newFrontProxyFixture(t, newTestCA(t, "front-proxy-ca"))
	other := newTestCA(t, "other-ca")
	c := f.client(other.issue(t, "front-proxy-client", time.Now().Add(time.Hour)))
	for i := range 2 {
		if code, body := f.get(t, c, "alice"); code != http.StatusUnauthorized || !strings.Contains(body, "unknown authority") {
			t.Fatalf("request %d with a certificate of another CA: got %d %q, want 401 unknown authority", i, code, body)
		}
	}
	if n := f.verifies.Load(); n != 2 {
		t.Errorf("Verify ran %d times for two refused requests, want 2 (failures are not cached)", n)
	}
}

func TestCachedFrontProxyReverifiesWhenTheCAChanges(t *testing.T) {
	ca := newTestCA(t, "front-proxy-ca")
	f := newFrontProxyFixture(t, ca)
	c := f.client(ca.issue(t, "front-proxy-client", time.Now().Add(time.Hour)))
	if code, body := f.get(t, c, "alice"); code != http.StatusOK {
		t.Fatalf("got %d %q, want 200", code, body)
	}
	f.setCA(t, newTestCA(t, "rotated-ca"))
	if code, body := f.get(t, c, "alice"); code != http.StatusUnauthorized || !strings.Contains(body, "unknown authority") {
		t.Fatalf("after the CA bundle changed to another CA: got %d %q, want 401 unknown authority", code, body)
	}
	f.setCA(t, ca) // the same content in a new pool: verified again, accepted
	if code, body := f.get(t, c, "alice"); code != http.StatusOK {
		t.Fatalf("after the CA came back: got %d %q, want 200", code, body)
	}
	if n := f.verifies.Load(); n != 3 {
		t.Errorf("Verify ran %d times across two CA changes, want 3", n)
	}
}

func TestCachedFrontProxyChecksTheCommonNameEveryTime(t *testing.T) {
	ca := newTestCA(t, "front-proxy-ca")
	f := newFrontProxyFixture(t, ca, "front-proxy-client")
	c := f.client(ca.issue(t, "front-proxy-client", time.Now().Add(time.Hour)))
	if code, body := f.get(t, c, "alice"); code != http.StatusOK {
		t.Fatalf("got %d %q, want 200", code, body)
	}
	f.mu.Lock()
	f.names = []string{"another-proxy"}
	f.mu.Unlock()
	if code, body := f.get(t, c, "alice"); code != http.StatusUnauthorized || !strings.Contains(body, "not in the allowed list") {
		t.Fatalf("after the allowed names changed: got %d %q, want 401 not in the allowed list", code, body)
	}
}

func TestCachedFrontProxyReverifiesAfterTTLAndExpiry(t *testing.T) {
	ca := newTestCA(t, "front-proxy-ca")
	f := newFrontProxyFixture(t, ca)
	notAfter := time.Now().Add(2 * verifiedChainTTL)
	c := f.client(ca.issue(t, "front-proxy-client", notAfter))
	f.get(t, c, "alice")
	f.mu.Lock()
	f.now = f.now.Add(verifiedChainTTL + time.Second)
	f.mu.Unlock()
	if code, body := f.get(t, c, "alice"); code != http.StatusOK {
		t.Fatalf("after the TTL: got %d %q, want 200", code, body)
	}
	if n := f.verifies.Load(); n != 2 {
		t.Fatalf("Verify ran %d times, want 2 (again after the TTL)", n)
	}
	// Past the certificate's NotAfter, even within the TTL of the last verification,
	// the chain is verified again. The verifier's clock moved, crypto/x509's did not, so
	// the cache's decision shows in the count of Verify calls.
	f.mu.Lock()
	f.now = notAfter.Add(time.Second)
	f.mu.Unlock()
	f.get(t, c, "alice")
	if n := f.verifies.Load(); n != 3 {
		t.Errorf("Verify ran %d times, want 3 (again past NotAfter)", n)
	}
}

func TestFrontProxyFirstFallsBackToTheDelegate(t *testing.T) {
	ca := newTestCA(t, "front-proxy-ca")
	provider, err := dynamiccertificates.NewStaticCAContent("front-proxy", ca.pem)
	if err != nil {
		t.Fatal(err)
	}
	var delegated atomic.Int32
	auth := genericapiserver.AuthenticationInfo{
		RequestHeaderConfig: &authenticatorfactory.RequestHeaderConfig{
			UsernameHeaders:     headerrequest.StaticStringSlice{"X-Remote-User"},
			UIDHeaders:          headerrequest.StaticStringSlice{"X-Remote-Uid"},
			GroupHeaders:        headerrequest.StaticStringSlice{"X-Remote-Group"},
			ExtraHeaderPrefixes: headerrequest.StaticStringSlice{"X-Remote-Extra-"},
			CAContentProvider:   provider,
			AllowedClientNames:  headerrequest.StaticStringSlice{},
		},
		Authenticator: authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
			delegated.Add(1)
			return &authenticator.Response{User: &user.DefaultInfo{Name: "delegate"}}, true, nil
		}),
	}
	withCachedFrontProxyVerification(&auth)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := auth.Authenticator.AuthenticateRequest(r)
		if err != nil || !ok {
			http.Error(w, fmt.Sprint(ok, err), http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, resp.User.GetName(), " ", strings.Join(resp.User.GetGroups(), ","), " ", r.Header.Get("X-Remote-User"))
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	defer srv.Close()
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.Certificates = []tls.Certificate{ca.issue(t, "front-proxy-client", time.Now().Add(time.Hour))}
	withCert := &http.Client{Transport: tr}
	for _, tc := range []struct {
		name   string
		client *http.Client
		user   string
		want   string
	}{
		// The front proxy's answer, with system:authenticated and the header removed, as upstream's.
		{"front proxy", withCert, "alice", "alice system:authenticated "},
		{"front-proxy certificate without a user header", withCert, "", "delegate  "},
		{"no client certificate", srv.Client(), "alice", "delegate  alice"},
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		if tc.user != "" {
			req.Header.Set("X-Remote-User", tc.user)
		}
		resp, err := tc.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := strings.TrimSpace(string(body)); got != strings.TrimSpace(tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	if n := delegated.Load(); n != 2 {
		t.Errorf("the delegate answered %d requests, want 2", n)
	}
}

// intermediate returns a CA signed by ca.
func (ca *testCA) intermediate(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(2),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// A chain with an intermediate the client sends is verified with it, once.
func TestCachedFrontProxyWithAnIntermediate(t *testing.T) {
	root := newTestCA(t, "front-proxy-root")
	mid := root.intermediate(t, "front-proxy-intermediate")
	f := newFrontProxyFixture(t, root)
	leaf := mid.issue(t, "front-proxy-client", time.Now().Add(time.Hour))
	leaf.Certificate = append(leaf.Certificate, mid.cert.Raw)
	c := f.client(leaf)
	for i := range 2 {
		if code, body := f.get(t, c, "alice"); code != http.StatusOK || body != "alice" {
			t.Fatalf("request %d: got %d %q, want 200 alice", i, code, body)
		}
	}
	if n := f.verifies.Load(); n != 1 {
		t.Errorf("Verify ran %d times, want 1", n)
	}
	// Without the intermediate the leaf does not chain to the root, cache or not.
	alone := mid.issue(t, "front-proxy-client", time.Now().Add(time.Hour))
	if code, body := f.get(t, f.client(alone), "alice"); code != http.StatusUnauthorized {
		t.Errorf("a leaf without its intermediate: got %d %q, want 401", code, body)
	}
}
