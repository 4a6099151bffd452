package localauth

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/aagen-dev/aagen/runtime/atomicfile"
	"github.com/aagen-dev/aagen/runtime/certs"
	"github.com/aagen-dev/aagen/runtime/filelock"
)

const (
	// DefaultUser is the client certificate's common name when Options.User
	// is empty.
	DefaultUser = "aagen-local-admin"
	// DefaultClusterName is the kubeconfig cluster and context name when
	// Options.ClusterName is empty.
	DefaultClusterName = "aagen-local"

	// CAValidity is how long a new CA certificate is valid.
	CAValidity = 10 * 365 * 24 * time.Hour
	// LeafValidity is how long new serving and client certificates are
	// valid (never beyond the CA's expiry).
	LeafValidity = 365 * 24 * time.Hour
	// RenewBefore is the remaining validity below which Ensure replaces a
	// certificate.
	RenewBefore = 24 * time.Hour

	caCertFile      = "ca.crt"
	caKeyFile       = "ca.key"
	servingCertFile = "serving.crt"
	servingKeyFile  = "serving.key"
	clientCertFile  = "admin.crt"
	clientKeyFile   = "admin.key"
	kubeconfigFile  = "kubeconfig"
	lockFile        = ".lock"

	dirMode  fs.FileMode = 0o700
	keyMode  fs.FileMode = 0o600
	certMode fs.FileMode = 0o644
)

// DefaultGroups returns the client certificate's groups used when
// Options.Groups is empty. system:masters is always allowed by
// k8s.io/apiserver's authorizer.
func DefaultGroups() []string { return []string{"system:masters"} }

// Files are the paths of the local-mode credential material inside Dir. All
// paths are absolute.
type Files struct {
	Dir                     string
	CACert, CAKey           string // ca.crt, ca.key
	ServingCert, ServingKey string // serving.crt, serving.key
	ClientCert, ClientKey   string // admin.crt, admin.key
	Kubeconfig              string // kubeconfig

	now func() time.Time // Options.Now, for NewClientCert; nil means time.Now
}

// Options configures Ensure.
type Options struct {
	// Dir holds the credential files. Required. Created with mode 0700 if
	// missing.
	Dir string
	// Hosts are extra DNS names or IP addresses for the serving
	// certificate, besides localhost, 127.0.0.1, ::1 and the host of
	// ServerURL.
	Hosts []string
	// ServerURL is the server's https URL written into the kubeconfig, for
	// example "https://127.0.0.1:8443". Required.
	ServerURL string
	// ClusterName names the kubeconfig cluster and context. Default
	// "aagen-local".
	ClusterName string
	// User is the client certificate's common name (the user name).
	// Default "aagen-local-admin".
	User string
	// Groups are the client certificate's organizations (the user's
	// groups). Default {"system:masters"}.
	Groups []string
	// Now returns the current time; for tests. Default time.Now.
	Now func() time.Time
}

// FilesIn returns the paths Ensure uses for dir, without touching the file
// system. dir is made absolute.
func FilesIn(dir string) (*Files, error) {
	if strings.TrimSpace(dir) == "" {
		return nil, errors.New("localauth: directory is empty: set Options.Dir to the directory that should hold the local credentials")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("localauth: cannot make directory %q absolute: %w", dir, err)
	}
	return &Files{
		Dir:         abs,
		CACert:      filepath.Join(abs, caCertFile),
		CAKey:       filepath.Join(abs, caKeyFile),
		ServingCert: filepath.Join(abs, servingCertFile),
		ServingKey:  filepath.Join(abs, servingKeyFile),
		ClientCert:  filepath.Join(abs, clientCertFile),
		ClientKey:   filepath.Join(abs, clientKeyFile),
		Kubeconfig:  filepath.Join(abs, kubeconfigFile),
	}, nil
}

