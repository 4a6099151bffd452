package registry

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
)

// widget is a served kind as generated code would declare it.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              widgetSpec   `json:"spec,omitempty"`
	Status            widgetStatus `json:"status,omitempty"`
}

type widgetSpec struct {
	Color    string  `json:"color,omitempty"`
	Size     int32   `json:"size,omitempty"`
	Weight   float64 `json:"weight,omitempty"`
	Shiny    bool    `json:"shiny,omitempty"`
	Replicas *int32  `json:"replicas,omitempty"`
	Tags     []string
}

type widgetStatus struct {
	Replicas int32       `json:"replicas,omitempty"`
	Selector string      `json:"selector,omitempty"`
	Since    metav1.Time `json:"since,omitempty"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if w.Spec.Replicas != nil {
		r := *w.Spec.Replicas
		out.Spec.Replicas = &r
	}
	out.Spec.Tags = append([]string(nil), w.Spec.Tags...)
	w.Status.Since.DeepCopyInto(&out.Status.Since)
	return &out
}

type widgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []widget `json:"items"`
}

func (l *widgetList) DeepCopyObject() runtime.Object {
	out := *l
	out.Items = nil
	for i := range l.Items {
		out.Items = append(out.Items, *l.Items[i].DeepCopyObject().(*widget))
	}
	return &out
}

func int32p(n int32) *int32 { return &n }

func widgetResource() *Resource[*widget] {
	return &Resource[*widget]{
		Group: "shop.example.com", Versions: []Version{{Name: "v1"}}, Kind: "Widget", Plural: "widgets", Singular: "widget", NamespaceScoped: true,
		New: func() *widget { return &widget{} }, NewList: func() runtime.Object { return &widgetList{} },
		SelectableFields: []SelectableField[*widget]{{Name: "spec.color", Value: func(w *widget) string { return w.Spec.Color }}},
		Scale: &ScaleFuncs[*widget]{
			SpecReplicasPath: ".spec.replicas",
			SpecReplicas: func(w *widget) (int32, bool) {
				if w.Spec.Replicas == nil {
					return 0, false
				}
				return *w.Spec.Replicas, true
			},
			SetSpecReplicas: func(w *widget, n int32) { w.Spec.Replicas = &n },
			StatusReplicas:  func(w *widget) int32 { return w.Status.Replicas },
			Selector:        func(w *widget) string { return w.Status.Selector },
		},
	}
}

func TestTableConvertor(t *testing.T) {
	created := metav1.NewTime(time.Now().Add(-3 * time.Hour))
	since := metav1.NewTime(time.Now().Add(-2 * time.Minute))
	c, err := NewTableConvertor([]Column{
		{Name: "Color", Type: "string", JSONPath: ".spec.color"},
		{Name: "Size", Type: "integer", JSONPath: ".spec.size", Description: "How big."},
		{Name: "Weight", Type: "number", JSONPath: ".spec.weight", Format: "double"},
		{Name: "Shiny", Type: "boolean", JSONPath: ".spec.shiny", Priority: 1},
		{Name: "Since", Type: "date", JSONPath: ".status.since"},
		{Name: "Replicas", Type: "integer", JSONPath: ".spec.replicas"},
		{Name: "SizeText", Type: "string", JSONPath: ".spec.size"},
		{Name: "FirstTag", Type: "string", JSONPath: ".spec.Tags[0]"},
		{Name: "WrongType", Type: "boolean", JSONPath: ".spec.color"},
	})
	if err != nil {
		t.Fatal(err)
	}
	w := &widget{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", CreationTimestamp: created, ResourceVersion: "7"},
		Spec:       widgetSpec{Color: "red", Size: 3, Weight: 1.5, Shiny: true, Tags: []string{"x", "y"}},
		Status:     widgetStatus{Since: since},
	}
	table, err := c.ConvertToTable(context.Background(), w, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range table.ColumnDefinitions {
		names = append(names, h.Name)
	}
	if got := strings.Join(names, ","); got != "Name,Color,Size,Weight,Shiny,Since,Replicas,SizeText,FirstTag,WrongType" {
		t.Errorf("headers %s", got)
	}
	h := table.ColumnDefinitions
	if h[0].Format != "name" || h[2].Description != "How big." || h[1].Description != "Column (in JSONPath format): .spec.color" ||
		h[3].Format != "double" || h[4].Priority != 1 || h[5].Type != "date" {
		t.Errorf("column definitions %+v", h)
	}
	if len(table.Rows) != 1 || table.ResourceVersion != "7" {
		t.Fatalf("rows %+v rv %q", table.Rows, table.ResourceVersion)
	}
	// Missing values (replicas) and values of the wrong type are empty cells, as for CRDs;
	// a string column prints any value.
	want := []any{"a", "red", int64(3), 1.5, true, "2m", nil, "3", "x", nil}
	if got := table.Rows[0].Cells; !reflect.DeepEqual(got, want) {
		t.Errorf("cells\n got %#v\nwant %#v", got, want)
	}
	if table.Rows[0].Object.Object != w {
		t.Error("the row does not carry the object")
	}

	// Lists: one row each; no headers when asked.
	list := &widgetList{ListMeta: metav1.ListMeta{ResourceVersion: "9", Continue: "c"}, Items: []widget{*w, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}}}
	table, err = c.ConvertToTable(context.Background(), list, &metav1.TableOptions{NoHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(table.ColumnDefinitions) != 0 || len(table.Rows) != 2 || table.ResourceVersion != "9" || table.Continue != "c" {
		t.Fatalf("list table %+v", table)
	}
	if b := table.Rows[1].Cells; b[0] != "b" || b[1] != nil || b[2] != nil || len(b) != 10 {
		t.Errorf("second row %#v", b)
	}
}

func TestTableConvertorOwnAge(t *testing.T) {
	c, err := NewTableConvertor([]Column{
		{Name: "Color", Type: "string", JSONPath: ".spec.color"},
		{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
	})
	if err != nil {
		t.Fatal(err)
	}
	w := &widget{ObjectMeta: metav1.ObjectMeta{Name: "a", CreationTimestamp: metav1.NewTime(time.Now().Add(-5 * time.Minute))}}
	table, err := c.ConvertToTable(context.Background(), w, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(table.ColumnDefinitions); n != 3 || table.ColumnDefinitions[2].Name != "Age" {
		t.Errorf("a column named Age is shown where it is declared: %+v", table.ColumnDefinitions)
	}
	if want := []any{"a", nil, "5m"}; !reflect.DeepEqual(table.Rows[0].Cells, want) {
		t.Errorf("cells %#v, want %#v", table.Rows[0].Cells, want)
	}
}

// TestTableConvertorAge checks the AGE column against a CRD's table: kube-apiserver shows
// NAME and AGE for a CRD without additionalPrinterColumns, and NAME and the columns alone
// for one with (e2e's TestWarnedInputsLikeControllerGenCRD compares the two servers).
func TestTableConvertorAge(t *testing.T) {
	w := &widget{ObjectMeta: metav1.ObjectMeta{Name: "a", CreationTimestamp: metav1.NewTime(time.Now().Add(-5 * time.Minute))}, Spec: widgetSpec{Color: "red"}}
	for _, c := range []struct {
		columns []Column
		headers string
		cells   []any
	}{
		{nil, "Name Age", []any{"a", "5m"}},
		{[]Column{{Name: "Color", Type: "string", JSONPath: ".spec.color"}}, "Name Color", []any{"a", "red"}},
	} {
		conv, err := NewTableConvertor(c.columns)
		if err != nil {
			t.Fatal(err)
		}
		table, err := conv.ConvertToTable(context.Background(), w, nil)
		if err != nil {
			t.Fatal(err)
		}
		var headers []string
		for _, h := range table.ColumnDefinitions {
			headers = append(headers, h.Name)
		}
		if got := strings.Join(headers, " "); got != c.headers || !reflect.DeepEqual(table.Rows[0].Cells, c.cells) {
			t.Errorf("columns %v: headers %q, cells %#v; want %q, %#v", c.columns, got, table.Rows[0].Cells, c.headers, c.cells)
		}
	}
}

func TestTableConvertorRejects(t *testing.T) {
	for _, col := range []Column{
		{Name: "A", Type: "float", JSONPath: ".spec.a"},
		{Name: "A", Type: "string", JSONPath: "spec.a"},
		{Name: "A", Type: "string", JSONPath: ".spec.a["},
		{Name: "", Type: "string", JSONPath: ".spec.a"},
		{Name: "A", Type: "string", JSONPath: ".spec.a", Priority: -1},
	} {
		if _, err := NewTableConvertor([]Column{col}); err == nil {
			t.Errorf("column %+v accepted", col)
		}
	}
}

func TestGetAttrs(t *testing.T) {
	res := widgetResource()
	w := &widget{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", Labels: map[string]string{"l": "v"}}, Spec: widgetSpec{Color: "blue"}}
	labels, set, err := getAttrs(res)(w)
	if err != nil {
		t.Fatal(err)
	}
	want := fields.Set{"metadata.name": "a", "metadata.namespace": "ns", "spec.color": "blue"}
	if !reflect.DeepEqual(set, want) || labels["l"] != "v" {
		t.Errorf("fields %v labels %v", set, labels)
	}
	if !fields.SelectorFromSet(fields.Set{"spec.color": "blue"}).Matches(set) || fields.SelectorFromSet(fields.Set{"spec.color": "red"}).Matches(set) {
		t.Error("selector on spec.color")
	}
	if got := res.fieldLabels(); strings.Join(got, ",") != "metadata.name,metadata.namespace,spec.color" {
		t.Errorf("field labels %v", got)
	}
	res.NamespaceScoped = false
	if _, set, _ := getAttrs(res)(w); len(set) != 2 || set["metadata.namespace"] != "" {
		t.Errorf("cluster-scoped fields %v", set)
	}
	res.SelectableFields = append(res.SelectableFields, SelectableField[*widget]{Name: "metadata.name", Value: func(*widget) string { return "" }})
	if err := res.validate(); err == nil {
		t.Error("a selectable field named metadata.name is accepted")
	}
}

func TestScaleOf(t *testing.T) {
	r := &ScaleREST[*widget]{res: widgetResource()}
	w := &widget{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "u", ResourceVersion: "5", Labels: map[string]string{"x": "y"}},
		Spec:       widgetSpec{Replicas: int32p(4)},
		Status:     widgetStatus{Replicas: 2, Selector: "app=a"},
	}
	s, set := r.scaleOf(w)
	want := &autoscalingv1.Scale{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "u", ResourceVersion: "5"},
		Spec:       autoscalingv1.ScaleSpec{Replicas: 4},
		Status:     autoscalingv1.ScaleStatus{Replicas: 2, Selector: "app=a"},
	}
	if !set || !reflect.DeepEqual(s, want) {
		t.Errorf("scale %+v, set %v", s, set)
	}
	w.Spec.Replicas = nil
	if s, set := r.scaleOf(w); set || s.Spec.Replicas != 0 {
		t.Errorf("unset replicas: %+v, set %v", s.Spec, set)
	}
	if gvk := r.GroupVersionKind(schemaGV("shop.example.com", "v1")); gvk.String() != "autoscaling/v1, Kind=Scale" {
		t.Errorf("kind %v", gvk)
	}
	table, err := r.ConvertToTable(context.Background(), s, nil)
	if err != nil || len(table.Rows) != 1 || !reflect.DeepEqual(table.Rows[0].Cells[:3], []any{"a", int64(4), int64(2)}) {
		t.Errorf("scale table %+v, %v", table, err)
	}
}

func TestScaleUpdatedObject(t *testing.T) {
	res := widgetResource()
	r, err := newScaleREST(nil, res)
	if err != nil {
		t.Fatal(err)
	}
	old := &widget{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "5", Generation: 2, Labels: map[string]string{"keep": "me"}},
		Spec:       widgetSpec{Color: "red", Replicas: int32p(1)},
		Status:     widgetStatus{Replicas: 1},
	}
	update := func(old *widget, s *autoscalingv1.Scale) (*widget, error) {
		info := &scaleUpdatedObjectInfo[*widget]{req: rest.DefaultUpdatedObjectInfo(s), rest: r, gv: schemaGV("shop.example.com", "v1")}
		obj, err := info.UpdatedObject(context.Background(), old)
		if err != nil {
			return nil, err
		}
		return obj.(*widget), nil
	}

	got, err := update(old, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}, Spec: autoscalingv1.ScaleSpec{Replicas: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if *got.Spec.Replicas != 3 || got.Spec.Color != "red" || got.Labels["keep"] != "me" || got.ResourceVersion != "5" || got.Status.Replicas != 1 {
		t.Errorf("updated %+v", got)
	}
	if *old.Spec.Replicas != 1 {
		t.Error("the stored object was modified")
	}

	// A resourceVersion in the Scale becomes the precondition of the update.
	got, err = update(old, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "4"}, Spec: autoscalingv1.ScaleSpec{Replicas: 2}})
	if err != nil || got.ResourceVersion != "4" {
		t.Errorf("resourceVersion precondition: %v %q", err, got.ResourceVersion)
	}

	// Negative replicas are invalid (422), as for built-in kinds.
	if _, err := update(old, &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: -1}}); !apierrors.IsInvalid(err) {
		t.Errorf("negative replicas: %v", err)
	}

	// With no spec replicas stored, an update that does not set them is a bad request;
	// one that does allocates them.
	unset := old.DeepCopyObject().(*widget)
	unset.Spec.Replicas = nil
	keep := rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, old runtime.Object) (runtime.Object, error) { return old, nil })
	info := &scaleUpdatedObjectInfo[*widget]{req: keep, rest: r, gv: schemaGV("shop.example.com", "v1")}
	if _, err := info.UpdatedObject(context.Background(), unset); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), ".spec.replicas") {
		t.Errorf("update keeping unset replicas: %v", err)
	}
	got, err = update(unset, &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 6}})
	if err != nil || got.Spec.Replicas == nil || *got.Spec.Replicas != 6 {
		t.Errorf("setting unset replicas: %v %+v", err, got)
	}

	// A request that is not a Scale is rejected.
	bad := rest.DefaultUpdatedObjectInfo(&widget{})
	info = &scaleUpdatedObjectInfo[*widget]{req: bad, rest: r, gv: schemaGV("shop.example.com", "v1")}
	if _, err := info.UpdatedObject(context.Background(), old); !apierrors.IsBadRequest(err) {
		t.Errorf("wrong object: %v", err)
	}
}

func TestScaleManagedFields(t *testing.T) {
	r, err := newScaleREST(nil, widgetResource())
	if err != nil {
		t.Fatal(err)
	}
	// kubectl-client-side-apply owns spec.replicas and spec.color; a scale by another manager
	// takes spec.replicas from it.
	old := &widget{
		ObjectMeta: metav1.ObjectMeta{Name: "a", ManagedFields: []metav1.ManagedFieldsEntry{{
			Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "shop.example.com/v1",
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:color":{},"f:replicas":{}}}`)},
		}}},
		Spec: widgetSpec{Replicas: int32p(1)},
	}
	scaled := func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		s := old.(*autoscalingv1.Scale).DeepCopy()
		s.Spec.Replicas = 5
		// What the field manager of the scale endpoint leaves: an update takes the field
		// from its previous owner, whose only field on Scale it was.
		if len(s.ManagedFields) != 1 || s.ManagedFields[0].Manager != "kubectl-client-side-apply" || s.ManagedFields[0].APIVersion != "autoscaling/v1" {
			t.Errorf("managed fields of the old Scale: %+v", s.ManagedFields)
		}
		s.ManagedFields = append(s.ManagedFields[:0], metav1.ManagedFieldsEntry{
			Manager: "kubectl-scale", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "autoscaling/v1",
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)},
		})
		return s, nil
	}
	info := &scaleUpdatedObjectInfo[*widget]{req: rest.DefaultUpdatedObjectInfo(nil, scaled), rest: r, gv: schemaGV("shop.example.com", "v1")}
	obj, err := info.UpdatedObject(context.Background(), old)
	if err != nil {
		t.Fatal(err)
	}
	managers := map[string]string{}
	for _, e := range obj.(*widget).ManagedFields {
		managers[e.Manager] = e.APIVersion + " " + string(e.FieldsV1.Raw)
	}
	if got := managers["kubectl-scale"]; got != `shop.example.com/v1 {"f:spec":{"f:replicas":{}}}` {
		t.Errorf("kubectl-scale entry %q (all: %v)", got, managers)
	}
	if got := managers["kubectl-client-side-apply"]; got != `shop.example.com/v1 {"f:spec":{"f:color":{}}}` {
		t.Errorf("kubectl-client-side-apply entry %q (all: %v)", got, managers)
	}
}

