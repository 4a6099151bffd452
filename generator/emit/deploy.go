package emit

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"path"
	"strings"
	"text/template"
	"time"

	"github.com/aagen-dev/aagen/generator/deploycerts"
	"github.com/aagen-dev/aagen/generator/layout"
	"github.com/aagen-dev/aagen/generator/model"
	"github.com/aagen-dev/aagen/templates"
)

// DeployOptions configure the deploy manifests.
type DeployOptions struct {
	// Dir is the module-relative directory of the manifests (default config/deploy).
	Dir string
	// Namespace the server runs in (default: the server name).
	Namespace string
	// Image of the server (default: <name>:latest).
	Image string
	// EtcdServers, when set, names an external etcd cluster instead of the StatefulSet.
	EtcdServers []string
	// EtcdImage is the image of the etcd StatefulSet.
	EtcdImage string
	// Datastore is where the server keeps its objects: DatastoreEtcd (default; the
	// StatefulSet or EtcdServers) or DatastoreSQL (a database the server reaches through
	// kine, named by the DSN in the Secret DatastoreSecret; no etcd is deployed).
	Datastore string
	// DatastoreSecret names the Secret whose key DatastoreSecretKey holds the DSN
	// (postgres://..., mysql://...) with Datastore sql; default <name>-datastore.
	DatastoreSecret string
	// CertManager lets cert-manager issue the serving certificate and inject the CA.
	CertManager bool
	// GoVersion is the Go version of the Dockerfile's build stage.
	GoVersion string
	// Now is the time certificates are issued at (tests); default time.Now.
	Now func() time.Time `json:"-"`
}

// DefaultEtcdImage is the etcd image of the StatefulSet: the one kubeadm of the Kubernetes
// release aagen pins runs (k8s.io/kubernetes v1.37.2's DefaultEtcdVersion), an etcd v3.7 like
// the go.etcd.io/etcd the server links (TestEtcdImageIsKubeadms).
const DefaultEtcdImage = "registry.k8s.io/etcd:3.7.0-0"

// Datastores of the deploy manifests, and the Secret key that holds the DSN.
const (
	DatastoreEtcd      = "etcd"
	DatastoreSQL       = "sql"
	DatastoreSecretKey = "endpoint"
)

// ServingPort is the port the server listens on in its pod.
const ServingPort = 8443

// EtcdClientCertDir is where the server's pod mounts its etcd client certificate, and
// EtcdMemberCertDir where etcd's pods mount their member certificate.
const (
	EtcdClientCertDir = "/var/run/etcd-client-cert"
	EtcdMemberCertDir = "/var/run/etcd-member-certs"
)

// GeneratedYAMLHeader marks YAML files aagen owns.
const GeneratedYAMLHeader = "# " + GeneratedHeader

// The graceful shutdown of the deployed server: serverShutdownDelay of serving with /readyz
// failing after SIGTERM, long enough for the endpoints controller and kube-proxy to stop
// sending it connections; then the drain of requests in flight, bounded by the 60 s request
// timeout, and of watches (runtime/server's --shutdown-watch-termination-grace-period).
// serverTerminationGracePeriod covers both with a margin, so kubelet's SIGKILL does not cut
// a request short.
const (
	serverShutdownDelay          = "10s"
	serverTerminationGracePeriod = 80
)

type deployData struct {
	Name, Namespace, Image, EtcdImage, CABundle, Dir, GoVersion string
	Port                                                        int
	CertManager                                                 bool
	ServerArgs, DNSNames, Resources                             []string
	EtcdInitialCluster, EtcdService, EtcdMemberSecret           string
	EtcdClientSecret, EtcdMemberCertDir, EtcdClientCertDir      string
	DatastoreSecret, DatastoreSecretKey                         string
	// ShutdownDelay is the server's --shutdown-delay-duration; TerminationGracePeriod the
	// Pod's terminationGracePeriodSeconds, which covers it and the drain after it.
	ShutdownDelay          string
	TerminationGracePeriod int
	Groups                 []deployGroup
	APIServices            []deployAPIService
}

