package objectimport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/dynamic"
	clientrest "k8s.io/client-go/rest"

	"github.com/aagen-dev/aagen/runtime/objectimport"
	"github.com/aagen-dev/aagen/runtime/registry"
	"github.com/aagen-dev/aagen/runtime/server"
	"github.com/aagen-dev/aagen/runtime/servertest"
)

// shopGV is the group of the test server: corev1.Namespace served as a namespaced kind
// "Namespace" with a status subresource (a spec, a status), resource "widgets".
var shopGV = schema.GroupVersion{Group: "shop.example.com", Version: "v1"}

func startShop(t *testing.T) *servertest.Server {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, v := range []schema.GroupVersion{shopGV, {Group: shopGV.Group, Version: runtime.APIVersionInternal}} {
		scheme.AddKnownTypes(v, &corev1.Namespace{}, &corev1.NamespaceList{})
	}
	metav1.AddToGroupVersion(scheme, shopGV)
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	scheme.AddUnversionedTypes(schema.GroupVersion{Version: "v1"}, &metav1.Status{}, &metav1.APIVersions{},
		&metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	storage := func(s *runtime.Scheme, getter generic.RESTOptionsGetter) (map[string]rest.Storage, error) {
		return registry.NewStorage(s, getter, registry.Resource[*corev1.Namespace]{
			Group: shopGV.Group, Versions: []registry.Version{{Name: shopGV.Version}}, Kind: "Namespace", Plural: "widgets", Singular: "widget", NamespaceScoped: true,
			New: func() *corev1.Namespace { return &corev1.Namespace{} }, NewList: func() runtime.Object { return &corev1.NamespaceList{} },
			Status: &registry.StatusFuncs[*corev1.Namespace]{
				CopyStatus: func(dst, src *corev1.Namespace) { dst.Status = *src.Status.DeepCopy() },
				CopySpec:   func(dst, src *corev1.Namespace) { dst.Spec = *src.Spec.DeepCopy() },
			},
		})
	}
	return servertest.Start(t, server.Spec{
		Name: "import-test", Title: "import test", Version: "v0.0.0",
		Scheme: scheme, StorageVersions: []schema.GroupVersion{shopGV},
		OpenAPIDefinitions: servertest.PermissiveDefinitions(scheme),
		Groups: []server.Group{{Name: shopGV.Group, Resources: []server.Resource{
			{Plural: "widgets", Versions: []server.ResourceVersion{{Name: shopGV.Version}}, NewStorage: storage},
		}}},
	})
}

// call sends body (JSON of v, or nothing) to the server's path and returns the status
// code and the answer.
func call(t *testing.T, cfg *clientrest.Config, method, path string, v any) (int, []byte) {
	t.Helper()
	client, err := clientrest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var body io.Reader
	if v != nil {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, cfg.Host+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data
}

// source is an object as a CRD serves it: every field an import keeps, set.
func source(name, uid string) map[string]any {
	return map[string]any{
		"apiVersion": shopGV.String(), "kind": "Namespace",
		"metadata": map[string]any{
			"name": name, "namespace": "default", "uid": uid,
			"resourceVersion":   "4711",
			"creationTimestamp": "2021-03-04T05:06:07Z",
			"generation":        int64(7),
			"labels":            map[string]any{"team": "blue"},
			"annotations":       map[string]any{"note": "kept"},
			"finalizers":        []any{"shop.example.com/cleanup"},
			"ownerReferences": []any{map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "9f0e7d6c-0000-4000-8000-000000000001",
				"controller": true, "blockOwnerDeletion": true,
			}},
			"managedFields": []any{
				map[string]any{"manager": "shop-controller", "operation": "Apply", "apiVersion": shopGV.String(), "time": "2021-03-04T05:06:07Z",
					"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:metadata": map[string]any{"f:labels": map[string]any{"f:team": map[string]any{}}}}},
				map[string]any{"manager": "shop-controller", "operation": "Update", "apiVersion": shopGV.String(), "time": "2021-03-04T05:06:08Z",
					"fieldsType": "FieldsV1", "subresource": "status", "fieldsV1": map[string]any{"f:status": map[string]any{"f:phase": map[string]any{}}}},
			},
		},
		"spec":   map[string]any{"finalizers": []any{"kubernetes"}},
		"status": map[string]any{"phase": "Terminating"},
	}
}

// withoutResourceVersion is obj without metadata.resourceVersion.
func withoutResourceVersion(obj map[string]any) map[string]any {
	out := runtime.DeepCopyJSON(obj)
	delete(out["metadata"].(map[string]any), "resourceVersion")
	return out
}

