package cluster

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// PKI is the certificate material of a test control plane, as files in Dir.
type PKI struct {
	Dir string
	// ca signs kube-apiserver's serving cert and client certs of users.
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
	// frontProxyCA signs the aggregator's client certificate (the request-header CA).
	frontProxyCACert *x509.Certificate
	frontProxyCAKey  *ecdsa.PrivateKey
}

// NewPKI writes a cluster CA with kube-apiserver's serving certificate and an admin
// (system:masters) client certificate, a front-proxy CA with the aggregator's client
// certificate, and a service-account key pair into dir.
func NewPKI(t T, dir string) *PKI {
	t.Helper()
	p := &PKI{Dir: dir}
	p.caCert, p.caKey = p.newCA(t, "ca", "aagen-e2e-ca")
	p.issue(t, "apiserver", p.caCert, p.caKey, "localhost", nil, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, x509.ExtKeyUsageServerAuth)
	p.issue(t, "admin", p.caCert, p.caKey, "admin", []string{"system:masters"}, nil, nil, x509.ExtKeyUsageClientAuth)
	p.frontProxyCACert, p.frontProxyCAKey = p.newCA(t, "front-proxy-ca", "aagen-e2e-front-proxy-ca")
	p.issue(t, "front-proxy-client", p.frontProxyCACert, p.frontProxyCAKey, FrontProxyClientName, nil, nil, nil, x509.ExtKeyUsageClientAuth)
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	writePEM(t, filepath.Join(dir, "sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(sa))
	writePEM(t, filepath.Join(dir, "sa.pub"), "PUBLIC KEY", pub)
	return p
}

// Path is the path of a file of the PKI (ca.crt, admin.key, ...).
func (p *PKI) Path(name string) string { return filepath.Join(p.Dir, name) }

func (p *PKI) newCA(t T, file, cn string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	writePEM(t, p.Path(file+".crt"), "CERTIFICATE", der)
	return cert, key
}

// issue writes <file>.crt and <file>.key signed by the CA and returns their PEM.
func (p *PKI) issue(t T, file string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, orgs, dns []string, ips []net.IP, usage x509.ExtKeyUsage) ([]byte, []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, DNSNames: dns, IPAddresses: ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	return writePEM(t, p.Path(file+".crt"), "CERTIFICATE", der), writePEM(t, p.Path(file+".key"), "EC PRIVATE KEY", keyDER)
}

// User returns a client config for a user with a certificate from the cluster CA.
func (p *PKI) User(t T, base *rest.Config, name string, groups ...string) *rest.Config {
	t.Helper()
	certPEM, keyPEM := p.issue(t, "user-"+name, p.caCert, p.caKey, name, groups, nil, nil, x509.ExtKeyUsageClientAuth)
	cfg := rest.AnonymousClientConfig(base)
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	return cfg
}

func writePEM(t T, path, typ string, der []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	_ = pem.Encode(&buf, &pem.Block{Type: typ, Bytes: der})
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// WriteKubeconfig writes a kubeconfig for host with either client cert files or a token.
func WriteKubeconfig(t T, path, host, caFile, certFile, keyFile, token string) {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: host, CertificateAuthority: caFile}
	cfg.AuthInfos["e2e"] = &clientcmdapi.AuthInfo{ClientCertificate: certFile, ClientKey: keyFile, Token: token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "e2e"}
	cfg.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}
