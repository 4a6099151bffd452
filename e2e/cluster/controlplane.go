package cluster

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ControlPlane is a kube-apiserver (with the aggregation layer) and the ClusterRole
// aggregation controller of kube-controller-manager, on an etcd.
type ControlPlane struct {
	PKI        *PKI
	Host       string
	Admin      *rest.Config
	Kubeconfig string
	// APIServer is the kube-apiserver process.
	APIServer *Process
	// AdvertiseAddress is the host address kube-apiserver listens on besides 127.0.0.1 and
	// publishes as the endpoint of the default/kubernetes Service, so that Pods reach it
	// through that Service's cluster IP (KubernetesServiceIP); empty when the host has no
	// such address (see HostIP), and then no Pod can reach kube-apiserver.
	AdvertiseAddress string
}

// ServiceClusterIPRange is the Service cluster IP range of the test control plane, and
// KubernetesServiceIP the cluster IP of its default/kubernetes Service (the first address of
// the range), which its serving certificate names.
const (
	ServiceClusterIPRange = "10.0.0.0/24"
	KubernetesServiceIP   = "10.0.0.1"
)

// HostIP is the first IPv4 address of an interface that is up and is not loopback, a
// Pod network's bridge (cni0) or a Pod's veth: an address of this machine that Pods reach
// through their bridge's gateway. It is nil when there is none.
func HostIP() net.IP {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil
	}
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 || iface.Name == "cni0" || strings.HasPrefix(iface.Name, "veth") {
			continue
		}
		addrs, _ := iface.Addrs()
		for _, a := range addrs {
			if ipnet, ok := a.(*net.IPNet); ok && ipnet.IP.To4() != nil && ipnet.IP.IsGlobalUnicast() {
				return ipnet.IP.To4()
			}
		}
	}
	return nil
}

// StartControlPlane starts kube-apiserver on etcdURL (keys under /kube) with the
// aggregation layer (front proxy) and kube-controller-manager's ClusterRole aggregation
// controller and the controllers named (e.g. "garbage-collector-controller"), and waits for /readyz.
func StartControlPlane(t T, etcdURL string, controllers ...string) *ControlPlane {
	t.Helper()
	// kube-apiserver first: the order in which E2ETools builds them.
	kas := KubeBinary(t, "kube-apiserver")
	kcm := KubeBinary(t, "kube-controller-manager")
	cp := StartAPIServer(t, kas, etcdURL, func(p *PKI) []string {
		return []string{
			"--requestheader-client-ca-file=" + p.Path("front-proxy-ca.crt"),
			"--requestheader-allowed-names=" + FrontProxyClientName,
			"--requestheader-username-headers=X-Remote-User",
			"--requestheader-group-headers=X-Remote-Group",
			"--requestheader-extra-headers-prefix=X-Remote-Extra-",
			"--proxy-client-cert-file=" + p.Path("front-proxy-client.crt"),
			"--proxy-client-key-file=" + p.Path("front-proxy-client.key"),
		}
	})
	StartProcess(t, "kube-controller-manager", kcm,
		"--kubeconfig="+cp.Kubeconfig, "--controllers="+strings.Join(append([]string{"clusterrole-aggregation"}, controllers...), ","), "--leader-elect=false", "--secure-port=0")
	return cp
}

// StartAPIServer starts the kube-apiserver binary kas on etcdURL (keys under /kube), with a
// PKI of its own, client-certificate authentication, RBAC and the flags extra returns for
// that PKI (nil: none), and waits for /readyz. The aggregation tests and aagen conformance's
// oracle run it.
func StartAPIServer(t T, kas, etcdURL string, extra func(p *PKI) []string) *ControlPlane {
	t.Helper()
	dir := t.TempDir()
	hostIP := HostIP()
	sans := []net.IP{net.ParseIP(KubernetesServiceIP)}
	// With an address Pods reach, kube-apiserver listens there too and publishes it as the
	// kubernetes Service's endpoint (the lease reconciler); without one, it stays on
	// 127.0.0.1, which Endpoints may not hold (no reconciler).
	listen := []string{"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none"}
	if hostIP != nil {
		sans = append(sans, hostIP)
		listen = []string{"--bind-address=0.0.0.0", "--advertise-address=" + hostIP.String(), "--endpoint-reconciler-type=lease"}
	}
	p := NewPKI(t, dir, sans...)
	port := FreePort(t)
	host := "https://127.0.0.1:" + strconv.Itoa(port)
	args := append([]string{
		"--etcd-servers=" + etcdURL, "--etcd-prefix=/kube", fmt.Sprintf("--secure-port=%d", port)}, listen...)
	args = append(args,
		"--tls-cert-file="+p.Path("apiserver.crt"), "--tls-private-key-file="+p.Path("apiserver.key"),
		"--client-ca-file="+p.Path("ca.crt"),
		"--service-account-key-file="+p.Path("sa.pub"), "--service-account-signing-key-file="+p.Path("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range="+ServiceClusterIPRange,
		"--authorization-mode=RBAC",
	)
	if extra != nil {
		args = append(args, extra(p)...)
	}
	proc := StartProcess(t, "kube-apiserver", kas, args...)
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	WriteKubeconfig(t, kubeconfig, host, p.Path("ca.crt"), p.Path("admin.crt"), p.Path("admin.key"), "")
	admin, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	proc.WaitReady(t, admin, 3*time.Minute)
	cp := &ControlPlane{PKI: p, Host: host, Admin: admin, Kubeconfig: kubeconfig, APIServer: proc}
	if hostIP != nil {
		cp.AdvertiseAddress = hostIP.String()
	}
	return cp
}
