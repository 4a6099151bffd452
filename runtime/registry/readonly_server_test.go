package registry_test

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/aagen-dev/aagen/runtime/registry"
	"github.com/aagen-dev/aagen/runtime/server"
	"github.com/aagen-dev/aagen/runtime/servertest"
)

// TestReadOnlyServed serves a read-only resource (registry.Resource.ReadOnly, from
// +genclient:readonly) in a generated server's runtime on etcd: discovery lists get, list
// and watch only, a list answers, and a create is 405 Method Not Allowed.
func TestReadOnlyServed(t *testing.T) {
	gv := schema.GroupVersion{Group: "metrics.example.com", Version: "v1"}
	scheme := runtime.NewScheme()
	for _, v := range []schema.GroupVersion{gv, {Group: gv.Group, Version: runtime.APIVersionInternal}} {
		scheme.AddKnownTypes(v, &corev1.ConfigMap{}, &corev1.ConfigMapList{})
	}
	metav1.AddToGroupVersion(scheme, gv)
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	scheme.AddUnversionedTypes(schema.GroupVersion{Version: "v1"}, &metav1.Status{}, &metav1.APIVersions{},
		&metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	storage := func(s *runtime.Scheme, getter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
		return registry.NewStorage(s, getter, registry.Resource[*corev1.ConfigMap]{
			Group: gv.Group, Versions: []registry.Version{{Name: gv.Version}}, Kind: "ConfigMap", Plural: "pods", Singular: "pod", NamespaceScoped: true,
			New: func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, NewList: func() runtime.Object { return &corev1.ConfigMapList{} },
			ReadOnly: true,
		})
	}
	srv := servertest.Start(t, server.Spec{
		Name: "readonly-test", Title: "read-only test", Version: "v0.0.0",
		Scheme: scheme, StorageVersions: []schema.GroupVersion{gv},
		OpenAPIDefinitions: servertest.PermissiveDefinitions(scheme),
		Groups: []server.Group{{Name: gv.Group, Resources: []server.Resource{
			{Plural: "pods", Versions: []server.ResourceVersion{{Name: gv.Version}}, NewStorage: storage},
		}}},
	})
	list, err := discovery.NewDiscoveryClientForConfigOrDie(srv.Config).ServerResourcesForGroupVersion(gv.String())
	if err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, r := range list.APIResources {
		if r.Name == "pods" {
			verbs = append(verbs, r.Verbs...)
		}
	}
	sort.Strings(verbs)
	if got := strings.Join(verbs, ","); got != "get,list,watch" {
		t.Errorf("discovery verbs of the read-only resource %q, want get,list,watch", got)
	}
	ctx := context.Background()
	pods := dynamic.NewForConfigOrDie(srv.Config).Resource(gv.WithResource("pods")).Namespace("default")
	if _, err := pods.List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list: %v", err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": gv.String(), "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}}}
	_, err = pods.Create(ctx, obj, metav1.CreateOptions{})
	if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != http.StatusMethodNotAllowed {
		t.Errorf("create on the read-only resource: want 405, got %v", err)
	}
}
