package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// Backend is a generated server running as a local process behind the control plane's
// aggregator, deployed from its project's config/deploy manifests.
type Backend struct {
	Process *Process
	// Port is the server's secure port on 127.0.0.1.
	Port int
	// Objects are the manifests' objects as applied (before the test-only overlay).
	Objects []*unstructured.Unstructured
	// Args are the server's arguments: the Deployment's, plus the local overrides.
	Args []string
	// ServerName is the name the aggregator verifies the server's certificate against (its
	// Service's <name>.<namespace>.svc), and CAFile the CA of that certificate.
	ServerName, CAFile string
}

// Deploy deploys the generated server of the project in dir (its binary built at serverBin)
// behind cp: every object of config/deploy passes a server-side dry run and is applied, with a
// test-only overlay that points the server's Service at a local process (type ExternalName,
// localhost); the server runs with the Deployment's arguments, its ServiceAccount's token for
// delegated authentication and authorization, the generated serving certificate (checked
// against the APIServices' caBundle) and etcdURL; Deploy returns once every APIService is
// Available.
func Deploy(t T, ctx context.Context, cp *ControlPlane, dir, serverBin, etcdURL string, extraArgs ...string) *Backend {
	t.Helper()
	return deploy(t, ctx, cp, dir, serverBin, etcdURL, true, extraArgs...)
}

// DeployWithoutAPIServices is Deploy without applying the APIServices: the server runs
// behind a Service the aggregator could reach, but no group is routed to it (a CRD may
// serve its group still). It returns once the server answers /readyz.
func DeployWithoutAPIServices(t T, ctx context.Context, cp *ControlPlane, dir, serverBin, etcdURL string, extraArgs ...string) *Backend {
	t.Helper()
	return deploy(t, ctx, cp, dir, serverBin, etcdURL, false, extraArgs...)
}

func deploy(t T, ctx context.Context, cp *ControlPlane, dir, serverBin, etcdURL string, withAPIServices bool, extraArgs ...string) *Backend {
	t.Helper()
	kube := kubernetes.NewForConfigOrDie(cp.Admin)
	dyn := dynamic.NewForConfigOrDie(cp.Admin)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery()))

	// Namespaced objects need their namespace, so Namespaces go first.
	objs := LoadKustomization(t, filepath.Join(dir, "config/deploy"))
	deployment := find(t, objs, "Deployment")
	serviceName := deployment.GetName()
	ns := deployment.GetNamespace()
	sa, _, _ := unstructured.NestedString(deployment.Object, "spec", "template", "spec", "serviceAccountName")
	port := FreePort(t)
	for _, o := range objs {
		if o.GetKind() == "Namespace" {
			ApplyObject(t, ctx, dyn, mapper, o, false)
		}
	}
	for _, o := range objs {
		ApplyObject(t, ctx, dyn, mapper, o, true)
	}
	var apiservices []string
	for _, o := range objs {
		switch o.GetKind() {
		case "Service":
			if o.GetName() == serviceName && o.GetNamespace() == ns {
				o = ExternalNameService(o, port)
			}
		case "APIService":
			if !withAPIServices {
				continue
			}
			apiservices = append(apiservices, o.GetName())
			o = o.DeepCopy()
			_ = unstructured.SetNestedField(o.Object, int64(port), "spec", "service", "port")
		}
		ApplyObject(t, ctx, dyn, mapper, o, false)
	}

	tok, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	saKubeconfig := filepath.Join(t.TempDir(), "sa.kubeconfig")
	WriteKubeconfig(t, saKubeconfig, cp.Host, cp.PKI.Path("ca.crt"), "", "", tok.Status.Token)
	certs := filepath.Join(dir, "config/deploy/certs")
	// etcdURL is a test etcd without the deployed etcd's client certificates: drop the
	// Deployment's etcd TLS flags, whose files exist only in the pod. The shutdown delay,
	// for a Service to stop sending a Pod requests, has no Service to wait for here.
	args := ReplaceArgs(DropArgs(DeploymentArgs(t, objs), "--etcd-cafile", "--etcd-certfile", "--etcd-keyfile", "--shutdown-delay-duration"), map[string]string{
		"--secure-port":          strconv.Itoa(port),
		"--tls-cert-file":        filepath.Join(certs, "tls.crt"),
		"--tls-private-key-file": filepath.Join(certs, "tls.key"),
		"--etcd-servers":         etcdURL,
	})
	args = append(args, "--bind-address=127.0.0.1", "--authentication-kubeconfig="+saKubeconfig,
		"--authorization-kubeconfig="+saKubeconfig, "--kubeconfig="+saKubeconfig)
	args = append(args, extraArgs...)
	proc := StartProcess(t, filepath.Base(serverBin), serverBin, args...)

	backend := &Backend{Process: proc, Port: port, Objects: objs, Args: args,
		ServerName: serviceName + "." + ns + ".svc", CAFile: filepath.Join(certs, "ca.crt")}
	if !withAPIServices {
		direct := backendConfig(backend)
		client, err := rest.HTTPClientFor(direct)
		if err != nil {
			t.Fatal(err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			if proc.Exited() {
				return false, fmt.Errorf("%s exited:\n%s", proc.Name, Tail(proc.Out.String(), 4000))
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, direct.Host+"/readyz", nil)
			resp, err := client.Do(req)
			if err != nil {
				return false, nil
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, nil
		}); err != nil {
			t.Fatalf("%s never became ready: %v", proc.Name, err)
		}
		return backend
	}
	gvr := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	for _, name := range apiservices {
		if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			if proc.Exited() {
				return false, fmt.Errorf("%s exited:\n%s", proc.Name, Tail(proc.Out.String(), 4000))
			}
			as, err := dyn.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(as.Object, "status", "conditions")
			for _, c := range conds {
				m := c.(map[string]any)
				if m["type"] == "Available" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		}); err != nil {
			as, _ := dyn.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
			t.Fatalf("APIService %s never became Available: %v\n%v", name, err, as)
		}
	}
	return backend
}

