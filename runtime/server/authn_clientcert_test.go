package server

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// switchableCA is a CA bundle provider whose content a test replaces; like upstream's
// dynamic providers it stores the new content before it tells its listeners.
type switchableCA struct {
	mu        sync.Mutex
	content   dynamiccertificates.CAContentProvider // nil: no bundle yet
	listeners []dynamiccertificates.Listener
}

func (s *switchableCA) set(t *testing.T, cas ...*testCA) {
	t.Helper()
	var bundle []byte
	for _, ca := range cas {
		bundle = append(bundle, ca.pem...)
	}
	var content dynamiccertificates.CAContentProvider
	if len(bundle) > 0 {
		var err error
		if content, err = dynamiccertificates.NewStaticCAContent("client-ca", bundle); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.Lock()
	s.content = content
	listeners := s.listeners
	s.mu.Unlock()
	for _, l := range listeners {
		l.Enqueue()
	}
}

func (s *switchableCA) current() dynamiccertificates.CAContentProvider {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.content
}

func (s *switchableCA) Name() string { return "client-ca" }
func (s *switchableCA) CurrentCABundleContent() []byte {
	if c := s.current(); c != nil {
		return c.CurrentCABundleContent()
	}
	return nil
}
func (s *switchableCA) VerifyOptions() (x509.VerifyOptions, bool) {
	if c := s.current(); c != nil {
		return c.VerifyOptions()
	}
	return x509.VerifyOptions{}, false
}
func (s *switchableCA) AddListener(l dynamiccertificates.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listeners = append(s.listeners, l)
}

// clientCertFixture serves, over TLS that requests client certificates, upstream's
// delegating authenticator (front proxy, client certificate, anonymous) with the cache in
// front of it, and answers each request with "user groups".
type clientCertFixture struct {
	clientCA  *switchableCA
	cache     *cachedClientCertificates
	upstream  authenticator.Request
	delegated atomic.Int32
	server    *httptest.Server

	mu  sync.Mutex
	now time.Time
}

func newClientCertFixture(t *testing.T, clientCAs ...*testCA) *clientCertFixture {
	t.Helper()
	f := &clientCertFixture{clientCA: &switchableCA{}, now: time.Now()}
	f.clientCA.set(t, clientCAs...)
	frontProxyCA, err := dynamiccertificates.NewStaticCAContent("front-proxy", newTestCA(t, "front-proxy-ca").pem)
	if err != nil {
		t.Fatal(err)
	}
	rh := &authenticatorfactory.RequestHeaderConfig{
		UsernameHeaders:     headerrequest.StaticStringSlice{"X-Remote-User"},
		UIDHeaders:          headerrequest.StaticStringSlice{"X-Remote-Uid"},
		GroupHeaders:        headerrequest.StaticStringSlice{"X-Remote-Group"},
		ExtraHeaderPrefixes: headerrequest.StaticStringSlice{"X-Remote-Extra-"},
		CAContentProvider:   frontProxyCA,
		AllowedClientNames:  headerrequest.StaticStringSlice{},
	}
	upstream, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                          &apiserver.AnonymousAuthConfig{Enabled: true},
		ClientCertificateCAContentProvider: f.clientCA,
		RequestHeaderConfig:                rh,
	}.New()
	if err != nil {
		t.Fatal(err)
	}
	f.upstream = upstream
	auth := genericapiserver.AuthenticationInfo{
		RequestHeaderConfig: rh,
		Authenticator: authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
			f.delegated.Add(1)
			return upstream.AuthenticateRequest(r)
		}),
	}
	withCachedClientCertificates(&auth, f.clientCA)
	f.cache = auth.Authenticator.(*cachedClientCertificates)
	f.cache.now = func() time.Time {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.now
	}
	answer := func(a authenticator.Request, w http.ResponseWriter, r *http.Request) {
		resp, ok, err := a.AuthenticateRequest(r)
		switch {
		case err != nil:
			http.Error(w, "error", http.StatusUnauthorized)
		case !ok:
			http.Error(w, "no opinion", http.StatusUnauthorized)
		default:
			fmt.Fprint(w, resp.User.GetName(), " ", strings.Join(resp.User.GetGroups(), ","))
			// A caller that changes the answer it got does not change the cache's.
			if u, ok := resp.User.(interface{ GetGroups() []string }); ok && len(u.GetGroups()) > 0 {
				u.GetGroups()[0] = "changed-by-a-caller"
			}
		}
	}
	f.server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/upstream" {
			answer(f.upstream, w, r)
			return
		}
		answer(f.cache, w, r)
	}))
	f.server.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	f.server.StartTLS()
	t.Cleanup(f.server.Close)
	return f
}