// Ensure creates the CA, serving and client certificates if missing or
// unusable (damaged, not valid now or expiring within RenewBefore, wrong SANs
// or subject, not signed by the CA in Dir, key not matching) and reuses them
// byte for byte otherwise. Then it writes the kubeconfig, which embeds the CA
// and the client certificate and key, if its content changed.
func Ensure(opts Options) (*Files, error) {
	o, err := opts.complete()
	if err != nil {
		return nil, err
	}
	files, err := FilesIn(opts.Dir)
	if err != nil {
		return nil, err
	}
	files.now = o.now
	if err := prepareDir(files.Dir); err != nil {
		return nil, err
	}
	// Where flock is missing (filelock.Supported) concurrent calls are not serialised;
	// each file is still replaced atomically.
	lock, err := filelock.Acquire(filepath.Join(files.Dir, lockFile))
	if err != nil {
		return nil, fmt.Errorf("localauth: cannot lock %q: %w", files.Dir, err)
	}
	defer lock.Release()

	now := o.now()
	ca, err := ensureCA(files, o.clusterName, now)
	if err != nil {
		return nil, err
	}
	if _, err := ensureLeaf(files.ServingCert, files.ServingKey, ca, o.serving, now); err != nil {
		return nil, err
	}
	client, err := ensureLeaf(files.ClientCert, files.ClientKey, ca, o.client, now)
	if err != nil {
		return nil, err
	}

	kc := clientcmdapi.NewConfig()
	kc.Clusters[o.clusterName] = &clientcmdapi.Cluster{Server: o.serverURL, CertificateAuthorityData: ca.CertPEM}
	kc.AuthInfos[o.client.commonName] = &clientcmdapi.AuthInfo{ClientCertificateData: client.CertPEM, ClientKeyData: client.KeyPEM}
	kc.Contexts[o.clusterName] = &clientcmdapi.Context{Cluster: o.clusterName, AuthInfo: o.client.commonName}
	kc.CurrentContext = o.clusterName
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, fmt.Errorf("localauth: cannot encode kubeconfig: %w", err)
	}
	if err := writeIfChanged(files.Kubeconfig, data, keyMode); err != nil {
		return nil, err
	}
	return files, nil
}

// NewClientCert issues a client certificate for user and groups, signed by
// the CA in files.Dir, valid for LeafValidity. Nothing is written. Use it for
// users other than the local admin, for example one that is not in
// system:masters.
func NewClientCert(files *Files, user string, groups []string) (certPEM, keyPEM []byte, err error) {
	if files == nil {
		return nil, nil, errors.New("localauth: NewClientCert: files is nil: pass the *Files returned by Ensure")
	}
	if strings.TrimSpace(user) == "" {
		return nil, nil, errors.New("localauth: NewClientCert: user is empty: give the user name for the certificate's common name")
	}
	now := time.Now
	if files.now != nil {
		now = files.now
	}
	t := now()
	ca, why, err := loadPair(files.CACert, files.CAKey)
	if err != nil {
		return nil, nil, err
	}
	if why != "" {
		return nil, nil, fmt.Errorf("localauth: no usable CA in %q (%s): run Ensure first", files.Dir, why)
	}
	if why := caProblem(ca, t); why != "" {
		return nil, nil, fmt.Errorf("localauth: CA %q is not usable: %s; run Ensure to replace it", files.CACert, why)
	}
	p, err := issue(ca, leafSpec{commonName: user, orgs: slices.Clone(groups), usage: x509.ExtKeyUsageClientAuth}, t)
	if err != nil {
		return nil, nil, err
	}
	return p.CertPEM, p.KeyPEM, nil
}

// completedOptions is a validated Options with defaults applied.
type completedOptions struct {
	serverURL   string
	clusterName string
	serving     leafSpec
	client      leafSpec
	now         func() time.Time
}

func (opts Options) complete() (completedOptions, error) {
	o := completedOptions{now: opts.Now, clusterName: opts.ClusterName}
	if o.now == nil {
		o.now = time.Now
	}
	if strings.TrimSpace(opts.Dir) == "" {
		return o, errors.New("localauth: Options.Dir is empty: set it to the directory that should hold the local credentials (created if missing)")
	}
	if strings.TrimSpace(o.clusterName) == "" {
		o.clusterName = DefaultClusterName
	}

	if opts.ServerURL == "" {
		return o, errors.New("localauth: Options.ServerURL is empty: set it to the URL the server serves on, for example https://127.0.0.1:8443")
	}
	u, err := url.Parse(opts.ServerURL)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" {
		return o, fmt.Errorf("localauth: Options.ServerURL %q is not an https URL with a host: use the form https://HOST:PORT, for example https://127.0.0.1:8443", opts.ServerURL)
	}
	o.serverURL = opts.ServerURL

	o.serving = leafSpec{
		commonName: "aagen-local-serving",
		dnsNames:   []string{"localhost"},
		ips:        []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
		usage:      x509.ExtKeyUsageServerAuth,
	}
	if err := o.serving.addHost(u.Hostname()); err != nil {
		return o, fmt.Errorf("localauth: Options.ServerURL %q: %w", opts.ServerURL, err)
	}
	for i, h := range opts.Hosts {
		if err := o.serving.addHost(h); err != nil {
			return o, fmt.Errorf("localauth: Options.Hosts[%d]: %w", i, err)
		}
	}

	user := opts.User
	if strings.TrimSpace(user) == "" {
		user = DefaultUser
	}
	groups := slices.Clone(opts.Groups)
	if len(groups) == 0 {
		groups = DefaultGroups()
	}
	for i, g := range groups {
		if strings.TrimSpace(g) == "" {
			return o, fmt.Errorf("localauth: Options.Groups[%d] is empty: remove it or give a group name", i)
		}
	}
	o.client = leafSpec{commonName: user, orgs: groups, usage: x509.ExtKeyUsageClientAuth}
	return o, nil
}

