package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// Node is the one node of a real single-node cluster on a control plane of
// StartControlPlane: containerd and runc from Debian, the bridge CNI plugin, kubelet,
// kube-scheduler, kube-proxy (iptables) and the controllers of kube-controller-manager
// that Pods, Services, Deployments and StatefulSets need, all at KubeVersion where
// Kubernetes is concerned (node-facts.md in the shared docs has how each was found to run
// here: cgroup v1, no registry, root without CAP_SYS_RESOURCE).
type Node struct {
	Name string
	// PodCIDR is the bridge network's subnet, ClusterCIDR the cluster's.
	PodCIDR, ClusterCIDR string
	// Socket is containerd's CRI socket.
	Socket string
	// Images is where images built for the node are written before their import.
	Images string
	// DNS is the cluster DNS address kubelet gives Pods (CoreDNS on the host's address).
	DNS string
}

// nodePackages are the Debian packages a node needs, by a file each installs.
var nodePackages = map[string]string{
	"/usr/bin/containerd": "containerd",
	"/usr/sbin/runc":      "runc",
	"/usr/lib/cni/bridge": "containernetworking-plugins",
	"/usr/sbin/iptables":  "iptables",
	"/usr/sbin/conntrack": "conntrack",
}

// PauseImage is the sandbox image of the node's Pods, built by StartNode from podbin.
const PauseImage = "localhost/aagen-e2e/pause:v1"

