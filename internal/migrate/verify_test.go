package migrate

import (
	"reflect"
	"strings"
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
		"a status of nulls":       {obj("1", "u1", map[string]any{"parents": nil}, map[string]any{"team": "blue"}), true},
		"a status":                {obj("1", "u1", map[string]any{"ready": true}, map[string]any{"team": "blue"}), false},
		"another uid":             {obj("1", "u2", nil, map[string]any{"team": "blue"}), false},
		"another label":           {obj("1", "u1", nil, map[string]any{"team": "green"}), false},
	} {
		if got := hash(c.obj) == base; got != c.same {
			t.Errorf("%s: same hash %v, want %v", name, got, c.same)
		}
	}
}

// TestStoredAsTheServerStores: a CRD object the server's types store otherwise (a zero
// value under omitempty dropped) is equal in a verification only through the copy's
// record of what the server stored for it, and changedFields names the field.
func TestStoredAsTheServerStores(t *testing.T) {
	crd := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "shop.example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
		"spec":     map[string]any{"size": int64(3)}, "status": map[string]any{"ready": int64(0)}}}
	server := crd.DeepCopy()
	server.Object["status"] = map[string]any{}
	server.SetResourceVersion("9")
	if got := changedFields(crd, server); !reflect.DeepEqual(got, []string{"status.ready"}) {
		t.Errorf("changedFields: %v, want [status.ready] (an empty status counts as absent)", got)
	}
	server.Object["status"] = map[string]any{"ready": int64(0), "parents": nil}
	if got := changedFields(crd, server); len(got) != 0 {
		t.Errorf("changedFields: %v, want none (a null counts as absent)", got)
	}
	server.Object["status"] = map[string]any{"phase": "Up"}
	if got := changedFields(crd, server); !reflect.DeepEqual(got, []string{"status.phase", "status.ready"}) {
		t.Errorf("changedFields: %v, want [status.phase status.ready]", got)
	}
	server.Object["status"] = map[string]any{}
	from, _ := ContentHash(crd)
	to, _ := ContentHash(server)
	want := map[string]map[string]string{"widgets.shop.example.com": {"ns/a": from}}
	got := map[string]map[string]string{"widgets.shop.example.com": {"ns/a": to}}
	if v := compareHashes(want, got, nil); v.Equal() {
		t.Errorf("without the copy's record, the verification finds %+v equal", v)
	}
	if v := compareHashes(want, got, map[string]string{from: to}); !v.Equal() {
		t.Errorf("with the copy's record, the verification finds %+v", v)
	}
	other := crd.DeepCopy()
	other.SetLabels(map[string]string{"team": "red"})
	otherHash, _ := ContentHash(other)
	if v := compareHashes(want, map[string]map[string]string{"widgets.shop.example.com": {"ns/a": otherHash}}, map[string]string{from: to}); v.Equal() {
		t.Errorf("a server object with another label is equal: %+v", v)
	}
}

// TestCountWatches: the watches of the group kube-apiserver serves itself, summed over its
// resources and versions, from the Prometheus text of its /metrics.
func TestCountWatches(t *testing.T) {
	text := `# HELP apiserver_longrunning_requests [STABLE] Gauge of all active long-running apiserver requests
# TYPE apiserver_longrunning_requests gauge
apiserver_longrunning_requests{component="apiserver",group="webapp.example.com",resource="guestbooks",scope="cluster",subresource="",verb="WATCH",version="v1"} 3
apiserver_longrunning_requests{component="apiserver",group="webapp.example.com",resource="configmaps",scope="namespace",subresource="",verb="WATCH",version="v1beta1"} 2
apiserver_longrunning_requests{component="apiserver",group="webapp.example.com",resource="guestbooks",scope="cluster",subresource="",verb="CONNECT",version="v1"} 7
apiserver_longrunning_requests{component="apiserver",group="",resource="configmaps",scope="cluster",subresource="",verb="WATCH",version="v1"} 11
apiserver_longrunning_requests{component="apiserver",group="shop.webapp.example.com",resource="carts",scope="cluster",subresource="",verb="WATCH",version="v1"} 13
apiserver_request_total{component="apiserver",group="webapp.example.com",verb="WATCH"} 17
`
	n, err := countWatches(strings.NewReader(text), "webapp.example.com")
	if err != nil || n != 5 {
		t.Errorf("countWatches: %d, %v; want 5", n, err)
	}
}
