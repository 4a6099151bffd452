package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// TestMetricsTop serves k8s.io/metrics v0.37.2's metrics/v1beta1, copied unchanged but for
// its import path as TestCorpus copies it, from a backend of the user's, as metrics-server
// serves it: `aagen generate --backend PodMetrics.metrics.k8s.io,NodeMetrics.metrics.k8s.io`
// (the package's kinds are +genclient:readonly and carry no +aagen:backend). The test's
// backend.go answers PodMetrics and NodeMetrics for the Pods and Nodes of a real
// kube-apiserver, read through client-go, with usage computed from their names. The server is
// deployed behind kube-apiserver's aggregator (the APIService v1beta1.metrics.k8s.io of the
// generated manifests), and kubectl top pod (a namespace, one pod) and kubectl top node print
// the figures the backend computes; the generated clientset's PodMetricses and NodeMetricses
// ask for pods and nodes (+resourceName) and get 200.
func TestMetricsTop(t *testing.T) {
	skipShort(t)
	runsToolsAlone(t)
	cp, etcdURL := startControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	kube := kubernetes.NewForConfigOrDie(cp.Admin)

	// Pods and a Node as objects: nothing runs them (metrics-server only lists them). The
	// backend's usage of container i of pod p is 10*len(p)+5*i millicores and
	// 16*(len(p)+i) Mi; of node n, 100*len(n) millicores and 256*len(n) Mi.
	const ns, other = "shop", "elsewhere"
	pods := map[string][]string{"web": {"nginx", "sidecar"}, "database": {"postgres"}}
	for _, n := range []string{ns, other} {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The ServiceAccount admission plugin wants the namespace's default ServiceAccount
		// (no kube-controller-manager creates it here).
		if _, err := kube.CoreV1().ServiceAccounts(n).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createPod := func(namespace, name string, containers []string) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{AutomountServiceAccountToken: ptrTo(false)}}
		for _, c := range containers {
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "registry.example/" + c})
		}
		if _, err := kube.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name, containers := range pods {
		createPod(ns, name, containers)
	}
	createPod(other, "stray", []string{"busybox"})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Status: corev1.NodeStatus{
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("6Gi")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("6Gi")},
	}}
	if _, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := kube.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{}); err != nil || got.Status.Allocatable.Memory().String() != "6Gi" {
		t.Fatalf("node-a's allocatable: %v %v", err, got)
	}

	// The user's project: the published package unchanged (import path aside), generated
	// with both kinds served from the user's backend.
	dir := t.TempDir()
	run(t, dir, aagen(t), "init", "--domain", "example.com", "--module", "example.com/corpus")
	metrics := corpusPackage{Module: corpusMetrics, Pkgs: []string{"pkg/apis/metrics", "pkg/apis/metrics/v1beta1"}}
	copyPackages(t, downloadModule(t, corpusMetrics), modulePath(corpusMetrics), dir, corpusDir(metrics), metrics.Pkgs, map[string]bool{}, nil, nil)
	run(t, dir, "go", "mod", "tidy")
	apis := "./" + corpusDir(metrics) + "/pkg/apis/metrics/..."
	out := run(t, dir, aagen(t), "generate", "--name", "metrics-server",
		"--backend", "PodMetrics.metrics.k8s.io,NodeMetrics.metrics.k8s.io", apis)
	if strings.Contains(out, "+genclient:readonly") {
		t.Errorf("generate warns that the read-only kinds are served from etcd although they are served from a backend:\n%s", out)
	}
	for _, f := range []string{"podmetrics", "nodemetrics"} {
		p := filepath.Join(dir, "pkg/registry/metrics", f, "backend.go")
		if b, err := os.ReadFile(p); err != nil || !strings.Contains(string(b), "not implemented yet") {
			t.Fatalf("aagen generate did not create %s with NewBackend: %v\n%s", p, err, b)
		}
	}
	metricsImport := "example.com/corpus/" + corpusDir(metrics) + "/pkg/apis/metrics"
	fill := strings.NewReplacer("METRICS_IMPORT", strconv.Quote(metricsImport), "KUBECONFIG_PATH", strconv.Quote(cp.Kubeconfig)).Replace
	writeFile(t, filepath.Join(dir, "pkg/registry/metrics/podmetrics/backend.go"), fill(podMetricsBackend))
	writeFile(t, filepath.Join(dir, "pkg/registry/metrics/nodemetrics/backend.go"), fill(nodeMetricsBackend))
	if err := os.MkdirAll(filepath.Join(dir, "cmd/clientcheck"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "cmd/clientcheck/main.go"), clientCheckProgram)
	run(t, dir, "go", "mod", "tidy")
	serverBin := filepath.Join(dir, "metrics-server")
	run(t, dir, "go", "build", "-o", serverBin, "./cmd/metrics-server")
	clientBin := filepath.Join(dir, "clientcheck")
	run(t, dir, "go", "build", "-o", clientBin, "./cmd/clientcheck")

	// Deployed behind the aggregator: its APIService v1beta1.metrics.k8s.io is Available.
	cluster.Deploy(t, ctx, cp, dir, serverBin, etcdURL)

	t.Run("discovery and writes", func(t *testing.T) {
		// The backends are Readers: get and list, as metrics-server serves them; writes 405.
		list, err := kube.Discovery().ServerResourcesForGroupVersion("metrics.k8s.io/v1beta1")
		if err != nil {
			t.Fatal(err)
		}
		verbs := map[string]string{}
		for _, r := range list.APIResources {
			verbs[r.Name] = strings.Join(r.Verbs, ",")
		}
		if want := map[string]string{"pods": "get,list", "nodes": "get,list"}; !reflect.DeepEqual(verbs, want) {
			t.Errorf("discovery of metrics.k8s.io/v1beta1 through kube-apiserver: %v, want %v", verbs, want)
		}
		manifest := `{"apiVersion":"metrics.k8s.io/v1beta1","kind":"PodMetrics","metadata":{"name":"web","namespace":"shop"},"timestamp":"2026-01-01T00:00:00Z","window":"30s","containers":[]}`
		if out, err := kubectl(t, cp.Kubeconfig, manifest, "create", "-f", "-"); err == nil || !strings.Contains(out, "MethodNotAllowed") {
			t.Errorf("kubectl create of a PodMetrics: want 405 MethodNotAllowed, got %v\n%s", err, out)
		}
	})

	t.Run("kubectl top pod", func(t *testing.T) {
		want := map[string]map[string]string{
			"web":      {"CPU(cores)": "65m", "MEMORY(bytes)": "112Mi"},
			"database": {"CPU(cores)": "80m", "MEMORY(bytes)": "128Mi"},
		}
		topTable(t, cp.Kubeconfig, want, "top", "pod", "-n", ns)
		topTable(t, cp.Kubeconfig, map[string]map[string]string{"web": want["web"]}, "top", "pod", "web", "-n", ns)
		topTable(t, cp.Kubeconfig, map[string]map[string]string{"database": want["database"]}, "top", "pod", "-n", ns, "-l", "app=database")
		topTable(t, cp.Kubeconfig, map[string]map[string]string{"stray": {"CPU(cores)": "50m", "MEMORY(bytes)": "80Mi"}}, "top", "pod", "-n", other)
		if out, err := kubectl(t, cp.Kubeconfig, "", "top", "pod", "nowhere", "-n", ns); err == nil || !strings.Contains(out, "NotFound") {
			t.Errorf("kubectl top pod of a pod that does not exist: %v\n%s", err, out)
		}
	})

	t.Run("kubectl top node", func(t *testing.T) {
		topTable(t, cp.Kubeconfig, map[string]map[string]string{
			"node-a": {"CPU(cores)": "600m", "CPU(%)": "30%", "MEMORY(bytes)": "1536Mi", "MEMORY(%)": "25%"},
		}, "top", "node")
	})

	t.Run("generated clientset", func(t *testing.T) {
		out := run(t, dir, clientBin, cp.Kubeconfig, ns, "web")
		var got clientCheck
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		want := clientCheck{
			Requests: []string{
				"GET /apis/metrics.k8s.io/v1beta1/namespaces/shop/pods 200",
				"GET /apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/web 200",
				"GET /apis/metrics.k8s.io/v1beta1/nodes 200",
				"GET /apis/metrics.k8s.io/v1beta1/nodes/node-a 200",
			},
			Pods: map[string]map[string][2]string{
				"web":      {"nginx": {"30m", "48Mi"}, "sidecar": {"35m", "64Mi"}},
				"database": {"postgres": {"80m", "128Mi"}},
			},
			Got:   map[string][2]string{"nginx": {"30m", "48Mi"}, "sidecar": {"35m", "64Mi"}},
			Nodes: map[string][2]string{"node-a": {"600m", "1536Mi"}},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("the generated clientset:\n got %+v\nwant %+v", got, want)
		}
	})
}