// StartNode installs what is missing (apt-get), builds kubelet, kube-scheduler and
// kube-proxy into .cache/bin once, starts containerd with a sandbox image built here,
// kubelet registered with cp as Name, the scheduler, kube-proxy and the node
// controllers, and waits for the Node to be Ready and schedulable. Cleanup deletes the
// node's Pods, stops everything and removes kube-proxy's rules and the bridge.
func StartNode(t T, cp *ControlPlane) *Node {
	t.Helper()
	if cp.AdvertiseAddress == "" {
		t.Fatalf("kube-apiserver listens on 127.0.0.1 only: this machine has no address Pods could reach it at (cluster.HostIP: an IPv4 address of an interface that is up and not loopback)")
	}
	installPackages(t)
	kubelet := KubeBinary(t, "kubelet")
	scheduler := KubeBinary(t, "kube-scheduler")
	proxy := KubeBinary(t, "kube-proxy")
	kcm := KubeBinary(t, "kube-controller-manager")
	coredns := CoreDNSBinary(t)

	dir := t.TempDir()
	n := &Node{Name: "e2e-node", PodCIDR: "10.244.0.0/24", ClusterCIDR: "10.244.0.0/16",
		Socket: filepath.Join(dir, "containerd", "containerd.sock"), Images: filepath.Join(dir, "images"), DNS: cp.AdvertiseAddress}
	for _, d := range []string{"containerd/root", "containerd/state", "cni", "kubelet/manifests", "images", "coredns"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(dir, "cni", "10-bridge.conflist"), fmt.Sprintf(bridgeConf, n.PodCIDR))
	write(t, filepath.Join(dir, "containerd", "config.toml"), fmt.Sprintf(containerdConf,
		filepath.Join(dir, "containerd", "root"), filepath.Join(dir, "containerd", "state"), n.Socket, PauseImage, filepath.Join(dir, "cni")))
	StartProcess(t, "containerd", "containerd", "--config", filepath.Join(dir, "containerd", "config.toml"))
	waitFile(t, n.Socket, time.Minute)
	pause := StaticBinary(t, "./e2e/tools/podbin", dir)
	n.Import(t, PauseImage, pause)

	// The cluster DNS: CoreDNS on the host's address, which Pods reach through their
	// bridge's gateway, answering cluster.local from kube-apiserver's Services and
	// EndpointSlices (a StatefulSet's members by name under its headless Service).
	readyPort := FreePort(t)
	corefile := filepath.Join(dir, "coredns", "Corefile")
	write(t, corefile, fmt.Sprintf(corefileConf, n.DNS, readyPort, cp.Kubeconfig))
	dns := StartProcess(t, "coredns", coredns, "-conf", corefile)
	waitHTTP(t, dns, fmt.Sprintf("http://127.0.0.1:%d/ready", readyPort), time.Minute)

	write(t, filepath.Join(dir, "kubelet", "config.yaml"), fmt.Sprintf(kubeletConf, n.Socket, filepath.Join(dir, "kubelet", "manifests"), n.PodCIDR, n.DNS))
	StartProcess(t, "kubelet", kubelet, "--config="+filepath.Join(dir, "kubelet", "config.yaml"), "--kubeconfig="+cp.Kubeconfig,
		"--root-dir="+filepath.Join(dir, "kubelet", "root"), "--hostname-override="+n.Name)
	StartProcess(t, "kube-scheduler", scheduler, "--kubeconfig="+cp.Kubeconfig, "--authentication-kubeconfig="+cp.Kubeconfig,
		"--authorization-kubeconfig="+cp.Kubeconfig, "--leader-elect=false", "--secure-port=0")
	// serviceaccount-token signs the legacy token Secrets with the key kube-apiserver
	// verifies; root-ca-cert-publisher writes the kube-root-ca.crt ConfigMap that every
	// Pod's projected service-account volume reads (its Pods do not start without it).
	StartProcess(t, "kube-controller-manager (node)", kcm, "--kubeconfig="+cp.Kubeconfig, "--leader-elect=false", "--secure-port=0",
		"--root-ca-file="+cp.PKI.Path("ca.crt"), "--service-account-private-key-file="+cp.PKI.Path("sa.key"),
		"--controllers=nodelifecycle,endpointslice,endpointslicemirroring,endpoint,serviceaccount,serviceaccount-token,root-ca-cert-publisher,namespace,garbagecollector,replicaset,deployment,statefulset,disruption,persistentvolume-binder")
	StartProcess(t, "kube-proxy", proxy, "--kubeconfig="+cp.Kubeconfig, "--hostname-override="+n.Name, "--cluster-cidr="+n.ClusterCIDR,
		"--proxy-mode=iptables", "--conntrack-max-per-core=0", "--metrics-bind-address=127.0.0.1:"+fmt.Sprint(FreePort(t)),
		"--healthz-bind-address=127.0.0.1:"+fmt.Sprint(FreePort(t)))
	kube := kubernetes.NewForConfigOrDie(cp.Admin)
	t.Cleanup(func() { n.cleanup(t, kube, proxy, dir) })

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var last string
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		node, err := kube.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		ready := false
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = c.Status == corev1.ConditionTrue
				last = fmt.Sprintf("Ready=%s (%s)", c.Status, c.Message)
			}
		}
		if ready && len(node.Spec.Taints) > 0 {
			last = fmt.Sprintf("Ready but tainted %v", node.Spec.Taints)
			return false, nil
		}
		return ready, nil
	})
	if err != nil {
		t.Fatalf("node %s not Ready and schedulable within 3 minutes: %s", n.Name, last)
	}
	t.Logf("node %s Ready (kubelet, containerd %s, bridge CNI %s, CoreDNS %s at %s)", n.Name, commandVersion("containerd", "--version"), n.PodCIDR, CoreDNSVersion, n.DNS)
	return n
}

// Import builds an image of the static binary named ref, with the binary at /<its name>
// (see ImageTarball), and imports it into the node's containerd, where Pods find it with
// imagePullPolicy Never or IfNotPresent.
func (n *Node) Import(t T, ref, binary string, args ...string) {
	t.Helper()
	n.ImportAt(t, ref, binary, "/"+filepath.Base(binary), args...)
}

// ImportAt is Import with the binary at the absolute path inImage.
func (n *Node) ImportAt(t T, ref, binary, inImage string, args ...string) {
	t.Helper()
	tarPath := filepath.Join(n.Images, strings.NewReplacer("/", "_", ":", "_").Replace(ref)+".tar")
	ImageTarball(t, ref, binary, inImage, tarPath, args...)
	out, err := exec.Command("ctr", "--address", n.Socket, "--namespace", "k8s.io", "images", "import", "--all-platforms", tarPath).CombinedOutput()
	if err != nil {
		t.Fatalf("importing %s: %v\n%s", ref, err, out)
	}
}

