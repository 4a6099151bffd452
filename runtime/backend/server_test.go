package backend

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	clientrest "k8s.io/client-go/rest"

	"github.com/aagen-dev/aagen/runtime/server"
	"github.com/aagen-dev/aagen/runtime/servertest"
)

var testGV = schema.GroupVersion{Group: "test.example.com", Version: "v1"}

// testSpec serves two resources in test.example.com/v1: "configmaps" read-write with watch
// (the in-memory backend) and "computed", read-only Secrets derived from the ConfigMaps.
func testSpec(t *testing.T, m *memory, d derived) server.Spec {
	scheme := runtime.NewScheme()
	for _, gv := range []schema.GroupVersion{testGV, {Group: testGV.Group, Version: runtime.APIVersionInternal}} {
		scheme.AddKnownTypes(gv, &corev1.ConfigMap{}, &corev1.ConfigMapList{}, &corev1.Secret{}, &corev1.SecretList{}, &corev1.Pod{}, &corev1.PodList{})
	}
	metav1.AddToGroupVersion(scheme, testGV)
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	scheme.AddUnversionedTypes(schema.GroupVersion{Version: "v1"}, &metav1.Status{}, &metav1.APIVersions{},
		&metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	storage := func(_ *runtime.Scheme, _ generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
		rw := config(m)
		ro := Config[*corev1.Secret]{
			Resource: schema.GroupResource{Group: testGV.Group, Resource: "computed"}, SingularName: "computed", NamespaceScoped: true,
			NewFunc:     func() *corev1.Secret { return &corev1.Secret{} },
			NewListFunc: func() runtime.Object { return &corev1.SecretList{} },
			Backend:     d,
		}
		rwS, err := New(rw)
		if err != nil {
			return nil, err
		}
		roS, err := New(ro)
		if err != nil {
			return nil, err
		}
		stubS, err := New(Config[*corev1.Pod]{
			Resource: schema.GroupResource{Group: testGV.Group, Resource: "unwritten"}, SingularName: "unwritten", NamespaceScoped: true,
			NewFunc:     func() *corev1.Pod { return &corev1.Pod{} },
			NewListFunc: func() runtime.Object { return &corev1.PodList{} },
			Backend:     unwritten{},
		})
		if err != nil {
			return nil, err
		}
		return map[string]rest.Storage{"configmaps": rwS, "computed": roS, "unwritten": stubS}, nil
	}
	return server.Spec{
		Name: "backend-test", Title: "backend test", Version: "v0.0.0",
		Scheme: scheme, StorageVersions: []schema.GroupVersion{testGV},
		OpenAPIDefinitions: servertest.PermissiveDefinitions(scheme),
		// One storage function builds both resources; the server installs every path it returns.
		Groups: []server.Group{{Name: testGV.Group, Resources: []server.Resource{
			{Plural: "configmaps", Versions: []server.ResourceVersion{{Name: "v1"}}, NewStorage: storage},
		}}},
	}
}

// derived computes a read-only Secret from each ConfigMap, as a kind computed from data the
// server holds. It is a Starter: started sends the loopback configuration Start is given.
type derived struct {
	m       *memory
	started chan *clientrest.Config
}

func (d derived) Start(_ context.Context, loopback *clientrest.Config) error {
	d.started <- loopback
	return nil
}

func (d derived) Get(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	c, err := d.m.Get(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	return secretOf(c), nil
}

func (d derived) List(ctx context.Context, ns string) ([]*corev1.Secret, error) {
	cms, err := d.m.List(ctx, ns)
	if err != nil {
		return nil, err
	}
	var out []*corev1.Secret
	for _, c := range cms {
		out = append(out, secretOf(c))
	}
	return out, nil
}

func secretOf(c *corev1.ConfigMap) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: *c.ObjectMeta.DeepCopy(), StringData: c.Data}
}

// unwritten is the backend aagen creates in a new backend.go: Get and List say what to write where.
type unwritten struct{}

func (unwritten) Get(context.Context, string, string) (*corev1.Pod, error) {
	return nil, fmt.Errorf("get unwritten.test.example.com: not implemented yet: write Get in pkg/registry/test/unwritten/backend.go")
}

func (unwritten) List(context.Context, string) ([]*corev1.Pod, error) {
	return nil, fmt.Errorf("list unwritten.test.example.com: not implemented yet: write List in pkg/registry/test/unwritten/backend.go")
}