// topTable runs kubectl with args and checks its table: one row per name of want, with the
// columns want gives (by header).
func topTable(t *testing.T, kubeconfig string, want map[string]map[string]string, args ...string) {
	t.Helper()
	var out string
	// The aggregator's discovery of metrics.k8s.io may lag the APIService's Available.
	if err := wait.PollUntilContextTimeout(context.Background(), time.Second, time.Minute, true, func(context.Context) (bool, error) {
		var err error
		out, err = kubectl(t, kubeconfig, "", args...)
		return err == nil, nil
	}); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	header := strings.Fields(lines[0])
	got := map[string]map[string]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		row := map[string]string{}
		for i, h := range header[1:] {
			if i+1 < len(f) {
				row[h] = f[i+1]
			}
		}
		got[f[0]] = row
	}
	if len(got) != len(want) {
		t.Errorf("kubectl %s: rows %v, want %v\n%s", strings.Join(args, " "), got, want, out)
	}
	for name, cols := range want {
		for h, v := range cols {
			if got[name][h] != v {
				t.Errorf("kubectl %s: %s %s = %q, want %q\n%s", strings.Join(args, " "), name, h, got[name][h], v, out)
			}
		}
	}
}

// clientCheck is what cmd/clientcheck prints: the requests it sent with their answers'
// codes, and the usage it read (CPU and memory by container, pod or node).
type clientCheck struct {
	Requests []string
	Pods     map[string]map[string][2]string
	Got      map[string][2]string
	Nodes    map[string][2]string
}

