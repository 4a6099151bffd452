package e2e

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// serverImage is the name the node test gives the server image in its kustomize overlay:
// the manifests' own tag is :latest, which kubelet always pulls (imagePullPolicy Always), and
// no registry is reachable here.
const serverImage = "localhost/aagen-e2e/marina-apiserver:e2e"

// TestNodeDeploysServer deploys the example, generated with `--datastore=sql` (the server
// on PostgreSQL through kine, 2 replicas, no cert-manager), on the single-node cluster of
// cluster.StartNode, as a user would: the image built from the Dockerfile's own go build line
// and imported into containerd, `kubectl apply -k` of an overlay that changes only the image
// name, and the datastore Secret made with `kubectl create secret` as docs/storage.md says,
// with PostgreSQL on this host reached by the host's address. Both server Pods go Ready,
// the APIService goes Available through the Service and kube-proxy, kubectl and client-go
// use the API through kube-apiserver, and the server authorizes (SubjectAccessReview) and
// authenticates (TokenReview) with its Pod's ServiceAccount.
func TestNodeDeploysServer(t *testing.T) {
	skipShort(t)
	runsToolsAlone(t)
	dir := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata/example"), dir, nil)
	run(t, dir, aagen(t), "generate", "--datastore=sql", "./pkg/apis/...")

	bin := serverBinaryLikeDockerfile(t, dir)

	cp, _ := startControlPlane(t)
	node := cluster.StartNode(t, cp)
	kube := kubernetes.NewForConfigOrDie(cp.Admin)
	dyn := dynamic.NewForConfigOrDie(cp.Admin)
	pg := cluster.StartPostgres(t, node.ClusterCIDR)
	node.Import(t, serverImage, bin)
	// The deadline starts once the node is up: on a cold cache, building its binaries and
	// the server takes many minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	objs := cluster.LoadKustomization(t, filepath.Join(dir, "config/deploy"))
	deployment, sts, apiservices := deployObjects(t, objs)
	if sts != nil {
		t.Fatalf("--datastore=sql emitted a StatefulSet %s", sts.Name)
	}
	if deployment == nil || len(apiservices) == 0 {
		t.Fatal("the manifests have no Deployment or no APIService")
	}
	ns, sa := deployment.Namespace, deployment.Spec.Template.Spec.ServiceAccountName
	if r := deployment.Spec.Replicas; r == nil || *r != 2 {
		t.Fatalf("the Deployment has %v replicas, want 2", r)
	}
	manifestImage := deployment.Spec.Template.Spec.Containers[0].Image
	overlay := writeImageOverlay(t, dir, map[string]string{manifestImage: serverImage})
	if out, err := kubectl(t, cp.Kubeconfig, "", "apply", "-k", overlay); err != nil {
		t.Fatalf("kubectl apply -k (the manifests, image %s renamed %s): %v\n%s", manifestImage, serverImage, err, out)
	}
	// The datastore Secret, as docs/storage.md has the user create it; the DSN names
	// PostgreSQL by this host's address, which Pods reach through their bridge.
	secretName, secretKey := datastoreSecret(t, deployment)
	dsn := pg.DSNAt(cp.AdvertiseAddress, "marina")
	if out, err := kubectl(t, cp.Kubeconfig, "", "-n", ns, "create", "secret", "generic", secretName, "--from-literal="+secretKey+"="+dsn); err != nil {
		t.Fatalf("kubectl create secret: %v\n%s", err, out)
	}

	// Both replicas Ready: the startup, liveness and readiness probes of the manifests pass
	// in the manifests' security context (non-root, read-only root filesystem).
	selector := metav1.FormatLabelSelector(deployment.Spec.Selector)
	pods := waitPodsReady(t, ctx, kube, ns, selector, 2, 6*time.Minute, "the server's Pods")
	for _, p := range pods.Items {
		restarts := int32(0)
		for _, c := range p.Status.ContainerStatuses {
			restarts += c.RestartCount
			// Both replicas start together on an empty database: neither may fail
			// (kine's schema setup raced before runtime/datastore retried it).
			if last := c.LastTerminationState.Terminated; c.RestartCount > 0 {
				t.Errorf("Pod %s/%s container %s restarted %d times; last exit %+v; its log before:\n%s", ns, p.Name, c.Name, c.RestartCount, last, previousLog(&p, c.Name))
			}
		}
		t.Logf("Pod %s/%s Ready on %s at %s (image %s, service account %s, %d restarts)", ns, p.Name, p.Spec.NodeName, p.Status.PodIP,
			p.Spec.Containers[0].Image, p.Spec.ServiceAccountName, restarts)
		if p.Spec.ServiceAccountName != sa {
			t.Errorf("Pod %s runs as service account %q, want %q", p.Name, p.Spec.ServiceAccountName, sa)
		}
		// What made it Ready is the manifests' own: probes, non-root, read-only root
		// filesystem, no capabilities (the overlay changes the image name only).
		c := p.Spec.Containers[0]
		sc, psc := c.SecurityContext, p.Spec.SecurityContext
		if c.StartupProbe == nil || c.LivenessProbe == nil || c.ReadinessProbe == nil || sc == nil || psc == nil ||
			sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot ||
			sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
			t.Errorf("Pod %s lacks the manifests' probes or security context: %+v, pod %+v", p.Name, c, psc)
		}
		// The Go runtime's soft memory limit follows the container's, which kubelet set
		// from the manifests' limit (runtime/server's softMemoryLimit, on cgroup v1 here).
		limit := c.Resources.Limits.Memory().Value()
		want := fmt.Sprintf("soft memory limit %d MiB (GOMEMLIMIT): 90%% of the container's memory limit of %d MiB", (limit/100*90)>>20, limit>>20)
		if log := podLog(&p, c.Name); !strings.Contains(log, want) {
			t.Errorf("Pod %s does not log %q:\n%s", p.Name, want, cluster.Tail(log, 3000))
		} else {
			t.Logf("Pod %s: %s", p.Name, want)
		}
	}

	// Every APIService Available: kube-apiserver reaches the Pods through the Service's
	// cluster IP (kube-proxy) and verifies their serving certificate against caBundle.
	waitAPIServicesAvailable(t, ctx, dyn, apiservices, pods)
	svc, err := kube.CoreV1().Services(ns).Get(ctx, deployment.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Service %s/%s at %s", ns, svc.Name, svc.Spec.ClusterIP)

	// kubectl and client-go through kube-apiserver; the objects are in PostgreSQL.
	sample := filepath.Join(dir, "config/samples/boat.yaml")
	if out, err := kubectl(t, cp.Kubeconfig, "", "apply", "-f", sample); err != nil {
		t.Fatalf("kubectl apply -f %s: %v\n%s", sample, err, out)
	}
	if out, err := kubectl(t, cp.Kubeconfig, "", "get", "boats", "-n", "default", "-o", "name"); err != nil || strings.TrimSpace(out) != "boat.marina.example.com/aurora" {
		t.Errorf("kubectl get boats: %v\n%s", err, out)
	}
	boats := schema.GroupVersionResource{Group: "marina.example.com", Version: "v1alpha1", Resource: "boats"}
	if _, err := dyn.Resource(boats).Namespace("default").Create(ctx, boat("borealis", map[string]any{"rig": "ketch"}, 9), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create through kube-apiserver: %v", err)
	}
	if got, err := dyn.Resource(boats).Namespace("default").Get(ctx, "aurora", metav1.GetOptions{}); err != nil || got.GetName() != "aurora" {
		t.Errorf("get the Boat kubectl created: %v", err)
	}
	if list, err := dyn.Resource(boats).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 2 {
		t.Errorf("list Boats: %v, %d items, want 2", err, itemCount(list))
	} else {
		t.Logf("kubectl and client-go created, got and listed Boats through kube-apiserver and the Service")
	}

	// Delegated authorization is the Pod's ServiceAccount's: a user kube-apiserver lets
	// list Boats (bound to view, which the API's ClusterRole aggregates into) is refused
	// by the server while that ServiceAccount may not create SubjectAccessReviews, and
	// let in once it may again.
	waitAggregated(t, ctx, kube, "view", "marina.example.com")
	delegator := findObject(t, objs, "ClusterRoleBinding", "system:auth-delegator")
	listAs := func(user string) error {
		bind(t, ctx, kube, "default", user, "view")
		_, err := dynamic.NewForConfigOrDie(cp.PKI.User(t, cp.Admin, user)).Resource(boats).Namespace("default").List(ctx, metav1.ListOptions{})
		return err
	}
	if err := listAs("victor"); err != nil {
		t.Fatalf("a user bound to view lists Boats: %v", err)
	}
	if err := kube.RbacV1().ClusterRoleBindings().Delete(ctx, delegator.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// RBAC's authorizer cache in kube-apiserver follows the deletion within moments; each
	// attempt is a new user, so no decision the server cached answers it.
	var refused error
	for i := 0; i < 30 && refused == nil; i++ {
		refused = listAs(fmt.Sprintf("walter-%d", i))
		if refused == nil {
			time.Sleep(time.Second)
		}
	}
	if refused == nil {
		t.Fatalf("the server still authorized users 30 s after its ServiceAccount %s/%s lost system:auth-delegator", ns, sa)
	}
	t.Logf("without system:auth-delegator for %s/%s the server refuses a user kube-apiserver lets in: %v", ns, sa, refused)
	if out, err := kubectl(t, cp.Kubeconfig, "", "apply", "-k", overlay); err != nil {
		t.Fatalf("kubectl apply -k again: %v\n%s", err, out)
	}
	var again error
	for i := 0; i < 30; i++ {
		if again = listAs(fmt.Sprintf("wendy-%d", i)); again == nil {
			break
		}
		time.Sleep(time.Second)
	}
	if again != nil {
		t.Fatalf("the binding restored, the server still refuses: %v", again)
	}

	// Delegated authentication: a ServiceAccount token sent to a server Pod directly is
	// authenticated by the server's TokenReview, made with its own ServiceAccount.
	if _, err := kube.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bindServiceAccount(t, ctx, kube, "default", "reader", "view")
	tok, err := kube.CoreV1().ServiceAccounts("default").CreateToken(ctx, "reader", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	direct := &rest.Config{
		Host:            fmt.Sprintf("https://%s:%d", pods.Items[0].Status.PodIP, deployment.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort),
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(dir, "config/deploy/certs/ca.crt"), ServerName: svc.Name + "." + ns + ".svc"},
	}
	anon := rest.CopyConfig(direct)
	if _, err := dynamic.NewForConfigOrDie(anon).Resource(boats).Namespace("default").List(ctx, metav1.ListOptions{}); err == nil {
		t.Errorf("the server Pod %s let an anonymous request list Boats", direct.Host)
	}
	direct.BearerToken = tok.Status.Token
	if list, err := dynamic.NewForConfigOrDie(direct).Resource(boats).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 2 {
		t.Fatalf("the ServiceAccount default/reader's token at the server Pod %s: %v (%d items)", direct.Host, err, itemCount(list))
	}
	t.Logf("the server Pod at %s authenticated a ServiceAccount token (TokenReview) and authorized it (SubjectAccessReview) as %s/%s", direct.Host, ns, sa)

	// Operating it: a rolling update and a killed Pod under load.
	operateDeployedServer(t, ctx, cp.Kubeconfig, kube, dyn, ns, deployment.Name, selector, boats, apiservices)
	// One replica down, then all, then back (deploy_outage_test.go).
	outageOfDeployedServer(t, ctx, cp.Kubeconfig, kube, dyn, ns, deployment.Name, selector, boats, apiservices)
}

// serverBinaryLikeDockerfile builds the server of the generated project in dir the way its
// Dockerfile's build stage does, checks the binary carries the Dockerfile's settings and is
// static (no program interpreter: it runs in an image of that one file), and returns it.
func serverBinaryLikeDockerfile(t *testing.T, dir string) string {
	t.Helper()
	build := cluster.ParseDockerfileBuild(t, filepath.Join(dir, "Dockerfile"))
	bin := cluster.BuildLikeDockerfile(t, dir, t.TempDir())
	if err := cluster.BuildSettingsMismatch(bin, build); err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatalf("%s is dynamically linked (it has a program interpreter)", bin)
		}
	}
	t.Logf("server built like the Dockerfile: %s go build %s %s", strings.Join(build.Env, " "), strings.Join(build.Flags, " "), build.Package)
	return bin
}

