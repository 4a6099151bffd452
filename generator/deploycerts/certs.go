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
	"strings"
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
	// servingPreviousCA is the serving CA a renewal replaced (RenewServing). While it exists
	// it stays in the APIServices' caBundle beside the new CA, so that kube-apiserver
	// trusts a Pod still serving a certificate of the old CA until it loads the new one.
	servingPreviousCA = "ca-previous.crt"
)

// FileNames lists every file Ensure and EnsureEtcd may create in the certificate
// directory: removing them all makes the next generation issue new certificates.
func FileNames() []string {
	return []string{
		servingCACert, servingCAKey, servingCert, servingKey, servingSecretFile,
		etcdCACert, etcdCAKey, etcdMemberCert, etcdMemberKey, etcdClientCert, etcdClientKey, EtcdSecretsFile,
	}
}

// RenewServing makes the next Ensure in dir (module-relative, under moduleDir) issue a new
// serving CA and certificate without a moment when kube-apiserver distrusts the server: the
// current CA certificate becomes ca-previous.crt, which Ensure keeps in the caBundle, and the
// CA key, the serving certificate and key and their Secret are removed. It returns the path of
// ca-previous.crt, or "" when there was no CA to keep. It refuses while ca-previous.crt
// exists: Pods may still serve a certificate of that CA, which a second renewal would drop.
func RenewServing(moduleDir, dir string) (string, error) {
	abs := func(name string) string { return filepath.Join(moduleDir, filepath.FromSlash(path.Join(dir, name))) }
	if _, err := os.Stat(abs(servingPreviousCA)); err == nil {
		return "", fmt.Errorf("%s exists: an earlier renewal is still trusted beside the current CA. Once every server Pod serves the current certificate, delete it, generate again and apply; then renew", path.Join(dir, servingPreviousCA))
	} else if !os.IsNotExist(err) {
		return "", err
	}
	kept := ""
	if ca, err := os.ReadFile(abs(servingCACert)); err == nil {
		if err := os.WriteFile(abs(servingPreviousCA), ca, 0o644); err != nil {
			return "", err
		}
		kept = abs(servingPreviousCA)
	} else if !os.IsNotExist(err) {
		return "", err
	}
	for _, name := range []string{servingCACert, servingCAKey, servingCert, servingKey, servingSecretFile} {
		if err := os.Remove(abs(name)); err != nil && !os.IsNotExist(err) {
			return "", err
		}
	}
	return kept, nil
}

// Snapshot reads every file of the material in dir (FileNames and ca-previous.crt) and
// returns a function that puts dir back as it was then: the files written again with their
// modes, and those that did not exist removed.
func Snapshot(moduleDir, dir string) (restore func() error, err error) {
	type saved struct {
		data []byte
		mode os.FileMode
		ok   bool
	}
	files := map[string]saved{}
	for _, name := range append(FileNames(), servingPreviousCA) {
		p := filepath.Join(moduleDir, filepath.FromSlash(path.Join(dir, name)))
		st, err := os.Stat(p)
		if os.IsNotExist(err) {
			files[p] = saved{}
			continue
		} else if err != nil {
			return nil, err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		files[p] = saved{data: data, mode: st.Mode().Perm(), ok: true}
	}
	return func() error {
		for p, f := range files {
			if !f.ok {
				if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
					return err
				}
				continue
			}
			if err := os.WriteFile(p, f.data, f.mode); err != nil {
				return err
			}
			if err := os.Chmod(p, f.mode); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// RenewEtcd makes the next EnsureEtcd in dir issue a new etcd CA and new member and client
// certificates, by removing the current ones and their Secrets. etcd and the server read the
// CA they trust when they start, so members with new certificates and members with old ones
// refuse each other: every member must be restarted at once, then the server (an outage).
func RenewEtcd(moduleDir, dir string) error {
	for _, name := range []string{etcdCACert, etcdCAKey, etcdMemberCert, etcdMemberKey, etcdClientCert, etcdClientKey, EtcdSecretsFile} {
		if err := os.Remove(filepath.Join(moduleDir, filepath.FromSlash(path.Join(dir, name)))); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
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
	// A CA a renewal replaced stays trusted, after the new one, until its file is deleted:
	// in the APIServices' caBundle and in the Secret's ca.crt alike.
	bundle := caCert
	if previous := read(servingPreviousCA); previous != nil {
		if _, err := certs.ParseCert(previous); err != nil {
			return nil, fmt.Errorf("%s/%s: %v; delete it (kube-apiserver then trusts the current CA alone) and generate again", dir, servingPreviousCA, err)
		}
		bundle = []byte(strings.TrimRight(string(caCert), "\n") + "\n" + strings.TrimLeft(string(previous), "\n"))
	}
	secret, err := yaml.Marshal(map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"type":       "kubernetes.io/tls",
		"metadata":   map[string]any{"name": secretName, "namespace": namespace},
		"data":       map[string]any{"tls.crt": tlsCert, "tls.key": tlsKey, "ca.crt": bundle},
	})
	if err != nil {
		return nil, err
	}
	m.Files = append(m.Files,
		File{Path: p(servingSecretFile), Content: append([]byte("# The serving certificate of the server; private: keep it out of version control.\n"), secret...), Private: true},
		File{Path: p(".gitignore"), Content: []byte("# Private keys and the Secret holding them.\n*\n!.gitignore\n")})
	m.CACert = bundle
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

// newCA returns a new CA certificate named cn@<now in Unix nanoseconds> and its key,
// PEM-encoded: after a renewal the caBundle holds two CAs, which an operator tells apart by
// their subjects (as kube-apiserver's self-signed "<host>-ca@<time>").
func newCA(cn string, now time.Time) ([]byte, []byte, error) {
	ca, err := certs.NewCA(certs.Spec{CommonName: fmt.Sprintf("%s@%d", cn, now.UnixNano()), Validity: caValidity, Now: now})
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