// addHost adds h to the certificate's IP addresses or DNS names, unless it
// is there already.
func (spec *leafSpec) addHost(h string) error {
	if ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")); ip != nil {
		if !slices.ContainsFunc(spec.ips, ip.Equal) {
			spec.ips = append(spec.ips, ip)
		}
		return nil
	}
	name := strings.ToLower(strings.TrimSuffix(h, "."))
	if !isDNSName(name) {
		return fmt.Errorf("%q is neither an IP address nor a DNS name: give a bare host such as \"example.local\" or \"10.0.0.5\", without scheme or port", h)
	}
	if !slices.Contains(spec.dnsNames, name) {
		spec.dnsNames = append(spec.dnsNames, name)
	}
	return nil
}

// isDNSName reports whether h is a plausible DNS name for a certificate SAN:
// lower-case labels of letters, digits and '-', optionally starting with a
// "*." wildcard.
func isDNSName(h string) bool {
	h = strings.TrimPrefix(h, "*.")
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// leafSpec describes a serving or client certificate.
type leafSpec struct {
	commonName string
	orgs       []string
	dnsNames   []string
	ips        []net.IP
	usage      x509.ExtKeyUsage
}

// ensureCA loads the CA from files, or creates a new one if it is missing or
// unusable.
func ensureCA(files *Files, clusterName string, now time.Time) (*certs.Pair, error) {
	ca, why, err := loadPair(files.CACert, files.CAKey)
	if err != nil {
		return nil, err
	}
	if why == "" {
		why = caProblem(ca, now)
	}
	if why == "" {
		return ca, nil
	}
	p, err := certs.NewCA(certs.Spec{CommonName: fmt.Sprintf("%s-ca@%d", clusterName, now.Unix()), Validity: CAValidity, Now: now})
	if err != nil {
		return nil, fmt.Errorf("localauth: cannot create CA certificate: %w", err)
	}
	if err := writePair(files.CACert, files.CAKey, p); err != nil {
		return nil, err
	}
	return p, nil
}

// caProblem says why ca cannot be used at now, or returns "".
func caProblem(ca *certs.Pair, now time.Time) string {
	c := ca.Cert
	switch {
	case !c.IsCA || !c.BasicConstraintsValid || c.KeyUsage&x509.KeyUsageCertSign == 0:
		return "certificate is not a CA"
	case c.CheckSignatureFrom(c) != nil:
		return "certificate is not self-signed"
	}
	return validityProblem(c, now)
}

func validityProblem(c *x509.Certificate, now time.Time) string {
	switch {
	case now.Before(c.NotBefore):
		return fmt.Sprintf("not valid before %s", c.NotBefore.Format(time.RFC3339))
	case c.NotAfter.Sub(now) < RenewBefore:
		return fmt.Sprintf("expires %s", c.NotAfter.Format(time.RFC3339))
	}
	return ""
}

// ensureLeaf loads the certificate in certPath/keyPath, or issues a new one
// from ca if it is missing or does not fit spec.
func ensureLeaf(certPath, keyPath string, ca *certs.Pair, spec leafSpec, now time.Time) (*certs.Pair, error) {
	p, why, err := loadPair(certPath, keyPath)
	if err != nil {
		return nil, err
	}
	if why == "" {
		why = leafProblem(p.Cert, ca.Cert, spec, now)
	}
	if why == "" {
		return p, nil
	}
	p, err = issue(ca, spec, now)
	if err != nil {
		return nil, err
	}
	if err := writePair(certPath, keyPath, p); err != nil {
		return nil, err
	}
	return p, nil
}

// leafProblem says why c does not fit spec, or returns "".
func leafProblem(c, ca *x509.Certificate, spec leafSpec, now time.Time) string {
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := c.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{spec.usage}}); err != nil {
		return fmt.Sprintf("does not verify against the CA: %v", err)
	}
	if why := validityProblem(c, now); why != "" {
		return why
	}
	if c.Subject.CommonName != spec.commonName {
		return fmt.Sprintf("common name is %q, want %q", c.Subject.CommonName, spec.commonName)
	}
	if !sameSet(c.Subject.Organization, spec.orgs) {
		return fmt.Sprintf("organizations are %q, want %q", c.Subject.Organization, spec.orgs)
	}
	for _, name := range spec.dnsNames {
		if !slices.Contains(c.DNSNames, name) {
			return fmt.Sprintf("lacks DNS name %q", name)
		}
	}
	for _, ip := range spec.ips {
		if !slices.ContainsFunc(c.IPAddresses, ip.Equal) {
			return fmt.Sprintf("lacks IP address %s", ip)
		}
	}
	return ""
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// issue creates a new key and a certificate for spec signed by ca.
func issue(ca *certs.Pair, spec leafSpec, now time.Time) (*certs.Pair, error) {
	p, err := ca.Issue(certs.Spec{
		CommonName:    spec.commonName,
		Organizations: spec.orgs,
		DNSNames:      spec.dnsNames,
		IPs:           spec.ips,
		Usages:        []x509.ExtKeyUsage{spec.usage},
		Validity:      LeafValidity,
		Now:           now,
	})
	if err != nil {
		return nil, fmt.Errorf("localauth: cannot create certificate for %q: %w", spec.commonName, err)
	}
	return p, nil
}