// KillContainer sends SIGKILL to the container of a Pod's status (containerStatuses'
// containerID, containerd://<id>) through containerd, as when its process crashes: kubelet
// sees it exit and restarts it in the same Pod.
func (n *Node) KillContainer(t T, containerID string) {
	t.Helper()
	id, ok := strings.CutPrefix(containerID, "containerd://")
	if !ok {
		t.Fatalf("container %q is not containerd's", containerID)
	}
	if out, err := exec.Command("ctr", "--address", n.Socket, "--namespace", "k8s.io", "tasks", "kill", "--signal", "SIGKILL", id).CombinedOutput(); err != nil {
		t.Fatalf("killing container %s: %v\n%s", id, err, out)
	}
}

// cleanup deletes the workloads (so that no controller makes new Pods) and the node's Pods
// (so that kubelet stops their containers), kills in containerd what kubelet did not stop
// in time, stops the processes (StartProcess's cleanups, which run after this one), removes
// kube-proxy's iptables rules and the bridge, and unmounts what containerd and kubelet left
// under dir: no container outlives the node.
func (n *Node) cleanup(t T, kube kubernetes.Interface, proxy, dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if nss, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err == nil {
		all := metav1.ListOptions{}
		background := metav1.DeletePropagationBackground
		del := metav1.DeleteOptions{PropagationPolicy: &background}
		for _, ns := range nss.Items {
			apps := kube.AppsV1()
			_ = apps.Deployments(ns.Name).DeleteCollection(ctx, del, all)
			_ = apps.StatefulSets(ns.Name).DeleteCollection(ctx, del, all)
			_ = apps.DaemonSets(ns.Name).DeleteCollection(ctx, del, all)
			_ = apps.ReplicaSets(ns.Name).DeleteCollection(ctx, del, all)
			_ = kube.BatchV1().Jobs(ns.Name).DeleteCollection(ctx, del, all)
		}
	}
	pods, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name})
	if err == nil {
		for _, p := range pods.Items {
			_ = kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		}
		_ = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
			pods, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name})
			return err == nil && len(pods.Items) == 0, nil
		})
	}
	// kubelet stops the containers of deleted Pods on its own; what is still running after
	// that is killed, with a note of it.
	ctr := func(args ...string) (string, error) {
		out, err := exec.Command("ctr", append([]string{"--address", n.Socket, "--namespace", "k8s.io"}, args...)...).Output()
		return string(out), err
	}
	var running []string
	_ = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		out, err := ctr("tasks", "ls", "-q")
		running = strings.Fields(out)
		return err != nil || len(running) == 0, nil
	})
	if len(running) > 0 {
		t.Logf("node cleanup: killing %d containers kubelet left running", len(running))
		for _, id := range running {
			_, _ = ctr("tasks", "kill", "--signal", "SIGKILL", id)
		}
		for _, id := range running {
			_, _ = ctr("tasks", "delete", "--force", id)
		}
	}
	_ = exec.Command(proxy, "--cleanup").Run()
	removeKubeletChains()
	_ = exec.Command("ip", "link", "delete", "cni0").Run()
	mounts, _ := os.ReadFile("/proc/self/mounts")
	var under []string
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			under = append(under, f[1])
		}
	}
	for i := len(under) - 1; i >= 0; i-- {
		_ = syscall.Unmount(under[i], syscall.MNT_DETACH)
	}
}

