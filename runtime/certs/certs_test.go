package certs

import (
	"crypto/ecdsa"
	"crypto/x509"
	"errors"
	"net"
	"slices"
	"testing"
	"time"
)

func newTestCA(t *testing.T, now time.Time, validity time.Duration) *Pair {
	t.Helper()
	ca, err := NewCA(Spec{CommonName: "test-ca", Validity: validity, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestNewCA(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ca := newTestCA(t, now, 10*365*24*time.Hour)
	c := ca.Cert
	if !c.IsCA || !c.BasicConstraintsValid || c.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("not a CA: IsCA %v, BasicConstraintsValid %v, KeyUsage %b", c.IsCA, c.BasicConstraintsValid, c.KeyUsage)
	}
	if err := c.CheckSignatureFrom(c); err != nil {
		t.Errorf("not self-signed: %v", err)
	}
	if c.Subject.CommonName != "test-ca" {
		t.Errorf("common name %q", c.Subject.CommonName)
	}
	if !c.NotBefore.Equal(now.Add(-Backdate)) || !c.NotAfter.Equal(now.Add(10*365*24*time.Hour)) {
		t.Errorf("valid %s to %s", c.NotBefore, c.NotAfter)
	}
	if _, ok := ca.Key.(*ecdsa.PrivateKey); !ok {
		t.Errorf("key is %T, want ECDSA", ca.Key)
	}
	if c.SerialNumber.Sign() <= 0 {
		t.Errorf("serial number %v is not positive", c.SerialNumber)
	}
}

// TestIssueVerifies checks that issued certificates verify against their CA for the
// requested names and usages only.
func TestIssueVerifies(t *testing.T) {
	now := time.Now()
	ca := newTestCA(t, now, 24*time.Hour)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)

	serving, err := ca.Issue(Spec{
		CommonName: "srv", DNSNames: []string{"srv.ns.svc", "localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, Validity: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"srv.ns.svc", "localhost", "127.0.0.1"} {
		if _, err := serving.Cert.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("serving certificate for %s: %v", name, err)
		}
	}
	if _, err := serving.Cert.Verify(x509.VerifyOptions{DNSName: "other.ns.svc", Roots: roots}); err == nil {
		t.Error("serving certificate verifies for a name it was not issued for")
	}
	if _, err := serving.Cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("serving certificate verifies for client authentication")
	}

	client, err := ca.Issue(Spec{
		CommonName: "jane", Organizations: []string{"system:masters"},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, Validity: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}
	if client.Cert.Subject.CommonName != "jane" || !slices.Equal(client.Cert.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("client subject %v", client.Cert.Subject)
	}

	other := newTestCA(t, now, 24*time.Hour)
	otherRoots := x509.NewCertPool()
	otherRoots.AddCert(other.Cert)
	if _, err := client.Cert.Verify(x509.VerifyOptions{Roots: otherRoots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("client certificate verifies against another CA")
	}
	// The CA signs no other CA.
	if _, err := client.Issue(Spec{CommonName: "x", Validity: time.Hour}); err == nil {
		t.Error("a leaf certificate issued a certificate")
	}
}

func TestIssueNeverOutlivesTheCA(t *testing.T) {
	now := time.Now()
	ca := newTestCA(t, now, time.Hour)
	leaf, err := ca.Issue(Spec{CommonName: "x", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, Validity: 365 * 24 * time.Hour, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if !leaf.Cert.NotAfter.Equal(ca.Cert.NotAfter) {
		t.Errorf("leaf expires %s, CA %s", leaf.Cert.NotAfter, ca.Cert.NotAfter)
	}
}

func TestValidityRequired(t *testing.T) {
	if _, err := NewCA(Spec{CommonName: "x"}); err == nil {
		t.Error("NewCA without a validity succeeded")
	}
}

func TestParseRoundTripAndMismatch(t *testing.T) {
	ca := newTestCA(t, time.Now(), time.Hour)
	p, err := Parse(ca.CertPEM, ca.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Cert.Equal(ca.Cert) {
		t.Error("parsed certificate differs")
	}
	other := newTestCA(t, time.Now(), time.Hour)
	if _, err := Parse(ca.CertPEM, other.KeyPEM); !errors.Is(err, ErrKeyMismatch) {
		t.Errorf("Parse with another key: %v, want ErrKeyMismatch", err)
	}
	if _, err := Parse(append(ca.CertPEM, other.CertPEM...), ca.KeyPEM); err == nil {
		t.Error("Parse of two certificates succeeded")
	}
	if _, err := Parse([]byte("junk"), ca.KeyPEM); err == nil {
		t.Error("Parse of junk succeeded")
	}
}
