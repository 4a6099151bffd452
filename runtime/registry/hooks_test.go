package registry

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// widgetHooks implements every hook, as a user's hooks.go may.
type widgetHooks struct{}

func (widgetHooks) Validate(ctx context.Context, w *widget) field.ErrorList {
	if w.Spec.Color == "green" {
		return field.ErrorList{field.NotSupported(field.NewPath("spec", "color"), w.Spec.Color, []string{"red", "blue"})}
	}
	return nil
}

func (widgetHooks) ValidateUpdate(ctx context.Context, w, old *widget) field.ErrorList {
	if w.Spec.Size != old.Spec.Size {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "size"), "is immutable")}
	}
	return nil
}

func (widgetHooks) PrepareForCreate(ctx context.Context, w *widget) {
	w.Spec.Tags = append(w.Spec.Tags, "new")
}

func (widgetHooks) PrepareForUpdate(ctx context.Context, w, old *widget) {
	w.Spec.Tags = append(w.Spec.Tags, "updated")
}

func (widgetHooks) Canonicalize(w *widget) { slices.Sort(w.Spec.Tags) }

func (widgetHooks) WarningsOnCreate(ctx context.Context, w *widget) []string {
	if w.Spec.Shiny {
		return []string{"spec.shiny is deprecated"}
	}
	return nil
}

func (widgetHooks) WarningsOnUpdate(ctx context.Context, w, old *widget) []string {
	return []string{"updated " + w.Name}
}

// TestHooks checks that the strategy calls every hook where Kubernetes' strategies run
// their code, and adds the hooks' errors to the generic ones.
func TestHooks(t *testing.T) {
	h, err := resolveHooks[*widget]("Widget", widgetHooks{})
	if err != nil {
		t.Fatal(err)
	}
	res := widgetResource()
	res.SpecEqual = func(a, b *widget) bool { return reflect.DeepEqual(a.Spec, b.Spec) }
	s := newStrategy(runtime.NewScheme(), res, h, nil)
	ctx := context.Background()

	w := &widget{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}, Spec: widgetSpec{Color: "green", Shiny: true, Tags: []string{"b"}}}
	s.PrepareForCreate(ctx, w)
	if !slices.Equal(w.Spec.Tags, []string{"b", "new"}) || w.Generation != 1 {
		t.Errorf("PrepareForCreate: tags %v, generation %d", w.Spec.Tags, w.Generation)
	}
	errs := s.Validate(ctx, w)
	if len(errs) != 1 || errs[0].Field != "spec.color" || errs[0].Type != field.ErrorTypeNotSupported {
		t.Errorf("Validate: %v", errs)
	}
	w.Name = "Not A Name"
	if errs := s.Validate(ctx, w); len(errs) != 2 {
		t.Errorf("Validate: want the metadata error and the hook's together, got %v", errs)
	}
	w.Name = "a"
	if got := s.WarningsOnCreate(ctx, w); !slices.Equal(got, []string{"spec.shiny is deprecated"}) {
		t.Errorf("WarningsOnCreate: %v", got)
	}
	s.Canonicalize(w)
	if !slices.IsSorted(w.Spec.Tags) {
		t.Errorf("Canonicalize: %v", w.Spec.Tags)
	}

	old := w.DeepCopyObject().(*widget)
	old.ResourceVersion = "1"
	upd := old.DeepCopyObject().(*widget)
	upd.Spec.Color, upd.Spec.Size = "red", 9
	s.PrepareForUpdate(ctx, upd, old)
	if !slices.Contains(upd.Spec.Tags, "updated") || upd.Generation != 2 {
		t.Errorf("PrepareForUpdate: tags %v, generation %d", upd.Spec.Tags, upd.Generation)
	}
	errs = s.ValidateUpdate(ctx, upd, old)
	if len(errs) != 1 || errs[0].Field != "spec.size" || errs[0].Type != field.ErrorTypeForbidden {
		t.Errorf("ValidateUpdate: %v", errs)
	}
	if got := s.WarningsOnUpdate(ctx, upd, old); !slices.Equal(got, []string{"updated a"}) {
		t.Errorf("WarningsOnUpdate: %v", got)
	}
}

// badHooks has a Validate whose signature does not match: silently skipping it would drop
// the user's validation, so the server must not start.
type badHooks struct{}

func (badHooks) Validate(w *widget) error { return nil }

func TestHooksWrongSignature(t *testing.T) {
	_, err := resolveHooks[*widget]("Widget", badHooks{})
	if err == nil || !strings.Contains(err.Error(), "Widget hooks: method Validate has type") || !strings.Contains(err.Error(), "fix the signature") {
		t.Fatalf("want the wrong signature reported, got %v", err)
	}
}

// labelWriter writes into old's labels, as a careless hook may.
type labelWriter struct{}

func (labelWriter) PrepareForUpdate(ctx context.Context, w, old *widget) {
	old.Labels["touched"] = "yes"
}

// The stored object an update starts from may share its label map with other objects
// (the storage codec interns equal label sets); a hook writing into old's labels must not
// reach them.
func TestHooksGetOldWithLabelsOfItsOwn(t *testing.T) {
	h, err := resolveHooks[*widget]("Widget", labelWriter{})
	if err != nil {
		t.Fatal(err)
	}
	s := newStrategy(runtime.NewScheme(), widgetResource(), h, nil)
	shared := map[string]string{"app": "web"}
	old := &widget{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "1", Labels: shared}}
	upd := old.DeepCopyObject().(*widget)
	s.PrepareForUpdate(context.Background(), upd, old)
	if len(shared) != 1 {
		t.Errorf("the hook wrote into the shared label map: %v", shared)
	}
	if old.Labels["touched"] != "yes" {
		t.Errorf("the hook did not get old: %v", old.Labels)
	}
}