// removeKubeletChains removes the iptables chains kubelet makes (its canaries, and
// KUBE-FIREWALL, which drops packets to 127.0.0.0/8 from other sources), which kube-proxy's
// --cleanup leaves: the machine is as it was before the node.
func removeKubeletChains() {
	ipt := func(args ...string) { _ = exec.Command("iptables", args...).Run() }
	for _, chain := range []string{"INPUT", "OUTPUT"} {
		ipt("-t", "filter", "-D", chain, "-j", "KUBE-FIREWALL")
	}
	for _, table := range []string{"filter", "nat", "mangle"} {
		for _, chain := range []string{"KUBE-FIREWALL", "KUBE-KUBELET-CANARY", "KUBE-IPTABLES-HINT"} {
			ipt("-t", table, "-F", chain)
			ipt("-t", table, "-X", chain)
		}
	}
}

// installPackages installs the Debian packages of nodePackages that are missing.
func installPackages(t T) {
	t.Helper()
	var missing []string
	for file, pkg := range nodePackages {
		if _, err := os.Stat(file); err != nil {
			missing = append(missing, pkg)
		}
	}
	if len(missing) == 0 {
		return
	}
	t.Logf("installing %s from Debian", strings.Join(missing, ", "))
	install := func() ([]byte, error) {
		cmd := exec.Command("apt-get", append([]string{"install", "-y", "--no-install-recommends"}, missing...)...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		return cmd.CombinedOutput()
	}
	if out, err := install(); err != nil {
		if upd, err := exec.Command("apt-get", "update").CombinedOutput(); err != nil {
			t.Fatalf("apt-get update: %v\n%s", err, upd)
		}
		if out, err = install(); err != nil {
			t.Fatalf("apt-get install %s: %v\n%s", strings.Join(missing, " "), err, Tail(string(out), 2000))
		}
		_ = out
	}
}

func write(t T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitHTTP polls url until it answers 200, failing if p exits first.
func waitHTTP(t T, p *Process, url string, timeout time.Duration) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if p.Exited() {
			t.Fatalf("%s exited:\n%s", p.Name, Tail(p.Out.String(), 4000))
		}
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: %s not 200 within %s:\n%s", p.Name, url, timeout, Tail(p.Out.String(), 4000))
}

func waitFile(t T, path string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not appear within %s", path, timeout)
}

func commandVersion(cmd string, args ...string) string {
	out, err := exec.Command(cmd, args...).Output()
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(out))
	if len(f) > 2 {
		return f[2]
	}
	return strings.TrimSpace(string(out))
}

// bridgeConf is the CNI network of the node's Pods: a bridge with host-local addresses
// from the pod CIDR (%s), masquerading what leaves it, and portmap for hostPorts.
const bridgeConf = `{
  "cniVersion": "0.4.0",
  "name": "aagen-e2e",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "%s"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`

// containerdConf is containerd's configuration: its own root, state and socket; the
// sandbox image built locally (nothing can be pulled); restrict_oom_score_adj because
// root here lacks CAP_SYS_RESOURCE (kubelet asks -998 for sandboxes and runc fails
// otherwise); cgroupfs, as kubelet uses on cgroup v1; the CNI configuration directory.
const containerdConf = `version = 2
root = %q
state = %q
[grpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
`

// corefileConf is CoreDNS's configuration: cluster.local on the address %s (port 53),
// ready on 127.0.0.1:%d once the kubernetes plugin has synced, Services and Pods read with
// the kubeconfig %s. Names outside cluster.local are refused (nothing upstream is reachable).
const corefileConf = `cluster.local:53 {
    bind %s
    errors
    ready 127.0.0.1:%d
    kubernetes cluster.local {
        kubeconfig %s
        pods insecure
    }
}
`

// kubeletConf is kubelet's configuration on this machine: cgroup v1 allowed
// (failCgroupV1: false), cgroupfs, swap tolerated, containerd's socket (%s), static Pods
// (%s), the pod CIDR (%s), the cluster DNS (%s), no eviction (the test machine's disk is
// what it is).
const kubeletConf = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://%s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
authorization:
  mode: Webhook
staticPodPath: %s
podCIDR: %s
clusterDomain: cluster.local
clusterDNS: [%s]
resolvConf: /etc/resolv.conf
evictionHard: {}
imageGCHighThresholdPercent: 100
`
