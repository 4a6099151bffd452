package server

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// Bounds of the front-proxy certificate cache.
const (
	// verifiedChainTTL is how long a verified front-proxy certificate chain is trusted
	// without verifying it again (never past a certificate's NotAfter, never across a
	// change of the CA bundle).
	verifiedChainTTL = time.Minute
	// maxVerifiedChains bounds the cache; a cluster has one or a few front proxies.
	maxVerifiedChains = 64
)

// withCachedFrontProxyVerification puts, in front of the delegating authenticator that
// RecommendedOptions built, a front-proxy (request-header) authenticator that verifies the
// proxy's client certificate once per certificate chain and CA bundle instead of once per
// request (cachedChainVerifier). kube-apiserver's aggregator sends every request it proxies
// with the same front-proxy certificate over reused connections, and upstream's
// x509.Verifier runs crypto/x509's Verify, an ECDSA or RSA signature check, on each of
// them.
//
// On success the answer is the one upstream's authenticator gives (the front proxy is the
// first authenticator of its union, and the authenticated group is added the same way);
// on anything else (no front-proxy certificate, no user header, a refused certificate or
// common name) the request goes to the upstream authenticator unchanged.
func withCachedFrontProxyVerification(auth *genericapiserver.AuthenticationInfo) {
	rh := auth.RequestHeaderConfig
	if rh == nil || auth.Authenticator == nil {
		return
	}
	auth.Authenticator = frontProxyFirst{
		frontProxy: group.NewAuthenticatedGroupAdder(newCachedFrontProxyAuthenticator(rh)),
		delegate:   auth.Authenticator,
	}
}

// newCachedFrontProxyAuthenticator is headerrequest.NewDynamicVerifyOptionsSecure with
// a cachedChainVerifier in place of x509request.Verifier.
func newCachedFrontProxyAuthenticator(rh *authenticatorfactory.RequestHeaderConfig) *cachedChainVerifier {
	headers := headerrequest.NewDynamic(rh.UsernameHeaders, rh.UIDHeaders, rh.GroupHeaders, rh.ExtraHeaderPrefixes)
	return newCachedChainVerifier(rh.CAContentProvider.VerifyOptions, headers, rh.AllowedClientNames)
}

// frontProxyFirst answers with frontProxy when it authenticates the request, else with
// delegate.
type frontProxyFirst struct {
	frontProxy, delegate authenticator.Request
}

// AuthenticateRequest implements authenticator.Request.
func (a frontProxyFirst) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if resp, ok, err := a.frontProxy.AuthenticateRequest(req); ok && err == nil {
		return resp, true, nil
	}
	return a.delegate.AuthenticateRequest(req)
}

// cachedChainVerifier does what k8s.io/apiserver's x509request.Verifier does (verify the
// request's client certificate against the CA bundle, check its common name, then ask
// next), but remembers chains it verified: a request presenting the same certificates
// (leaf and intermediates, compared by a SHA-256 of their DER bytes) while the CA
// bundle is the same (the same *x509.CertPool from the provider, which builds a new pool
// whenever its content changes) and before verifiedChainTTL and every certificate's
// NotAfter skips crypto/x509's Verify. Failures are not remembered. The common-name
// check runs on every request, as the allowed names can change on their own.
type cachedChainVerifier struct {
	verifyOptions x509request.VerifyOptionFunc
	next          authenticator.Request
	allowedNames  x509request.StringSliceProvider

	// verify is crypto/x509's Verify; tests count its calls.
	verify func(cert *x509.Certificate, opts x509.VerifyOptions) ([][]*x509.Certificate, error)
	// now is time.Now; tests move it.
	now func() time.Time

	mu       sync.Mutex
	verified map[[sha256.Size]byte]verifiedChain
}

// verifiedChain is a cache entry: the pools the chain was verified against and until
// when it is trusted.
type verifiedChain struct {
	roots, intermediates *x509.CertPool
	until                time.Time
}

func newCachedChainVerifier(opts x509request.VerifyOptionFunc, next authenticator.Request, allowedNames x509request.StringSliceProvider) *cachedChainVerifier {
	return &cachedChainVerifier{
		verifyOptions: opts,
		next:          next,
		allowedNames:  allowedNames,
		verify: func(cert *x509.Certificate, opts x509.VerifyOptions) ([][]*x509.Certificate, error) {
			return cert.Verify(opts)
		},
		now:      time.Now,
		verified: map[[sha256.Size]byte]verifiedChain{},
	}
}

// AuthenticateRequest implements authenticator.Request.
func (v *cachedChainVerifier) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	opts, ok := v.verifyOptions()
	if !ok {
		// No CA bundle (yet): no opinion, as upstream.
		return nil, false, nil
	}
	certs := req.TLS.PeerCertificates
	if err := v.verifyChain(certs, opts); err != nil {
		return nil, false, err
	}
	if err := v.checkCommonName(certs[0].Subject.CommonName); err != nil {
		return nil, false, err
	}
	return v.next.AuthenticateRequest(req)
}

