package cluster

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/rest"
)

// FrontProxyClientName is the common name of the aggregator's client certificate, the one
// name kube-apiserver's --requestheader-allowed-names (and so the extension-apiserver-
// authentication ConfigMap every aggregated server reads) allows.
const FrontProxyClientName = "front-proxy-client"

// FrontProxy returns a client config for the aggregated server b that authenticates the way kube-apiserver's
// aggregator does when it proxies a request: with the front-proxy client certificate
// (CN front-proxy-client, signed by the request-header CA), asserting user and groups in
// the X-Remote-User and X-Remote-Group headers. The server trusts the headers because of
// the certificate, and authorizes the user with a SubjectAccessReview.
func (p *PKI) FrontProxy(b *Backend, user string, groups ...string) *rest.Config {
	cfg := backendConfig(b)
	cfg.CertFile, cfg.KeyFile = p.Path("front-proxy-client.crt"), p.Path("front-proxy-client.key")
	return WithRemoteUser(cfg, user, groups...)
}

// UntrustedFrontProxy is FrontProxy with a client certificate of the same name that the
// request-header CA did not sign (a cluster-CA one): the server must not believe its
// X-Remote-User headers.
func (p *PKI) UntrustedFrontProxy(t T, b *Backend, user string, groups ...string) *rest.Config {
	t.Helper()
	certPEM, keyPEM := p.issue(t, "untrusted-front-proxy-client", p.ca, clientSpec(FrontProxyClientName))
	cfg := backendConfig(b)
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	return WithRemoteUser(cfg, user, groups...)
}

// backendConfig is a config without credentials for b on 127.0.0.1, verifying its serving
// certificate as the aggregator does.
func backendConfig(b *Backend) *rest.Config {
	cfg := &rest.Config{Host: fmt.Sprintf("https://127.0.0.1:%d", b.Port)}
	cfg.CAFile, cfg.ServerName = b.CAFile, b.ServerName
	return cfg
}

// WithRemoteUser returns a copy of cfg whose requests carry X-Remote-User: user and one
// X-Remote-Group header per group, replacing any the caller set.
func WithRemoteUser(cfg *rest.Config, user string, groups ...string) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			req = req.Clone(req.Context())
			req.Header.Set("X-Remote-User", user)
			req.Header.Del("X-Remote-Group")
			for _, g := range groups {
				req.Header.Add("X-Remote-Group", g)
			}
			return rt.RoundTrip(req)
		})
	})
	return out
}

// roundTripperFunc is an http.RoundTripper made of a function.
type roundTripperFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
