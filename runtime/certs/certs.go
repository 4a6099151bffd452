// Package certs issues the certificates aagen makes: private certificate authorities and
// the serving and client certificates they sign. The local-mode credentials
// (runtime/localauth), a deployment's certificates (generator/deploycerts) and the test
// control plane (e2e/cluster) all come from it.
//
// Keys are ECDSA P-256, PEM-encoded as "EC PRIVATE KEY"; certificates are backdated by
// Backdate against clock skew, and a certificate never outlives the CA that signs it.
package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Backdate is subtracted from every certificate's NotBefore to tolerate clock skew.
const Backdate = time.Hour

// Pair is a certificate with its private key, parsed and PEM-encoded.
type Pair struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// Spec is what a new certificate says.
type Spec struct {
	CommonName string
	// Organizations are the subject's organizations: the groups of a client certificate's
	// user.
	Organizations []string
	// DNSNames and IPs are the subject alternative names of a serving certificate.
	DNSNames []string
	IPs      []net.IP
	// Usages are a leaf's extended key usages (x509.ExtKeyUsageServerAuth,
	// x509.ExtKeyUsageClientAuth); a CA has none.
	Usages []x509.ExtKeyUsage
	// Validity is how long the certificate is valid from Now (capped at the CA's expiry
	// for a leaf). Required.
	Validity time.Duration
	// Now is the time of issue; zero means time.Now().
	Now time.Time
}

// NewCA makes a new key and a self-signed CA certificate for it, which may sign leaf
// certificates (not other CAs).
func NewCA(s Spec) (*Pair, error) {
	key, tmpl, err := newTemplate(s)
	if err != nil {
		return nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	tmpl.BasicConstraintsValid = true
	tmpl.IsCA = true
	tmpl.MaxPathLenZero = true
	return sign(tmpl, tmpl, key, key)
}

// Issue makes a new key and a leaf certificate for it, signed by ca. It fails when ca is
// not a CA.
func (ca *Pair) Issue(s Spec) (*Pair, error) {
	if ca == nil || ca.Cert == nil || ca.Key == nil {
		return nil, errors.New("certs: Issue: no CA certificate and key")
	}
	if !ca.Cert.IsCA || ca.Cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("certs: Issue: %q is not a CA certificate", ca.Cert.Subject.CommonName)
	}
	key, tmpl, err := newTemplate(s)
	if err != nil {
		return nil, err
	}
	if tmpl.NotAfter.After(ca.Cert.NotAfter) {
		tmpl.NotAfter = ca.Cert.NotAfter
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = s.Usages
	tmpl.DNSNames = s.DNSNames
	tmpl.IPAddresses = s.IPs
	return sign(tmpl, ca.Cert, key, ca.Key)
}

// newTemplate makes a key and a certificate template with the subject, serial number and
// validity of s.
func newTemplate(s Spec) (*ecdsa.PrivateKey, *x509.Certificate, error) {
	if s.Validity <= 0 {
		return nil, nil, fmt.Errorf("certs: certificate %q: validity %s is not positive", s.CommonName, s.Validity)
	}
	now := s.Now
	if now.IsZero() {
		now = time.Now()
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: cannot generate a key: %w", err)
	}
	// A random, positive serial number of up to 128 bits.
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("certs: cannot generate a serial number: %w", err)
	}
	return key, &x509.Certificate{
		SerialNumber: serial.Add(serial, big.NewInt(1)),
		Subject:      pkix.Name{CommonName: s.CommonName, Organization: s.Organizations},
		NotBefore:    now.Add(-Backdate).UTC(),
		NotAfter:     now.Add(s.Validity).UTC(),
	}, nil
}

// sign makes tmpl a certificate for key's public key, signed by signer, parent's key.
func sign(tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, signer crypto.Signer) (*Pair, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return nil, fmt.Errorf("certs: cannot create the certificate %q: %w", tmpl.Subject.CommonName, err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, err
	}
	return &Pair{Cert: c, Key: key, CertPEM: EncodeCert(der), KeyPEM: keyPEM}, nil
}

// EncodeCert PEM-encodes a DER certificate.
func EncodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: cert.CertificateBlockType, Bytes: der})
}

// ParseCert parses certPEM, which must hold exactly one certificate.
func ParseCert(certPEM []byte) (*x509.Certificate, error) {
	cs, err := cert.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, err
	}
	if len(cs) != 1 {
		return nil, fmt.Errorf("holds %d certificates, want 1", len(cs))
	}
	return cs[0], nil
}

// ParseKey parses a PEM private key that can sign.
func ParseKey(keyPEM []byte) (crypto.Signer, error) {
	k, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, err
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("unsupported key type %T", k)
	}
	return signer, nil
}

// Parse parses a certificate and its key, as NewCA and Issue return them, and checks that
// the key is the certificate's. The Pair keeps the PEM bytes as given.
func Parse(certPEM, keyPEM []byte) (*Pair, error) {
	c, err := ParseCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	signer, err := ParseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
	pub, ok := c.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(signer.Public()) {
		return nil, ErrKeyMismatch
	}
	return &Pair{Cert: c, Key: signer, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// ErrKeyMismatch is Parse's error for a key that is not the certificate's.
var ErrKeyMismatch = errors.New("the key does not match the certificate")
