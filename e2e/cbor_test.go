package e2e

import (
	"context"
	"io"
	"net/http"
	"reflect"
	"strings"
	"syscall"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	cbor "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/client-go/rest"
)

// TestCBOR runs the example with --feature-gates=CBORServingAndStorage=true (KEP-4222,
// alpha in k8s.io/apiserver v0.37) and reads a Boat and the list of Boats as
// application/cbor: the same objects as in JSON. A create sent as CBOR is stored as sent.
func TestCBOR(t *testing.T) {
	skipShort(t)
	_, bin := buildExample(t)
	cmd, dyn, cfg := startBinary(t, bin, t.TempDir(), "--feature-gates=CBORServingAndStorage=true")
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	ctx := context.Background()
	bc := dyn.Resource(boats).Namespace("cbor")
	created, err := bc.Create(ctx, boat("cbor-1", map[string]any{"fleet": "c"}, 12), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := cfg.Host + "/apis/marina.example.com/v1alpha1/namespaces/cbor/boats"
	do := func(method, url, contentType string, body io.Reader, wantStatus int) map[string]any {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, url, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "application/cbor")
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != wantStatus || resp.Header.Get("Content-Type") != "application/cbor" {
			t.Fatalf("%s %s: %d %s %q, want %d application/cbor", method, url, resp.StatusCode, resp.Header.Get("Content-Type"), data, wantStatus)
		}
		var out map[string]any
		if err := cbor.Unmarshal(data, &out); err != nil {
			t.Fatalf("%s %s: decoding CBOR: %v", method, url, err)
		}
		return out
	}
	got := do(http.MethodGet, base+"/cbor-1", "", nil, http.StatusOK)
	if !equalJSONValues(t, got, created.Object) {
		t.Errorf("CBOR get:\n%v\nJSON create answered:\n%v", got, created.Object)
	}
	list := do(http.MethodGet, base, "", nil, http.StatusOK)
	items, _ := list["items"].([]any)
	if len(items) != 1 || list["kind"] != "BoatList" {
		t.Fatalf("CBOR list: %v", list)
	}

	// A create in CBOR.
	body, err := cbor.Marshal(boat("cbor-2", nil, 14).Object)
	if err != nil {
		t.Fatal(err)
	}
	do(http.MethodPost, base, "application/cbor", strings.NewReader(string(body)), http.StatusCreated)
	stored, err := bc.Get(ctx, "cbor-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l, _, _ := unstructured.NestedInt64(stored.Object, "spec", "lengthMeters"); l != 14 {
		t.Errorf("the Boat created in CBOR has spec.lengthMeters %d, want 14", l)
	}
}

// equalJSONValues compares two objects after a round trip through JSON, which makes
// numbers and maps of both decoders the same Go types.
func equalJSONValues(t *testing.T, a, b map[string]any) bool {
	t.Helper()
	norm := func(m map[string]any) map[string]any {
		data, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&unstructured.Unstructured{Object: m})
		if err != nil {
			t.Fatal(err)
		}
		j, err := (&unstructured.Unstructured{Object: data}).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			t.Fatal(err)
		}
		return u.Object
	}
	return reflect.DeepEqual(norm(a), norm(b))
}