type deployGroup struct {
	Name                     string
	Resources, ReadResources []string
}

type deployAPIService struct {
	Group, Version string
	Priority       int
}

// DeployCerts is the certificate material the deploy manifests carry when cert-manager does
// not issue it (DeployOptions.CertManager unset): the serving CA goes into every
// APIService's caBundle, and the files are written user-owned (created once, then kept).
// generator.Generate makes it with package deploycerts, from DeployCertRequest, in a step
// of its own; Deploy only renders it.
type DeployCerts struct {
	// Serving is the server's serving certificate, its CA and its Secret.
	Serving *deploycerts.Material
	// Etcd is the etcd StatefulSet's certificates and Secrets; nil without the StatefulSet.
	Etcd *deploycerts.Material
}

// CertRequest is the certificate material the deploy manifests of some DeployOptions need.
type CertRequest struct {
	// Dir is the module-relative directory of the material (<deploy dir>/certs).
	Dir string
	// Secret is the serving certificate's Secret, in Namespace; DNSNames are the Service's
	// names the certificate covers.
	Secret, Namespace string
	DNSNames          []string
	// Etcd is set when the manifests deploy the etcd StatefulSet.
	Etcd *EtcdCertRequest
	// Now is the time certificates are issued at.
	Now time.Time
}

// EtcdCertRequest is the certificate material of the etcd StatefulSet.
type EtcdCertRequest struct {
	Secrets deploycerts.EtcdSecrets
	// ClientName names the server's client certificate; DNSNames are the members' names.
	ClientName string
	DNSNames   []string
}

// DeployCertRequest returns the certificate material the deploy manifests of d need for the
// server serverName; nil with cert-manager, which issues it in the cluster.
func DeployCertRequest(serverName string, d DeployOptions) (*CertRequest, error) {
	dp, err := newDeployment(serverName, d)
	if err != nil || dp.d.CertManager {
		return nil, err
	}
	req := &CertRequest{Dir: dp.certDir(), Secret: serverName + "-serving-cert", Namespace: dp.d.Namespace, DNSNames: dp.data.DNSNames, Now: dp.d.Now()}
	if dp.data.EtcdMemberSecret != "" {
		req.Etcd = &EtcdCertRequest{
			Secrets:    deploycerts.EtcdSecrets{Member: dp.data.EtcdMemberSecret, Client: dp.data.EtcdClientSecret},
			ClientName: serverName, DNSNames: dp.etcdDNSNames,
		}
	}
	return req, nil
}

// deployment is what the manifests and their certificates both follow from the options
// alone: the options with their defaults, the template data that does not depend on the
// model, and the etcd members' DNS names (for their certificate).
type deployment struct {
	d            DeployOptions
	sql          bool
	data         deployData
	etcdDNSNames []string
}