// loadPair reads and parses a certificate and its key. Missing or damaged
// files are not an error: it returns why the pair cannot be used. Files that
// exist but cannot be read are an error, so that Ensure never replaces what
// it could not look at.
func loadPair(certPath, keyPath string) (p *certs.Pair, why string, err error) {
	certPEM, err := os.ReadFile(certPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "missing " + filepath.Base(certPath), nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("localauth: cannot read %q: %w; fix its permissions or remove it to have it recreated", certPath, err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "missing " + filepath.Base(keyPath), nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("localauth: cannot read %q: %w; fix its permissions or remove it to have it recreated", keyPath, err)
	}
	p, err = certs.Parse(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Sprintf("%s, %s: %v", filepath.Base(certPath), filepath.Base(keyPath), err), nil
	}
	if err := tightenMode(keyPath, keyMode); err != nil {
		return nil, "", err
	}
	return p, "", nil
}

// writePair writes the key first, then the certificate, so that a crash in
// between leaves a mismatching pair, which the next Ensure replaces.
func writePair(certPath, keyPath string, p *certs.Pair) error {
	if err := writeAtomic(keyPath, p.KeyPEM, keyMode); err != nil {
		return err
	}
	return writeAtomic(certPath, p.CertPEM, certMode)
}

// prepareDir creates dir with mode 0700, or restricts an existing one to it.
func prepareDir(dir string) error {
	if err := atomicfile.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("localauth: cannot create directory %q: %w; set Options.Dir to a directory this process can write", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("localauth: cannot use directory %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("localauth: %q exists but is not a directory; set Options.Dir to a directory", dir)
	}
	return tightenMode(dir, dirMode)
}

// tightenMode removes group and other permissions from path if it has any.
func tightenMode(path string, mode fs.FileMode) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("localauth: %w", err)
	}
	if fi.Mode().Perm()&0o077 == 0 {
		return nil
	}
	if err := os.Chmod(path, mode|(fi.Mode().Perm()&0o700)); err != nil {
		return fmt.Errorf("localauth: %q is accessible to other users and cannot be restricted: %w", path, err)
	}
	return nil
}

// writeIfChanged writes data to path unless path already holds exactly data.
func writeIfChanged(path string, data []byte, mode fs.FileMode) error {
	old, err := os.ReadFile(path)
	if err == nil && bytes.Equal(old, data) {
		return tightenMode(path, mode)
	}
	return writeAtomic(path, data, mode)
}

// writeAtomic replaces path with data atomically and durably.
func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	if err := atomicfile.WriteFile(path, data, mode); err != nil {
		return fmt.Errorf("localauth: cannot write %q: %w", path, err)
	}
	return nil
}