// writeImageOverlay writes the kustomize overlay config/e2e-node of the project in dir: the
// manifests of config/deploy with each image named in images (the manifests' reference,
// name:tag) renamed to the reference it maps to, and nothing else changed. It returns the
// overlay's directory.
func writeImageOverlay(t *testing.T, dir string, images map[string]string) string {
	t.Helper()
	overlay := filepath.Join(dir, "config", "e2e-node")
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../deploy\nimages:\n")
	var refs []string
	for from := range images {
		refs = append(refs, from)
	}
	sort.Strings(refs)
	for _, from := range refs {
		name, _, _ := strings.Cut(from, ":")
		newName, newTag, _ := strings.Cut(images[from], ":")
		fmt.Fprintf(&b, "- name: %s\n  newName: %s\n  newTag: %s\n", name, newName, newTag)
	}
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return overlay
}

// waitPodsReady waits until want Pods of ns matching selector are Ready and returns them.
func waitPodsReady(t *testing.T, ctx context.Context, kube kubernetes.Interface, ns, selector string, want int, timeout time.Duration, what string) *corev1.PodList {
	t.Helper()
	var pods *corev1.PodList
	if err := wait.PollUntilContextTimeout(ctx, 2*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		pods, err = kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && podReady(&p) {
				ready++
			}
		}
		return ready == want, nil
	}); err != nil {
		t.Fatalf("%s: not %d Ready within %s:\n%s", what, want, timeout, describePods(pods))
	}
	return pods
}