func (f *clientCertFixture) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

func (f *clientCertFixture) client(cert *tls.Certificate) *http.Client {
	tr := f.server.Client().Transport.(*http.Transport).Clone()
	if cert != nil {
		tr.TLSClientConfig.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: tr}
}

// get sends one request to path with the headers and returns "status body".
func (f *clientCertFixture) get(t *testing.T, c *http.Client, path string, headers map[string]string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.server.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	code, body := roundTrip(t, c, req)
	return fmt.Sprint(code, " ", body)
}

// Every request, repeated, gets the answer upstream's authenticator gives it; requests
// with a client certificate and no other credential reach it once per chain.
func TestCachedClientCertificatesAnswerAsUpstream(t *testing.T) {
	ca := newTestCA(t, "client-ca")
	other := newTestCA(t, "another-ca")
	f := newClientCertFixture(t, ca)
	alice := ca.issue(t, "alice", time.Now().Add(time.Hour))
	stranger := other.issue(t, "mallory", time.Now().Add(time.Hour))
	for _, tc := range []struct {
		name      string
		client    *http.Client
		headers   map[string]string
		delegated int32 // calls of upstream for three requests
	}{
		{"client certificate", f.client(&alice), nil, 1},
		{"client certificate of another CA", f.client(&stranger), nil, 3},
		{"no client certificate", f.client(nil), nil, 3},
		{"client certificate and a bearer token", f.client(&alice), map[string]string{"Authorization": "Bearer abc"}, 3},
		{"client certificate and a front-proxy user header", f.client(&alice), map[string]string{"X-Remote-User": "bob"}, 3},
		{"client certificate and a websocket protocol", f.client(&alice), map[string]string{"Sec-WebSocket-Protocol": "base64url.bearer.authorization.k8s.io.YWJj"}, 3},
	} {
		f.cache.Enqueue() // an empty cache for each case
		before := f.delegated.Load()
		want := f.get(t, tc.client, "/upstream", tc.headers)
		for i := range 3 {
			if got := f.get(t, tc.client, "/", tc.headers); got != want {
				t.Errorf("%s, request %d: got %q, upstream answers %q", tc.name, i, got, want)
			}
		}
		if n := f.delegated.Load() - before; n != tc.delegated {
			t.Errorf("%s: upstream answered %d of 3 requests, want %d", tc.name, n, tc.delegated)
		}
	}
	if got := f.get(t, f.client(&alice), "/", nil); got != "200 alice system:authenticated" {
		t.Errorf("a cached answer: got %q", got)
	}
}

// A change of the CA bundles applies to the next request.
func TestCachedClientCertificatesFollowTheCA(t *testing.T) {
	ca, next := newTestCA(t, "client-ca"), newTestCA(t, "next-client-ca")
	f := newClientCertFixture(t, ca)
	alice := f.client(ptr(ca.issue(t, "alice", time.Now().Add(time.Hour))))
	for range 2 {
		if got := f.get(t, alice, "/", nil); got != "200 alice system:authenticated" {
			t.Fatalf("got %q", got)
		}
	}
	f.clientCA.set(t, next)
	if got := f.get(t, alice, "/", nil); got != "401 error" {
		t.Errorf("after the CA was replaced: got %q, want 401", got)
	}
	// No bundle yet: the answer is upstream's, and nothing is kept.
	f.clientCA.set(t)
	if got, want := f.get(t, alice, "/", nil), f.get(t, alice, "/upstream", nil); got != want {
		t.Errorf("without a bundle: got %q, upstream answers %q", got, want)
	}
	f.clientCA.set(t, ca)
	if got := f.get(t, alice, "/", nil); got != "200 alice system:authenticated" {
		t.Errorf("once the bundle is back: got %q", got)
	}
}

