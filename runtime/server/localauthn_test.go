package server

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/authentication/user"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/aagen-dev/aagen/runtime/localauth"
)

// TestLocalModeRefusesAnotherCA checks README's "requests without a certificate from that
// CA get 401" for local mode: the authentication applyLocalAuthentication installs takes
// the local CA's admin certificate, and answers 401 to a certificate of another CA with
// the same user and groups (system:masters), and to no certificate at all.
func TestLocalModeRefusesAnotherCA(t *testing.T) {
	local, err := localauth.Ensure(localauth.Options{Dir: t.TempDir(), ServerURL: "https://127.0.0.1:8443"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := localauth.Ensure(localauth.Options{Dir: t.TempDir(), ServerURL: "https://127.0.0.1:8443"})
	if err != nil {
		t.Fatal(err)
	}
	scheme := statusScheme()
	codecs := serializer.NewCodecFactory(scheme)
	cfg := genericapiserver.NewRecommendedConfig(codecs)
	if err := applyLocalAuthentication(cfg, local); err != nil {
		t.Fatal(err)
	}
	var users []user.Info
	h := genericfilters.WithAuthentication(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		u, _ := genericapirequest.UserFrom(req.Context())
		users = append(users, u)
	}), cfg.Authentication.Authenticator, genericfilters.Unauthorized(codecs), nil, nil)

	for _, c := range []struct {
		name     string
		certFile string
		want     int
	}{
		{"the local CA's admin", local.ClientCert, http.StatusOK},
		{"another CA's admin", other.ClientCert, http.StatusUnauthorized},
		{"no certificate", "", http.StatusUnauthorized},
	} {
		t.Run(c.name, func(t *testing.T) {
			users = nil
			req := httptest.NewRequest(http.MethodGet, "https://127.0.0.1:8443/apis", nil)
			req = req.WithContext(genericapirequest.WithRequestInfo(req.Context(), &genericapirequest.RequestInfo{Path: "/apis", Verb: "get"}))
			req.TLS = &tls.ConnectionState{}
			if c.certFile != "" {
				req.TLS.PeerCertificates = []*x509.Certificate{readCert(t, c.certFile)}
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.want {
				t.Fatalf("status %d, want %d: %s", rec.Code, c.want, rec.Body)
			}
			if c.want == http.StatusOK {
				if len(users) != 1 || !slices.Contains(users[0].GetGroups(), "system:masters") {
					t.Errorf("authenticated as %v", users)
				}
			} else if len(users) != 0 {
				t.Errorf("the handler ran as %v", users)
			}
		})
	}
	if cert := readCert(t, other.ClientCert); len(cert.Subject.Organization) == 0 || cert.Subject.Organization[0] != "system:masters" {
		t.Errorf("the other CA's certificate is for groups %v; want system:masters, as the local one", cert.Subject.Organization)
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s: no PEM", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
