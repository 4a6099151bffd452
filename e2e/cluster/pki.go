package cluster

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/aagen-dev/aagen/runtime/certs"
)

// pkiValidity is how long the test control plane's certificates are valid.
const pkiValidity = 24 * time.Hour

// PKI is the certificate material of a test control plane, as files in Dir.
type PKI struct {
	Dir string
	// ca signs kube-apiserver's serving cert and client certs of users.
	ca *certs.Pair
	// frontProxyCA signs the aggregator's client certificate (the request-header CA).
	frontProxyCA *certs.Pair
}

// NewPKI writes a cluster CA with kube-apiserver's serving certificate (for localhost,
// 127.0.0.1, the in-cluster names of the kubernetes Service and the addresses ips) and an
// admin (system:masters) client certificate, a front-proxy CA with the aggregator's client
// certificate, and a service-account key pair into dir.
func NewPKI(t T, dir string, ips ...net.IP) *PKI {
	t.Helper()
	p := &PKI{Dir: dir}
	p.ca = p.newCA(t, "ca", "aagen-e2e-ca")
	p.issue(t, "apiserver", p.ca, certs.Spec{CommonName: "localhost",
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPs:      append([]net.IP{net.ParseIP("127.0.0.1")}, ips...), Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	p.issue(t, "admin", p.ca, clientSpec("admin", "system:masters"))
	p.frontProxyCA = p.newCA(t, "front-proxy-ca", "aagen-e2e-front-proxy-ca")
	p.issue(t, "front-proxy-client", p.frontProxyCA, clientSpec(FrontProxyClientName))
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	writeFile(t, filepath.Join(dir, "sa.key"), encodePEM("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(sa)))
	writeFile(t, filepath.Join(dir, "sa.pub"), encodePEM("PUBLIC KEY", pub))
	return p
}

// Path is the path of a file of the PKI (ca.crt, admin.key, ...).
func (p *PKI) Path(name string) string { return filepath.Join(p.Dir, name) }

// clientSpec is a client certificate for user in groups.
func clientSpec(user string, groups ...string) certs.Spec {
	return certs.Spec{CommonName: user, Organizations: groups, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
}

// newCA writes <file>.crt, a new CA named cn.
func (p *PKI) newCA(t T, file, cn string) *certs.Pair {
	t.Helper()
	ca, err := certs.NewCA(certs.Spec{CommonName: cn, Validity: pkiValidity})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, p.Path(file+".crt"), ca.CertPEM)
	return ca
}

// issue writes <file>.crt and <file>.key, a certificate for spec signed by ca, and returns
// their PEM.
func (p *PKI) issue(t T, file string, ca *certs.Pair, spec certs.Spec) ([]byte, []byte) {
	t.Helper()
	spec.Validity = pkiValidity
	leaf, err := ca.Issue(spec)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, p.Path(file+".crt"), leaf.CertPEM)
	writeFile(t, p.Path(file+".key"), leaf.KeyPEM)
	return leaf.CertPEM, leaf.KeyPEM
}

// User returns a client config for a user with a certificate from the cluster CA.
func (p *PKI) User(t T, base *rest.Config, name string, groups ...string) *rest.Config {
	t.Helper()
	certPEM, keyPEM := p.issue(t, "user-"+name, p.ca, clientSpec(name, groups...))
	cfg := rest.AnonymousClientConfig(base)
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	return cfg
}

func encodePEM(typ string, der []byte) []byte {
	var buf bytes.Buffer
	_ = pem.Encode(&buf, &pem.Block{Type: typ, Bytes: der})
	return buf.Bytes()
}

func writeFile(t T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
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
