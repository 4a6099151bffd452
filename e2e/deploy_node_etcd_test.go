package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// etcdImage is the name the node test gives the etcd image it builds (etcd of
// cluster.EtcdVersion, the etcd the server links) in its kustomize overlay.
var etcdImage = "localhost/aagen-e2e/etcd:" + cluster.EtcdVersion

// Bounds of the etcd member kill, from runs on the 2-core CI machine (docs/reliability.md).
const (
	// etcdKillFailedWritesBound is how many creates (one every 100 ms) may fail after
	// etcd's leader is killed: those waiting on the old leader and those sent before the
	// remaining members elected a new one.
	etcdKillFailedWritesBound = 30
	// etcdLeaderBound is how long the two remaining members may take to have a leader.
	etcdLeaderBound = 15 * time.Second
	// etcdMemberBound is how long the StatefulSet may take to have its three members
	// Ready again, the killed one back on its volume with the cluster's data.
	etcdMemberBound = 2 * time.Minute
	// etcdWritesResumeBound is how long after the kill the next create may be
	// acknowledged: a write the killed leader had taken waits for etcd's request timeout
	// (5 s + 2 election timeouts = 7 s) before it fails or is retried.
	etcdWritesResumeBound = 20 * time.Second
)

// TestNodeDeploysEtcdStatefulSet deploys the example generated with the defaults (the
// server on a 3-member etcd StatefulSet of its own, client and peer mTLS, no cert-manager)
// on the single-node cluster of cluster.StartNode: the server image built from the
// Dockerfile's build line, an etcd image of the etcd the server links, `kubectl apply -k`
// of an overlay that renames the two images only, and a hostPath PersistentVolume per
// member, as an operator without a volume provisioner provides them. The members find
// each other by their names under the headless Service (cluster DNS), the server reaches
// them by those names, both server Pods and the three members go Ready, the APIService
// goes Available, and kubectl and client-go use the API. Then, under load, the rolling
// update and a killed server Pod of operateDeployedServer, etcd's leader killed
// (etcdMemberKill), the serving certificate renewed (renewServingCertificate) and a drain
// of the node held back by the PodDisruptionBudgets (drainUnderBudgets).
func TestNodeDeploysEtcdStatefulSet(t *testing.T) {
	skipShort(t)
	runsToolsAlone(t)
	dir := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata/example"), dir, nil)
	run(t, dir, aagen(t), "generate", "./pkg/apis/...")
	bin := serverBinaryLikeDockerfile(t, dir)
	etcdBin := cluster.EtcdImageBinary(t)

	// The volumes' directories outlive the node (cleanups run last first): no Pod is
	// writing to them when they are removed.
	volumes := t.TempDir()
	cp, _ := startControlPlane(t)
	node := cluster.StartNode(t, cp)
	kube := kubernetes.NewForConfigOrDie(cp.Admin)
	dyn := dynamic.NewForConfigOrDie(cp.Admin)
	node.Import(t, serverImage, bin)
	// etcd's images keep the binary on PATH: the StatefulSet's command is `etcd`.
	node.ImportAt(t, etcdImage, etcdBin, "/usr/local/bin/etcd")
	// The deadline starts once the node is up: on a cold cache its binaries take minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	objs := cluster.LoadKustomization(t, filepath.Join(dir, "config/deploy"))
	deployment, sts, apiservices := deployObjects(t, objs)
	if deployment == nil || sts == nil || len(apiservices) == 0 {
		t.Fatal("the manifests have no Deployment, no StatefulSet or no APIService")
	}
	ns := deployment.Namespace
	if r := sts.Spec.Replicas; r == nil || *r != 3 {
		t.Fatalf("the etcd StatefulSet has %v replicas, want 3", r)
	}
	members := int(*sts.Spec.Replicas)

	// Storage as an operator without a provisioner gives it: a PersistentVolume per member
	// of the claim template's size and access modes, on a directory of this host owned by
	// the user the StatefulSet runs etcd as (kubelet sets no owner on hostPath volumes).
	if len(sts.Spec.VolumeClaimTemplates) != 1 {
		t.Fatalf("the etcd StatefulSet has %d volume claim templates, want 1", len(sts.Spec.VolumeClaimTemplates))
	}
	claim := sts.Spec.VolumeClaimTemplates[0].Spec
	psc := sts.Spec.Template.Spec.SecurityContext
	if psc == nil || psc.RunAsUser == nil || psc.FSGroup == nil {
		t.Fatalf("the etcd StatefulSet sets no runAsUser or fsGroup: %+v", psc)
	}
	for i := 0; i < members; i++ {
		path := filepath.Join(volumes, fmt.Sprintf("etcd-%d", i))
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, int(*psc.RunAsUser), int(*psc.FSGroup)); err != nil {
			t.Fatal(err)
		}
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e2e-etcd-%d", i)},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: claim.Resources.Requests[corev1.ResourceStorage]},
				AccessModes:                   claim.AccessModes,
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}},
			},
		}
		if _, err := kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	serverManifestImage := deployment.Spec.Template.Spec.Containers[0].Image
	etcdManifestImage := sts.Spec.Template.Spec.Containers[0].Image
	overlay := writeImageOverlay(t, dir, map[string]string{serverManifestImage: serverImage, etcdManifestImage: etcdImage})
	if out, err := kubectl(t, cp.Kubeconfig, "", "apply", "-k", overlay); err != nil {
		t.Fatalf("kubectl apply -k (the manifests, images %s and %s renamed): %v\n%s", serverManifestImage, etcdManifestImage, err, out)
	}

	etcdSelector := metav1.FormatLabelSelector(sts.Spec.Selector)
	etcdPods := waitPodsReady(t, ctx, kube, ns, etcdSelector, members, 6*time.Minute, "the etcd StatefulSet's Pods")
	for _, p := range etcdPods.Items {
		t.Logf("etcd member Pod %s/%s Ready at %s (image %s, %d restarts)", ns, p.Name, p.Status.PodIP, p.Spec.Containers[0].Image, restartsOf(&p))
	}
	selector := metav1.FormatLabelSelector(deployment.Spec.Selector)
	pods := waitPodsReady(t, ctx, kube, ns, selector, 2, 6*time.Minute, "the server's Pods")
	for _, p := range pods.Items {
		t.Logf("server Pod %s/%s Ready at %s (%d restarts)", ns, p.Name, p.Status.PodIP, restartsOf(&p))
	}
	waitAPIServicesAvailable(t, ctx, dyn, apiservices, pods)

	// The members formed one cluster by their DNS names, each on its own volume.
	ec := newDeployedEtcd(t, dir, ns, sts.Name, etcdPods)
	defer ec.close()
	list, err := ec.any().MemberList(ctx)
	if err != nil {
		t.Fatalf("etcd member list: %v", err)
	}
	var names []string
	for _, m := range list.Members {
		names = append(names, m.Name+"="+strings.Join(m.PeerURLs, ","))
	}
	sort.Strings(names)
	if len(list.Members) != members {
		t.Fatalf("etcd has %d members, want %d: %v", len(list.Members), members, names)
	}
	for i, m := range names {
		want := fmt.Sprintf("%s-%d=https://%s-%d.%s.%s.svc:2380", sts.Name, i, sts.Name, i, sts.Spec.ServiceName, ns)
		if m != want {
			t.Errorf("etcd member %d: %s, want %s", i, m, want)
		}
	}
	t.Logf("etcd members: %s", strings.Join(names, " "))
	for i := 0; i < members; i++ {
		if entries, err := os.ReadDir(filepath.Join(volumes, fmt.Sprintf("etcd-%d", i), "member")); err != nil || len(entries) == 0 {
			t.Errorf("the volume etcd-%d holds no etcd member data: %v", i, err)
		}
	}

	// kubectl and client-go through kube-apiserver; the objects are in the members.
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
	if stored := ec.storedBoats(t, ctx); !stored["aurora"] || !stored["borealis"] {
		t.Fatalf("the Boats created are not in etcd: %v", stored)
	}
	t.Logf("kubectl and client-go created Boats through kube-apiserver; etcd holds them")

	// Operating it: the rolling update and a killed server Pod, then etcd's leader killed.
	operateDeployedServer(t, ctx, cp.Kubeconfig, kube, dyn, ns, deployment.Name, selector, boats, apiservices)
	etcdMemberKill(t, ctx, node, kube, dyn, ec, ns, etcdSelector, members, boats, apiservices)
	// The serving certificate and its CA renewed under load.
	renewServingCertificate(t, ctx, dir, cp.Kubeconfig, overlay, kube, dyn, ns, selector, deployment.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort, boats, apiservices)
	// A drain of the node held back by the PodDisruptionBudgets.
	drainUnderBudgets(t, ctx, node, kube, dyn, ns, selector, etcdSelector, members, boats, apiservices)
}

