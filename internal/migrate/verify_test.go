package migrate

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestContentHash: the hash ignores the resourceVersion and counts an empty status as
// absent (how a Go-typed server answers an absent one), and changes with anything else,
// the uid or a label.
func TestContentHash(t *testing.T) {
	obj := func(rv, uid string, status any, labels map[string]any) *unstructured.Unstructured {
		o := map[string]any{"apiVersion": "shop.example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "a", "namespace": "ns", "uid": uid, "resourceVersion": rv, "labels": labels},
			"spec":     map[string]any{"size": int64(3)}}
		if status != nil {
			o["status"] = status
		}
		return &unstructured.Unstructured{Object: o}
	}
	hash := func(u *unstructured.Unstructured) string {
		h, err := ContentHash(u)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	base := hash(obj("1", "u1", nil, map[string]any{"team": "blue"}))
	for name, c := range map[string]struct {
		obj  *unstructured.Unstructured
		same bool
	}{
		"another resourceVersion": {obj("2", "u1", nil, map[string]any{"team": "blue"}), true},
		"an empty status":         {obj("1", "u1", map[string]any{}, map[string]any{"team": "blue"}), true},
		"a status":                {obj("1", "u1", map[string]any{"ready": true}, map[string]any{"team": "blue"}), false},
		"another uid":             {obj("1", "u2", nil, map[string]any{"team": "blue"}), false},
		"another label":           {obj("1", "u1", nil, map[string]any{"team": "green"}), false},
	} {
		if got := hash(c.obj) == base; got != c.same {
			t.Errorf("%s: same hash %v, want %v", name, got, c.same)
		}
	}
}
