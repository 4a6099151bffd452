package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/aagen-dev/aagen/e2e/cluster"
	"github.com/aagen-dev/aagen/runtime/etcd"
)

var (
	fleetGVK = schema.GroupVersionKind{Group: "marina.example.com", Version: "v1alpha1", Kind: "Fleet"}
	boatGVK  = schema.GroupVersionKind{Group: "marina.example.com", Version: "v1alpha1", Kind: "Boat"}
)

// fleetOwnerIndex indexes boats by the name of the Fleet that controls them.
const fleetOwnerIndex = "fleetOwner"

// fleetController is a controller written the way controller-runtime controllers are:
// it keeps, for every Fleet, spec.replicas Boats named <fleet>-<i>, created by server-side
// apply with the fleet as their controlling owner, deletes the ones beyond, finds them
// through a field index on the cache, and reports the count in the fleet's status.
type fleetController struct {
	client client.Client
}

func newUnstructured(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// Reconcile implements reconcile.Reconciler.
func (r *fleetController) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	fleet := newUnstructured(fleetGVK)
	if err := r.client.Get(ctx, req.NamespacedName, fleet); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	replicas, _, _ := unstructured.NestedInt64(fleet.Object, "spec", "replicas")
	want := map[string]bool{}
	for i := range replicas {
		name := fmt.Sprintf("%s-%d", fleet.GetName(), i)
		want[name] = true
		b := newUnstructured(boatGVK)
		b.SetName(name)
		b.SetNamespace(fleet.GetNamespace())
		b.SetLabels(map[string]string{"fleet": fleet.GetName()})
		b.SetOwnerReferences([]metav1.OwnerReference{{
			APIVersion: fleetGVK.GroupVersion().String(), Kind: fleetGVK.Kind, Name: fleet.GetName(), UID: fleet.GetUID(),
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}})
		b.Object["spec"] = map[string]any{"dock": "fleet", "lengthMeters": int64(6)}
		if err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(b), client.FieldOwner("fleet-controller"), client.ForceOwnership); err != nil {
			return ctrl.Result{}, fmt.Errorf("applying boat %s: %w", name, err)
		}
	}
	owned := &unstructured.UnstructuredList{}
	owned.SetGroupVersionKind(boatGVK.GroupVersion().WithKind("BoatList"))
	if err := r.client.List(ctx, owned, client.InNamespace(fleet.GetNamespace()), client.MatchingFields{fleetOwnerIndex: fleet.GetName()}); err != nil {
		return ctrl.Result{}, err
	}
	for i := range owned.Items {
		if b := &owned.Items[i]; !want[b.GetName()] {
			if err := r.client.Delete(ctx, b); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, err
			}
		}
	}
	current, _, _ := unstructured.NestedInt64(fleet.Object, "status", "replicas")
	selector, _, _ := unstructured.NestedString(fleet.Object, "status", "selector")
	if current != replicas || selector != "fleet="+fleet.GetName() {
		_ = unstructured.SetNestedField(fleet.Object, replicas, "status", "replicas")
		_ = unstructured.SetNestedField(fleet.Object, "fleet="+fleet.GetName(), "status", "selector")
		if err := r.client.Status().Update(ctx, fleet); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// startFleetController runs a controller-runtime manager with the fleet controller against
// cfg until the test ends, and returns its (cache-backed) client.
func startFleetController(t *testing.T, cfg *rest.Config, name string) client.Client {
	t.Helper()
	log.SetLogger(logr.Discard())
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(rest.CopyConfig(cfg), ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Unstructured objects are read from the cache (and its field index) only when
		// asked; typed ones always are.
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	err = mgr.GetFieldIndexer().IndexField(ctx, newUnstructured(boatGVK), fleetOwnerIndex, func(o client.Object) []string {
		if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == fleetGVK.Kind {
			return []string{ref.Name}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(newUnstructured(fleetGVK)).
		Owns(newUnstructured(boatGVK)).
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
		Complete(&fleetController{client: mgr.GetClient()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return mgr.GetClient()
}

// exerciseFleetController creates a fleet in ns and checks what the controller did, then
// scales the fleet down through its /scale subresource and checks again.
func exerciseFleetController(t *testing.T, cfg *rest.Config, cached client.Client, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dyn := dynamic.NewForConfigOrDie(cfg)
	fleet := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "marina.example.com/v1alpha1", "kind": "Fleet",
		"metadata": map[string]any{"name": "alpha", "namespace": ns},
		"spec":     map[string]any{"replicas": int64(3), "class": "dinghy"},
	}}
	created, err := dyn.Resource(fleets).Namespace(ns).Create(ctx, fleet, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// waitFor polls until the fleet has n boats (by the cache's field index and on the
	// server) and reports n in its status.
	waitFor := func(n int) {
		t.Helper()
		var last string
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			list, err := dyn.Resource(boats).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "fleet=alpha"})
			if err != nil {
				return false, err
			}
			var names []string
			for _, b := range list.Items {
				if b.GetDeletionTimestamp() == nil {
					names = append(names, b.GetName())
				}
			}
			indexed := &unstructured.UnstructuredList{}
			indexed.SetGroupVersionKind(boatGVK.GroupVersion().WithKind("BoatList"))
			if err := cached.List(ctx, indexed, client.InNamespace(ns), client.MatchingFields{fleetOwnerIndex: "alpha"}); err != nil {
				return false, err
			}
			f, err := dyn.Resource(fleets).Namespace(ns).Get(ctx, "alpha", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			status, _, _ := unstructured.NestedInt64(f.Object, "status", "replicas")
			selector, _, _ := unstructured.NestedString(f.Object, "status", "selector")
			last = fmt.Sprintf("boats %v, indexed %d, status.replicas %d, status.selector %q", names, len(indexed.Items), status, selector)
			return len(names) == n && len(indexed.Items) == n && status == int64(n) && selector == "fleet=alpha", nil
		})
		if err != nil {
			t.Fatalf("waiting for %d boats: %v; last seen: %s", n, err, last)
		}
	}
	waitFor(3)

	b, err := dyn.Resource(boats).Namespace(ns).Get(ctx, "alpha-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refs := b.GetOwnerReferences()
	if len(refs) != 1 || refs[0].UID != created.GetUID() || refs[0].Controller == nil || !*refs[0].Controller || refs[0].Kind != "Fleet" {
		t.Errorf("alpha-1 owner references: %+v", refs)
	}
	var managers []string
	for _, mf := range b.GetManagedFields() {
		managers = append(managers, mf.Manager+"/"+string(mf.Operation))
	}
	if !slices.Contains(managers, "fleet-controller/Apply") {
		t.Errorf("alpha-1 managed fields: %v, want fleet-controller/Apply", managers)
	}
	if l, _, _ := unstructured.NestedInt64(b.Object, "spec", "lengthMeters"); l != 6 {
		t.Errorf("alpha-1 spec.lengthMeters %d, want 6", l)
	}

	// Scale down through /scale, as kubectl scale does: the controller sees the update
	// through its informer and removes the extra boats.
	patch := []byte(`{"spec":{"replicas":1}}`)
	if _, err := dyn.Resource(fleets).Namespace(ns).Patch(ctx, "alpha", types.MergePatchType, patch, metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatal(err)
	}
	waitFor(1)
	if _, err := dyn.Resource(boats).Namespace(ns).Get(ctx, "alpha-2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("alpha-2 after scaling to 1: %v, want NotFound", err)
	}
	// A boat deleted behind the controller's back comes back (an owned-object event).
	if err := dyn.Resource(boats).Namespace(ns).Delete(ctx, "alpha-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(boats).Namespace(ns).Get(ctx, "alpha-0", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Errorf("alpha-0 was not recreated after its deletion: %v", err)
	}
}

// TestControllerRuntime runs a controller-runtime manager (cache, informers, a field
// index, server-side apply, status updates, owner references) reconciling the example's
// Fleets and Boats against the generated server: directly through `aagen up`, and through
// kube-apiserver's aggregator.
func TestControllerRuntime(t *testing.T) {
	skipShort(t)
	runsTools(t)
	t.Run("aagen up", func(t *testing.T) {
		dir := t.TempDir()
		copyTree(t, filepath.Join(repoRoot(t), "testdata/example"), dir, nil)
		up := startUp(t, dir, 20*time.Minute)
		cfg := up.restConfig(t)
		cached := startFleetController(t, cfg, "fleet-local")
		exerciseFleetController(t, cfg, cached, "default")
	})
	t.Run("aggregator", func(t *testing.T) {
		dir, serverBin := buildExample(t)
		e, err := etcd.Start(context.Background(), etcd.Config{Dir: t.TempDir(), UnsafeNoFsync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		cp := cluster.StartControlPlane(t, e.ClientURL())
		// The deadline starts once the control plane is up (a cold cache builds it).
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		cluster.Deploy(t, ctx, cp, dir, serverBin, e.ClientURL())
		kube := kubernetes.NewForConfigOrDie(cp.Admin)
		ns := "regatta"
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cached := startFleetController(t, cp.Admin, "fleet-aggregated")
		exerciseFleetController(t, cp.Admin, cached, ns)
	})
}