// waitAPIServicesAvailable waits until each APIService of names is Available: kube-apiserver
// reaches the server's Pods (pods, for the failure message) through the Service's cluster
// IP (kube-proxy) and verifies their serving certificate against caBundle.
func waitAPIServicesAvailable(t *testing.T, ctx context.Context, dyn dynamic.Interface, names []string, pods *corev1.PodList) {
	t.Helper()
	apiserviceGVR := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	for _, name := range names {
		var last string
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			as, err := dyn.Resource(apiserviceGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(as.Object, "status", "conditions")
			for _, c := range conds {
				m := c.(map[string]any)
				if m["type"] == "Available" {
					last = fmt.Sprintf("%v: %v", m["reason"], m["message"])
					return m["status"] == "True", nil
				}
			}
			return false, nil
		}); err != nil {
			t.Fatalf("APIService %s not Available within 3 minutes: %s\n%s", name, last, describePods(pods))
		}
		t.Logf("APIService %s Available (%s)", name, last)
	}
}

// deployObjects are the server's Deployment, the etcd StatefulSet (nil when there is none)
// and the APIServices' names among the manifests objs.
func deployObjects(t *testing.T, objs []*unstructured.Unstructured) (deployment *appsv1.Deployment, sts *appsv1.StatefulSet, apiservices []string) {
	t.Helper()
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			deployment = &appsv1.Deployment{}
			if err := runtimeFromUnstructured(o, deployment); err != nil {
				t.Fatal(err)
			}
		case "StatefulSet":
			sts = &appsv1.StatefulSet{}
			if err := runtimeFromUnstructured(o, sts); err != nil {
				t.Fatal(err)
			}
		case "APIService":
			apiservices = append(apiservices, o.GetName())
		}
	}
	return deployment, sts, apiservices
}

