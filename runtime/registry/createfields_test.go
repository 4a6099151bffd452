package registry

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// TestOwnSentMembers: a create the field manager recorded nothing of (its body sent only
// what the Go type's empty object holds) gives its manager the top-level members it sent,
// as a CRD's create does, so that later updates are tracked; a create with managed fields,
// or without a body, is left alone.
func TestOwnSentMembers(t *testing.T) {
	ctx := genericapirequest.WithRequestInfo(context.Background(), &genericapirequest.RequestInfo{APIGroup: "example.com", APIVersion: "v1"})
	members := map[string]bool{"spec": true}
	body := []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a"},"spec":{},"status":{},"unknown":1,"extra":null}`)

	var meta metav1.ObjectMeta
	ownSentMembers(WithCreateBody(ctx, body, false, "", "kubectl/v1.37.2 (linux/amd64)"), &meta, members)
	if len(meta.ManagedFields) != 1 {
		t.Fatalf("managed fields: %+v; want one entry", meta.ManagedFields)
	}
	e := meta.ManagedFields[0]
	if e.Manager != "kubectl" || e.Operation != metav1.ManagedFieldsOperationUpdate || e.APIVersion != "example.com/v1" ||
		e.FieldsType != "FieldsV1" || string(e.FieldsV1.Raw) != `{"f:spec":{}}` || e.Time == nil {
		t.Errorf("entry: %+v %s; want kubectl's Update of example.com/v1 owning f:spec", e, e.FieldsV1.Raw)
	}

	yamlBody := []byte("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: a}\nspec: {}\n")
	meta = metav1.ObjectMeta{}
	ownSentMembers(WithCreateBody(ctx, yamlBody, true, "mine", "kubectl/v1.37.2"), &meta, members)
	if len(meta.ManagedFields) != 1 || meta.ManagedFields[0].Manager != "mine" {
		t.Errorf("YAML body with fieldManager=mine: %+v", meta.ManagedFields)
	}

	meta = metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "other"}}}
	ownSentMembers(WithCreateBody(ctx, body, false, "", "kubectl"), &meta, members)
	if len(meta.ManagedFields) != 1 || meta.ManagedFields[0].Manager != "other" {
		t.Errorf("managed fields the field manager recorded were changed: %+v", meta.ManagedFields)
	}

	meta = metav1.ObjectMeta{}
	ownSentMembers(ctx, &meta, members)
	ownSentMembers(WithCreateBody(ctx, []byte(`{"metadata":{"name":"a"}}`), false, "", "kubectl"), &meta, members)
	if len(meta.ManagedFields) != 0 {
		t.Errorf("a create without a body, or that sent no member, got managed fields: %+v", meta.ManagedFields)
	}
}