// TestImportKeepsIdentity imports objects during a migration and reads them back through
// the public API: every field is what was sent but the resourceVersion (uid,
// creationTimestamp, generation, labels, annotations, finalizers, ownerReferences,
// managedFields, status, and deletionTimestamp with deletionGracePeriodSeconds for an
// object being deleted); importing the same object again changes nothing, its
// resourceVersion included; an object being deleted goes away once its finalizer is
// removed through the public API.
func TestImportKeepsIdentity(t *testing.T) {
	srv := startShop(t)
	ctx := context.Background()
	if code, body := call(t, srv.Config, http.MethodPut, objectimport.StatePath, objectimport.State{InProgress: true, Source: "test"}); code != http.StatusOK {
		t.Fatalf("starting the migration: %d %s", code, body)
	}
	live := source("live", "11111111-1111-4111-8111-111111111111")
	deleting := source("deleting", "22222222-2222-4222-8222-222222222222")
	deleting["metadata"].(map[string]any)["deletionTimestamp"] = "2021-03-05T00:00:00Z"
	deleting["metadata"].(map[string]any)["deletionGracePeriodSeconds"] = int64(0)
	widgets := dynamic.NewForConfigOrDie(srv.Config).Resource(shopGV.WithResource("widgets")).Namespace("default")
	for _, obj := range []map[string]any{live, deleting} {
		name := obj["metadata"].(map[string]any)["name"].(string)
		code, body := call(t, srv.Config, http.MethodPost, objectimport.ImportPath, obj)
		if code != http.StatusOK {
			t.Fatalf("importing %s: %d %s", name, code, body)
		}
		got, err := widgets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rv := got.GetResourceVersion()
		if rv == "" || rv == "4711" {
			t.Errorf("%s: resourceVersion %q, want a new one of the server's", name, rv)
		}
		if want := withoutResourceVersion(obj); !reflect.DeepEqual(withoutResourceVersion(got.Object), want) {
			t.Errorf("%s read back:\n%v\nwant (but the resourceVersion):\n%v", name, got.Object, want)
		}
		// Again: the same object, the same resourceVersion.
		if code, body := call(t, srv.Config, http.MethodPost, objectimport.ImportPath, obj); code != http.StatusOK {
			t.Fatalf("importing %s again: %d %s", name, code, body)
		}
		again, err := widgets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again.Object, got.Object) {
			t.Errorf("%s after a second import:\n%v\nwant it unchanged:\n%v", name, again.Object, got.Object)
		}
	}
	// The object being deleted is deleted once its finalizer goes.
	got, err := widgets.Get(ctx, "deleting", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.SetFinalizers(nil)
	if _, err := widgets.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("removing the finalizer: %v", err)
	}
	if _, err := widgets.Get(ctx, "deleting", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the imported object being deleted after its finalizer was removed: %v, want NotFound", err)
	}
}

