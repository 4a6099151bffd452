package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// TestNodeRunsPods starts the single-node cluster of cluster.StartNode (kubelet on
// containerd and runc, bridge CNI, kube-scheduler, kube-proxy) on kube-apiserver, runs a
// Pod of an image built here from a static binary, and reaches it through its Service's
// cluster IP (kube-proxy's iptables rules) from the host, as kube-apiserver's aggregator
// reaches an APIService's Service. It is the ground the deploy tests of the emitted
// manifests stand on.
func TestNodeRunsPods(t *testing.T) {
	skipShort(t)
	runsToolsAlone(t)
	cp, _ := startControlPlane(t)
	node := cluster.StartNode(t, cp)
	// The deadline starts once the node is up: on a cold cache its binaries take minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	kube := kubernetes.NewForConfigOrDie(cp.Admin)

	const image = "localhost/aagen-e2e/hello:v1"
	node.Import(t, image, cluster.StaticBinary(t, "./e2e/tools/podbin", t.TempDir()), "serve", ":8080")
	const ns = "hello"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns, Labels: map[string]string{"app": "hello"}},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{
				Name: "hello", Image: image, ImagePullPolicy: corev1.PullNever,
				Ports:          []corev1.ContainerPort{{ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1},
			}},
		},
	}
	// The namespace's default ServiceAccount comes from kube-controller-manager's
	// serviceaccount controller; a Pod created before it exists is refused.
	if err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("creating the Pod: %v", err)
	}
	svc, err := kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: ns},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "hello"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err = kube.CoreV1().Pods(ns).Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("Pod not Ready within 2 minutes: phase %s, conditions %+v, containers %+v", got.Status.Phase, got.Status.Conditions, got.Status.ContainerStatuses)
	}
	t.Logf("Pod %s/%s Ready on %s at %s", ns, got.Name, got.Spec.NodeName, got.Status.PodIP)
	if got.Spec.NodeName != node.Name || !strings.HasPrefix(got.Status.PodIP, "10.244.0.") {
		t.Errorf("Pod on node %q at %s, want node %s and an address of %s", got.Spec.NodeName, got.Status.PodIP, node.Name, node.PodCIDR)
	}
	url := fmt.Sprintf("http://%s:80/", svc.Spec.ClusterIP)
	var body, status string
	// kube-proxy writes the Service's rules once the EndpointSlice controller has listed the
	// Pod; on a loaded machine that took over a minute once (h26deploy, load ~15).
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		resp, err := (&http.Client{Timeout: 3 * time.Second}).Get(url)
		if err != nil {
			body, status = err.Error(), "error"
			return false, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		status = resp.Status
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		// A cluster IP kube-proxy has no rule for goes out by the default route, where
		// something may answer port 80 (hence the status, which podbin never fails with).
		t.Fatalf("GET %s (the Service's cluster IP): %s %q", url, status, body)
	}
	if want := "hello from hello\n"; body != want {
		t.Errorf("GET %s: %q, want %q (the Pod's host name)", url, body, want)
	}
	t.Logf("Service %s/hello at %s answered %q through kube-proxy", ns, svc.Spec.ClusterIP, strings.TrimSpace(body))

	// Cluster DNS: in the Pod, the Service's name resolves to its cluster IP, by a partial
	// name (the Pod's search path) and by its full name, through kubelet's clusterDNS
	// (CoreDNS). The bare name is the Pod's own host name, which its /etc/hosts answers.
	for _, name := range []string{"hello.hello", "hello.hello.svc", "hello.hello.svc.cluster.local."} {
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(fmt.Sprintf("http://%s:80/resolve/%s", svc.Spec.ClusterIP, name))
		if err != nil {
			t.Fatalf("resolving %s in the Pod: %v", name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := strings.TrimSpace(string(b)); resp.StatusCode != http.StatusOK || got != svc.Spec.ClusterIP {
			t.Errorf("in the Pod, %s resolves to %s %q, want the Service's cluster IP %s", name, resp.Status, got, svc.Spec.ClusterIP)
		}
	}
	t.Logf("in the Pod, hello.hello, hello.hello.svc and hello.hello.svc.cluster.local. resolve to %s (cluster DNS at %s)", svc.Spec.ClusterIP, node.DNS)
}