// podMetricsBackend is the test's backend.go of PodMetrics (METRICS_IMPORT: the metrics
// internal package's import path, KUBECONFIG_PATH: kube-apiserver's kubeconfig): the PodMetrics of every Pod
// kube-apiserver has, as metrics-server answers them (the pod's name, namespace, labels and
// creation time; one usage per container), with usage computed from the pod's name.
const podMetricsBackend = `package podmetrics

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	metrics METRICS_IMPORT
	"github.com/aagen-dev/aagen/runtime/backend"
)

const kubeconfig = KUBECONFIG_PATH

func NewBackend() (backend.Reader[*metrics.PodMetrics], error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Backend{kube: kube}, nil
}

type Backend struct{ kube kubernetes.Interface }

func (b *Backend) Get(ctx context.Context, namespace, name string) (*metrics.PodMetrics, error) {
	p, err := b.kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("pod %s/%s: %w", namespace, name, backend.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return podMetrics(p), nil
}

func (b *Backend) List(ctx context.Context, namespace string) ([]*metrics.PodMetrics, error) {
	pods, err := b.kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []*metrics.PodMetrics
	for i := range pods.Items {
		out = append(out, podMetrics(&pods.Items[i]))
	}
	return out, nil
}

// podMetrics: container i of pod p uses 10*len(p)+5*i millicores and 16*(len(p)+i) Mi.
func podMetrics(p *corev1.Pod) *metrics.PodMetrics {
	m := &metrics.PodMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, CreationTimestamp: p.CreationTimestamp, ResourceVersion: p.ResourceVersion},
		Timestamp:  p.CreationTimestamp,
		Window:     metav1.Duration{Duration: 30 * time.Second},
	}
	for i, c := range p.Spec.Containers {
		m.Containers = append(m.Containers, metrics.ContainerMetrics{Name: c.Name, Usage: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(10*len(p.Name)+5*i), resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(int64(16*(len(p.Name)+i))<<20, resource.BinarySI),
		}})
	}
	return m
}
`