// verifyChain verifies certs (leaf first) against opts unless the same chain was
// verified against the same pools and is still trusted.
func (v *cachedChainVerifier) verifyChain(certs []*x509.Certificate, opts x509.VerifyOptions) error {
	now := v.now()
	// A caller-fixed verification time is not now: verify every time.
	cacheable := opts.CurrentTime.IsZero()
	key := chainKey(certs)
	intermediates := opts.Intermediates
	if cacheable {
		v.mu.Lock()
		e, found := v.verified[key]
		v.mu.Unlock()
		if found && e.roots == opts.Roots && e.intermediates == intermediates && now.Before(e.until) {
			return nil
		}
	}
	if opts.Intermediates == nil && len(certs) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, c := range certs[1:] {
			opts.Intermediates.AddCert(c)
		}
	}
	chains, err := v.verify(certs[0], opts)
	if err != nil {
		return err
	}
	if !cacheable {
		return nil
	}
	until := now.Add(verifiedChainTTL)
	for _, c := range certs {
		if c.NotAfter.Before(until) {
			until = c.NotAfter
		}
	}
	for _, chain := range chains {
		for _, c := range chain {
			if c.NotAfter.Before(until) {
				until = c.NotAfter
			}
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.verified) >= maxVerifiedChains {
		clear(v.verified)
	}
	v.verified[key] = verifiedChain{roots: opts.Roots, intermediates: intermediates, until: until}
	return nil
}

// checkCommonName is x509request.Verifier's subject check: with allowed names, the
// leaf's common name must be one of them.
func (v *cachedChainVerifier) checkCommonName(cn string) error {
	if v.allowedNames == nil {
		return nil
	}
	allowed := v.allowedNames.Value()
	if len(allowed) == 0 {
		return nil
	}
	for _, name := range allowed {
		if name == cn {
			return nil
		}
	}
	return fmt.Errorf("x509: subject with cn=%s is not in the allowed list", cn)
}

// chainKey identifies a presented chain by the SHA-256 of its certificates' DER bytes
// (DER is self-delimiting, so the concatenation is unambiguous).
func chainKey(certs []*x509.Certificate) [sha256.Size]byte {
	if len(certs) == 1 {
		return sha256.Sum256(certs[0].Raw) // the usual case, without a hasher to allocate
	}
	h := sha256.New()
	for _, c := range certs {
		h.Write(c.Raw)
	}
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

// Bounds of the client-certificate answer cache.
const (
	// clientCertAnswerTTL is how long an authenticated client certificate chain is
	// answered from the cache (never past a presented certificate's or a CA's NotAfter,
	// never across a change of the CA bundles).
	clientCertAnswerTTL = time.Minute
	// maxClientCertAnswers bounds the cache: one entry per client certificate in use.
	maxClientCertAnswers = 1024
)

// withCachedClientCertificates puts a cache of client-certificate answers in front of
// the server's authenticator (cachedClientCertificates), listening on clientCA (the
// serving configuration's union of the client CA and the front-proxy CA bundles) for
// changes.
func withCachedClientCertificates(auth *genericapiserver.AuthenticationInfo, clientCA dynamiccertificates.CAContentProvider) {
	if auth.Authenticator == nil || clientCA == nil {
		return
	}
	var userHeaders headerrequest.StringSliceProvider
	if rh := auth.RequestHeaderConfig; rh != nil {
		userHeaders = rh.UsernameHeaders
	}
	auth.Authenticator = newCachedClientCertificates(auth.Authenticator, userHeaders, clientCA)
}

// cachedClientCertificates answers a request that presents a client certificate and no
// other credential with the answer delegate gave to the same certificate chain before.
// k8s.io/apiserver's client-certificate authenticator (x509request.Authenticator) runs
// crypto/x509's Verify, an ECDSA or RSA signature check, on every request, although a
// client's certificates are the same for all its requests; directly called, a get spent a
// quarter of the server's CPU there.
//
// Which answers are kept: the delegate is the server's authenticator built by
// authenticatorfactory.DelegatingAuthenticatorConfig (front proxy, client certificate,
// bearer token, anonymous). A request is eligible when it has a client certificate, no
// Authorization or Sec-WebSocket-Protocol header (the token authenticators' credentials)
// and none of the front proxy's user-name headers, so the answer can only come from the
// client-certificate authenticator, and it depends on the chain, the CA bundles and the
// time alone. Only successes are kept, and not an anonymous answer (given while no CA
// bundle is loaded yet); an entry is trusted for at most clientCertAnswerTTL, never past
// the NotAfter of a presented certificate or the next NotAfter of a certificate in the CA
// bundles, and never across a change of the CA bundles (the providers call Enqueue after
// storing new content). Every other request, and every miss, goes to delegate unchanged.
//
// What differs from upstream: apiserver_client_certificate_expiration_seconds is observed
// on misses only.
type cachedClientCertificates struct {
	delegate    authenticator.Request
	userHeaders headerrequest.StringSliceProvider
	bundles     dynamiccertificates.CAContentProvider
	// now is time.Now; tests move it.
	now func() time.Time

	// state changes with every change of the CA bundles; entries of another state are
	// stale. enqueueMu orders Enqueue calls (the bundles' providers call it from their
	// own goroutines), so the last state stored is of the latest content.
	state     atomic.Pointer[caBundleState]
	enqueueMu sync.Mutex

	mu      sync.Mutex
	answers map[[sha256.Size]byte]clientCertAnswer
}

// caBundleState is one content of the CA bundles: the NotAfter of their certificates,
// sorted (nil when a certificate could not be read, or there is none: nothing is then
// cached).
type caBundleState struct {
	notAfters []time.Time
}

// nextExpiry is the first NotAfter of a bundle's certificate after now; false when there
// is none. A certificate that expired before now no longer completes a chain (crypto/x509
// checks every certificate's validity), so it bounds nothing.
func (s *caBundleState) nextExpiry(now time.Time) (time.Time, bool) {
	i, _ := slices.BinarySearchFunc(s.notAfters, now, time.Time.Compare)
	for i < len(s.notAfters) && !s.notAfters[i].After(now) {
		i++
	}
	if i == len(s.notAfters) {
		return time.Time{}, false
	}
	return s.notAfters[i], true
}

// clientCertAnswer is a cache entry.
type clientCertAnswer struct {
	state *caBundleState
	until time.Time
	resp  *authenticator.Response
}

func newCachedClientCertificates(delegate authenticator.Request, userHeaders headerrequest.StringSliceProvider, bundles dynamiccertificates.CAContentProvider) *cachedClientCertificates {
	c := &cachedClientCertificates{
		delegate:    delegate,
		userHeaders: userHeaders,
		bundles:     bundles,
		now:         time.Now,
		answers:     map[[sha256.Size]byte]clientCertAnswer{},
	}
	bundles.AddListener(c)
	c.Enqueue()
	return c
}

// Enqueue implements dynamiccertificates.Listener: the CA bundles changed.
func (c *cachedClientCertificates) Enqueue() {
	c.enqueueMu.Lock()
	defer c.enqueueMu.Unlock()
	s := &caBundleState{}
	rest := c.bundles.CurrentCABundleContent()
	for len(rest) > 0 {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			s.notAfters = nil
			break
		}
		s.notAfters = append(s.notAfters, cert.NotAfter)
	}
	slices.SortFunc(s.notAfters, time.Time.Compare)
	c.state.Store(s)
}

