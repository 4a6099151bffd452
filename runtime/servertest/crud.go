package servertest

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Client is the part of a generated typed client (e.g. WidgetInterface) that CRUD uses.
type Client[T Object, L runtime.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// Object is a served kind's pointer type.
type Object interface {
	runtime.Object
	metav1.Object
}

// CRUD checks the basic contract of one kind through its generated client: create, get,
// list (with a label selector), watch (added, modified, deleted, in order), update, a
// stale update (409), delete and 404 afterwards. obj is a valid object to create; its
// name and labels are set here.
func CRUD[T Object, L runtime.Object](t *testing.T, c Client[T, L], obj T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	obj.SetName("aagen-crud")
	obj.SetLabels(map[string]string{"aagen.dev/test": "crud"})

	w, err := c.Watch(ctx, metav1.ListOptions{LabelSelector: "aagen.dev/test=crud"})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()

	created, err := c.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.GetUID() == "" || created.GetResourceVersion() == "" {
		t.Errorf("create returned no uid or resourceVersion")
	}
	got, err := c.Get(ctx, "aagen-crud", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	list, err := c.List(ctx, metav1.ListOptions{LabelSelector: "aagen.dev/test=crud"})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if n := meta.LenList(list); n != 1 {
		t.Errorf("list with label selector: %d items, want 1", n)
	}
	if none, err := c.List(ctx, metav1.ListOptions{LabelSelector: "aagen.dev/test=other"}); err != nil || meta.LenList(none) != 0 {
		t.Errorf("list with a selector that matches nothing: %v, %d items", err, meta.LenList(none))
	}

	stale := got.DeepCopyObject().(T)
	labels := got.GetLabels()
	labels["aagen.dev/updated"] = "true"
	got.SetLabels(labels)
	updated, err := c.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.GetLabels()["aagen.dev/updated"] != "true" {
		t.Errorf("update did not keep the new label")
	}
	if _, err := c.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update with a stale resourceVersion: want 409 Conflict, got %v", err)
	}

	if err := c.Delete(ctx, "aagen-crud", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := c.Get(ctx, "aagen-crud", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: want 404, got %v", err)
	}
	for _, want := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted} {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed before %s", want)
			}
			if ev.Type != want {
				t.Fatalf("watch event %s, want %s", ev.Type, want)
			}
		case <-ctx.Done():
			t.Fatalf("watch: no %s event", want)
		}
	}
}
