package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/aagen-dev/aagen/runtime/etcd"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// TestAggregation deploys the example's generated manifests to a real kube-apiserver,
// runs the generated server locally with the Deployment's arguments, points the Service at
// it, and uses the API through kube-apiserver's aggregator with client-go and kubectl.
func TestAggregation(t *testing.T) {
	skipShort(t)
	runsTools(t)
	// The example, generated and built like a user would.
	dir, serverBin := buildExample(t)

	// etcd and the control plane.
	e, err := etcd.Start(context.Background(), etcd.Config{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	cp := cluster.StartControlPlane(t, e.ClientURL())
	// The deadline starts once the control plane is up: on a cold cache, building
	// kube-apiserver and kube-controller-manager takes many minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	kube := kubernetes.NewForConfigOrDie(cp.Admin)
	dyn := dynamic.NewForConfigOrDie(cp.Admin)

	// Every object of the manifests passes a server-side dry run and is applied; the
	// Service points at the local server (a test-only overlay), which runs with the
	// Deployment's arguments until the APIService is Available.
	backend := cluster.Deploy(t, ctx, cp, dir, serverBin, e.ClientURL())

	t.Run("discovery", func(t *testing.T) {
		list, err := kube.Discovery().ServerResourcesForGroupVersion("marina.example.com/v1alpha1")
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, r := range list.APIResources {
			names[r.Name] = true
		}
		if !names["boats"] || !names["docks"] || !names["boats/status"] {
			t.Errorf("discovery through kube-apiserver: %v", names)
		}
		if out, err := kubectl(t, cp.Kubeconfig, "", "api-resources", "--api-group=marina.example.com"); err != nil ||
			!strings.Contains(out, "boats") || !strings.Contains(out, "docks") {
			t.Errorf("kubectl api-resources: %v\n%s", err, out)
		}
	})

	boats := schema.GroupVersionResource{Group: "marina.example.com", Version: "v1alpha1", Resource: "boats"}
	ns := "harbour"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("crud watch apply", func(t *testing.T) {
		bc := dyn.Resource(boats).Namespace(ns)
		w, err := bc.Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if _, err := bc.Create(ctx, boat("aurora", map[string]any{"rig": "sloop"}, 12), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Added {
				t.Errorf("watch: %s", ev.Type)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no watch event through the aggregator")
		}
		if got, err := bc.Get(ctx, "aurora", metav1.GetOptions{}); err != nil || got.GetName() != "aurora" {
			t.Fatalf("get through the aggregator: %v", err)
		}
		list, err := bc.List(ctx, metav1.ListOptions{LabelSelector: "rig=sloop"})
		if err != nil || len(list.Items) != 1 {
			t.Fatalf("list: %v %d", err, len(list.Items))
		}
		applyBody := []byte(`{"apiVersion":"marina.example.com/v1alpha1","kind":"Boat","metadata":{"name":"aurora"},"spec":{"dock":"east","lengthMeters":12}}`)
		got, err := bc.Patch(ctx, "aurora", types.ApplyPatchType, applyBody, metav1.PatchOptions{FieldManager: "e2e-apply", Force: ptrTo(true)})
		if err != nil {
			t.Fatalf("server-side apply: %v", err)
		}
		if dock, _, _ := unstructured.NestedString(got.Object, "spec", "dock"); dock != "east" {
			t.Fatalf("server-side apply: dock=%q", dock)
		}
		if out, err := kubectl(t, cp.Kubeconfig, "", "get", "boats", "-n", ns); err != nil || !strings.Contains(out, "aurora") {
			t.Errorf("kubectl get boats: %v\n%s", err, out)
		}
		if err := bc.Delete(ctx, "aurora", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := bc.Get(ctx, "aurora", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get after delete: %v", err)
		}
	})

	t.Run("computed kind", func(t *testing.T) { computedKind(t, cp.Kubeconfig, ns) })

	t.Run("rbac through delegated authorization", func(t *testing.T) {
		for user, role := range map[string]string{"alice": "edit", "victor": "view"} {
			rb := &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}},
			}
			if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// kube-controller-manager aggregates the API's ClusterRoles into edit and view.
		for _, role := range []string{"edit", "view"} {
			if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				cr, err := kube.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				for _, r := range cr.Rules {
					for _, g := range r.APIGroups {
						if g == "marina.example.com" {
							return true, nil
						}
					}
				}
				return false, nil
			}); err != nil {
				t.Fatalf("ClusterRole %s never aggregated the marina rules: %v", role, err)
			}
		}
		as := func(user string) dynamic.ResourceInterface {
			return dynamic.NewForConfigOrDie(cp.PKI.User(t, cp.Admin, user)).Resource(boats).Namespace(ns)
		}
		if _, err := as("nobody").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("user without binding: want 403, got %v", err)
		}
		if _, err := as("alice").Create(ctx, boat("borealis", nil, 9), metav1.CreateOptions{}); err != nil {
			t.Errorf("edit user create: %v", err)
		}
		if _, err := as("victor").Get(ctx, "borealis", metav1.GetOptions{}); err != nil {
			t.Errorf("view user get: %v", err)
		}
		if _, err := as("victor").Create(ctx, boat("cygnus", nil, 9), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("view user create: want 403, got %v", err)
		}
		if err := as("victor").Delete(ctx, "borealis", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("view user delete: want 403, got %v", err)
		}
	})

	// The 403s above may come from kube-apiserver's own RBAC before it proxies anything; here
	// requests go straight to the generated server with the aggregator's front-proxy
	// credentials, so only its delegated authorization (a SubjectAccessReview) decides.
	t.Run("delegated authorization at the generated server", func(t *testing.T) {
		direct := func(cfg *rest.Config) dynamic.ResourceInterface {
			return dynamic.NewForConfigOrDie(cfg).Resource(boats).Namespace(ns)
		}
		sarsBefore := delegatedAuthzRequests(t, cp.PKI.FrontProxy(backend, "admin", "system:masters"))

		_, err := direct(cp.PKI.FrontProxy(backend, "nobody", "system:authenticated")).List(ctx, metav1.ListOptions{})
		wantForbidden(t, "user without binding, list", err, `User "nobody" cannot list resource "boats" in API group "marina.example.com" in the namespace "harbour"`)
		if after := delegatedAuthzRequests(t, cp.PKI.FrontProxy(backend, "admin", "system:masters")); after <= sarsBefore {
			t.Errorf("apiserver_delegated_authz_request_total of the generated server: %v before, %v after a new user's request: no SubjectAccessReview was sent", sarsBefore, after)
		}

		alice := direct(cp.PKI.FrontProxy(backend, "alice", "system:authenticated"))
		if list, err := alice.List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("edit user, list: %v", err)
		} else if len(list.Items) != 1 || list.Items[0].GetName() != "borealis" {
			t.Errorf("edit user, list: %d items", len(list.Items))
		}
		if _, err := alice.Create(ctx, boat("dorado", nil, 7), metav1.CreateOptions{}); err != nil {
			t.Errorf("edit user, create: %v", err)
		}
		victor := direct(cp.PKI.FrontProxy(backend, "victor", "system:authenticated"))
		if _, err := victor.Get(ctx, "dorado", metav1.GetOptions{}); err != nil {
			t.Errorf("view user, get: %v", err)
		}
		_, err = victor.Create(ctx, boat("eridanus", nil, 7), metav1.CreateOptions{})
		wantForbidden(t, "view user, create", err, `User "victor" cannot create resource "boats"`)

		// No second priority and fairness behind kube-apiserver's: the generated server,
		// run with its Deployment's arguments, answers without APF's response headers.
		// (alice's requests are not exempt: kube-apiserver's APF answers them with the headers.)
		aliceCfg := cp.PKI.FrontProxy(backend, "alice", "system:authenticated")
		client, err := rest.HTTPClientFor(aliceCfg)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Get(aliceCfg.Host + "/apis/marina.example.com/v1alpha1/namespaces/" + ns + "/boats")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("direct list as alice: %d", resp.StatusCode)
		}
		for _, h := range []string{"X-Kubernetes-Pf-Flowschema-Uid", "X-Kubernetes-Pf-Prioritylevel-Uid"} {
			if v := resp.Header.Get(h); v != "" {
				t.Errorf("the generated server runs priority and fairness: %s: %s", h, v)
			}
		}
		// The same request through kube-apiserver, whose APF does set them.
		viaKube := rest.CopyConfig(cp.Admin)
		viaKube.Impersonate = rest.ImpersonationConfig{UserName: "alice", Groups: []string{"system:authenticated"}}
		kubeClient, err := rest.HTTPClientFor(viaKube)
		if err != nil {
			t.Fatal(err)
		}
		resp, err = kubeClient.Get(viaKube.Host + "/apis/marina.example.com/v1alpha1/namespaces/" + ns + "/boats")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("X-Kubernetes-Pf-Flowschema-Uid") == "" {
			t.Errorf("kube-apiserver's answer has no APF headers (%d): the check above proves nothing", resp.StatusCode)
		}

		// The same headers from a certificate the request-header CA did not sign are not
		// believed: the server authenticates the certificate's own name instead.
		_, err = direct(cp.PKI.UntrustedFrontProxy(t, backend, "alice", "system:authenticated")).List(ctx, metav1.ListOptions{})
		wantForbidden(t, "X-Remote-User from an untrusted certificate", err, `User "`+cluster.FrontProxyClientName+`" cannot list resource "boats"`)
	})

	// The manifests' FlowSchema gives what the server asks of kube-apiserver on every
	// request's path (delegated SubjectAccessReviews and TokenReviews, sent with its
	// ServiceAccount's token) the priority level workload-high, not workload-low, which all
	// service accounts share: kube-apiserver's flow-control metrics count the
	// SubjectAccessReviews the server sent under it, and its answer to a TokenReview sent
	// with the server's token names the schema and the level.
	t.Run("priority and fairness of delegated auth", func(t *testing.T) {
		var manifest *unstructured.Unstructured
		for _, o := range backend.Objects {
			if o.GetKind() == "FlowSchema" {
				manifest = o
			}
		}
		if manifest == nil {
			t.Fatal("the deploy manifests have no FlowSchema")
		}
		fs, err := kube.FlowcontrolV1().FlowSchemas().Get(ctx, manifest.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		level, err := kube.FlowcontrolV1().PriorityLevelConfigurations().Get(ctx, fs.Spec.PriorityLevelConfiguration.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if level.Name != "workload-high" {
			t.Errorf("the FlowSchema's priority level is %s, want workload-high", level.Name)
		}
		dispatched := func() float64 {
			t.Helper()
			body, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
			if err != nil {
				t.Fatal(err)
			}
			prefix := fmt.Sprintf(`apiserver_flowcontrol_dispatched_requests_total{flow_schema=%q,priority_level=%q} `, fs.Name, level.Name)
			for _, line := range strings.Split(string(body), "\n") {
				if v, ok := strings.CutPrefix(line, prefix); ok {
					f, err := strconv.ParseFloat(v, 64)
					if err != nil {
						t.Fatal(err)
					}
					return f
				}
			}
			return 0
		}
		before := dispatched()
		// A user the server has not seen: its authorizer's cache cannot answer.
		_, err = dynamic.NewForConfigOrDie(cp.PKI.FrontProxy(backend, "flow-probe", "system:authenticated")).Resource(boats).Namespace(ns).List(ctx, metav1.ListOptions{})
		wantForbidden(t, "a new user, list", err, `User "flow-probe" cannot list resource "boats"`)
		if after := dispatched(); after <= before {
			t.Errorf("kube-apiserver dispatched %v requests under the FlowSchema %s before and %v after the server asked a SubjectAccessReview: its reviews are not classified by it", before, fs.Name, after)
		}

		var sa *flowcontrolv1.ServiceAccountSubject
		for _, r := range fs.Spec.Rules {
			for _, s := range r.Subjects {
				if s.ServiceAccount != nil {
					sa = s.ServiceAccount
				}
			}
		}
		if sa == nil {
			t.Fatalf("the FlowSchema %s has no ServiceAccount subject: %+v", fs.Name, fs.Spec.Rules)
		}
		tok, err := kube.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		asServer := rest.AnonymousClientConfig(cp.Admin)
		asServer.BearerToken = tok.Status.Token
		client, err := rest.HTTPClientFor(asServer)
		if err != nil {
			t.Fatal(err)
		}
		review := fmt.Sprintf(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":%q}}`, tok.Status.Token)
		resp, err := client.Post(asServer.Host+"/apis/authentication.k8s.io/v1/tokenreviews", "application/json", strings.NewReader(review))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Errorf("a TokenReview as the server's ServiceAccount: %d, want 201", resp.StatusCode)
		}
		if got := resp.Header.Get("X-Kubernetes-Pf-Flowschema-Uid"); got != string(fs.UID) {
			t.Errorf("a TokenReview as the server's ServiceAccount was classified by the FlowSchema %q, want %s's %s", got, fs.Name, fs.UID)
		}
		if got := resp.Header.Get("X-Kubernetes-Pf-Prioritylevel-Uid"); got != string(level.UID) {
			t.Errorf("a TokenReview as the server's ServiceAccount went to the priority level %q, want %s's %s", got, level.Name, level.UID)
		}
	})

	// A clientset of the generated project, in protobuf, for every kind (protobuf_test.go).
	t.Run("protobuf clients", func(t *testing.T) {
		if out, err := kubectl(t, cp.Kubeconfig, "", "create", "namespace", "protobuf"); err != nil {
			t.Fatalf("kubectl create namespace: %v\n%s", err, out)
		}
		protobufClients(t, cp, dir, "protobuf")
	})

	// A protobuf-only clientset through kube-apiserver: create, get, list, watch and delete
	// a Boat, read equal by a JSON client, from the example's own TestProtobufServed.
	t.Run("protobuf clientset through kube-apiserver", func(t *testing.T) {
		runExampleTest(t, ctx, cp, dir, ns, "TestProtobufServed")
	})

	// Last: it ends with the generated server's shutdown (subresources_test.go).
	t.Run("imperative subresources", func(t *testing.T) { testSubresources(t, ctx, cp, backend, dir, ns) })
}

// wantForbidden fails t unless err is a 403 whose message contains want.
func wantForbidden(t *testing.T, what string, err error, want string) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Errorf("%s: want 403, got %v", what, err)
		return
	}
	if msg := err.Error(); !strings.Contains(msg, want) {
		t.Errorf("%s: 403 message %q does not contain %q", what, msg, want)
	}
}

// delegatedAuthzRequests sums the apiserver_delegated_authz_request_total counters (the
// SubjectAccessReviews sent, by answer code) of the server cfg points at.
func delegatedAuthzRequests(t *testing.T, cfg *rest.Config) float64 {
	t.Helper()
	code, body := httpGet(t, cfg, "/metrics")
	if code != 200 {
		t.Fatalf("metrics of the generated server: %d %s", code, cluster.Tail(string(body), 500))
	}
	var sum float64
	found := false
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "apiserver_delegated_authz_request_total{") {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		sum += v
		found = true
	}
	if !found {
		t.Fatalf("no apiserver_delegated_authz_request_total in the generated server's metrics:\n%s", cluster.Tail(string(body), 2000))
	}
	return sum
}

func ptrTo[T any](v T) *T { return &v }
