// Package deploycerts creates the certificate material of a deployed server: a CA and a
// serving certificate for the server's Service (<name>.<namespace>.svc and friends), plus
// the Secret that carries it. kube-apiserver's aggregator checks the serving certificate
// against the CA, which aagen writes into each APIService's caBundle.
//
// The material is created once and kept: files that exist are reused as they are, so
// regenerating never changes the caBundle under a running deployment.
package deploycerts

import (
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/aagen-dev/aagen/runtime/certs"
)

// File is one file of the material, relative to the module root.
type File struct {
	Path    string
	Content []byte
	// Private files (keys, the Secrets holding them) are for the owner's eyes only (mode
	// 0600).
	Private bool
}

// Material is the CA (for caBundle) and the files to create.
type Material struct {
	CACert []byte
	// Files are created when missing; existing ones are kept. The private files that
	// already exist (keys reused from an earlier run) are listed too, with their content,
	// so that the writer can take group and other permissions off them (output.Plan.Chmod).
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
		m.Files = append(m.Files, File{Path: p(servingCACert), Content: caCert}, File{Path: p(servingCAKey), Content: caKey, Private: true})
	} else {
		m.Files = append(m.Files, File{Path: p(servingCAKey), Content: caKey, Private: true})
	}
	ca, err := certs.Parse(caCert, caKey)
	if err != nil {
		return nil, fmt.Errorf("%s/ca.crt, ca.key: %v; %s", dir, err, fix)
	}
	if tlsCert == nil || tlsKey == nil {
		if tlsCert, tlsKey, err = newLeaf(ca, dnsNames[0], dnsNames, nil, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, now); err != nil {
			return nil, err
		}
		m.Files = append(m.Files, File{Path: p(servingCert), Content: tlsCert}, File{Path: p(servingKey), Content: tlsKey, Private: true})
	} else if err := checkLeaf(ca.Cert, servingCACert, tlsCert, dnsNames, now); err != nil {
		return nil, fmt.Errorf("%s/tls.crt: %v; %s", dir, err, fix)
	} else {
		m.Files = append(m.Files, File{Path: p(servingKey), Content: tlsKey, Private: true})
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
		File{Path: p(servingSecretFile), Content: append([]byte("# The serving certificate of the server; private: keep it out of version control.\n"), secret...), Private: true},
		File{Path: p(".gitignore"), Content: []byte("# Private keys and the Secret holding them.\n*\n!.gitignore\n")})
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

// Validity of the certificates: the CA's, and the serving, member and client
// certificates' it signs.
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 5 * 365 * 24 * time.Hour
)

// newCA returns a new CA certificate named cn and its key, PEM-encoded.
func newCA(cn string, now time.Time) ([]byte, []byte, error) {
	ca, err := certs.NewCA(certs.Spec{CommonName: cn, Validity: caValidity, Now: now})
	if err != nil {
		return nil, nil, err
	}
	return ca.CertPEM, ca.KeyPEM, nil
}

// newLeaf issues a certificate signed by ca for cn, dnsNames and ips with the given
// extended key usages; it returns it and its key, PEM-encoded.
func newLeaf(ca *certs.Pair, cn string, dnsNames []string, ips []net.IP, usages []x509.ExtKeyUsage, now time.Time) ([]byte, []byte, error) {
	leaf, err := ca.Issue(certs.Spec{CommonName: cn, DNSNames: dnsNames, IPs: ips, Usages: usages, Validity: leafValidity, Now: now})
	if err != nil {
		return nil, nil, err
	}
	return leaf.CertPEM, leaf.KeyPEM, nil
}

// checkLeaf checks that certPEM is signed by ca (read from caFile), covers dnsNames and has
// not expired.
func checkLeaf(ca *x509.Certificate, caFile string, certPEM []byte, dnsNames []string, now time.Time) error {
	cert, err := certs.ParseCert(certPEM)
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
