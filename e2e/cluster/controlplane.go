package cluster

import (
	"fmt"
	"path/filepath"
	"strconv"
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
}

// StartControlPlane starts kube-apiserver on etcdURL (keys under /kube) with the
// aggregation layer (front proxy) and kube-controller-manager's ClusterRole aggregation
// controller, and waits for /readyz.
func StartControlPlane(t T, etcdURL string) *ControlPlane {
	t.Helper()
	kcm := KubeBinary(t, "kube-controller-manager")
	cp := StartAPIServer(t, KubeBinary(t, "kube-apiserver"), etcdURL, func(p *PKI) []string {
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
		"--kubeconfig="+cp.Kubeconfig, "--controllers=clusterrole-aggregation", "--leader-elect=false", "--secure-port=0")
	return cp
}

// StartAPIServer starts the kube-apiserver binary kas on etcdURL (keys under /kube), with a
// PKI of its own, client-certificate authentication, RBAC and the flags extra returns for
// that PKI (nil: none), and waits for /readyz. The aggregation tests and aagen conformance's
// oracle run it.
func StartAPIServer(t T, kas, etcdURL string, extra func(p *PKI) []string) *ControlPlane {
	t.Helper()
	dir := t.TempDir()
	p := NewPKI(t, dir)
	port := FreePort(t)
	host := "https://127.0.0.1:" + strconv.Itoa(port)
	args := []string{
		"--etcd-servers=" + etcdURL, "--etcd-prefix=/kube",
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port), "--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--tls-cert-file=" + p.Path("apiserver.crt"), "--tls-private-key-file=" + p.Path("apiserver.key"),
		"--client-ca-file=" + p.Path("ca.crt"),
		"--service-account-key-file=" + p.Path("sa.pub"), "--service-account-signing-key-file=" + p.Path("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=RBAC",
	}
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
	return &ControlPlane{PKI: p, Host: host, Admin: admin, Kubeconfig: kubeconfig, APIServer: proc}
}