func restartsOf(p *corev1.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}

// deployedEtcd is an etcd client per member of the deployed StatefulSet, from this host:
// each dials its member's Pod address but names the member as the server does (its name
// under the headless Service, which its certificate holds), with the client certificate
// the manifests give the server.
type deployedEtcd struct {
	ns, sts, service string
	tls              *tls.Config
	members          map[string]*clientv3.Client
}

func newDeployedEtcd(t *testing.T, dir, ns, sts string, pods *corev1.PodList) *deployedEtcd {
	t.Helper()
	certs := filepath.Join(dir, "config/deploy/certs")
	cert, err := tls.LoadX509KeyPair(filepath.Join(certs, "etcd-client.crt"), filepath.Join(certs, "etcd-client.key"))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(certs, "etcd-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatalf("%s holds no certificate", filepath.Join(certs, "etcd-ca.crt"))
	}
	ec := &deployedEtcd{ns: ns, sts: sts, tls: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}, members: map[string]*clientv3.Client{}}
	for _, p := range pods.Items {
		ec.service = p.Spec.Subdomain
		ec.connect(t, &p)
	}
	return ec
}

// connect (re)makes the client of the member Pod p, at its current address.
func (ec *deployedEtcd) connect(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if old := ec.members[p.Name]; old != nil {
		old.Close()
	}
	addr := net.JoinHostPort(p.Status.PodIP, "2379")
	dial := grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	})
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{fmt.Sprintf("https://%s.%s.%s.svc:2379", p.Name, ec.service, ec.ns)},
		TLS:         ec.tls,
		DialTimeout: 5 * time.Second, DialOptions: []grpc.DialOption{dial}, Logger: zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ec.members[p.Name] = c
}

