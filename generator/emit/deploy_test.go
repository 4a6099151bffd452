package emit

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/aagen-dev/aagen/generator/deploycerts"
	"github.com/aagen-dev/aagen/generator/model"
)

func deployModel(t *testing.T) *model.Model {
	g := &model.Group{Name: "shop.example.com", PackageName: "shop"}
	v1 := &model.Version{Group: g, Name: "v1", ImportPath: "example.com/shop/pkg/apis/shop/v1"}
	v1beta1 := &model.Version{Group: g, Name: "v1beta1", ImportPath: "example.com/shop/pkg/apis/shop/v1beta1"}
	v1.Kinds = []*model.Kind{{Version: v1, Name: "Widget", Plural: "widgets", HasStatus: true, NamespaceScoped: true}}
	v1beta1.Kinds = []*model.Kind{{Version: v1beta1, Name: "Gadget", Plural: "gadgets"}}
	g.Versions = []*model.Version{v1, v1beta1}
	for _, k := range []*model.Kind{v1beta1.Kinds[0], v1.Kinds[0]} { // by kind name, as model.Build orders them
		k.Hub = true
		k.Resource = &model.Resource{Group: g, Kind: k.Name, Versions: []*model.Kind{k}, Hub: k}
		g.Resources = append(g.Resources, k.Resource)
	}
	return &model.Model{ModuleDir: t.TempDir(), ModulePath: "example.com/shop", Groups: []*model.Group{g}}
}

// deploy renders the manifests of deployModel for d with the certificate material
// generator.Generate's deploy-certs step would make (package deploycerts, as
// DeployCertRequest asks, in the model's module).
func deploy(t *testing.T, d DeployOptions) ([]File, error) {
	t.Helper()
	return deployOf(t, deployModel(t), d)
}

// deployOf renders the manifests of m for d, as deploy does.
func deployOf(t *testing.T, m *model.Model, d DeployOptions) ([]File, error) {
	t.Helper()
	o := Options{ServerName: "shop-apiserver"}
	req, err := DeployCertRequest(o.ServerName, d)
	if err != nil {
		return nil, err
	}
	var certs DeployCerts
	if req != nil {
		if certs.Serving, err = deploycerts.Ensure(m.ModuleDir, req.Dir, req.Secret, req.Namespace, req.DNSNames, req.Now); err != nil {
			t.Fatal(err)
		}
		if e := req.Etcd; e != nil {
			if certs.Etcd, err = deploycerts.EnsureEtcd(m.ModuleDir, req.Dir, e.Secrets, req.Namespace, e.ClientName, e.DNSNames, req.Now); err != nil {
				t.Fatal(err)
			}
		}
	}
	return Deploy(m, o, d, certs)
}

func files(t *testing.T, fs []File) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range fs {
		out[f.Path] = string(f.Content)
		if strings.HasSuffix(f.Path, ".yaml") {
			for _, doc := range strings.Split(string(f.Content), "\n---\n") {
				var obj map[string]any
				if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
					t.Errorf("%s is not valid YAML: %v", f.Path, err)
				}
			}
		}
	}
	return out
}

