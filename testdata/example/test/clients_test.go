// Package test exercises the generated server with the generated clients: the way a
// controller author uses them. It is hand-written (aagen does not generate or touch it).
package test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/aagen-dev/aagen/runtime/servertest"

	marinav1alpha1 "example.com/marina/pkg/apis/marina/v1alpha1"
	"example.com/marina/pkg/apiserver"
	applymarina "example.com/marina/pkg/generated/applyconfiguration/marina/v1alpha1"
	"example.com/marina/pkg/generated/clientset/versioned"
	"example.com/marina/pkg/generated/clientset/versioned/fake"
	"example.com/marina/pkg/generated/informers/externalversions"
)

func startServer(t *testing.T) *versioned.Clientset {
	t.Helper()
	spec, err := apiserver.NewSpec()
	if err != nil {
		t.Fatal(err)
	}
	srv := servertest.Start(t, spec)
	return versioned.NewForConfigOrDie(srv.Config)
}

func newBoat(name string, length int32) *marinav1alpha1.Boat {
	return &marinav1alpha1.Boat{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "harbour", Labels: map[string]string{"fleet": "blue"}},
		Spec:       marinav1alpha1.BoatSpec{Dock: "north", LengthMeters: length},
	}
}

func TestClients(t *testing.T) {
	cs := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	boats := cs.MarinaV1alpha1().Boats("harbour")

	// Informer and lister from the generated factory, started before any object exists.
	factory := externalversions.NewSharedInformerFactoryWithOptions(cs, 0, externalversions.WithNamespace("harbour"))
	informer := factory.Marina().V1alpha1().Boats()
	events := make(chan string, 16)
	_, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { events <- "add " + obj.(*marinav1alpha1.Boat).Name },
		UpdateFunc: func(_, obj any) { events <- "update " + obj.(*marinav1alpha1.Boat).Name },
		DeleteFunc: func(obj any) {
			if b, ok := obj.(*marinav1alpha1.Boat); ok {
				events <- "delete " + b.Name
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	stopInformers := make(chan struct{})
	factory.Start(stopInformers)
	defer func() {
		close(stopInformers)
		factory.Shutdown()
	}()
	factory.WaitForCacheSync(ctx.Done())
	expect := func(want string) {
		t.Helper()
		select {
		case got := <-events:
			if got != want {
				t.Fatalf("informer event %q, want %q", got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("informer event %q did not arrive", want)
		}
	}

	// Typed CRUD.
	created, err := boats.Create(ctx, newBoat("aurora", 12), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expect("add aurora")
	created.Spec.LengthMeters = 13
	updated, err := boats.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil || updated.Generation != 2 {
		t.Fatalf("update: %v generation=%d", err, updated.Generation)
	}
	expect("update aurora")
	updated.Status.Phase = "Berthed"
	st, err := boats.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil || st.Status.Phase != "Berthed" {
		t.Fatalf("update status: %v %+v", err, st.Status)
	}
	expect("update aurora")
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		b, err := informer.Lister().Boats("harbour").Get("aurora")
		return err == nil && b.Status.Phase == "Berthed", nil
	}); err != nil {
		t.Fatalf("lister never saw the status update: %v", err)
	}
	listed, err := informer.Lister().List(labels.SelectorFromSet(labels.Set{"fleet": "blue"}))
	if err != nil || len(listed) != 1 {
		t.Fatalf("lister list: %v, %d items", err, len(listed))
	}
	list, err := boats.List(ctx, metav1.ListOptions{LabelSelector: "fleet=blue"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v, %d items", err, len(list.Items))
	}

	// Server-side apply with apply configurations: two managers, one field, a conflict.
	apply := applymarina.Boat("aurora", "harbour").WithSpec(applymarina.BoatSpec().WithDock("north").WithLengthMeters(13))
	if _, err := boats.Apply(ctx, apply, metav1.ApplyOptions{FieldManager: "owner"}); err != nil {
		t.Fatalf("apply by owner: %v", err)
	}
	expect("update aurora")
	other := applymarina.Boat("aurora", "harbour").WithSpec(applymarina.BoatSpec().WithDock("south").WithLengthMeters(13))
	_, err = boats.Apply(ctx, other, metav1.ApplyOptions{FieldManager: "intruder"})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), ".spec.dock") || !strings.Contains(err.Error(), `"owner"`) {
		t.Fatalf("conflicting apply: want 409 naming .spec.dock and manager owner, got %v", err)
	}
	forced, err := boats.Apply(ctx, other, metav1.ApplyOptions{FieldManager: "intruder", Force: true})
	if err != nil || forced.Spec.Dock != "south" {
		t.Fatalf("forced apply: %v %+v", err, forced.Spec)
	}
	expect("update aurora")
	managers := map[string]bool{}
	for _, mf := range forced.ManagedFields {
		managers[mf.Manager] = true
	}
	if !managers["intruder"] || !managers["owner"] {
		t.Errorf("managedFields managers: %v", managers)
	}
	// Applying status through the main resource is reset; through /status it sticks.
	mainWithStatus := applymarina.Boat("aurora", "harbour").WithStatus(applymarina.BoatStatus().WithPhase("Sunk"))
	ignored, err := boats.Apply(ctx, mainWithStatus, metav1.ApplyOptions{FieldManager: "prankster", Force: true})
	if err != nil || ignored.Status.Phase != "Berthed" {
		t.Fatalf("apply of status through the main resource: %v phase=%q (want Berthed, unchanged)", err, ignored.Status.Phase)
	}
	// Spec fields applied through /status are reset the same way.
	withStatus := applymarina.Boat("aurora", "harbour").WithStatus(applymarina.BoatStatus().WithBerth(7)).
		WithSpec(applymarina.BoatSpec().WithDock("east").WithLengthMeters(99))
	applied, err := boats.ApplyStatus(ctx, withStatus, metav1.ApplyOptions{FieldManager: "harbour-master", Force: true})
	if err != nil || applied.Status.Berth != 7 || applied.Spec.Dock != "south" || applied.Spec.LengthMeters != 13 {
		t.Fatalf("apply status: %v %+v %+v", err, applied.Status, applied.Spec)
	}
	expect("update aurora")

	// Cluster-scoped kind.
	dock := &marinav1alpha1.Dock{ObjectMeta: metav1.ObjectMeta{Name: "north"}, Spec: marinav1alpha1.DockSpec{Berths: 4}}
	if _, err := cs.MarinaV1alpha1().Docks().Create(ctx, dock, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if err := boats.Delete(ctx, "aurora", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("delete aurora")
	if _, err := boats.Get(ctx, "aurora", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: %v", err)
	}
}

// TestTwoServers runs two servers in one process at once: they share no state.
func TestTwoServers(t *testing.T) {
	a, b := startServer(t), startServer(t)
	ctx := context.Background()
	if _, err := a.MarinaV1alpha1().Docks().Create(ctx, &marinav1alpha1.Dock{ObjectMeta: metav1.ObjectMeta{Name: "only-in-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.MarinaV1alpha1().Docks().Get(ctx, "only-in-a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("server b sees server a's dock: %v", err)
	}
	if _, err := b.MarinaV1alpha1().Docks().Create(ctx, &marinav1alpha1.Dock{ObjectMeta: metav1.ObjectMeta{Name: "only-in-b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if list, err := a.MarinaV1alpha1().Docks().List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 1 {
		t.Fatalf("server a: %v %v", err, list)
	}
}

// TestOpenAPIV3 parses the published OpenAPI v3 document of the group-version with
// kube-openapi and checks every kind and its fields are there, with their docs.
func TestOpenAPIV3(t *testing.T) {
	cs := startServer(t)
	ctx := context.Background()
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/openapi/v3/apis/marina.example.com/v1alpha1").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var doc spec3.OpenAPI
	if err := doc.UnmarshalJSON(raw); err != nil {
		t.Fatalf("not a valid OpenAPI v3 document: %v", err)
	}
	if !strings.HasPrefix(doc.Version, "3.") {
		t.Errorf("openapi version %q", doc.Version)
	}
	if len(doc.Paths.Paths) == 0 {
		t.Errorf("no paths")
	}
	// Every reference points at a schema of the document.
	for _, ref := range refs(raw) {
		name, ok := strings.CutPrefix(ref, "#/components/schemas/")
		if _, found := doc.Components.Schemas[name]; !ok || !found {
			t.Errorf("dangling reference %s", ref)
		}
	}
	// Every kind of the group, and every struct it contains, has a schema with each of its
	// JSON fields, as the Go types declare them.
	schemas := map[string]*spec.Schema{}
	for name, s := range doc.Components.Schemas {
		schemas[name] = s
	}
	checkKinds(t, "v3", schemas)
	boat := schemas["com.example.marina.pkg.apis.marina.v1alpha1.Boat"]
	if boat == nil || boat.Extensions["x-kubernetes-group-version-kind"] == nil {
		t.Errorf("Boat has no x-kubernetes-group-version-kind extension")
	}
	if spec := schemas["com.example.marina.pkg.apis.marina.v1alpha1.BoatSpec"]; spec != nil {
		if d := spec.Properties["dock"].Description; d != "Dock is the name of the Dock the boat berths at." {
			t.Errorf("dock description %q", d)
		}
	}

	// The same for the OpenAPI v2 document kubectl validates against.
	raw, err = cs.Discovery().RESTClient().Get().AbsPath("/openapi/v2").SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var swagger spec.Swagger
	if err := swagger.UnmarshalJSON(raw); err != nil {
		t.Fatalf("not a valid OpenAPI v2 document: %v", err)
	}
	v2 := map[string]*spec.Schema{}
	for name, s := range swagger.Definitions {
		v2[name] = &s
	}
	checkKinds(t, "v2", v2)
}

// checkKinds checks that every kind of marina.example.com/v1alpha1 and every struct type of
// its package it contains has a schema with all of its JSON fields.
func checkKinds(t *testing.T, doc string, schemas map[string]*spec.Schema) {
	t.Helper()
	scheme, err := apiserver.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[reflect.Type]bool{}
	var check func(reflect.Type)
	check = func(rt reflect.Type) {
		for rt.Kind() == reflect.Pointer || rt.Kind() == reflect.Slice || rt.Kind() == reflect.Map {
			rt = rt.Elem()
		}
		if rt.Kind() != reflect.Struct || rt.PkgPath() != reflect.TypeFor[marinav1alpha1.Boat]().PkgPath() || seen[rt] {
			return
		}
		seen[rt] = true
		named, ok := reflect.New(rt).Elem().Interface().(interface{ OpenAPIModelName() string })
		if !ok {
			t.Errorf("%s has no OpenAPIModelName", rt)
			return
		}
		s := schemas[named.OpenAPIModelName()]
		if s == nil {
			t.Errorf("%s: no schema %s", doc, named.OpenAPIModelName())
			return
		}
		for i := range rt.NumField() {
			f := rt.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue // inline TypeMeta
			}
			if _, ok := s.Properties[name]; !ok {
				t.Errorf("%s: %s has no property %s", doc, named.OpenAPIModelName(), name)
			}
			check(f.Type)
		}
	}
	kinds := scheme.KnownTypes(marinav1alpha1.SchemeGroupVersion)
	for _, k := range []string{"Boat", "BoatList", "Dock", "DockList", "Fleet", "FleetList"} {
		rt, ok := kinds[k]
		if !ok {
			t.Errorf("the scheme lacks %s", k)
			continue
		}
		check(rt)
	}
}

// refs returns every "$ref" value in a JSON document.
func refs(doc []byte) []string {
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if r, ok := x.(string); ok && k == "$ref" {
					out = append(out, r)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	var v any
	_ = json.Unmarshal(doc, &v)
	walk(v)
	return out
}

// TestFakeClientset shows the generated fake clientset in a plain unit test.
func TestFakeClientset(t *testing.T) {
	cs := fake.NewClientset(newBoat("aurora", 12))
	ctx := context.Background()
	got, err := cs.MarinaV1alpha1().Boats("harbour").Get(ctx, "aurora", metav1.GetOptions{})
	if err != nil || got.Spec.LengthMeters != 12 {
		t.Fatalf("get: %v %+v", err, got)
	}
	if _, err := cs.MarinaV1alpha1().Docks().Create(ctx, &marinav1alpha1.Dock{ObjectMeta: metav1.ObjectMeta{Name: "north"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	docks, err := cs.MarinaV1alpha1().Docks().List(ctx, metav1.ListOptions{})
	if err != nil || len(docks.Items) != 1 {
		t.Fatalf("list docks: %v %v", err, docks)
	}
}