func runtimeFromUnstructured(o *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// describePods is the status of pods and the tail of their containers' logs (kubelet
// writes them under /var/log/pods), for a failure message.
func describePods(pods *corev1.PodList) string {
	if pods == nil {
		return "no Pods listed"
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "Pod %s: phase %s, conditions %+v\n", p.Name, p.Status.Phase, p.Status.Conditions)
		for _, c := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, "  container %s: ready %v, restarts %d, state %+v, last %+v\n", c.Name, c.Ready, c.RestartCount, c.State, c.LastTerminationState)
		}
		logs, _ := filepath.Glob(filepath.Join("/var/log/pods", p.Namespace+"_"+p.Name+"_"+string(p.UID), "*", "*.log"))
		for _, l := range logs {
			data, _ := os.ReadFile(l)
			fmt.Fprintf(&b, "  %s:\n%s\n", l, cluster.Tail(string(data), 3000))
		}
	}
	return b.String()
}

// previousLog is the tail of the log kubelet kept of the container's previous run
// (/var/log/pods/<ns>_<pod>_<uid>/<container>/<restart>.log, the lowest number).
// podLog is the whole log of the first run of a container of p, as kubelet keeps it.
func podLog(p *corev1.Pod, container string) string {
	data, _ := os.ReadFile(filepath.Join("/var/log/pods", p.Namespace+"_"+p.Name+"_"+string(p.UID), container, "0.log"))
	return string(data)
}