func schemaGV(group, version string) schema.GroupVersion {
	return schema.GroupVersion{Group: group, Version: version}
}

// TestScaleSpecValidated: the spec replicas of a kind with /scale are checked on every
// create and update of the object, as kube-apiserver checks a custom resource's: a
// negative value is invalid at the SpecReplicasPath, with the CRD's message, whatever the
// schema says; unset replicas are not checked.
func TestScaleSpecValidated(t *testing.T) {
	s := newStrategy(runtime.NewScheme(), widgetResource(), hooks[*widget]{}, nil)
	ctx := context.Background()
	named := func(replicas *int32) *widget {
		return &widget{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "1"}, Spec: widgetSpec{Replicas: replicas}}
	}
	const want = ".spec.replicas: Invalid value: -1: should be a non-negative integer"
	if errs := s.Validate(ctx, named(int32p(-1))); len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("create with -1 replicas: %v; want %q", errs, want)
	}
	if errs := s.ValidateUpdate(ctx, named(int32p(-1)), named(int32p(1))); len(errs) != 1 || errs[0].Error() != want {
		t.Errorf("update to -1 replicas: %v; want %q", errs, want)
	}
	for _, r := range []*int32{nil, int32p(0), int32p(3)} {
		if errs := s.Validate(ctx, named(r)); len(errs) != 0 {
			t.Errorf("create with replicas %v: %v", r, errs)
		}
	}
}
