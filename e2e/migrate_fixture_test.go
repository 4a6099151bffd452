package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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

// migrationFixture is testdata/crosspkg's Crate installed as controller-gen v0.23.0's CRD
// on kube-apiserver v1.37.2 (with kube-controller-manager), and its generated server
// deployed behind it from its config/deploy manifests but without its APIServices (the
// CRD serves the group), with the migration's user: a ServiceAccount bound to the
// ClusterRole docs/migration.md gives, authenticated and authorized by kube-apiserver for
// the server.
type migrationFixture struct {
	cp      *cluster.ControlPlane
	backend *cluster.Backend
	// dir is the generated project.
	dir string
	// service is the server's Service (namespace, name) as the manifests' APIService names
	// it, caFile the CA of its serving certificate.
	service map[string]any
	caFile  string
	// serverKubeconfig reaches the server directly as the migration's user; server is its
	// configuration.
	serverKubeconfig string
	server           *rest.Config
}

// crateNamespace is where the migration tests keep their crates.
const crateNamespace = "depot"

// newMigrationFixture sets up a migrationFixture. alter, when not nil, changes the CRD
// before it is installed.
func newMigrationFixture(t testing.TB, ctx context.Context, alter func(crd *apiextensionsv1.CustomResourceDefinition)) *migrationFixture {
	t.Helper()
	f := &migrationFixture{dir: t.TempDir()}
	copyTree(t, filepath.Join(repoRoot(t), "testdata", "crosspkg"), f.dir, nil)
	crdDir := t.TempDir()
	run(t, f.dir, cluster.ControllerGenBinary(t), "crd", "paths=./pkg/apis/...", "output:crd:dir="+crdDir)
	crd, err := cluster.ReadCRD(filepath.Join(crdDir, depot+"_crates.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if alter != nil {
		alter(crd)
	}
	run(t, f.dir, aagen(t), "generate", "./pkg/apis/...")
	bin := filepath.Join(f.dir, "crosspkg-apiserver")
	run(t, f.dir, "go", "build", "-o", bin, "./cmd/crosspkg-apiserver")

	cp, etcdURL := startControlPlane(t, ctx)
	f.cp = cp
	core := kubernetes.NewForConfigOrDie(cp.Admin).CoreV1()
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: crateNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cluster.InstallCRD(t, ctx, cp.Admin, crd)

	f.backend = cluster.DeployWithoutAPIServices(t, ctx, cp, f.dir, bin, etcdURL)
	var caBundle []byte
	for _, o := range f.backend.Objects {
		if o.GetKind() == "APIService" && o.GetName() == "v1."+depot {
			f.service, _, _ = unstructured.NestedMap(o.Object, "spec", "service")
			ca, _, _ := unstructured.NestedString(o.Object, "spec", "caBundle")
			if caBundle, err = base64.StdEncoding.DecodeString(ca); err != nil {
				t.Fatal(err)
			}
		}
	}
	if f.service == nil {
		t.Fatalf("the deploy manifests have no APIService v1.%s", depot)
	}
	rbac := kubernetes.NewForConfigOrDie(cp.Admin).RbacV1()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "depot-migration"}, Rules: []rbacv1.PolicyRule{
		{NonResourceURLs: []string{"/migration/import", "/migration/state", "/storage-versions"}, Verbs: []string{"get", "post", "put"}},
		{APIGroups: []string{depot}, Resources: []string{"crates"}, Verbs: []string{"get", "list", "create", "update", "delete", "import"}},
	}}
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.ServiceAccounts(crateNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "migrator"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "depot-migration"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: crateNamespace, Name: "migrator"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	seconds := int64(24 * 3600)
	tok, err := core.ServiceAccounts(crateNamespace).CreateToken(ctx, "migrator", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
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
	return migrate.ApplyOptions{Cluster: f.cp.Admin, Server: f.server, Group: depot, Skip: skip,
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
	next := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				name := "crate-" + strconv.Itoa(i)
				obj := crateObject(name)
				if i%10 == 0 {
					obj.SetFinalizers([]string{"depot.example.com/keep"})
				}
				got, err := client.Apply(ctx, name, obj, metav1.ApplyOptions{FieldManager: "shipper"})
				if err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- fmt.Errorf("creating %s: %w", name, err)
					return
				}
				if i%10 == 0 {
					got.Object["status"] = map[string]any{"packed": true}
					if _, err := client.UpdateStatus(ctx, got, metav1.UpdateOptions{FieldManager: "packer"}); err != nil {
						errs <- fmt.Errorf("the status of %s: %w", name, err)
						return
					}
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
