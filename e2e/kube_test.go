package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeVersion is the Kubernetes release whose kube-apiserver and kube-controller-manager the
// aggregation tests run; e2e/tools/kube-apiserver/go.mod pins it.
const kubeVersion = "v1.36.3"

// kubeBinary builds k8s.io/kubernetes/cmd/<name> into the gitignored .cache/bin once and
// reuses it afterwards (a cold build takes minutes).
func kubeBinary(t *testing.T, name string) string {
	t.Helper()
	return toolBinary(t, "kube-apiserver", "k8s.io/kubernetes/cmd/"+name, name, kubeVersion)
}

var toolBuild sync.Mutex

// toolBinary builds pkg in the Go module e2e/tools/<module> (a module of its own, so the
// main go.mod does not carry its dependencies) into the gitignored .cache/bin as
// <name>-<version> once and reuses it afterwards.
func toolBinary(t *testing.T, module, pkg, name, version string) string {
	t.Helper()
	toolBuild.Lock()
	defer toolBuild.Unlock()
	root := repoRoot(t)
	bin := filepath.Join(root, ".cache", "bin", name+"-"+version)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("building %s %s from Go modules into %s (minutes on a cold cache)", name, version, bin)
	start := time.Now()
	// A name of this process's own: another test process may be building the same binary.
	tmp := fmt.Sprintf("%s.tmp%d", bin, os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, pkg)
	cmd.Dir = filepath.Join(root, "e2e", "tools", module)
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.Remove(tmp)
		t.Fatalf("building %s: %v\n%s", name, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s in %s", name, time.Since(start).Round(time.Second))
	return bin
}

// pki is the certificate material of a test control plane.
type pki struct {
	dir string
	// ca signs kube-apiserver's serving cert and client certs of users.
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
}

func newPKI(t *testing.T, dir string) *pki {
	t.Helper()
	p := &pki{dir: dir}
	p.caCert, p.caKey = p.newCA(t, "ca", "aagen-e2e-ca")
	p.issue(t, "apiserver", p.caCert, p.caKey, "localhost", nil, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, x509.ExtKeyUsageServerAuth)
	p.issue(t, "admin", p.caCert, p.caKey, "admin", []string{"system:masters"}, nil, nil, x509.ExtKeyUsageClientAuth)
	fpCert, fpKey := p.newCA(t, "front-proxy-ca", "aagen-e2e-front-proxy-ca")
	p.issue(t, "front-proxy-client", fpCert, fpKey, "front-proxy-client", nil, nil, nil, x509.ExtKeyUsageClientAuth)
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	writePEM(t, filepath.Join(dir, "sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(sa))
	writePEM(t, filepath.Join(dir, "sa.pub"), "PUBLIC KEY", pub)
	return p
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

func (p *pki) newCA(t *testing.T, file, cn string) (*x509.Certificate, *ecdsa.PrivateKey) {
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
	writePEM(t, p.path(file+".crt"), "CERTIFICATE", der)
	return cert, key
}

// issue writes <file>.crt and <file>.key signed by the CA and returns their PEM.
func (p *pki) issue(t *testing.T, file string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, orgs, dns []string, ips []net.IP, usage x509.ExtKeyUsage) ([]byte, []byte) {
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
	return writePEM(t, p.path(file+".crt"), "CERTIFICATE", der), writePEM(t, p.path(file+".key"), "EC PRIVATE KEY", keyDER)
}

// user returns a client config for a user with a certificate from the cluster CA.
func (p *pki) user(t *testing.T, base *rest.Config, name string, groups ...string) *rest.Config {
	t.Helper()
	certPEM, keyPEM := p.issue(t, "user-"+name, p.caCert, p.caKey, name, groups, nil, nil, x509.ExtKeyUsageClientAuth)
	cfg := rest.AnonymousClientConfig(base)
	cfg.CertData, cfg.KeyData = certPEM, keyPEM
	return cfg
}

func writePEM(t *testing.T, path, typ string, der []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	_ = pem.Encode(&buf, &pem.Block{Type: typ, Bytes: der})
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// writeKubeconfig writes a kubeconfig for host with either client cert files or a token.
func writeKubeconfig(t *testing.T, path, host, caFile, certFile, keyFile, token string) {
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

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// process is a child process whose output is kept for failure messages.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan error
}

func startProcess(t *testing.T, name, bin string, args ...string) *process {
	t.Helper()
	p := &process{name: name, cmd: exec.Command(bin, args...), out: &syncBuffer{}, done: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s output (tail):\n%s", name, tail(p.out.String(), 4000))
		}
	})
	return p
}

// waitReady polls <host>/readyz with cfg until it answers 200.
func (p *process) waitReady(t *testing.T, cfg *rest.Config, timeout time.Duration) {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.done:
			t.Fatalf("%s exited: %v\n%s", p.name, err, tail(p.out.String(), 4000))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/readyz", nil)
		resp, err := client.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s not ready after %s:\n%s", p.name, timeout, tail(p.out.String(), 4000))
}

// controlPlane is a kube-apiserver (with the aggregation layer) and the ClusterRole
// aggregation controller of kube-controller-manager, on an etcd.
type controlPlane struct {
	pki        *pki
	host       string
	admin      *rest.Config
	kubeconfig string
}

func startControlPlane(t *testing.T, etcdURL string) *controlPlane {
	t.Helper()
	kas := kubeBinary(t, "kube-apiserver")
	kcm := kubeBinary(t, "kube-controller-manager")
	dir := t.TempDir()
	p := newPKI(t, dir)
	port := freePort(t)
	host := "https://127.0.0.1:" + strconv.Itoa(port)
	proc := startProcess(t, "kube-apiserver", kas,
		"--etcd-servers="+etcdURL, "--etcd-prefix=/kube",
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port), "--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--tls-cert-file="+p.path("apiserver.crt"), "--tls-private-key-file="+p.path("apiserver.key"),
		"--client-ca-file="+p.path("ca.crt"),
		"--service-account-key-file="+p.path("sa.pub"), "--service-account-signing-key-file="+p.path("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC",
		"--requestheader-client-ca-file="+p.path("front-proxy-ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file="+p.path("front-proxy-client.crt"),
		"--proxy-client-key-file="+p.path("front-proxy-client.key"),
	)
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	writeKubeconfig(t, kubeconfig, host, p.path("ca.crt"), p.path("admin.crt"), p.path("admin.key"), "")
	admin, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	proc.waitReady(t, admin, 3*time.Minute)
	startProcess(t, "kube-controller-manager", kcm,
		"--kubeconfig="+kubeconfig, "--controllers=clusterrole-aggregation", "--leader-elect=false", "--secure-port=0")
	return &controlPlane{pki: p, host: host, admin: admin, kubeconfig: kubeconfig}
}
