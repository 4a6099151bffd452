package deploycerts

import (
	"crypto/x509"
	"fmt"
	"net"
	"path"
	"slices"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/aagen-dev/aagen/runtime/certs"
)

// Etcd file names inside the certificate directory.
const (
	etcdCACert     = "etcd-ca.crt"
	etcdCAKey      = "etcd-ca.key"
	etcdMemberCert = "etcd-member.crt"
	etcdMemberKey  = "etcd-member.key"
	etcdClientCert = "etcd-client.crt"
	etcdClientKey  = "etcd-client.key"
	// EtcdSecretsFile is the name, in the certificate directory, of the file holding the
	// two Secrets of the etcd StatefulSet's certificates.
	EtcdSecretsFile = "etcd-certs.yaml"
)

// EtcdSecrets names the Secrets that carry the etcd certificates. Each holds ca.crt (the
// etcd CA), tls.crt and tls.key.
type EtcdSecrets struct {
	// Member is mounted by every etcd member: its certificate serves clients and peers
	// and authenticates the member to its peers.
	Member string
	// Client is mounted by the server: its certificate authenticates it to etcd.
	Client string
}

// EnsureEtcd returns the certificate material of the etcd StatefulSet in dir
// (module-relative, under moduleDir), creating what is missing: a CA of its own (so that no
// other certificate aagen makes is accepted by etcd), a member certificate for
// memberDNSNames valid for server and client authentication (etcd uses it both to serve
// and to dial its peers), a client certificate named clientName for the server, and the
// Secrets that carry them. Existing files are reused when the CA signed them and the member
// certificate still covers memberDNSNames.
func EnsureEtcd(moduleDir, dir string, secrets EtcdSecrets, namespace, clientName string, memberDNSNames []string, now time.Time) (*Material, error) {
	p := func(name string) string { return path.Join(dir, name) }
	read := reader(moduleDir, dir)
	fix := fmt.Sprintf("delete the etcd-* files in %s and generate again to issue new etcd certificates (then restart the etcd pods and the server)", dir)
	caCert, caKey := read(etcdCACert), read(etcdCAKey)
	memberCert, memberKey := read(etcdMemberCert), read(etcdMemberKey)
	clientCert, clientKey := read(etcdClientCert), read(etcdClientKey)
	m := &Material{}
	if caCert == nil || caKey == nil {
		if caCert != nil || caKey != nil || memberCert != nil || memberKey != nil || clientCert != nil || clientKey != nil {
			return nil, fmt.Errorf("%s has etcd keys or certificates but not both %s and %s; %s", dir, etcdCACert, etcdCAKey, fix)
		}
		var err error
		if caCert, caKey, err = newCA(secrets.Member+"-ca", now); err != nil {
			return nil, err
		}
		m.Files = append(m.Files, File{Path: p(etcdCACert), Content: caCert}, File{Path: p(etcdCAKey), Content: caKey, Private: true})
	} else {
		m.Files = append(m.Files, File{Path: p(etcdCAKey), Content: caKey, Private: true})
	}
	ca, err := certs.Parse(caCert, caKey)
	if err != nil {
		return nil, fmt.Errorf("%s/%s, %s: %v; %s", dir, etcdCACert, etcdCAKey, err, fix)
	}
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	if memberCert == nil || memberKey == nil {
		// localhost and the loopback addresses too, as kubeadm's etcd certificates have them:
		// etcdctl in a member's pod (and a test on one machine) reaches it there.
		names := append(slices.Clone(memberDNSNames), "localhost")
		if memberCert, memberKey, err = newLeaf(ca, memberDNSNames[0], names, loopbackIPs(), both, now); err != nil {
			return nil, err
		}
		m.Files = append(m.Files, File{Path: p(etcdMemberCert), Content: memberCert}, File{Path: p(etcdMemberKey), Content: memberKey, Private: true})
	} else if err := checkLeaf(ca.Cert, etcdCACert, memberCert, memberDNSNames, now); err != nil {
		return nil, fmt.Errorf("%s/%s: %v; %s", dir, etcdMemberCert, err, fix)
	} else {
		m.Files = append(m.Files, File{Path: p(etcdMemberKey), Content: memberKey, Private: true})
	}
	if clientCert == nil || clientKey == nil {
		if clientCert, clientKey, err = newLeaf(ca, clientName, nil, nil, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, now); err != nil {
			return nil, err
		}
		m.Files = append(m.Files, File{Path: p(etcdClientCert), Content: clientCert}, File{Path: p(etcdClientKey), Content: clientKey, Private: true})
	} else if err := checkLeaf(ca.Cert, etcdCACert, clientCert, nil, now); err != nil {
		return nil, fmt.Errorf("%s/%s: %v; %s", dir, etcdClientCert, err, fix)
	} else {
		m.Files = append(m.Files, File{Path: p(etcdClientKey), Content: clientKey, Private: true})
	}
	var out []byte
	for i, s := range []struct {
		name      string
		cert, key []byte
	}{{secrets.Member, memberCert, memberKey}, {secrets.Client, clientCert, clientKey}} {
		doc, err := yaml.Marshal(map[string]any{
			"apiVersion": "v1",
			"kind":       "Secret",
			"type":       "kubernetes.io/tls",
			"metadata":   map[string]any{"name": s.name, "namespace": namespace},
			"data":       map[string]any{"tls.crt": s.cert, "tls.key": s.key, "ca.crt": caCert},
		})
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out = append(out, "---\n"...)
		}
		out = append(out, doc...)
	}
	m.Files = append(m.Files, File{Path: p(EtcdSecretsFile), Content: append([]byte("# The etcd members' and the server's etcd client certificates; private: keep them out of version control.\n"), out...), Private: true})
	m.CACert = caCert
	return m, nil
}

// loopbackIPs returns the addresses a member certificate covers besides the members' names.
func loopbackIPs() []net.IP {
	return []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
}
