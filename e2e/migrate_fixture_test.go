package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/aagen-dev/aagen/e2e/cluster"
	"github.com/aagen-dev/aagen/internal/migrate"
)

// migrationFixture is a testdata project's kinds installed as controller-gen v0.23.0's
// CRDs on kube-apiserver v1.37.2 (with kube-controller-manager), and its generated server
// deployed behind it from its config/deploy manifests but without its APIServices (the
// CRDs serve the group), with the migration's user: a ServiceAccount bound to the
// ClusterRole docs/migration.md gives, authenticated and authorized by kube-apiserver for
// the server.
type migrationFixture struct {
	cp      *cluster.ControlPlane
	backend *cluster.Backend
	// dir is the generated project, group its API group.
	dir, group string
	// service is the server's Service (namespace, name) as the manifests' APIService names
	// it, caFile the CA of its serving certificate.
	service map[string]any
	caFile  string
	// serverKubeconfig reaches the server directly as the migration's user; server is its
	// configuration.
	serverKubeconfig string
	server           *rest.Config
}

// migrationProject is a testdata project a migration test moves: its types packages, API
// group, server command, and the kube-controller-manager controllers it needs besides
// the ClusterRole aggregation.
type migrationProject struct {
	testdata, patterns, group, command string
	controllers                        []string
}

// crosspkgMigration is testdata/crosspkg's Crate.
var crosspkgMigration = migrationProject{testdata: "crosspkg", patterns: "./pkg/apis/...", group: depot, command: "crosspkg-apiserver"}

// crateNamespace is where the migration tests keep their crates.
const crateNamespace = "depot"

// newMigrationFixture sets up a migrationFixture of testdata/crosspkg. alter, when not
// nil, changes the CRD before it is installed.
func newMigrationFixture(t testing.TB, ctx context.Context, alter func(crd *apiextensionsv1.CustomResourceDefinition)) *migrationFixture {
	t.Helper()
	return newProjectMigrationFixture(t, ctx, crosspkgMigration, crateNamespace, alter)
}

