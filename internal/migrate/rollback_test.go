package migrate

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func crateObject(uid, rv string, generation int64, spec, status map[string]any) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "depot.example.com/v1", "kind": "Crate",
		"metadata": map[string]any{"name": "c", "namespace": "depot", "uid": uid, "resourceVersion": rv,
			"generation": generation, "creationTimestamp": "2026-11-27T10:00:00Z"},
		"spec": spec,
	}}
	if status != nil {
		obj.Object["status"] = status
	}
	return obj
}

func TestDifferingFields(t *testing.T) {
	a := crateObject("u1", "10", 1, map[string]any{"w": int64(1)}, map[string]any{})
	b := crateObject("u1", "99", 1, map[string]any{"w": int64(1)}, nil)
	if got := differingFields(a, b); len(got) != 0 {
		t.Errorf("objects differing in resourceVersion and an empty status: %v, want none", got)
	}
	b = crateObject("u2", "99", 2, map[string]any{"w": int64(2)}, map[string]any{"packed": true})
	b.SetLabels(map[string]string{"team": "green"})
	want := []string{"metadata.generation", "metadata.labels", "metadata.uid", "spec", "status"}
	if got := differingFields(a, b); !reflect.DeepEqual(got, want) {
		t.Errorf("differingFields = %v, want %v", got, want)
	}
}

// TestCompareBack checks which differences the rollback's verification accepts: identity
// only for an object created anew, deletionTimestamp only for one whose deletion it
// started, a generation behind the server's for any; anything else fails it.
func TestCompareBack(t *testing.T) {
	const r = "crates.depot.example.com"
	server := crateObject("u1", "10", 3, map[string]any{"w": int64(2)}, nil)
	cases := []struct {
		name                string
		crd                 *unstructured.Unstructured
		recreated, deleting bool
		differ              bool
		partial             []string
	}{
		{name: "equal", crd: crateObject("u1", "77", 3, map[string]any{"w": int64(2)}, nil)},
		{name: "generation behind", crd: crateObject("u1", "77", 2, map[string]any{"w": int64(2)}, nil), partial: []string{"metadata.generation"}},
		{name: "generation ahead", crd: crateObject("u1", "77", 4, map[string]any{"w": int64(2)}, nil), differ: true},
		{name: "spec", crd: crateObject("u1", "77", 3, map[string]any{"w": int64(1)}, nil), differ: true},
		{name: "uid", crd: crateObject("u2", "77", 3, map[string]any{"w": int64(2)}, nil), differ: true},
		{name: "uid, recreated", crd: crateObject("u2", "77", 1, map[string]any{"w": int64(2)}, nil), recreated: true, partial: []string{"metadata.generation", "metadata.uid"}},
		{name: "status, recreated", crd: crateObject("u2", "77", 1, map[string]any{"w": int64(2)}, map[string]any{"packed": true}), recreated: true, differ: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := &RollbackResult{Partial: map[string][]string{}, Verification: &Verification{Objects: map[string]int{}, Server: map[string]int{}}}
			if c.recreated {
				res.Recreated = []string{r + " depot/c"}
			}
			compareBack(r, map[string]*unstructured.Unstructured{"depot/c": server}, map[string]*unstructured.Unstructured{"depot/c": c.crd}, res)
			if got := !res.Verification.Equal(); got != c.differ {
				t.Errorf("differ = %v (%+v), want %v", got, res.Verification, c.differ)
			}
			if got := res.Partial[r+" depot/c"]; !c.differ && !reflect.DeepEqual(got, c.partial) {
				t.Errorf("partial = %v, want %v", got, c.partial)
			}
		})
	}
	res := &RollbackResult{Partial: map[string][]string{}, Verification: &Verification{Objects: map[string]int{}, Server: map[string]int{}}}
	compareBack(r, map[string]*unstructured.Unstructured{"depot/c": server}, map[string]*unstructured.Unstructured{"depot/d": server}, res)
	if !reflect.DeepEqual(res.Verification.Missing, []string{r + " depot/c"}) || !reflect.DeepEqual(res.Verification.Extra, []string{r + " depot/d"}) {
		t.Errorf("an object only on each side: %+v", res.Verification)
	}
}

func TestExemption(t *testing.T) {
	if exemption(nil) != nil || exemption([]string{""}) != nil {
		t.Errorf("no user: want no match condition")
	}
	got := exemption([]string{"system:serviceaccount:depot:migrator", "admin", "admin"})
	if len(got) != 1 || got[0].Expression != `request.dryRun || !(request.userInfo.username in ["system:serviceaccount:depot:migrator", "admin"])` {
		t.Errorf("exemption = %+v", got)
	}
}