// TestImportRefusals: outside a migration (before one and after it ends) every import is
// refused with 409 and what to do; during one, an object without uid, without
// creationTimestamp or namespace, being deleted without finalizers, invalid for the
// server, with a field the server's type lacks (it would be lost), of a kind the server
// does not store, or replacing another object of the same name is refused, and nothing is
// written. A dry run (?dryRun=All) needs no migration in progress, refuses what the import
// refuses, and writes nothing.
func TestImportRefusals(t *testing.T) {
	srv := startShop(t)
	ctx := context.Background()
	widgets := dynamic.NewForConfigOrDie(srv.Config).Resource(shopGV.WithResource("widgets")).Namespace("default")
	expect := func(what string, obj map[string]any, code int, parts ...string) {
		t.Helper()
		got, body := call(t, srv.Config, http.MethodPost, objectimport.ImportPath, obj)
		if got != code {
			t.Errorf("%s: %d %s, want %d", what, got, body, code)
		}
		for _, p := range parts {
			if !strings.Contains(string(body), p) {
				t.Errorf("%s: answer %s, want it to say %q", what, body, p)
			}
		}
	}
	obj := source("a", "33333333-3333-4333-8333-333333333333")
	expect("before a migration", obj, http.StatusConflict, "no migration is in progress", objectimport.StatePath)
	// A dry run needs no migration, and writes nothing.
	dryRun := func(what string, obj map[string]any, code int, parts ...string) {
		t.Helper()
		got, body := call(t, srv.Config, http.MethodPost, objectimport.ImportPath+"?dryRun=All", obj)
		if got != code {
			t.Errorf("dry run %s: %d %s, want %d", what, got, body, code)
		}
		for _, p := range parts {
			if !strings.Contains(string(body), p) {
				t.Errorf("dry run %s: answer %s, want it to say %q", what, body, p)
			}
		}
	}
	dryRun("before a migration", obj, http.StatusOK, `"uid":"33333333-3333-4333-8333-333333333333"`)
	if _, err := widgets.Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after a dry run, a: %v, want NotFound", err)
	}
	bad := runtime.DeepCopyJSON(obj)
	bad["metadata"].(map[string]any)["labels"] = map[string]any{"team": "not valid!"}
	dryRun("an invalid label", bad, http.StatusUnprocessableEntity, "metadata.labels: Invalid value")
	if got, body := call(t, srv.Config, http.MethodPost, objectimport.ImportPath+"?dryRun=Some", obj); got != http.StatusBadRequest {
		t.Errorf("dryRun=Some: %d %s, want 400", got, body)
	}
	if code, body := call(t, srv.Config, http.MethodGet, objectimport.StatePath, nil); code != http.StatusOK || !strings.Contains(string(body), `"inProgress":false`) {
		t.Errorf("the state before a migration: %d %s", code, body)
	}
	if code, body := call(t, srv.Config, http.MethodPut, objectimport.StatePath, objectimport.State{InProgress: true}); code != http.StatusOK ||
		!strings.Contains(string(body), `"inProgress":true`) || !strings.Contains(string(body), `"by":`) {
		t.Fatalf("starting the migration: %d %s", code, body)
	}
	edit := func(f func(m map[string]any)) map[string]any {
		o := runtime.DeepCopyJSON(source("b", "44444444-4444-4444-8444-444444444444"))
		f(o)
		return o
	}
	expect("no uid", edit(func(o map[string]any) { delete(o["metadata"].(map[string]any), "uid") }),
		http.StatusUnprocessableEntity, "metadata.uid: Required value")
	expect("no creationTimestamp", edit(func(o map[string]any) { delete(o["metadata"].(map[string]any), "creationTimestamp") }),
		http.StatusUnprocessableEntity, "metadata.creationTimestamp: Required value")
	expect("no namespace", edit(func(o map[string]any) { delete(o["metadata"].(map[string]any), "namespace") }),
		http.StatusUnprocessableEntity, "metadata.namespace: Required value")
	expect("being deleted without finalizers", edit(func(o map[string]any) {
		o["metadata"].(map[string]any)["deletionTimestamp"] = "2021-03-05T00:00:00Z"
		delete(o["metadata"].(map[string]any), "finalizers")
	}), http.StatusUnprocessableEntity, "metadata.deletionTimestamp: Invalid value")
	expect("an invalid label", edit(func(o map[string]any) {
		o["metadata"].(map[string]any)["labels"] = map[string]any{"team": "not valid!"}
	}),
		http.StatusUnprocessableEntity, "metadata.labels: Invalid value")
	expect("a field the server's type does not have", edit(func(o map[string]any) { o["spec"].(map[string]any)["color"] = "red" }),
		http.StatusBadRequest, "fields the server's type does not", `unknown field \"spec.color\"`)
	expect("a kind the server does not store", edit(func(o map[string]any) { o["kind"] = "Gadget" }),
		http.StatusBadRequest)
	if _, err := widgets.Get(ctx, "b", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after refused imports, b: %v, want NotFound", err)
	}
	expect("a", obj, http.StatusOK)
	expect("another object of the same name", edit(func(o map[string]any) { o["metadata"].(map[string]any)["name"] = "a" }),
		http.StatusConflict, "another object of this name", "33333333-3333-4333-8333-333333333333")
	dryRun("another object of the same name", edit(func(o map[string]any) { o["metadata"].(map[string]any)["name"] = "a" }),
		http.StatusConflict, "another object of this name")
	got, err := widgets.Get(ctx, "a", metav1.GetOptions{})
	if err != nil || string(got.GetUID()) != "33333333-3333-4333-8333-333333333333" {
		t.Errorf("a after a refused replacement: %v, %v", got, err)
	}
	if code, body := call(t, srv.Config, http.MethodPut, objectimport.StatePath, objectimport.State{InProgress: false}); code != http.StatusOK {
		t.Fatalf("ending the migration: %d %s", code, body)
	}
	expect("after the migration", obj, http.StatusConflict, "no migration is in progress")
}

// TestHandBackEndsWatches: a watch open on the server when the migration state changes to
// handed back ends (its client would otherwise wait on a server kube-apiserver no longer
// routes to), and the state is kept; a watch opened after it is not ended by it.
func TestHandBackEndsWatches(t *testing.T) {
	srv := startShop(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	widgets := dynamic.NewForConfigOrDie(srv.Config).Resource(shopGV.WithResource("widgets")).Namespace("default")
	open := func() watch.Interface {
		t.Helper()
		w, err := widgets.Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		return w
	}
	ended := func(w watch.Interface, within time.Duration) bool {
		t.Helper()
		timeout := time.After(within)
		for {
			select {
			case _, ok := <-w.ResultChan():
				if !ok {
					return true
				}
			case <-timeout:
				return false
			}
		}
	}
	before := open()
	if code, body := call(t, srv.Config, http.MethodPut, objectimport.StatePath, objectimport.State{HandedBack: true}); code != http.StatusOK ||
		!strings.Contains(string(body), `"handedBack":true`) {
		t.Fatalf("handing the group back: %d %s", code, body)
	}
	if !ended(before, 10*time.Second) {
		t.Errorf("the watch opened before the hand-back did not end within 10 s")
	}
	after := open()
	if ended(after, 2*time.Second) {
		t.Errorf("the watch opened after the hand-back ended")
	}
	if code, body := call(t, srv.Config, http.MethodGet, objectimport.StatePath, nil); code != http.StatusOK || !strings.Contains(string(body), `"handedBack":true`) {
		t.Errorf("the state after the hand-back: %d %s", code, body)
	}
}