// newProjectMigrationFixture sets up a migrationFixture of p, with namespace ns (the
// migration's ServiceAccount lives there). alter, when not nil, changes each CRD before
// it is installed.
func newProjectMigrationFixture(t testing.TB, ctx context.Context, p migrationProject, ns string, alter func(crd *apiextensionsv1.CustomResourceDefinition)) *migrationFixture {
	t.Helper()
	f := &migrationFixture{dir: t.TempDir(), group: p.group}
	copyTree(t, filepath.Join(repoRoot(t), "testdata", p.testdata), f.dir, nil)
	crdDir := t.TempDir()
	run(t, f.dir, cluster.ControllerGenBinary(t), "crd", "paths="+p.patterns, "output:crd:dir="+crdDir)
	files, err := filepath.Glob(filepath.Join(crdDir, p.group+"_*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("controller-gen wrote no CRD of %s: %v", p.group, err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	var resources []string
	for _, file := range files {
		crd, err := cluster.ReadCRD(file)
		if err != nil {
			t.Fatal(err)
		}
		if alter != nil {
			alter(crd)
		}
		crds = append(crds, crd)
		resources = append(resources, crd.Spec.Names.Plural)
	}
	// What kube-apiserver would refuse, changed as a user would have to (the CRDs they
	// migrate from are installed).
	for _, note := range cluster.MakeInstallable(crds) {
		t.Logf("installable: %s", note)
	}
	run(t, f.dir, aagen(t), "generate", p.patterns)
	bin := filepath.Join(f.dir, p.command)
	run(t, f.dir, "go", "build", "-o", bin, "./cmd/"+p.command)

	cp, etcdURL := startControlPlane(t, p.controllers...)
	f.cp = cp
	core := kubernetes.NewForConfigOrDie(cp.Admin).CoreV1()
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		cluster.InstallCRD(t, ctx, cp.Admin, crd)
	}

	f.backend = cluster.DeployWithoutAPIServices(t, ctx, cp, f.dir, bin, etcdURL)
	var caBundle []byte
	for _, o := range f.backend.Objects {
		if o.GetKind() == "APIService" && strings.HasSuffix(o.GetName(), "."+p.group) && f.service == nil {
			f.service, _, _ = unstructured.NestedMap(o.Object, "spec", "service")
			ca, _, _ := unstructured.NestedString(o.Object, "spec", "caBundle")
			if caBundle, err = base64.StdEncoding.DecodeString(ca); err != nil {
				t.Fatal(err)
			}
		}
	}
	if f.service == nil {
		t.Fatalf("the deploy manifests have no APIService of %s", p.group)
	}
	rbac := kubernetes.NewForConfigOrDie(cp.Admin).RbacV1()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: p.group + "-migration"}, Rules: []rbacv1.PolicyRule{
		{NonResourceURLs: []string{"/migration/import", "/migration/state", "/storage-versions", "/metrics"}, Verbs: []string{"get", "post", "put"}},
		{APIGroups: []string{p.group}, Resources: resources, Verbs: []string{"get", "list", "create", "update", "delete", "import"}},
	}}
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "migrator"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: p.group + "-migration"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "migrator"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	seconds := int64(24 * 3600)
	tok, err := core.ServiceAccounts(ns).CreateToken(ctx, "migrator", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.serverKubeconfig = filepath.Join(t.TempDir(), "server.kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["server"] = &clientcmdapi.Cluster{Server: fmt.Sprintf("https://127.0.0.1:%d", f.backend.Port), CertificateAuthority: f.backend.CAFile, TLSServerName: f.backend.ServerName}
	kc.AuthInfos["migrator"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["server"] = &clientcmdapi.Context{Cluster: "server", AuthInfo: "migrator"}
	kc.CurrentContext = "server"
	if err := clientcmd.WriteToFile(*kc, f.serverKubeconfig); err != nil {
		t.Fatal(err)
	}
	if f.server, err = clientcmd.BuildConfigFromFlags("", f.serverKubeconfig); err != nil {
		t.Fatal(err)
	}
	f.caFile = filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(f.caFile, caBundle, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// applyOptions are migrate.Apply's options for the fixture.
func (f *migrationFixture) applyOptions(skip ...string) migrate.ApplyOptions {
	ca, _ := os.ReadFile(f.caFile)
	return migrate.ApplyOptions{Cluster: f.cp.Admin, Server: f.server, Group: f.group, Skip: skip,
		ServiceNamespace: f.service["namespace"].(string), ServiceName: f.service["name"].(string), ServicePort: int32(f.backend.Port), CABundle: ca}
}

// crateObject is a Crate of the migration tests.
func crateObject(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": depot + "/v1", "kind": "Crate",
		"metadata": map[string]any{"name": name, "namespace": crateNamespace, "labels": map[string]any{"crate": name}},
		"spec":     map[string]any{"label": map[string]any{"text": "apples"}, "limits": map[string]any{"maxWeight": int64(10)}},
	}}
}

// migrationBenchFixture is shared by BenchmarkMigrate's sizes (a benchmark function with
// sub-benchmarks runs once, so its fixture lives as long as all of them).
var migrationBenchFixture struct {
	sync.Mutex
	crates int
}

// BenchmarkMigrate measures `aagen migrate` apply and then rollback (migrate.Apply,
// migrate.Rollback) of 1,000 and then 10,000 crates, each with labels and a
// server-side-apply manager, every tenth with a finalizer and status: per round trip, how
// long writes were frozen by each (from the freeze taking hold to its lift: the write
// downtime), and the first copy's rate. A round trip leaves the CRD serving, so b.N round
// trips repeat it; run with -benchtime=3x:
//
//	go test -run '^$' -bench BenchmarkMigrate -benchtime=3x -timeout 60m ./e2e
func BenchmarkMigrate(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Minute)
	defer cancel()
	f := newMigrationFixture(b, ctx, nil)
	// The rate limits `aagen migrate` runs with (cmd/aagen's loadKubeconfigs).
	clusterCfg := rest.CopyConfig(f.cp.Admin)
	clusterCfg.QPS, clusterCfg.Burst = 50, 300
	server := rest.CopyConfig(f.server)
	server.QPS, server.Burst = -1, 0
	loader := rest.CopyConfig(f.cp.Admin)
	loader.QPS, loader.Burst = -1, 0 // creating the crates: no client-side limit
	crateClient := dynamic.NewForConfigOrDie(loader).Resource(crates).Namespace(crateNamespace)
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("crates=%d", n), func(b *testing.B) {
			migrationBenchFixture.Lock()
			defer migrationBenchFixture.Unlock()
			start := time.Now()
			if err := createCrates(ctx, crateClient, migrationBenchFixture.crates, n); err != nil {
				b.Fatal(err)
			}
			if migrationBenchFixture.crates < n {
				b.Logf("%d crates created on the CRD in %s", n-migrationBenchFixture.crates, time.Since(start).Round(time.Millisecond))
				migrationBenchFixture.crates = n
			}
			var applyFrozen, rollbackFrozen, copySeconds time.Duration
			copied := 0
			b.ResetTimer()
			for range b.N {
				opts := f.applyOptions()
				opts.Cluster, opts.Server = clusterCfg, server
				res, err := migrate.Apply(ctx, opts)
				if err != nil {
					b.Fatalf("apply: %v", err)
				}
				applyFrozen += res.Frozen
				copySeconds += res.Copy.Elapsed
				copied += res.Copy.Copied["crates."+depot]
				back, err := migrate.Rollback(ctx, migrate.RollbackOptions{Cluster: clusterCfg, Server: server, Group: depot})
				if err != nil {
					b.Fatalf("rollback: %v", err)
				}
				rollbackFrozen += back.Frozen
				b.Logf("apply froze writes %s (copy %s, delta %d of %d), rollback %s (%d updated)", res.Frozen.Round(time.Millisecond),
					res.Copy.Elapsed.Round(time.Millisecond), res.Delta.Copied["crates."+depot], n, back.Frozen.Round(time.Millisecond), len(back.Updated))
			}
			b.ReportMetric(applyFrozen.Seconds()/float64(b.N), "apply-frozen-s/op")
			b.ReportMetric(rollbackFrozen.Seconds()/float64(b.N), "rollback-frozen-s/op")
			b.ReportMetric(float64(copied)/copySeconds.Seconds(), "copied-objects/s")
		})
	}
}

// createCrates creates crates from..to-1 (crate-<i>) with 16 clients: labels, a
// server-side-apply manager, and on every tenth a finalizer and status.
func createCrates(ctx context.Context, client dynamic.ResourceInterface, from, to int) error {
	return inParallel(from, to, func(i int) error {
		name := "crate-" + strconv.Itoa(i)
		obj := crateObject(name)
		if i%10 == 0 {
			obj.SetFinalizers([]string{"depot.example.com/keep"})
		}
		got, err := client.Apply(ctx, name, obj, metav1.ApplyOptions{FieldManager: "shipper"})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s: %w", name, err)
		}
		if i%10 == 0 {
			got.Object["status"] = map[string]any{"packed": true}
			if _, err := client.UpdateStatus(ctx, got, metav1.UpdateOptions{FieldManager: "packer"}); err != nil {
				return fmt.Errorf("the status of %s: %w", name, err)
			}
		}
		return nil
	})
}

// inParallel calls do with from..to-1 from 16 goroutines and returns the first error (the
// numbers not yet handed out are then left).
func inParallel(from, to int, do func(i int) error) error {
	next := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := from; i < to; i++ {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}
