package migrate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// VerifyOptions are the inputs of Verify.
type VerifyOptions struct {
	// Cluster reaches kube-apiserver, which serves the CRDs; Server the generated server.
	Cluster, Server *rest.Config
	// Group is the API group; Skip the objects left out (as PlanOptions.Skip).
	Group string
	Skip  []string
	// Versions as CopyOptions.Versions.
	Versions map[string]string
}

// Verification compares, per resource, the CRD's objects with the generated server's.
type Verification struct {
	// Objects counts the CRD's objects (but the skipped) and Server the server's, by
	// resource.
	Objects, Server map[string]int
	// Differ, Missing and Extra name the objects ("<resource> <namespace>/<name>") whose
	// content hash differs, that the server lacks, and that only the server has.
	Differ, Missing, Extra []string
}

// Equal reports whether both sides hold the same objects with the same content.
func (v *Verification) Equal() bool {
	return len(v.Differ) == 0 && len(v.Missing) == 0 && len(v.Extra) == 0 && reflect.DeepEqual(v.Objects, v.Server)
}

// ContentHash is the SHA-256 of an object's content as the migration keeps it: everything
// but metadata.resourceVersion (new on the server), in JSON with sorted keys. A status
// that is an empty object counts as absent: a Go-typed server answers an absent status as
// {} (README: the stored object of an absent optional struct holds its zero values).
//
// A JSON null counts as absent too (WithoutNulls).
func ContentHash(obj *unstructured.Unstructured) (string, error) {
	c := &unstructured.Unstructured{Object: WithoutNulls(obj.Object)}
	unstructured.RemoveNestedField(c.Object, "metadata", "resourceVersion")
	if s, ok := c.Object["status"].(map[string]any); ok && len(s) == 0 {
		delete(c.Object, "status")
	}
	data, err := json.Marshal(c.Object) // encoding/json sorts map keys
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// Verify lists the group's objects on both sides and compares their counts and content
// hashes.
func Verify(ctx context.Context, o VerifyOptions) (*Verification, error) {
	v, _, err := verify(ctx, o, nil)
	return v, err
}

// verify is Verify, which also returns the cluster's content hashes (by resource, then
// "<namespace>/<name>"; the skipped left out). stored is as compareHashes's.
func verify(ctx context.Context, o VerifyOptions, stored map[string]string) (*Verification, map[string]map[string]string, error) {
	crds, err := groupCRDs(ctx, o.Cluster, o.Group)
	if err != nil {
		return nil, nil, err
	}
	cluster, err := dynamic.NewForConfig(o.Cluster)
	if err != nil {
		return nil, nil, err
	}
	server, err := dynamic.NewForConfig(o.Server)
	if err != nil {
		return nil, nil, err
	}
	skip := map[string]bool{}
	for _, s := range o.Skip {
		skip[s] = true
	}
	want, got := map[string]map[string]string{}, map[string]map[string]string{}
	for _, crd := range crds {
		resource := crd.Spec.Names.Plural + "." + crd.Spec.Group
		version := o.Versions[resource]
		if version == "" {
			version = storageVersion(crd)
		}
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: version, Resource: crd.Spec.Names.Plural}
		if want[resource], err = hashes(ctx, cluster, gvr); err != nil {
			return nil, nil, fmt.Errorf("%s in the cluster: %w", resource, err)
		}
		for name := range want[resource] {
			if skip[resource+"/"+name] {
				delete(want[resource], name)
			}
		}
		if got[resource], err = hashes(ctx, server, gvr); err != nil {
			return nil, nil, fmt.Errorf("%s on the generated server: %w", resource, err)
		}
	}
	return compareHashes(want, got, stored), want, nil
}

// hashes lists gvr and returns the content hash of each object by "<namespace>/<name>"
// (cluster-scoped: "<name>").
func hashes(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource) (map[string]string, error) {
	out := map[string]string{}
	err := eachObject(ctx, client, gvr, func(obj *unstructured.Unstructured) error {
		h, err := ContentHash(obj)
		out[objectName(obj)] = h
		return err
	})
	return out, err
}

// eachObject lists gvr, 500 objects a page, and calls fn with each object.
func eachObject(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource, fn func(*unstructured.Unstructured) error) error {
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := client.Resource(gvr).List(ctx, opts)
		if err != nil {
			return err
		}
		for i := range list.Items {
			if err := fn(&list.Items[i]); err != nil {
				return err
			}
		}
		if list.GetContinue() == "" {
			return nil
		}
		opts.Continue = list.GetContinue()
	}
}

// WithoutNulls is a copy of obj without the fields whose value is JSON null, in nested
// objects and in the objects of lists too. A null is how a Go type writes a nil slice or
// map whose field has no omitempty; a CRD prunes the nulls of fields that are not
// nullable and holds nothing there, and a CRD that requires the field refuses the null.
// Both mean the field is absent.
func WithoutNulls(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if v == nil {
			continue
		}
		out[k] = withoutNullsValue(v)
	}
	return out
}

func withoutNullsValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return WithoutNulls(t)
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = withoutNullsValue(e)
		}
		return l
	default:
		return v
	}
}