func previousLog(p *corev1.Pod, container string) string {
	logs, _ := filepath.Glob(filepath.Join("/var/log/pods", p.Namespace+"_"+p.Name+"_"+string(p.UID), container, "*.log"))
	if len(logs) == 0 {
		return "(none kept)"
	}
	data, _ := os.ReadFile(logs[0])
	return cluster.Tail(string(data), 2000)
}

func datastoreSecret(t *testing.T, d *appsv1.Deployment) (name, key string) {
	t.Helper()
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.Name == "DATASTORE_ENDPOINT" {
			return e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key
		}
	}
	t.Fatal("the Deployment takes no DATASTORE_ENDPOINT from a Secret")
	return "", ""
}

func findObject(t *testing.T, objs []*unstructured.Unstructured, kind, nameSuffix string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && strings.HasSuffix(o.GetName(), nameSuffix) {
			return o
		}
	}
	t.Fatalf("no %s named *%s in the manifests", kind, nameSuffix)
	return nil
}

func itemCount(l *unstructured.UnstructuredList) int {
	if l == nil {
		return 0
	}
	return len(l.Items)
}

// bind binds user to the ClusterRole role in ns.
func bind(t *testing.T, ctx context.Context, kube kubernetes.Interface, ns, user, role string) {
	t.Helper()
	createBinding(t, ctx, kube, ns, user, role, rbacv1.Subject{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user})
}

// bindServiceAccount binds the ServiceAccount ns/name to the ClusterRole role in ns.
func bindServiceAccount(t *testing.T, ctx context.Context, kube kubernetes.Interface, ns, name, role string) {
	t.Helper()
	createBinding(t, ctx, kube, ns, "sa-"+name, role, rbacv1.Subject{Kind: "ServiceAccount", Name: name, Namespace: ns})
}

func createBinding(t *testing.T, ctx context.Context, kube kubernetes.Interface, ns, name, role string, subject rbacv1.Subject) {
	t.Helper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitAggregated waits until kube-controller-manager has aggregated rules of group into the
// ClusterRole role.
func waitAggregated(t *testing.T, ctx context.Context, kube kubernetes.Interface, role, group string) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		cr, err := kube.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, r := range cr.Rules {
			for _, g := range r.APIGroups {
				if g == group {
					return true, nil
				}
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("ClusterRole %s never aggregated the rules of %s: %v", role, group, err)
	}
}
