// Package deploycerts creates the certificate material of a deployed server: a CA and a
// serving certificate for the server's Service (<name>.<namespace>.svc and friends), plus
// the Secret that carries it. kube-apiserver's aggregator checks the serving certificate
// against the CA, which aagen writes into each APIService's caBundle.
//
// The material is created once and kept: files that exist are reused as they are, so
// regenerating never changes the caBundle under a running deployment.
package deploycerts

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/util/keyutil"
	"sigs.k8s.io/yaml"
)

// File is one file of the material, relative to the module root.
type File struct {
	Path    string
	Content []byte
}

// Material is the CA (for caBundle) and the files to create.
type Material struct {
	CACert []byte
	// Files are created when missing; existing ones are kept.
	Files []File
}

// Serving file names inside the certificate directory.
const (
	servingCACert     = "ca.crt"
	servingCAKey      = "ca.key"
	servingCert       = "tls.crt"
	servingKey        = "tls.key"
	servingSecretFile = "serving-cert.yaml"
)

// FileNames lists every file Ensure and EnsureEtcd may create in the certificate
// directory: removing them all makes the next generation issue new certificates (aagen
// certs --renew).
func FileNames() []string {
	return []string{
		servingCACert, servingCAKey, servingCert, servingKey, servingSecretFile,
		etcdCACert, etcdCAKey, etcdMemberCert, etcdMemberKey, etcdClientCert, etcdClientKey, EtcdSecretsFile,
	}
}

// Ensure returns the material in dir (module-relative, under moduleDir), creating what is
// missing. An existing serving certificate must cover dnsNames and be signed by the CA.
func Ensure(moduleDir, dir, secretName, namespace string, dnsNames []string, now time.Time) (*Material, error) {
	p := func(name string) string { return path.Join(dir, name) }
	read := reader(moduleDir, dir)
	caCert, caKey, tlsCert, tlsKey := read(servingCACert), read(servingCAKey), read(servingCert), read(servingKey)
	fix := fmt.Sprintf("delete %s (or use --cert-manager) and generate again to issue new certificates", dir)
	m := &Material{}
	if caCert == nil {
		if caKey != nil || tlsCert != nil || tlsKey != nil {
			return nil, fmt.Errorf("%s has keys or certificates but no ca.crt; %s", dir, fix)
		}
		var err error
		if caCert, caKey, err = newCA(secretName+"-ca", now); err != nil {
			return nil, err
		}
		m.Files = append(m.Files, File{p(servingCACert), caCert}, File{p(servingCAKey), caKey})
	}
	ca, signer, err := parsePair(caCert, caKey)
	if err != nil {
		return nil, fmt.Errorf("%s/ca.crt, ca.key: %v; %s", dir, err, fix)
	}
	if tlsCert == nil || tlsKey == nil {
		if tlsCert, tlsKey, err = newLeaf(ca, signer, dnsNames[0], dnsNames, nil, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, now); err != nil {
			return nil, err
		}
		m.Files = append(m.Files, File{p(servingCert), tlsCert}, File{p(servingKey), tlsKey})
	} else if err := checkLeaf(ca, servingCACert, tlsCert, dnsNames, now); err != nil {
		return nil, fmt.Errorf("%s/tls.crt: %v; %s", dir, err, fix)
	}
	secret, err := yaml.Marshal(map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"type":       "kubernetes.io/tls",
		"metadata":   map[string]any{"name": secretName, "namespace": namespace},
		"data":       map[string]any{"tls.crt": tlsCert, "tls.key": tlsKey, "ca.crt": caCert},
	})
	if err != nil {
		return nil, err
	}
	m.Files = append(m.Files,
		File{p(servingSecretFile), append([]byte("# The serving certificate of the server; private: keep it out of version control.\n"), secret...)},
		File{p(".gitignore"), []byte("# Private keys and the Secret holding them.\n*\n!.gitignore\n")})
	m.CACert = caCert
	return m, nil
}

// reader returns a function that reads a file of dir (module-relative, under moduleDir),
// nil when it cannot be read.
func reader(moduleDir, dir string) func(name string) []byte {
	return func(name string) []byte {
		data, err := os.ReadFile(filepath.Join(moduleDir, filepath.FromSlash(path.Join(dir, name))))
		if err != nil {
			return nil
		}
		return data
	}
}

func newCA(cn string, now time.Time) ([]byte, []byte, error) {
	return issue(&x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil, nil)
}

// newLeaf issues a certificate signed by ca for cn, dnsNames and ips with the given
// extended key usages.
func newLeaf(ca *x509.Certificate, signer crypto.Signer, cn string, dnsNames []string, ips []net.IP, usages []x509.ExtKeyUsage, now time.Time) ([]byte, []byte, error) {
	return issue(&x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(5 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usages,
	}, ca, signer)
}

// issue makes a new P-256 key and a certificate of tmpl for it, signed by parent's signer,
// or by itself when parent is nil; it returns both PEM-encoded.
func issue(tmpl, parent *x509.Certificate, signer crypto.Signer) ([]byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if parent == nil {
		parent, signer = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, nil, err
	}
	return encode(der, key)
}

// checkLeaf checks that certPEM is signed by ca (read from caFile), covers dnsNames and has
// not expired.
func checkLeaf(ca *x509.Certificate, caFile string, certPEM []byte, dnsNames []string, now time.Time) error {
	cert, _, err := parseCert(certPEM)
	if err != nil {
		return err
	}
	if err := cert.CheckSignatureFrom(ca); err != nil {
		return fmt.Errorf("not signed by %s", caFile)
	}
	for _, n := range dnsNames {
		if !slices.Contains(cert.DNSNames, n) {
			return fmt.Errorf("does not cover %s (the name or namespace changed?)", n)
		}
	}
	if now.After(cert.NotAfter) {
		return fmt.Errorf("expired on %s", cert.NotAfter.Format(time.DateOnly))
	}
	return nil
}

// parseCert parses a PEM certificate and returns it with its DER bytes.
func parseCert(certPEM []byte) (*x509.Certificate, []byte, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return nil, nil, fmt.Errorf("not a PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	return cert, block.Bytes, err
}

func parsePair(certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return nil, nil, fmt.Errorf("not a PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("key cannot sign")
	}
	return cert, signer, nil
}

func encode(der []byte, key *ecdsa.PrivateKey) ([]byte, []byte, error) {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	var c, k bytes.Buffer
	_ = pem.Encode(&c, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	_ = pem.Encode(&k, &pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return c.Bytes(), k.Bytes(), nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}