// names are the members' names, sorted.
func (ec *deployedEtcd) names() []string {
	names := make([]string, 0, len(ec.members))
	for n := range ec.members {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (ec *deployedEtcd) any() *clientv3.Client {
	return ec.members[ec.names()[0]]
}

// leader is the name of the member the others follow and the raft term, as member sees
// them, or the error.
func (ec *deployedEtcd) leader(ctx context.Context, member string) (string, uint64, error) {
	c := ec.members[member]
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := c.Status(ctx, c.Endpoints()[0])
	if err != nil {
		return "", 0, err
	}
	if st.Leader == 0 {
		return "", st.RaftTerm, fmt.Errorf("no leader in term %d", st.RaftTerm)
	}
	list, err := c.MemberList(ctx)
	if err != nil {
		return "", 0, err
	}
	for _, m := range list.Members {
		if m.ID == st.Leader {
			return m.Name, st.RaftTerm, nil
		}
	}
	return "", 0, fmt.Errorf("leader %x is not a member", st.Leader)
}

// storedBoats are the names of the Boats of namespace default in etcd, read linearizably
// from any member that answers.
func (ec *deployedEtcd) storedBoats(t *testing.T, ctx context.Context) map[string]bool {
	t.Helper()
	var errs []string
	for name, c := range ec.members {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := c.Get(rctx, "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		cancel()
		if err != nil {
			errs = append(errs, name+": "+err.Error())
			continue
		}
		stored := map[string]bool{}
		for _, kv := range resp.Kvs {
			if _, boat, ok := strings.Cut(string(kv.Key), "/boats/default/"); ok {
				stored[boat] = true
			}
		}
		return stored
	}
	t.Fatalf("no etcd member answered: %s", strings.Join(errs, "; "))
	return nil
}

func (ec *deployedEtcd) close() {
	for _, c := range ec.members {
		c.Close()
	}
}

// etcdMemberKill kills etcd's leader (SIGKILL of its container; kubelet restarts it) under
// deployLoad's steady write and watch load through kube-apiserver, and fails when the
// remaining members have no leader of a later term within etcdLeaderBound, the members are not
// all Ready and in one cluster again within etcdMemberBound, more than
// etcdKillFailedWritesBound creates fail, any acknowledged create is not in etcd or was not
// seen by the watcher, or a watch resumed from its last resourceVersion ends with 410.
func etcdMemberKill(t *testing.T, ctx context.Context, node *cluster.Node, kube kubernetes.Interface, dyn dynamic.Interface, ec *deployedEtcd,
	ns, selector string, members int, boats schema.GroupVersionResource, apiservices []string) {
	t.Helper()
	load := startDeployLoad(t, ctx, dyn, boats, apiservices, "etcd-load")
	defer load.stop()
	time.Sleep(3 * time.Second)

	victim, term, err := ec.leader(ctx, ec.names()[0])
	if err != nil {
		t.Fatalf("finding etcd's leader: %v", err)
	}
	old, err := kube.CoreV1().Pods(ns).Get(ctx, victim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(old.Status.ContainerStatuses) != 1 {
		t.Fatalf("etcd member Pod %s has %d containers, want 1", victim, len(old.Status.ContainerStatuses))
	}
	restarts := old.Status.ContainerStatuses[0].RestartCount
	start := time.Now()
	node.KillContainer(t, old.Status.ContainerStatuses[0].ContainerID)
	// From here on creates are sent to a cluster whose leader is dead.
	load.setPhase("etcd-kill")
	// An election among the others: the fault took effect (a leader of a later term; the
	// restarted member itself may win it).
	var elected string
	var electedTerm uint64
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, etcdLeaderBound, true, func(ctx context.Context) (bool, error) {
		for _, name := range ec.names() {
			if name == victim {
				continue
			}
			if elected, electedTerm, last = ec.leader(ctx, name); last == nil && electedTerm > term {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("the members left had no leader of a term after %d (the killed leader %s's) within %s: %v (last seen %q in term %d)", term, victim, etcdLeaderBound, last, elected, electedTerm)
	}
	leaderAfter := time.Since(start)

	// The member restarted by kubelet, Ready again, and the others with it.
	var pods *corev1.PodList
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, etcdMemberBound, false, func(ctx context.Context) (bool, error) {
		pods, err = kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && podReady(&p) && (p.Name != victim || restartsOf(&p) > restarts) {
				ready++
			}
		}
		return ready == members, nil
	}); err != nil {
		t.Fatalf("the etcd StatefulSet's %d members not Ready within %s of killing %s's container:\n%s", members, etcdMemberBound, victim, describePods(pods))
	}
	back := time.Since(start)
	for _, p := range pods.Items {
		if p.Name == victim {
			ec.connect(t, &p)
		}
	}
	// The member is back in the cluster: it answers with a leader, and its linearizable reads
	// below have the writes made while it was down.
	if got, _, err := ec.leader(ctx, victim); err != nil || got == "" {
		t.Errorf("the restarted member %s: leader %q, %v", victim, got, err)
	}
	t.Logf("etcd leader %s (term %d) killed: %s elected in term %d after %s; %d members Ready again after %s", victim, term, elected, electedTerm, leaderAfter.Round(100*time.Millisecond), members, back.Round(100*time.Millisecond))
	// Writes go on: 10 creates acknowledged after the kill, the first within
	// etcdWritesResumeBound.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, _ := load.acknowledged("etcd-kill")
		return n >= 10, nil
	}); err != nil {
		n, _ := load.acknowledged("etcd-kill")
		t.Errorf("%d creates acknowledged in the minute after etcd's leader was killed, want at least 10; failed: %v", n, load.failures("etcd-kill"))
	}
	_, first := load.acknowledged("etcd-kill")
	resumed := first.Sub(start)
	t.Logf("the first create after the kill acknowledged %s after it", resumed.Round(100*time.Millisecond))
	if first.IsZero() || resumed > etcdWritesResumeBound {
		t.Errorf("the first create after etcd's leader was killed acknowledged %s after it (bound %s)", resumed.Round(100*time.Millisecond), etcdWritesResumeBound)
	}
	time.Sleep(3 * time.Second)
	load.stop()

	// Every acknowledged create is in etcd, read from the member that was killed, and the
	// watcher saw it.
	restarted := &deployedEtcd{members: map[string]*clientv3.Client{victim: ec.members[victim]}}
	lost, unseen := load.missing(restarted.storedBoats(t, ctx))
	t.Logf("load: %d creates acknowledged (%d after the kill), %d failed (after the kill %d); %d lost; watcher saw %d, %d watches ended with 410; APIService not Available in %d of its polls",
		len(load.acked), load.ackedIn["etcd-kill"], len(load.failed), len(load.failures("etcd-kill")), len(lost), len(load.seen), load.expired, len(load.unavailable))
	if len(lost) > 0 {
		t.Errorf("%d acknowledged creates are not in etcd (read from the restarted member %s): %v", len(lost), victim, lost)
	}
	if len(unseen) > 0 {
		t.Errorf("the watcher never saw %d acknowledged creates: %v\nits watches:\n%s", len(unseen), unseen, strings.Join(load.watches, "\n"))
	}
	if load.expired > 0 {
		t.Errorf("%d watches resumed from their last resourceVersion ended with 410 Gone", load.expired)
	}
	if f := load.failures("steady"); len(f) > 0 {
		t.Errorf("%d creates failed before any fault: %v", len(f), f)
	}
	if f := load.failures("etcd-kill"); len(f) > etcdKillFailedWritesBound {
		t.Errorf("%d creates failed after etcd's leader was killed (bound %d): %v", len(f), etcdKillFailedWritesBound, f)
	} else if len(f) > 0 {
		t.Logf("creates failed after the kill: %v", f)
	}
	if len(load.unavailable) > 0 {
		t.Logf("APIService not Available after the kill: %v", load.unavailable)
	}
}

// deployDefectEnv names a defect the node tests put in on purpose, to show that they fail
// without what they check (docs/reliability.md has what each run printed):
// renew-without-previous-ca applies the renewed certificates with the new CA alone in the
// caBundle.
const deployDefectEnv = "AAGEN_DEPLOY_DEFECT"

// servingRenewalBound is how long after `aagen certs --renew` is applied every server Pod
// may take to serve the new certificate: kubelet updates a Pod's Secret volume on its next
// sync of the Pod (syncFrequency, 1 minute by default, plus jitter), and the server reloads
// the files when they change.
const servingRenewalBound = 3 * time.Minute

// renewServingCertificate renews the serving CA and certificate the way README says, under
// deployLoad's load: `aagen certs --renew` and `kubectl apply -k` (the APIServices' caBundle
// then holds the new CA and the previous one), a wait until every server Pod serves the new
// certificate (read from each Pod's TLS handshake), then ca-previous.crt deleted, `aagen
// generate` and `kubectl apply -k` again (the caBundle holds the new CA alone). It fails
// when a Pod does not serve the new certificate within servingRenewalBound, when any create
// fails or an APIService leaves Available from the renewal on, or when an acknowledged
// create is lost or unseen.
func renewServingCertificate(t *testing.T, ctx context.Context, dir, kubeconfig, overlay string, kube kubernetes.Interface, dyn dynamic.Interface,
	ns, selector string, port int32, boats schema.GroupVersionResource, apiservices []string) {
	t.Helper()
	certs := filepath.Join(dir, "config/deploy/certs")
	oldCert, err := os.ReadFile(filepath.Join(certs, "tls.crt"))
	if err != nil {
		t.Fatal(err)
	}
	load := startDeployLoad(t, ctx, dyn, boats, apiservices, "renew-load")
	defer load.stop()
	time.Sleep(3 * time.Second)

	run(t, dir, aagen(t), "certs", "--renew", "./pkg/apis/...")
	newCert, err := os.ReadFile(filepath.Join(certs, "tls.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(newCert) == string(oldCert) {
		t.Fatal("aagen certs --renew left the serving certificate as it was")
	}
	newCA, err := os.ReadFile(filepath.Join(certs, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv(deployDefectEnv) == "renew-without-previous-ca" {
		// The renewal as `aagen certs --renew` did it before it kept the previous CA: the
		// caBundle names the new CA alone from the first apply on.
		t.Logf("%s=renew-without-previous-ca: ca-previous.crt deleted before the first apply", deployDefectEnv)
		if err := os.Remove(filepath.Join(certs, "ca-previous.crt")); err != nil {
			t.Fatal(err)
		}
		run(t, dir, aagen(t), "generate", "./pkg/apis/...")
		if err := os.WriteFile(filepath.Join(certs, "ca-previous.crt"), newCA, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if out, err := kubectl(t, kubeconfig, "", "apply", "-k", overlay); err != nil {
		t.Fatalf("kubectl apply -k (renewed certificates): %v\n%s", err, out)
	}
	load.setPhase("renew")
	// Every server Pod serves the new certificate: the fault (a certificate change under
	// traffic) took place everywhere.
	want := pemDER(t, newCert)
	var served map[string]string
	if err := wait.PollUntilContextTimeout(ctx, time.Second, servingRenewalBound, true, func(ctx context.Context) (bool, error) {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		served = map[string]string{}
		renewed := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || p.Status.PodIP == "" {
				continue
			}
			der, err := servedCertificate(net.JoinHostPort(p.Status.PodIP, fmt.Sprint(port)))
			switch {
			case err != nil:
				served[p.Name] = err.Error()
			case string(der) == string(want):
				served[p.Name] = "new"
				renewed++
			default:
				served[p.Name] = "old"
			}
		}
		return renewed == 2 && len(served) == 2, nil
	}); err != nil {
		t.Fatalf("the server Pods do not all serve the renewed certificate within %s: %v", servingRenewalBound, served)
	}
	reloaded := time.Since(start)

	// The previous CA leaves the caBundle.
	if err := os.Remove(filepath.Join(certs, "ca-previous.crt")); err != nil {
		t.Fatal(err)
	}
	run(t, dir, aagen(t), "generate", "./pkg/apis/...")
	if out, err := kubectl(t, kubeconfig, "", "apply", "-k", overlay); err != nil {
		t.Fatalf("kubectl apply -k (the previous CA dropped): %v\n%s", err, out)
	}
	load.setPhase("renew-drop")
	apiserviceGVR := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	for _, name := range apiservices {
		as, err := dyn.Resource(apiserviceGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if bundle, _, _ := unstructured.NestedString(as.Object, "spec", "caBundle"); bundle != base64.StdEncoding.EncodeToString(newCA) {
			t.Errorf("APIService %s's caBundle is not the new CA alone after the previous one was dropped", name)
		}
	}
	// kube-apiserver's aggregator takes the new caBundle from the APIService it watches;
	// the load goes on against it.
	time.Sleep(10 * time.Second)
	load.stop()

	lost, unseen := load.missing(listedBoats(t, ctx, dyn, boats))
	renewAcked, _ := load.acknowledged("renew")
	dropAcked, _ := load.acknowledged("renew-drop")
	t.Logf("serving certificate renewed: both Pods served it %s after the apply; load: %d creates acknowledged (%d sent between the renewal's apply and both Pods serving it, %d in the 10 s after the apply that dropped the previous CA), %d failed; %d lost; %d unseen; %d watches ended with 410; APIService not Available in %d polls",
		reloaded.Round(time.Second), len(load.acked), renewAcked, dropAcked, len(load.failed), len(lost), len(unseen), load.expired, len(load.unavailable))
	if len(load.failed) > 0 {
		t.Errorf("%d creates failed across the renewal: %v", len(load.failed), load.failed)
	}
	if len(load.unavailable) > 0 {
		t.Errorf("an APIService left Available across the renewal: %v", load.unavailable)
	}
	if renewAcked < 10 || dropAcked < 5 {
		t.Errorf("%d creates sent after the renewal's apply and %d after the previous CA was dropped were acknowledged, want at least 10 and 5", renewAcked, dropAcked)
	}
	if len(lost) > 0 {
		t.Errorf("%d acknowledged creates are not stored: %v", len(lost), lost)
	}
	if len(unseen) > 0 {
		t.Errorf("the watcher never saw %d acknowledged creates: %v", len(unseen), unseen)
	}
	if load.expired > 0 {
		t.Errorf("%d watches resumed from their last resourceVersion ended with 410 Gone", load.expired)
	}
}

// servedCertificate is the DER of the leaf certificate the TLS server at addr presents.
func servedCertificate(addr string) ([]byte, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Raw, nil
}

func pemDER(t *testing.T, data []byte) []byte {
	t.Helper()
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("no PEM block in %q", data)
	}
	return block.Bytes
}

// drainUnderBudgets drains the node the way `kubectl drain` does, cordon and then the
// Eviction API, for the server's and etcd's Pods, under deployLoad's load. With the node
// cordoned no replacement can be scheduled, so the PodDisruptionBudgets (kube-controller-
// manager's disruption controller keeps their status) must let one server Pod and one etcd
// member go and refuse the next eviction of each with 429, which would leave no server or no
// etcd quorum; creates must go on through the server and members left once the evicted Pods
// are gone. Once the node is
// uncordoned, the replacements are scheduled and Ready and each budget allows a disruption
// again. It fails on any of these, on more than drainFailedWritesBound failed creates, on an
// APIService leaving Available, or on a lost or unseen create.
func drainUnderBudgets(t *testing.T, ctx context.Context, node *cluster.Node, kube kubernetes.Interface, dyn dynamic.Interface,
	ns, selector, etcdSelector string, members int, boats schema.GroupVersionResource, apiservices []string) {
	t.Helper()
	load := startDeployLoad(t, ctx, dyn, boats, apiservices, "drain-load")
	defer load.stop()
	budgets, err := kube.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(budgets.Items) != 2 {
		t.Fatalf("the manifests' PodDisruptionBudgets in %s: %v (%d), want the server's and etcd's", ns, err, itemsOf(budgets))
	}
	// The disruption controller has counted the healthy Pods.
	allowed := func() map[string]int32 {
		got := map[string]int32{}
		if list, err := kube.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{}); err == nil {
			for _, b := range list.Items {
				got[b.Name] = b.Status.DisruptionsAllowed
			}
		}
		return got
	}
	waitAllowed := func(what string) {
		t.Helper()
		var got map[string]int32
		if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			got = allowed()
			return len(got) == 2 && got[budgets.Items[0].Name] == 1 && got[budgets.Items[1].Name] == 1, nil
		}); err != nil {
			t.Fatalf("%s: the PodDisruptionBudgets allow %v disruptions, want 1 each", what, got)
		}
	}
	waitAllowed("before the drain")
	time.Sleep(2 * time.Second)

	load.setPhase("drain")
	cordon := func(unschedulable bool) {
		t.Helper()
		patch := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, unschedulable)
		if _, err := kube.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cordon(true)
	evict := func(name string) error {
		return kube.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
	}
	type podRef struct {
		name string
		uid  types.UID
	}
	var evicted []podRef
	for _, group := range []struct{ what, selector string }{{"server", selector}, {"etcd", etcdSelector}} {
		pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: group.selector})
		if err != nil || len(pods.Items) < 2 {
			t.Fatalf("the %s Pods: %v", group.what, err)
		}
		sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
		if err := evict(pods.Items[0].Name); err != nil {
			t.Fatalf("evicting the %s Pod %s (the first of the drain): %v", group.what, pods.Items[0].Name, err)
		}
		evicted = append(evicted, podRef{pods.Items[0].Name, pods.Items[0].UID})
		err = evict(pods.Items[1].Name)
		if !apierrors.IsTooManyRequests(err) {
			t.Fatalf("evicting a second %s Pod %s while the first is gone and the node cordoned: %v, want 429 TooManyRequests (its PodDisruptionBudget)", group.what, pods.Items[1].Name, err)
		}
		t.Logf("drain: %s Pod %s evicted; %s refused: %v", group.what, pods.Items[0].Name, pods.Items[1].Name, err)
	}
	// Once the evicted Pods are gone (the server's after its shutdown delay), writes go on
	// through one server Pod and two etcd members.
	for _, gone := range evicted {
		if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err := kube.CoreV1().Pods(ns).Get(ctx, gone.name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			// A StatefulSet's replacement takes the name: a new UID is a new Pod.
			return err == nil && p.UID != gone.uid, nil
		}); err != nil {
			t.Fatalf("the evicted Pod %s was not gone within 2 minutes", gone.name)
		}
	}
	load.setPhase("drained")
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		n, _ := load.acknowledged("drained")
		return n >= 5, nil
	}); err != nil {
		n, _ := load.acknowledged("drained")
		t.Errorf("%d creates acknowledged in the 30 s after the evicted Pods were gone, with one server Pod and two etcd members left, want at least 5; failed: %v", n, load.failures("drained"))
	}

	load.setPhase("uncordon")
	cordon(false)
	waitPodsReady(t, ctx, kube, ns, selector, 2, 3*time.Minute, "the server's Pods after the drain")
	waitPodsReady(t, ctx, kube, ns, etcdSelector, members, 3*time.Minute, "the etcd members after the drain")
	waitAllowed("after the node is uncordoned")
	time.Sleep(3 * time.Second)
	load.stop()

	lost, unseen := load.missing(listedBoats(t, ctx, dyn, boats))
	t.Logf("drain: %d creates acknowledged, %d failed %v; %d lost; %d unseen; %d watches ended with 410; APIService not Available in %d polls %v",
		len(load.acked), len(load.failed), load.failed, len(lost), len(unseen), load.expired, len(load.unavailable), load.unavailable)
	if len(lost) > 0 {
		t.Errorf("%d acknowledged creates are not stored: %v", len(lost), lost)
	}
	if len(unseen) > 0 {
		t.Errorf("the watcher never saw %d acknowledged creates: %v", len(unseen), unseen)
	}
	if load.expired > 0 {
		t.Errorf("%d watches resumed from their last resourceVersion ended with 410 Gone", load.expired)
	}
	if f := load.failures("steady"); len(f) > 0 {
		t.Errorf("%d creates failed before the drain: %v", len(f), f)
	}
	// An eviction stops a Pod gracefully (the server fails /readyz first; etcd hands on its
	// leadership), unlike the kills above.
	if f := append(append(load.failures("drain"), load.failures("drained")...), load.failures("uncordon")...); len(f) > drainFailedWritesBound {
		t.Errorf("%d creates failed during the drain (bound %d): %v", len(f), drainFailedWritesBound, f)
	}
	if len(load.unavailable) > 0 {
		t.Errorf("an APIService left Available during the drain: %v", load.unavailable)
	}
}

// drainFailedWritesBound is how many creates may fail while a drain evicts a server Pod and
// an etcd member (0 in the runs in docs/reliability.md; an evicted etcd leader hands its
// leadership on, and a write in flight at that moment may fail).
const drainFailedWritesBound = 5

func itemsOf(l *policyv1.PodDisruptionBudgetList) int {
	if l == nil {
		return 0
	}
	return len(l.Items)
}