func find(t T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	t.Fatalf("no %s in the manifests", kind)
	return nil
}

// LoadKustomization reads the resources a kustomization.yaml lists, in order.
func LoadKustomization(t T, dir string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, r := range k.Resources {
		f, err := os.ReadFile(filepath.Join(dir, r))
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(f), 4096)
		for {
			var obj map[string]any
			if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", r, err)
			}
			if len(obj) == 0 {
				continue
			}
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
	if len(out) == 0 {
		t.Fatal("no objects in the manifests")
	}
	return out
}

// ApplyObject server-side applies o (as a dry run when dryRun).
func ApplyObject(t T, ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, o *unstructured.Unstructured, dryRun bool) {
	t.Helper()
	gvk := o.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("%s %s: %v", gvk, o.GetName(), err)
	}
	var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = dyn.Resource(mapping.Resource).Namespace(o.GetNamespace())
	}
	opts := metav1.ApplyOptions{FieldManager: "aagen-e2e", Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := ri.Apply(ctx, o.GetName(), o, opts); err != nil {
		t.Fatalf("apply (dry run %v) %s %s/%s: %v", dryRun, gvk.Kind, o.GetNamespace(), o.GetName(), err)
	}
}

// ExternalNameService is the test-only overlay of the server's Service: an ExternalName
// for localhost on the local process's port.
func ExternalNameService(svc *unstructured.Unstructured, port int) *unstructured.Unstructured {
	out := svc.DeepCopy()
	_ = unstructured.SetNestedField(out.Object, map[string]any{
		"type":         "ExternalName",
		"externalName": "localhost",
		"ports":        []any{map[string]any{"name": "https", "port": int64(port)}},
	}, "spec")
	return out
}

// DeploymentArgs returns the server container's args from the manifests.
func DeploymentArgs(t T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(find(t, objs, "Deployment").Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		m := c.(map[string]any)
		var args []string
		for _, a := range m["args"].([]any) {
			args = append(args, a.(string))
		}
		return args
	}
	t.Fatal("the Deployment has no containers")
	return nil
}

// DropArgs returns args without the given --flag=value flags.
func DropArgs(args []string, flags ...string) []string {
	var out []string
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if !slices.Contains(flags, name) {
			out = append(out, a)
		}
	}
	return out
}

// ReplaceArgs sets --flag=value for each flag in set, keeping the others.
func ReplaceArgs(args []string, set map[string]string) []string {
	var out []string
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if _, ok := set[name]; ok {
			continue
		}
		out = append(out, a)
	}
	for k, v := range set {
		out = append(out, fmt.Sprintf("%s=%s", k, v))
	}
	return out
}