// An answer is kept for at most clientCertAnswerTTL, and never past the NotAfter of the
// client's certificate or of a CA in the bundles.
func TestCachedClientCertificatesExpire(t *testing.T) {
	ca := newTestCA(t, "client-ca")
	f := newClientCertFixture(t, ca)
	alice := f.client(ptr(ca.issue(t, "alice", time.Now().Add(time.Hour))))
	f.get(t, alice, "/", nil)
	n := f.delegated.Load()
	f.advance(clientCertAnswerTTL - time.Second)
	f.get(t, alice, "/", nil)
	if f.delegated.Load() != n {
		t.Errorf("upstream asked again within the TTL")
	}
	f.advance(2 * time.Second)
	f.get(t, alice, "/", nil)
	if f.delegated.Load() != n+1 {
		t.Errorf("upstream not asked again after the TTL")
	}

	soon := time.Now().Add(10 * time.Second)
	bob := f.client(ptr(ca.issue(t, "bob", soon)))
	f.mu.Lock()
	f.now = time.Now()
	f.mu.Unlock()
	f.get(t, bob, "/", nil)
	n = f.delegated.Load()
	f.advance(11 * time.Second)
	f.get(t, bob, "/", nil) // upstream now refuses it: its certificate expired
	if f.delegated.Load() != n+1 {
		t.Errorf("an answer was kept past the client certificate's NotAfter")
	}

	// A CA that expires within the TTL bounds the answers too; one that expired before
	// bounds nothing.
	s := &caBundleState{notAfters: []time.Time{time.Unix(100, 0), time.Unix(200, 0), time.Unix(300, 0)}}
	for _, tc := range []struct {
		now   int64
		want  int64
		found bool
	}{{50, 100, true}, {100, 200, true}, {150, 200, true}, {299, 300, true}, {300, 0, false}, {400, 0, false}} {
		got, found := s.nextExpiry(time.Unix(tc.now, 0))
		if found != tc.found || (found && got.Unix() != tc.want) {
			t.Errorf("nextExpiry(%d) = %v %v, want %d %v", tc.now, got.Unix(), found, tc.want, tc.found)
		}
	}
	if got := f.cache.state.Load().notAfters; len(got) != 1 || !got[0].Equal(ca.cert.NotAfter) {
		t.Errorf("the bundle's NotAfters are %v, want the CA's %v", got, ca.cert.NotAfter)
	}
}

// An expired CA left in the bundle does not keep answers from being cached.
func TestCachedClientCertificatesBesideAnExpiredCA(t *testing.T) {
	ca := newTestCA(t, "client-ca")
	f := newClientCertFixture(t, ca)
	s := f.cache.state.Load()
	f.cache.state.Store(&caBundleState{notAfters: append([]time.Time{time.Now().Add(-time.Hour)}, s.notAfters...)})
	alice := f.client(ptr(ca.issue(t, "alice", time.Now().Add(time.Hour))))
	f.get(t, alice, "/", nil)
	n := f.delegated.Load()
	f.get(t, alice, "/", nil)
	if f.delegated.Load() != n {
		t.Error("upstream asked again: an expired CA in the bundle turned the cache off")
	}
}

func ptr[T any](v T) *T { return &v }

// An anonymous answer (upstream gives it to a certificate while no client CA is loaded
// and no front proxy is configured) is never kept.
func TestCachedClientCertificatesKeepNoAnonymousAnswer(t *testing.T) {
	ca := newTestCA(t, "client-ca")
	bundles := &switchableCA{}
	bundles.set(t, ca)
	var calls int
	c := newCachedClientCertificates(authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		calls++
		return &authenticator.Response{User: &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}}, true, nil
	}), nil, bundles)
	cert, err := x509.ParseCertificate(ca.issue(t, "alice", time.Now().Add(time.Hour)).Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
	for range 3 {
		if resp, ok, err := c.AuthenticateRequest(req); !ok || err != nil || resp.User.GetName() != user.Anonymous {
			t.Fatalf("got %v %v %v", resp, ok, err)
		}
	}
	if calls != 3 {
		t.Errorf("the delegate answered %d of 3 requests, want 3", calls)
	}
}
