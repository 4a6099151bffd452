package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// oneReplicaBound is how long garbage collection across the aggregation boundary and a
// namespace deletion may take while one replica of the server serves (from runs on the
// 2-core CI machine, docs/reliability.md).
const oneReplicaBound = 90 * time.Second

// outageOfDeployedServer runs the deployed server (2 replicas) through the outages an
// operator meets, on the node cluster with kube-controller-manager's namespace and
// garbage-collector controllers: one replica down (the Deployment scaled to 1), then all
// (scaled to 0), then both back.
//
// With one replica down, the API serves: a ConfigMap owned by a Boat and a Boat owned by a
// ConfigMap are garbage-collected when their owner is deleted, and a namespace holding a
// Boat is deleted, each within oneReplicaBound. With all replicas down, kube-apiserver
// answers the group's requests and discovery with 503 ServiceUnavailable, the APIServices
// turn not Available, and deleting a namespace stalls with the condition
// NamespaceDeletionDiscoveryFailure naming the group (what blocks every namespace deletion
// of the cluster while an aggregated API is down); once the replicas are back, the deletion
// completes.
func outageOfDeployedServer(t *testing.T, ctx context.Context, kubeconfig string, kube kubernetes.Interface, dyn dynamic.Interface,
	ns, deployment, selector string, boats schema.GroupVersionResource, apiservices []string) {
	t.Helper()
	scale := func(replicas int) {
		t.Helper()
		if out, err := kubectl(t, kubeconfig, "", "-n", ns, "scale", "deployment/"+deployment, fmt.Sprintf("--replicas=%d", replicas)); err != nil {
			t.Fatalf("kubectl scale --replicas=%d: %v\n%s", replicas, err, out)
		}
		var pods *corev1.PodList
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			var err error
			if pods, err = kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector}); err != nil {
				return false, nil
			}
			ready := 0
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil && podReady(&p) {
					ready++
				}
			}
			// Exactly that many Pods, all Ready: the others have exited.
			return len(pods.Items) == replicas && ready == replicas, nil
		}); err != nil {
			t.Fatalf("the server not at exactly %d Ready Pods within 3 minutes:\n%s", replicas, describePods(pods))
		}
		t.Logf("deployment/%s scaled to %d: %d server Pods", deployment, replicas, len(pods.Items))
	}
	apiserviceGVR := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	available := func(name string) (bool, string) {
		as, err := dyn.Resource(apiserviceGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(as.Object, "status", "conditions")
		for _, c := range conds {
			if m := c.(map[string]any); m["type"] == "Available" {
				return m["status"] == "True", fmt.Sprintf("%v: %v", m["reason"], m["message"])
			}
		}
		return false, "no Available condition"
	}
	gone := func(what string, get func() error, since time.Time, bound time.Duration) time.Duration {
		t.Helper()
		var last error
		if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, bound, true, func(ctx context.Context) (bool, error) {
			last = get()
			return apierrors.IsNotFound(last), nil
		}); err != nil {
			t.Errorf("%s still there %s after its deletion (bound %s): %v", what, time.Since(since).Round(time.Second), bound, last)
		}
		return time.Since(since)
	}
	configMaps := kube.CoreV1().ConfigMaps("default")
	boatsIn := func(namespace string) dynamic.ResourceInterface { return dyn.Resource(boats).Namespace(namespace) }

	// One replica down.
	scale(1)
	owner, err := boatsIn("default").Create(ctx, boat("gc-owner", nil, 3), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owned-by-a-boat",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: boats.GroupVersion().String(), Kind: "Boat", Name: owner.GetName(), UID: owner.GetUID()}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cmOwner, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owns-a-boat"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned := boat("owned-by-a-configmap", nil, 3)
	owned.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: cmOwner.Name, UID: cmOwner.UID}})
	if _, err := boatsIn("default").Create(ctx, owned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := boatsIn("default").Delete(ctx, owner.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := configMaps.Delete(ctx, cmOwner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tConfigMap := gone("the ConfigMap owned by a deleted Boat", func() error {
		_, err := configMaps.Get(ctx, "owned-by-a-boat", metav1.GetOptions{})
		return err
	}, start, oneReplicaBound)
	tBoat := gone("the Boat owned by a deleted ConfigMap", func() error {
		_, err := boatsIn("default").Get(ctx, "owned-by-a-configmap", metav1.GetOptions{})
		return err
	}, start, oneReplicaBound)
	t.Logf("one replica serving: the garbage collector deleted the ConfigMap owned by a Boat %s and the Boat owned by a ConfigMap %s after their owners' deletion",
		tConfigMap.Round(100*time.Millisecond), tBoat.Round(100*time.Millisecond))
	const doomed = "outage-one-replica"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: doomed}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := boatsIn(doomed).Create(ctx, boat("inside", nil, 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := kube.CoreV1().Namespaces().Delete(ctx, doomed, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	tNamespace := gone("the namespace "+doomed+" holding a Boat", func() error {
		_, err := kube.CoreV1().Namespaces().Get(ctx, doomed, metav1.GetOptions{})
		return err
	}, start, oneReplicaBound)
	t.Logf("one replica serving: the namespace %s, holding a Boat, deleted in %s", doomed, tNamespace.Round(100*time.Millisecond))

	// All replicas down.
	scale(0)
	for _, name := range apiservices {
		var reason string
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			ok, r := available(name)
			reason = r
			return !ok, nil
		}); err != nil {
			t.Errorf("the APIService %s still Available 2 minutes after the server was scaled to 0: %s", name, reason)
		}
		t.Logf("all replicas down: the APIService %s is not Available (%s)", name, reason)
	}
	_, err = boatsIn("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsServiceUnavailable(err) {
		t.Errorf("listing Boats through kube-apiserver with all replicas down: %v, want 503 ServiceUnavailable", err)
	}
	// kubectl answers with what its discovery (cached, or kube-apiserver's, where the group
	// is stale) makes of it: ServiceUnavailable from the proxy, or no such resource type.
	out, kerr := kubectl(t, kubeconfig, "", "get", "boats", "-n", "default")
	t.Logf("all replicas down: kubectl get boats: %v\n%s", kerr, out)
	if kerr == nil {
		t.Errorf("kubectl get boats with all replicas down succeeded:\n%s", out)
	}
	// Discovery: kube-apiserver's aggregated discovery keeps the group's last document,
	// marked stale once a fetch from the server fails; client-go reports the group failed
	// and the others found.
	var discoveryErr error
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, _, discoveryErr = kube.Discovery().ServerGroupsAndResources()
		var failed *discovery.ErrGroupDiscoveryFailed
		if !errors.As(discoveryErr, &failed) || failed.Groups[boats.GroupVersion()] == nil {
			return false, nil
		}
		for gv, gerr := range failed.Groups {
			var stale discovery.StaleGroupVersionError
			if !slices.Contains(apiservices, gv.Version+"."+gv.Group) || !(errors.As(gerr, &stale) || apierrors.IsServiceUnavailable(gerr)) {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Errorf("discovery with all replicas down: %v; want %s and only the server's group-versions failed (stale, or 503 ServiceUnavailable) within 2 minutes", discoveryErr, boats.GroupVersion())
	} else {
		t.Logf("all replicas down: discovery: %v", discoveryErr)
	}
	const stalled = "outage-all-replicas"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: stalled}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ConfigMaps(stalled).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "inside"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().Namespaces().Delete(ctx, stalled, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var condition string
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := kube.CoreV1().Namespaces().Get(ctx, stalled, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NamespaceDeletionDiscoveryFailure && c.Status == corev1.ConditionTrue {
				condition = c.Reason + ": " + c.Message
				return strings.Contains(c.Message, boats.GroupVersion().String()), nil
			}
		}
		return false, nil
	}); err != nil {
		t.Errorf("the namespace %s, deleted with all replicas down, has no condition %s naming %s within 2 minutes (last: %q)", stalled, corev1.NamespaceDeletionDiscoveryFailure, boats.GroupVersion(), condition)
	} else {
		t.Logf("all replicas down: deleting the namespace %s stalls: %s %s", stalled, corev1.NamespaceDeletionDiscoveryFailure, condition)
	}
	if n, err := kube.CoreV1().Namespaces().Get(ctx, stalled, metav1.GetOptions{}); err != nil || n.Status.Phase != corev1.NamespaceTerminating {
		t.Errorf("the namespace %s with all replicas down: %v, %v; want it Terminating", stalled, n, err)
	}

	// Both back: the API serves and the stalled deletion completes.
	scale(2)
	start = time.Now()
	for _, name := range apiservices {
		var reason string
		if err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			ok, r := available(name)
			reason = r
			return ok, nil
		}); err != nil {
			t.Fatalf("the APIService %s not Available again within 2 minutes of the replicas' return: %s", name, reason)
		}
	}
	if _, err := boatsIn("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("listing Boats after the replicas' return: %v", err)
	}
	tResumed := gone("the namespace "+stalled+" deleted while all replicas were down", func() error {
		_, err := kube.CoreV1().Namespaces().Get(ctx, stalled, metav1.GetOptions{})
		return err
	}, start, oneReplicaBound)
	t.Logf("replicas back: the APIServices Available and the stalled namespace %s deleted %s after both Pods were Ready", stalled, tResumed.Round(100*time.Millisecond))
}
