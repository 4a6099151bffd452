package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"sigs.k8s.io/yaml"
)

// createBodyKey is the context key of a create's body (WithCreateBody).
type createBodyKey struct{}

type createBody struct {
	body    []byte
	yaml    bool
	manager string
}

// WithCreateBody returns ctx carrying the JSON (or YAML) body of a create and the name of its
// field manager (the fieldManager parameter, else the User-Agent's first part, as
// k8s.io/apiserver names it). PrepareForCreate reads it only when the field manager recorded
// nothing (ownSentMembers).
func WithCreateBody(ctx context.Context, body []byte, isYAML bool, fieldManager, userAgent string) context.Context {
	return context.WithValue(ctx, createBodyKey{}, createBody{body: body, yaml: isYAML, manager: managerName(fieldManager, userAgent)})
}

// managerName is k8s.io/apiserver's name of a request's field manager: the fieldManager
// parameter, else the User-Agent up to its first "/", printable characters only, at most
// 128 bytes.
func managerName(fieldManager, userAgent string) string {
	if fieldManager != "" {
		return fieldManager
	}
	prefix, _, _ := strings.Cut(userAgent, "/")
	var b bytes.Buffer
	for _, r := range prefix {
		if !unicode.IsPrint(r) {
			continue
		}
		if b.Len() >= 128 {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ownSentMembers gives the creating manager the top-level members its body sent when the
// field manager recorded nothing for the create. The field manager records what differs
// from an empty object of the kind, and a Go type's empty object already holds every
// struct member ("spec": {}) and every field without omitempty: a create that sends only
// those gets no managed fields, and k8s.io/apiserver's field manager then tracks no later
// update of the object (it skips objects without managed fields until their first apply).
// A CRD's empty object is {}: its create owns "f:spec", and every later update is tracked.
// So does this one's. members are the kind's top-level properties that are not reset on
// this write (the status, when it has its own subresource).
func ownSentMembers(ctx context.Context, meta *metav1.ObjectMeta, members map[string]bool) {
	if len(meta.ManagedFields) > 0 {
		return
	}
	cb, ok := ctx.Value(createBodyKey{}).(createBody)
	if !ok {
		return
	}
	info, ok := genericapirequest.RequestInfoFrom(ctx)
	if !ok {
		return
	}
	body := cb.body
	if cb.yaml {
		var err error
		if body, err = yaml.YAMLToJSON(body); err != nil {
			return
		}
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return
	}
	fields := map[string]any{}
	for k, v := range top {
		if members[k] && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			fields["f:"+k] = map[string]any{}
		}
	}
	if len(fields) == 0 {
		return
	}
	raw, err := json.Marshal(fields)
	if err != nil {
		return
	}
	apiVersion := info.APIVersion
	if info.APIGroup != "" {
		apiVersion = info.APIGroup + "/" + info.APIVersion
	}
	meta.ManagedFields = []metav1.ManagedFieldsEntry{{
		Manager: cb.manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: apiVersion,
		Time: &metav1.Time{Time: time.Now().UTC().Truncate(time.Second)}, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: raw},
	}}
}