// AuthenticateRequest implements authenticator.Request.
func (c *cachedClientCertificates) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if !c.eligible(req) {
		return c.delegate.AuthenticateRequest(req)
	}
	certs := req.TLS.PeerCertificates
	key := chainKey(certs)
	now := c.now()
	state := c.state.Load()
	c.mu.Lock()
	e, found := c.answers[key]
	c.mu.Unlock()
	if found && e.state == state && now.Before(e.until) {
		return copyResponse(e.resp), true, nil
	}
	resp, ok, err := c.delegate.AuthenticateRequest(req)
	if !ok || err != nil {
		return resp, ok, err
	}
	caExpiry, found := state.nextExpiry(now)
	if !found {
		return resp, ok, err
	}
	u, isDefault := resp.User.(*user.DefaultInfo)
	if !isDefault || u.Name == user.Anonymous {
		return resp, ok, err
	}
	until := now.Add(clientCertAnswerTTL)
	if caExpiry.Before(until) {
		until = caExpiry
	}
	for _, cert := range certs {
		if cert.NotAfter.Before(until) {
			until = cert.NotAfter
		}
	}
	c.mu.Lock()
	if len(c.answers) >= maxClientCertAnswers {
		clear(c.answers)
	}
	c.answers[key] = clientCertAnswer{state: state, until: until, resp: copyResponse(resp)}
	c.mu.Unlock()
	return resp, ok, err
}

// eligible says whether req carries a client certificate and no other credential.
func (c *cachedClientCertificates) eligible(req *http.Request) bool {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return false
	}
	if len(req.Header.Values("Authorization")) > 0 || len(req.Header.Values("Sec-WebSocket-Protocol")) > 0 {
		return false
	}
	if c.userHeaders != nil {
		for _, h := range c.userHeaders.Value() {
			if len(req.Header.Values(h)) > 0 {
				return false
			}
		}
	}
	return true
}

// copyResponse copies a response whose user is a *user.DefaultInfo, so that no caller
// shares the cached one.
func copyResponse(r *authenticator.Response) *authenticator.Response {
	out := *r
	out.Audiences = slices.Clone(r.Audiences)
	if u, ok := r.User.(*user.DefaultInfo); ok {
		cp := *u
		cp.Groups = slices.Clone(u.Groups)
		if u.Extra != nil {
			cp.Extra = make(map[string][]string, len(u.Extra))
			for k, v := range u.Extra {
				cp.Extra[k] = slices.Clone(v)
			}
		}
		out.User = &cp
	}
	return &out
}
