package conformance

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/generator/load"
	"github.com/aagen-dev/aagen/generator/markers"
	"github.com/aagen-dev/aagen/generator/model"
)

// TestRepairSample checks that a synthesized valid object that a rule refuses is repaired
// by setting the optional field the refusal's cause points at (a Service reference must
// have a port, as Gateway API's TCPRoute's backendRefs), and that one no optional field
// repairs is returned refused. The CRD is a stand-in that answers as kube-apiserver does
// for the rule (422 with the cause's field path), so that the repair, not the rule, is
// what is tested; e2e TestConformanceInputs runs it against the real CRDs.
func TestRepairSample(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "example", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "go.mod" {
			data = []byte(strings.Replace(string(data), "module ", "module example.com/repair // was: ", 1))
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	types := `// +groupName=route.example.com
// +kubebuilder:object:generate=true
package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +kubebuilder:validation:XValidation:rule="has(self.port)",message="Must have port for Service reference"
type BackendRef struct {
	Name string ` + "`json:\"name\"`" + `
	// +optional
	Weight *int32 ` + "`json:\"weight,omitempty\"`" + `
	// +optional
	Port *int32 ` + "`json:\"port,omitempty\"`" + `
}

type RouteSpec struct {
	// +kubebuilder:validation:MinItems=1
	BackendRefs []BackendRef ` + "`json:\"backendRefs\"`" + `
}

// +genclient
// +kubebuilder:object:root=true
type Route struct {
	metav1.TypeMeta   ` + "`json:\",inline\"`" + `
	metav1.ObjectMeta ` + "`json:\"metadata,omitempty\"`" + `
	Spec RouteSpec ` + "`json:\"spec\"`" + `
}

// +kubebuilder:object:root=true
type RouteList struct {
	metav1.TypeMeta ` + "`json:\",inline\"`" + `
	metav1.ListMeta ` + "`json:\"metadata,omitempty\"`" + `
	Items []Route ` + "`json:\"items\"`" + `
}
`
	pkg := filepath.Join(dir, "api", "v1")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "types.go"), []byte(types), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := load.Packages(context.Background(), dir, []string{"./api/..."})
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := model.Build(res, markers.Default(), model.Config{})
	if err != nil {
		t.Fatal(err)
	}
	b := &builder{types: m.Types, moduleDir: dir, ns: "conformance"}
	ts := targets(m, dir, b)
	if len(ts) != 1 {
		t.Fatalf("%d targets, want Route", len(ts))
	}

	// The stand-in CRD: every backendRef must have a port; a name "stuck" is refused
	// whatever is set.
	var dryRuns int
	crd := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dryRuns++
		if r.URL.Query().Get("dryRun") != "All" {
			t.Errorf("a repair request without dryRun=All: %s", r.URL)
		}
		data, _ := io.ReadAll(r.Body)
		var obj map[string]any
		_ = json.Unmarshal(data, &obj)
		spec, _ := obj["spec"].(map[string]any)
		refs, _ := spec["backendRefs"].([]any)
		var causes []any
		for i, ref := range refs {
			m, _ := ref.(map[string]any)
			if _, ok := m["port"]; !ok || m["name"] == "stuck" {
				causes = append(causes, map[string]any{"reason": "FieldValueInvalid", "field": "spec.backendRefs[" + string(rune('0'+i)) + "]"})
			}
		}
		if len(causes) == 0 {
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(data)
			return
		}
		w.WriteHeader(http.StatusUnprocessableEntity)
		_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "code": 422, "reason": "Invalid", "details": map[string]any{"causes": causes}})
	}))
	defer crd.Close()
	side := &server{name: "crd", host: crd.URL, client: crd.Client()}

	tg := ts[0]
	if _, ok := nodeAt(tg.sample, []string{"spec", "backendRefs", "0", "port"}); ok {
		t.Fatalf("the synthesized sample already has a port: %v", tg.sample)
	}
	r, err := b.repairSample(context.Background(), side, tg, tg.collection(b.ns))
	if err != nil || r != nil {
		t.Fatalf("repairSample: answer %v, err %v; want the CRD to take the repaired sample", r, err)
	}
	if _, ok := nodeAt(tg.sample, []string{"spec", "backendRefs", "0", "port"}); !ok {
		t.Errorf("the repaired sample has no port: %v", tg.sample)
	}

	// A sample nothing repairs is returned refused, after a bounded number of dry runs.
	tg.sample = map[string]any{"spec": map[string]any{"backendRefs": []any{map[string]any{"name": "stuck"}}}}
	dryRuns = 0
	if r, err := b.repairSample(context.Background(), side, tg, tg.collection(b.ns)); err != nil || r == nil || r.code != 422 {
		t.Errorf("a sample no optional field repairs: answer %v, err %v; want the 422", r, err)
	}
	if dryRuns > 20 {
		t.Errorf("%d dry runs for a sample nothing repairs", dryRuns)
	}
	// A sample from config/samples is the user's: not changed.
	tg.sampleFrom = "config/samples/route.yaml"
	tg.sample = map[string]any{"spec": map[string]any{"backendRefs": []any{map[string]any{"name": "a"}}}}
	if r, _ := b.repairSample(context.Background(), side, tg, tg.collection(b.ns)); r == nil {
		t.Error("a user's sample was repaired")
	}
}