// nodeMetricsBackend is the test's backend.go of NodeMetrics (placeholders as
// podMetricsBackend's): the NodeMetrics of every Node kube-apiserver has.
const nodeMetricsBackend = `package nodemetrics

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	metrics METRICS_IMPORT
	"github.com/aagen-dev/aagen/runtime/backend"
)

const kubeconfig = KUBECONFIG_PATH

func NewBackend() (backend.Reader[*metrics.NodeMetrics], error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Backend{kube: kube}, nil
}

type Backend struct{ kube kubernetes.Interface }

func (b *Backend) Get(ctx context.Context, _, name string) (*metrics.NodeMetrics, error) {
	n, err := b.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("node %s: %w", name, backend.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return nodeMetrics(n), nil
}

func (b *Backend) List(ctx context.Context, _ string) ([]*metrics.NodeMetrics, error) {
	nodes, err := b.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []*metrics.NodeMetrics
	for i := range nodes.Items {
		out = append(out, nodeMetrics(&nodes.Items[i]))
	}
	return out, nil
}

// nodeMetrics: node n uses 100*len(n) millicores and 256*len(n) Mi.
func nodeMetrics(n *corev1.Node) *metrics.NodeMetrics {
	return &metrics.NodeMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, CreationTimestamp: n.CreationTimestamp, ResourceVersion: n.ResourceVersion},
		Timestamp:  n.CreationTimestamp,
		Window:     metav1.Duration{Duration: 30 * time.Second},
		Usage: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(100*len(n.Name)), resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(int64(256*len(n.Name))<<20, resource.BinarySI),
		},
	}
}
`

// clientCheckProgram lists and gets PodMetrics and NodeMetrics with the project's generated
// clientset (args: kubeconfig, namespace, a pod's name) and prints a clientCheck.
const clientCheckProgram = `package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"example.com/corpus/pkg/generated/clientset/versioned"
)

type recorder struct {
	next     http.RoundTripper
	requests *[]string
}

func (r recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err == nil {
		*r.requests = append(*r.requests, fmt.Sprintf("%s %s %d", req.Method, req.URL.Path, resp.StatusCode))
	}
	return resp, err
}

func main() {
	if err := check(os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func check(kubeconfig, ns, pod string) error {
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	var out struct {
		Requests []string
		Pods     map[string]map[string][2]string
		Got      map[string][2]string
		Nodes    map[string][2]string
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return recorder{rt, &out.Requests} })
	c := versioned.NewForConfigOrDie(cfg).MetricsV1beta1()
	pods, err := c.PodMetricses(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	out.Pods = map[string]map[string][2]string{}
	for _, p := range pods.Items {
		out.Pods[p.Name] = map[string][2]string{}
		for _, ct := range p.Containers {
			out.Pods[p.Name][ct.Name] = [2]string{ct.Usage.Cpu().String(), ct.Usage.Memory().String()}
		}
	}
	got, err := c.PodMetricses(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get: %w", err)
	}
	out.Got = map[string][2]string{}
	for _, ct := range got.Containers {
		out.Got[ct.Name] = [2]string{ct.Usage.Cpu().String(), ct.Usage.Memory().String()}
	}
	nodes, err := c.NodeMetricses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	out.Nodes = map[string][2]string{}
	for _, n := range nodes.Items {
		out.Nodes[n.Name] = [2]string{n.Usage.Cpu().String(), n.Usage.Memory().String()}
		if _, err := c.NodeMetricses().Get(ctx, n.Name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("get node: %w", err)
		}
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
`