// TestServed runs the wrapper in a real generated-server runtime: discovery lists exactly
// the implemented verbs, a write to the read-only resource is 405, the read-write one works
// with 409 on a stale resourceVersion and 404 with a Status body.
func TestServed(t *testing.T) {
	m := newMemory()
	started := make(chan *clientrest.Config, 1)
	srv := servertest.Start(t, testSpec(t, m, derived{m, started}))
	// The server started the backend (a Starter) once, before it was ready, with a loopback
	// configuration that reaches it.
	select {
	case loopback := <-started:
		if _, err := discovery.NewDiscoveryClientForConfigOrDie(loopback).ServerResourcesForGroupVersion(testGV.String()); err != nil {
			t.Errorf("discovery through the loopback configuration Start was given: %v", err)
		}
		// The loopback client reads in protobuf where the group offers it (core types do),
		// as kube-apiserver's does.
		if got := loopbackListContentType(t, loopback); got != runtime.ContentTypeProtobuf {
			t.Errorf("a list through the loopback configuration came in %q, want %s", got, runtime.ContentTypeProtobuf)
		}
	default:
		t.Error("the server is ready but did not start the backend")
	}
	dc := discovery.NewDiscoveryClientForConfigOrDie(srv.Config)
	list, err := dc.ServerResourcesForGroupVersion(testGV.String())
	if err != nil {
		t.Fatal(err)
	}
	verbs := map[string]string{}
	for _, r := range list.APIResources {
		v := append([]string(nil), r.Verbs...)
		sort.Strings(v)
		verbs[r.Name] = strings.Join(v, ",")
	}
	if got, want := verbs["computed"], "get,list"; got != want {
		t.Errorf("computed verbs %q, want %q", got, want)
	}
	if got, want := verbs["configmaps"], "create,delete,get,list,patch,update,watch"; got != want {
		t.Errorf("configmaps verbs %q, want %q", got, want)
	}

	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(srv.Config)
	rw := dyn.Resource(testGV.WithResource("configmaps")).Namespace("default")
	ro := dyn.Resource(testGV.WithResource("computed")).Namespace("default")
	obj := map[string]any{"apiVersion": testGV.String(), "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}, "data": map[string]any{"colour": "red"}}
	created, err := rw.Create(ctx, toUnstructured(obj), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Get(ctx, "a", metav1.GetOptions{}); err != nil {
		t.Errorf("computed get: %v", err)
	}
	secret := map[string]any{"apiVersion": testGV.String(), "kind": "Secret", "metadata": map[string]any{"name": "b"}}
	_, err = ro.Create(ctx, toUnstructured(secret), metav1.CreateOptions{})
	if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != http.StatusMethodNotAllowed {
		t.Errorf("create on the read-only resource: want 405, got %v", err)
	}
	stale := created.DeepCopy()
	created.Object["data"] = map[string]any{"colour": "green"}
	if _, err := rw.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rw.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update with a stale resourceVersion: want 409, got %v", err)
	}
	if _, err := ro.Get(ctx, "nope", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get of a missing object: want 404, got %v", err)
	}

	// Watch (kubectl get -w) and label selectors, through the server.
	w, err := rw.Watch(ctx, metav1.ListOptions{LabelSelector: "tier=gold"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	gold := map[string]any{"apiVersion": testGV.String(), "kind": "ConfigMap", "metadata": map[string]any{"name": "g", "labels": map[string]any{"tier": "gold"}}}
	if _, err := rw.Create(ctx, toUnstructured(gold), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if o, ok := ev.Object.(*unstructured.Unstructured); ev.Type != watch.Added || !ok || o.GetName() != "g" {
			t.Errorf("watch: %s %v, want ADDED g", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Error("watch: no event")
	}
	golds, err := ro.List(ctx, metav1.ListOptions{LabelSelector: "tier=gold"})
	if err != nil {
		t.Fatal(err)
	}
	if len(golds.Items) != 1 || golds.Items[0].GetName() != "g" {
		t.Errorf("computed list with tier=gold: %d items", len(golds.Items))
	}

	// The backend.go aagen creates answers with its message (a 500) until Get and List are written.
	_, err = dyn.Resource(testGV.WithResource("unwritten")).Namespace("default").Get(ctx, "x", metav1.GetOptions{})
	if status, ok := err.(apierrors.APIStatus); !ok || status.Status().Code != http.StatusInternalServerError ||
		!strings.Contains(err.Error(), "not implemented yet: write Get in pkg/registry/test/unwritten/backend.go") {
		t.Errorf("get from the created backend.go: want a 500 saying what to write where, got %v", err)
	}

	// Tables, as kubectl asks for them.
	rc, err := clientrest.RESTClientFor(tableClientConfig(srv.Config))
	if err != nil {
		t.Fatal(err)
	}
	body, err := rc.Get().AbsPath("/apis/test.example.com/v1/namespaces/default/computed").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"kind":"Table"`) || !strings.Contains(string(body), `"g"`) {
		t.Errorf("table: %s", body)
	}
}

func tableClientConfig(c *clientrest.Config) *clientrest.Config {
	c = clientrest.CopyConfig(c)
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	c.GroupVersion = &testGV
	return c
}

func toUnstructured(obj map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: obj}
}

// loopbackListContentType lists the configmaps with the loopback configuration's Accept
// header and returns the content type of the answer.
func loopbackListContentType(t *testing.T, loopback *clientrest.Config) string {
	t.Helper()
	hc, err := clientrest.HTTPClientFor(loopback)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, loopback.Host+"/apis/"+testGV.String()+"/namespaces/default/configmaps", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", loopback.AcceptContentTypes)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("list through the loopback configuration: %s", resp.Status)
	}
	return resp.Header.Get("Content-Type")
}