func TestDeployDefault(t *testing.T) {
	fs, err := deploy(t, DeployOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := files(t, fs)
	ca := got["config/deploy/certs/ca.crt"]
	if ca == "" {
		t.Fatal("no CA created")
	}
	apis := got["config/deploy/zz_generated.apiservices.yaml"]
	for _, want := range []string{"name: v1.shop.example.com", "name: v1beta1.shop.example.com", "versionPriority: 100", "versionPriority: 90",
		"caBundle: " + base64.StdEncoding.EncodeToString([]byte(ca))} {
		if !strings.Contains(apis, want) {
			t.Errorf("apiservices lack %q:\n%s", want, apis)
		}
	}
	if strings.Contains(apis, "insecureSkipTLSVerify") {
		t.Error("insecureSkipTLSVerify must never be used")
	}
	dep := got["config/deploy/zz_generated.apiserver.yaml"]
	if !strings.Contains(dep, "--etcd-servers=https://shop-apiserver-etcd-0.shop-apiserver-etcd.shop-apiserver.svc:2379,") ||
		!strings.Contains(dep, "--etcd-certfile="+EtcdClientCertDir+"/tls.crt") || !strings.Contains(dep, "secretName: shop-apiserver-etcd-client-cert") ||
		!strings.Contains(dep, "runAsNonRoot: true") || !strings.Contains(dep, "readOnlyRootFilesystem: true") {
		t.Errorf("deployment:\n%s", dep)
	}
	rbac := got["config/deploy/zz_generated.rbac.yaml"]
	for _, want := range []string{"resources: [gadgets, widgets]", "resources: [gadgets, widgets, widgets/status]", "aggregate-to-view", "extension-apiserver-authentication-reader", "system:auth-delegator"} {
		if !strings.Contains(rbac, want) {
			t.Errorf("rbac lacks %q", want)
		}
	}
	if _, ok := got["config/deploy/zz_generated.etcd.yaml"]; !ok {
		t.Error("no etcd StatefulSet by default")
	}
	if !strings.Contains(got["config/deploy/kustomization.yaml"], "- certs/serving-cert.yaml") {
		t.Error("kustomization does not include the serving certificate")
	}
	if !strings.Contains(got["config/deploy/kustomization.yaml"], "- certs/etcd-certs.yaml") || got["config/deploy/certs/etcd-ca.crt"] == "" {
		t.Error("no etcd certificates, or the kustomization does not include them")
	}
	if etcd := got["config/deploy/zz_generated.etcd.yaml"]; strings.Contains(etcd, "http://0.0.0.0:2379") || !strings.Contains(etcd, "--client-cert-auth=true") ||
		!strings.Contains(etcd, "--peer-client-cert-auth=true") || !strings.Contains(etcd, "kind: NetworkPolicy") {
		t.Errorf("etcd StatefulSet without client and peer mTLS, or without its NetworkPolicy:\n%s", etcd)
	}
	if ignore := got[".dockerignore"]; !strings.Contains(ignore, "config/deploy/certs/") || !strings.Contains(ignore, ".aagen/") {
		t.Errorf(".dockerignore does not keep the keys and local state out of the build context:\n%s", ignore)
	}
	if !strings.Contains(got["Dockerfile"], "USER 65532:65532") || !strings.Contains(got["Dockerfile"], "CGO_ENABLED=0") ||
		strings.Count("\n"+got["Dockerfile"], "\nFROM ") != 2 ||
		!strings.Contains(got["Dockerfile"], "FROM golang:") || !strings.Contains(got["Dockerfile"], "FROM gcr.io/distroless/static") {
		t.Errorf("Dockerfile: want two stages (a golang build, a distroless static image), non-root, no cgo:\n%s", got["Dockerfile"])
	}
	// README's list of what the Deployment and the etcd StatefulSet carry.
	for _, want := range []string{"replicas: 2", "path: /livez", "path: /readyz", "scheme: HTTPS", "topologySpreadConstraints:", "requests:", "limits:",
		"kind: PodDisruptionBudget", "kind: Service\n"} {
		if !strings.Contains(dep, want) {
			t.Errorf("the server's Deployment manifests lack %q", want)
		}
	}
	for _, want := range []string{"kind: StatefulSet", "replicas: 3", "volumeClaimTemplates:", "clusterIP: None", "kind: PodDisruptionBudget"} {
		if !strings.Contains(got["config/deploy/zz_generated.etcd.yaml"], want) {
			t.Errorf("the etcd manifests lack %q", want)
		}
	}
}

// TestDeployFlowSchema checks the FlowSchema that gives the server's delegated
// TokenReviews and SubjectAccessReviews workload-high (e2e TestAggregation checks that
// kube-apiserver classifies them by it).
func TestDeployFlowSchema(t *testing.T) {
	fs, err := deploy(t, DeployOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := files(t, fs)
	if !strings.Contains(got["config/deploy/kustomization.yaml"], "- zz_generated.flowcontrol.yaml") {
		t.Error("the kustomization does not include the FlowSchema")
	}
	var schema struct {
		Kind     string
		Metadata struct{ Name string }
		Spec     struct {
			PriorityLevelConfiguration struct{ Name string } `json:"priorityLevelConfiguration"`
			MatchingPrecedence         int                   `json:"matchingPrecedence"`
			Rules                      []struct {
				Subjects []struct {
					Kind           string
					ServiceAccount struct{ Name, Namespace string } `json:"serviceAccount"`
				}
				ResourceRules []struct {
					Verbs, APIGroups, Resources []string
				} `json:"resourceRules"`
			}
		}
	}
	if err := yaml.Unmarshal([]byte(got["config/deploy/zz_generated.flowcontrol.yaml"]), &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Kind != "FlowSchema" || schema.Metadata.Name != "shop-apiserver-delegated-auth" || schema.Spec.PriorityLevelConfiguration.Name != "workload-high" ||
		schema.Spec.MatchingPrecedence >= 900 || len(schema.Spec.Rules) != 1 {
		t.Fatalf("FlowSchema: %+v", schema)
	}
	r := schema.Spec.Rules[0]
	if len(r.Subjects) != 1 || r.Subjects[0].Kind != "ServiceAccount" || r.Subjects[0].ServiceAccount.Name != "shop-apiserver" || r.Subjects[0].ServiceAccount.Namespace != "shop-apiserver" {
		t.Errorf("FlowSchema subjects: %+v, want the server's ServiceAccount", r.Subjects)
	}
	var resources []string
	for _, rr := range r.ResourceRules {
		if !slices.Equal(rr.Verbs, []string{"create"}) {
			t.Errorf("FlowSchema verbs %v, want create only", rr.Verbs)
		}
		resources = append(resources, rr.APIGroups[0]+"/"+rr.Resources[0])
	}
	if want := []string{"authentication.k8s.io/tokenreviews", "authorization.k8s.io/subjectaccessreviews"}; !slices.Equal(resources, want) {
		t.Errorf("FlowSchema resources %v, want %v", resources, want)
	}
}

func TestDeployCertManagerExternalEtcd(t *testing.T) {
	fs, err := deploy(t, DeployOptions{CertManager: true, EtcdServers: []string{"https://etcd-a:2379", "https://etcd-b:2379"}, Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	got := files(t, fs)
	if _, ok := got["config/deploy/certs/ca.crt"]; ok {
		t.Error("local certificates created with --cert-manager")
	}
	if _, ok := got["config/deploy/zz_generated.etcd.yaml"]; ok {
		t.Error("etcd StatefulSet emitted with external etcd")
	}
	apis := got["config/deploy/zz_generated.apiservices.yaml"]
	if !strings.Contains(apis, "cert-manager.io/inject-ca-from: shop/shop-apiserver-serving-cert") || strings.Contains(apis, "caBundle") {
		t.Errorf("apiservices:\n%s", apis)
	}
	if !strings.Contains(got["config/deploy/zz_generated.certificates.yaml"], "- shop-apiserver.shop.svc") {
		t.Error("certificate lacks the service DNS name")
	}
	if !strings.Contains(got["config/deploy/zz_generated.apiserver.yaml"], "--etcd-servers=https://etcd-a:2379,https://etcd-b:2379") {
		t.Error("deployment does not use the external etcd")
	}
}

// TestVersionPriority checks that APIService version priorities stay positive and
// descending however many versions a group serves.
func TestVersionPriority(t *testing.T) {
	prev := 101
	for i := range 25 {
		p := versionPriority(i)
		if p < 1 || p > prev {
			t.Fatalf("version %d: priority %d after %d", i, p, prev)
		}
		if i < 19 && p == prev {
			t.Errorf("version %d: priority %d equals the previous one", i, p)
		}
		prev = p
	}
}

// TestDeployCertManagerEtcd checks that with cert-manager and the etcd StatefulSet,
// cert-manager issues the etcd certificates from a CA of their own and none are written
// locally.
func TestDeployCertManagerEtcd(t *testing.T) {
	fs, err := deploy(t, DeployOptions{CertManager: true, Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	got := files(t, fs)
	if _, ok := got["config/deploy/certs/etcd-ca.crt"]; ok {
		t.Error("local etcd certificates created with --cert-manager")
	}
	certs := got["config/deploy/zz_generated.certificates.yaml"]
	for _, want := range []string{"secretName: shop-apiserver-etcd-member-certs", "secretName: shop-apiserver-etcd-client-cert",
		`"*.shop-apiserver-etcd.shop.svc"`, "name: shop-apiserver-etcd-ca", "client auth]"} {
		if !strings.Contains(certs, want) {
			t.Errorf("certificates lack %q:\n%s", want, certs)
		}
	}
	if strings.Contains(got["config/deploy/kustomization.yaml"], "etcd-certs.yaml") {
		t.Error("kustomization lists local etcd certificates with --cert-manager")
	}
}

// TestDeployRendersCerts checks that Deploy renders the certificate material it is given,
// creating none itself, and refuses material that does not match the options.
func TestDeployRendersCerts(t *testing.T) {
	m, o := deployModel(t), Options{ServerName: "shop-apiserver"}
	req, err := DeployCertRequest(o.ServerName, DeployOptions{Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if req.Dir != "config/deploy/certs" || req.Secret != "shop-apiserver-serving-cert" || req.Namespace != "shop" ||
		!slices.Contains(req.DNSNames, "shop-apiserver.shop.svc") || req.Etcd == nil || req.Etcd.Secrets.Member != "shop-apiserver-etcd-member-certs" ||
		req.Etcd.ClientName != "shop-apiserver" || !slices.Contains(req.Etcd.DNSNames, "*.shop-apiserver-etcd.shop.svc") {
		t.Errorf("request %+v, etcd %+v", req, req.Etcd)
	}
	if req, err := DeployCertRequest(o.ServerName, DeployOptions{CertManager: true}); req != nil || err != nil {
		t.Errorf("with cert-manager: request %+v, %v; want none", req, err)
	}
	if req, err := DeployCertRequest(o.ServerName, DeployOptions{EtcdServers: []string{"https://etcd:2379"}}); err != nil || req == nil || req.Etcd != nil {
		t.Errorf("with external etcd: request %+v, %v; want the serving certificate only", req, err)
	}

	certs := DeployCerts{
		Serving: &deploycerts.Material{CACert: []byte("the CA"), Files: []deploycerts.File{{Path: "config/deploy/certs/serving-cert.yaml", Content: []byte("secret")}}},
		Etcd:    &deploycerts.Material{Files: []deploycerts.File{{Path: "config/deploy/certs/etcd-certs.yaml", Content: []byte("secrets")}}},
	}
	fs, err := Deploy(m, o, DeployOptions{Namespace: "shop"}, certs)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]File{}
	for _, f := range fs {
		got[f.Path] = f
	}
	if f := got["config/deploy/certs/serving-cert.yaml"]; string(f.Content) != "secret" || f.Owner != UserOwned {
		t.Errorf("serving material rendered as %+v", f)
	}
	if f := got["config/deploy/certs/etcd-certs.yaml"]; string(f.Content) != "secrets" || f.Owner != UserOwned {
		t.Errorf("etcd material rendered as %+v", f)
	}
	if _, ok := got["config/deploy/certs/ca.crt"]; ok {
		t.Error("Deploy created a CA of its own")
	}
	if apis := string(got["config/deploy/zz_generated.apiservices.yaml"].Content); !strings.Contains(apis, "caBundle: "+base64.StdEncoding.EncodeToString([]byte("the CA"))) {
		t.Errorf("apiservices do not carry the given CA:\n%s", apis)
	}
	for _, bad := range []DeployCerts{{}, {Serving: certs.Serving}} {
		if _, err := Deploy(m, o, DeployOptions{}, bad); err == nil {
			t.Errorf("Deploy with %+v: no error; want one (the etcd StatefulSet needs both)", bad)
		}
	}
}

// TestDeployReadOnlyRoles: a read-only resource (+genclient:readonly) is in the view role
// only: the edit role grants no writes it could not take; a group whose resources are all
// read-only has no edit rule.
func TestDeployReadOnlyRoles(t *testing.T) {
	m := deployModel(t)
	g := m.Groups[0]
	g.Resources[0].ReadOnly = true // gadgets
	rbac := func() string {
		t.Helper()
		fs, err := deployOf(t, m, DeployOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return files(t, fs)["config/deploy/zz_generated.rbac.yaml"]
	}
	got := rbac()
	if !strings.Contains(got, "resources: [widgets]\n  verbs: [create,") || !strings.Contains(got, "resources: [gadgets, widgets, widgets/status]\n  verbs: [get, list, watch]") {
		t.Errorf("edit must have widgets only, view both:\n%s", got)
	}
	g.Resources[1].ReadOnly = true // widgets
	if got := rbac(); strings.Contains(got, "verbs: [create,") {
		t.Errorf("no resource takes writes, yet the edit role grants them:\n%s", got)
	}
}