func newDeployment(name string, d DeployOptions) (*deployment, error) {
	if d.Dir == "" {
		d.Dir = layout.DeployDir
	}
	if d.Namespace == "" {
		d.Namespace = name
	}
	if d.Image == "" {
		d.Image = name + ":latest"
	}
	if d.EtcdImage == "" {
		d.EtcdImage = DefaultEtcdImage
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	data := deployData{
		Name: name, Namespace: d.Namespace, Image: d.Image, EtcdImage: d.EtcdImage, Dir: d.Dir,
		GoVersion: d.GoVersion, Port: ServingPort, CertManager: d.CertManager,
		EtcdMemberCertDir: EtcdMemberCertDir, EtcdClientCertDir: EtcdClientCertDir,
		DNSNames: []string{
			name + "." + d.Namespace + ".svc",
			name + "." + d.Namespace + ".svc.cluster.local",
			name + "." + d.Namespace,
			name,
		},
	}
	sql, err := d.sqlDatastore(name)
	if err != nil {
		return nil, err
	}
	etcdServers := d.EtcdServers
	// The members' DNS names, for their certificate.
	var etcdDNSNames []string
	if len(etcdServers) == 0 && !sql {
		data.EtcdService = name + "-etcd"
		data.EtcdMemberSecret = name + "-etcd-member-certs"
		data.EtcdClientSecret = name + "-etcd-client-cert"
		var peers []string
		for i := 0; i < 3; i++ {
			member := fmt.Sprintf("%s-etcd-%d", name, i)
			host := fmt.Sprintf("%s.%s.%s.svc", member, data.EtcdService, d.Namespace)
			etcdServers = append(etcdServers, "https://"+host+":2379")
			peers = append(peers, member+"=https://"+host+":2380")
			etcdDNSNames = append(etcdDNSNames, host, host+".cluster.local")
		}
		etcdDNSNames = append(etcdDNSNames,
			fmt.Sprintf("*.%s.%s.svc", data.EtcdService, d.Namespace),
			fmt.Sprintf("*.%s.%s.svc.cluster.local", data.EtcdService, d.Namespace))
		data.EtcdInitialCluster = strings.Join(peers, ",")
	}
	data.ShutdownDelay, data.TerminationGracePeriod = serverShutdownDelay, serverTerminationGracePeriod
	data.ServerArgs = []string{
		fmt.Sprintf("--secure-port=%d", ServingPort),
		"--tls-cert-file=/var/run/serving-cert/tls.crt",
		"--tls-private-key-file=/var/run/serving-cert/tls.key",
		"--shutdown-delay-duration=" + serverShutdownDelay,
	}
	if sql {
		// The DSN holds a password: from the Secret, through the environment.
		data.DatastoreSecret, data.DatastoreSecretKey = d.DatastoreSecret, DatastoreSecretKey
		data.ServerArgs = append(data.ServerArgs, "--datastore-endpoint=$(DATASTORE_ENDPOINT)")
	} else {
		data.ServerArgs = append(data.ServerArgs, "--etcd-servers="+strings.Join(etcdServers, ","))
	}
	if data.EtcdClientSecret != "" {
		// The server presents its client certificate; etcd refuses clients without one.
		data.ServerArgs = append(data.ServerArgs,
			"--etcd-cafile="+EtcdClientCertDir+"/ca.crt",
			"--etcd-certfile="+EtcdClientCertDir+"/tls.crt",
			"--etcd-keyfile="+EtcdClientCertDir+"/tls.key")
	}
	return &deployment{d: d, sql: sql, data: data, etcdDNSNames: etcdDNSNames}, nil
}

// certDir is the module-relative directory of the certificate material.
func (dp *deployment) certDir() string { return path.Join(dp.d.Dir, "certs") }

// Deploy renders the deploy manifests and the Dockerfile, with the certificate material
// certs (see DeployCerts; empty with cert-manager). It reads nothing but its arguments.
func Deploy(m *model.Model, o Options, d DeployOptions, certs DeployCerts) ([]File, error) {
	dp, err := newDeployment(o.ServerName, d)
	if err != nil {
		return nil, err
	}
	d, sql, data := dp.d, dp.sql, dp.data
	for _, g := range m.Groups {
		dg := deployGroup{Name: g.Name}
		i := 0
		for _, v := range g.Versions {
			if !v.Served() {
				continue // unserved: no APIService, kube-apiserver would report it unavailable
			}
			data.APIServices = append(data.APIServices, deployAPIService{Group: g.Name, Version: v.Name, Priority: versionPriority(i)})
			i++
		}
		for _, r := range g.Resources {
			k := r.Hub
			if !r.ReadOnly {
				// A read-only kind (+genclient:readonly) takes no writes: view reads it.
				dg.Resources = append(dg.Resources, k.Plural)
			}
			dg.ReadResources = append(dg.ReadResources, k.Plural)
			if k.HasStatus {
				dg.ReadResources = append(dg.ReadResources, k.Plural+"/status")
			}
			if k.Scale != nil {
				// Like deployments/scale in the built-in roles: edit scales, view reads.
				dg.Resources = append(dg.Resources, k.Plural+"/scale")
				dg.ReadResources = append(dg.ReadResources, k.Plural+"/scale")
			}
			sub, read := subresourceRoles(k)
			dg.Resources = append(dg.Resources, sub...)
			dg.ReadResources = append(dg.ReadResources, read...)
		}
		data.Groups = append(data.Groups, dg)
	}

	var files []File
	if !d.CertManager {
		if certs.Serving == nil || (certs.Etcd == nil) != (data.EtcdMemberSecret == "") {
			return nil, fmt.Errorf("deploy manifests: the certificate material does not match the options (DeployCertRequest says what they need)")
		}
		data.CABundle = base64.StdEncoding.EncodeToString(certs.Serving.CACert)
		for _, f := range certs.Serving.Files {
			files = append(files, File{Path: f.Path, Content: f.Content, Owner: UserOwned, Private: f.Private})
		}
		if certs.Etcd != nil {
			for _, f := range certs.Etcd.Files {
				files = append(files, File{Path: f.Path, Content: f.Content, Owner: UserOwned, Private: f.Private})
			}
		}
	}

	manifests := []string{"namespace", "rbac", "flowcontrol", "apiserver", "apiservices"}
	if len(d.EtcdServers) == 0 && !sql {
		manifests = append(manifests, "etcd")
	}
	if d.CertManager {
		manifests = append(manifests, "certificates")
	}
	for _, t := range manifests {
		out, err := render(t+".yaml.tmpl", data)
		if err != nil {
			return nil, err
		}
		p := "zz_generated." + t + ".yaml"
		data.Resources = append(data.Resources, p)
		files = append(files, File{Path: path.Join(d.Dir, p), Content: withYAMLHeader(out), Owner: Generated})
	}
	if !d.CertManager {
		data.Resources = append(data.Resources, "certs/serving-cert.yaml")
		if data.EtcdMemberSecret != "" {
			data.Resources = append(data.Resources, "certs/"+deploycerts.EtcdSecretsFile)
		}
	}
	kust, err := render("kustomization.yaml.tmpl", data)
	if err != nil {
		return nil, err
	}
	files = append(files, File{Path: path.Join(d.Dir, "kustomization.yaml"), Content: withYAMLHeader(kust), Owner: Generated})
	docker, err := render("Dockerfile.tmpl", data)
	if err != nil {
		return nil, err
	}
	files = append(files, File{Path: "Dockerfile", Content: docker, Owner: UserOwned})
	ignore, err := render("dockerignore.tmpl", data)
	if err != nil {
		return nil, err
	}
	files = append(files, File{Path: ".dockerignore", Content: ignore, Owner: UserOwned})
	return files, nil
}

// versionPriority is the APIService versionPriority of the i-th served version of a group
// (in the group's order, preferred first): 100, 90, ... 20, 10, then 9 down to 1 (it must
// be positive; kube-apiserver orders equal priorities by version name).
func versionPriority(i int) int {
	if i < 10 {
		return 100 - 10*i
	}
	return max(1, 19-i)
}

func withYAMLHeader(b []byte) []byte {
	return append([]byte(GeneratedYAMLHeader+"\n"), b...)
}

func render(name string, data any) ([]byte, error) {
	t, err := template.New(name).Funcs(template.FuncMap{"join": strings.Join}).ParseFS(templates.Deploy, "deploy/"+name)
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	return buf.Bytes(), nil
}

// sqlDatastore reports whether the manifests use a SQL datastore, defaulting its Secret, or
// says what is wrong with the choice.
func (d *DeployOptions) sqlDatastore(name string) (bool, error) {
	switch d.Datastore {
	case "", DatastoreEtcd:
		return false, nil
	case DatastoreSQL:
		if len(d.EtcdServers) > 0 {
			return false, fmt.Errorf("--datastore=%s and --etcd-servers exclude each other: keep one", DatastoreSQL)
		}
		if d.DatastoreSecret == "" {
			d.DatastoreSecret = name + "-datastore"
		}
		return true, nil
	}
	return false, fmt.Errorf("--datastore=%q: want %s (an etcd StatefulSet, or --etcd-servers) or %s (a SQL database through kine, its DSN in a Secret)",
		d.Datastore, DatastoreEtcd, DatastoreSQL)
}
