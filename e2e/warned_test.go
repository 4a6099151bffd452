package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/aagen-dev/aagen/e2e/cluster"
	"github.com/aagen-dev/aagen/runtime/etcd"
)

// TestWarnedInputsLikeControllerGenCRD holds the claims about inputs aagen generates with a
// warning (README's "published API packages") against an oracle that is not aagen:
// controller-gen v0.23.0's CRD of testdata/warned, installed on kube-apiserver
// (cluster.KubeVersion), next to the generated server of the same types (aagen up).
//
//   - controller-gen writes the CRD although BeaconSpec has +kubebuilder:validation:OneOf,
//     which it does not know (it ignores it, as aagen does with a warning), and ignores the
//     +kubebuilder:subresource:status of the package comment: Signal has no /status on
//     either server;
//   - kube-apiserver installs the CRD with its two printer columns named "Where", and both
//     servers answer a Table with both columns, the same cells, and no Age column; for a
//     kind without printer columns (Signal), a Table of Name and Age;
//   - a field hidden behind a shallower one of the same JSON name (BeaconSpec's auth hides
//     the one its inlined Endpoint brings in, its note the one its inlined *Window brings
//     in): an object both fields' types can hold is answered and read back the same. What
//     differs is asserted as it is, because controller-gen merges the two fields' schemas
//     where encoding/json, and so the generated server, keeps the shallower field alone:
//     the CRD keeps a member only the hidden field's type declares (spec.auth.credentialsFile),
//     which the generated server drops, and it enforces the hidden field's constraints too
//     (spec.note's MaxLength=4 next to the shallower MaxLength=64).
func TestWarnedInputsLikeControllerGenCRD(t *testing.T) {
	skipShort(t)
	runsTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	const group, ns = "beacons.example.com", "beacons"
	beacons := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "beacons"}
	dir := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata", "warned"), dir, nil)

	// The oracle: controller-gen's CRDs of the types (it exits 0 with the unknown marker).
	crds := controllerGenCRDs(t, dir, "./pkg/apis/...", group+"_beacons.yaml", group+"_signals.yaml")
	crd, signalCRD := crds[0], crds[1]
	var columns []string
	for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
		columns = append(columns, c.Name+"="+c.JSONPath)
	}
	if want := []string{"Where=.spec.url", "Where=.spec.note"}; !slices.Equal(columns, want) {
		t.Fatalf("the oracle: controller-gen's CRD has the printer columns %q; want %q", columns, want)
	}
	if sub := signalCRD.Spec.Versions[0].Subresources; sub != nil && sub.Status != nil {
		t.Fatalf("the oracle: controller-gen gave Signal a status subresource from the package comment's marker")
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	if _, ok := spec.Properties["auth"].Properties["credentialsFile"]; !ok {
		t.Fatalf("the oracle: controller-gen's spec.auth has no credentialsFile (the hidden field's schema merged in): %+v", spec.Properties["auth"])
	}

	e, err := etcd.Start(ctx, etcd.Config{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	cp := cluster.StartControlPlane(t, e.ClientURL())
	if _, err := kubernetes.NewForConfigOrDie(cp.Admin).CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// InstallCRD fails the test unless kube-apiserver takes the CRD and it becomes
	// Established: the two columns of one name are accepted.
	cluster.InstallCRD(t, ctx, cp.Admin, crd)
	cluster.InstallCRD(t, ctx, cp.Admin, signalCRD)

	up := startUp(t, dir, 25*time.Minute)
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	servers := []struct {
		name string
		cfg  *rest.Config
	}{{"aagen", up.restConfig(t)}, {"crd", cp.Admin}}

	// write creates the beacon name with spec on each server and returns, per server, the
	// answer and the object read back (describeAnswer).
	write := func(t *testing.T, name string, spec map[string]any) (answers, reads map[string]string) {
		t.Helper()
		answers, reads = map[string]string{}, map[string]string{}
		for _, s := range servers {
			client := dynamic.NewForConfigOrDie(s.cfg).Resource(beacons).Namespace(ns)
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": group + "/v1", "kind": "Beacon",
				"metadata": map[string]any{"name": name, "namespace": ns},
				"spec":     runtime.DeepCopyJSONValue(spec),
			}}
			got, err := client.Create(ctx, obj, metav1.CreateOptions{})
			answers[s.name] = describeAnswer(got, err)
			if err == nil {
				got, err = client.Get(ctx, name, metav1.GetOptions{})
				reads[s.name] = describeAnswer(got, err)
			}
		}
		return answers, reads
	}
	const url = "https://beacon.example.com/probe"

	t.Run("fields both types hold, through the inlined struct and pointer", func(t *testing.T) {
		answers, reads := write(t, "lit", map[string]any{"url": url, "auth": map[string]any{"type": "Bearer", "credentials": "token"},
			"note": "tall", "start": "09:00"})
		want := `ok ` + group + `/v1 spec={"auth":{"credentials":"token","type":"Bearer"},"note":"tall","start":"09:00","url":"` + url + `"}`
		if answers["crd"] != want || reads["crd"] != want {
			t.Fatalf("the oracle: the CRD answered\n  %s\nand read back\n  %s\nwant %s", answers["crd"], reads["crd"], want)
		}
		if answers["aagen"] != want || reads["aagen"] != want {
			t.Errorf("the generated server answered\n  %s\nand read back\n  %s\nwant the CRD's %s", answers["aagen"], reads["aagen"], want)
		}
	})

	// table returns, per server, the Table of the object at path (under the namespace) as
	// its column names and types and its row's cells, without the cells of an Age column,
	// which differ by a second between the servers.
	table := func(t *testing.T, path string) map[string]string {
		t.Helper()
		tables := map[string]string{}
		for _, s := range servers {
			rc := discovery.NewDiscoveryClientForConfigOrDie(rest.CopyConfig(s.cfg)).RESTClient()
			raw, err := rc.Get().AbsPath("/apis/"+group+"/v1/namespaces/"+ns+"/"+path).
				SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
			if err != nil {
				t.Fatalf("%s: a Table of %s: %v", s.name, path, err)
			}
			var table metav1.Table
			if err := json.Unmarshal(raw, &table); err != nil {
				t.Fatalf("%s: %v\n%s", s.name, err, raw)
			}
			if len(table.Rows) != 1 || len(table.Rows[0].Cells) != len(table.ColumnDefinitions) {
				t.Fatalf("%s: a Table of %s: %d columns, rows %v; want one row", s.name, path, len(table.ColumnDefinitions), table.Rows)
			}
			var heads []string
			var cells []any
			for i, c := range table.ColumnDefinitions {
				heads = append(heads, c.Name+" "+c.Type)
				if c.Name != "Age" {
					cells = append(cells, table.Rows[0].Cells[i])
				}
			}
			tables[s.name] = fmt.Sprintf("%q %v", heads, cells)
		}
		return tables
	}
	t.Run("two printer columns of one name", func(t *testing.T) {
		tables := table(t, "beacons/lit")
		// A CRD with printer columns has no Age column unless one is declared.
		if want := fmt.Sprintf("%q [lit %s tall]", []string{"Name string", "Where string", "Where string"}, url); tables["crd"] != want {
			t.Fatalf("the oracle: the CRD's table is %s; want %s", tables["crd"], want)
		}
		if tables["aagen"] != tables["crd"] {
			t.Errorf("the Table:\naagen: %s\nCRD:   %s", tables["aagen"], tables["crd"])
		}
	})
	t.Run("Signal: no printer columns, no status subresource", func(t *testing.T) {
		for _, s := range servers {
			client := dynamic.NewForConfigOrDie(s.cfg).Resource(beacons.GroupVersion().WithResource("signals")).Namespace(ns)
			if _, err := client.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": group + "/v1", "kind": "Signal", "metadata": map[string]any{"name": "fire"}, "spec": map[string]any{"message": "ships"},
			}}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("%s: creating a signal: %v", s.name, err)
			}
		}
		for _, s := range servers {
			rc := discovery.NewDiscoveryClientForConfigOrDie(rest.CopyConfig(s.cfg)).RESTClient()
			if _, err := rc.Get().AbsPath("/apis/" + group + "/v1/namespaces/" + ns + "/signals/fire/status").DoRaw(ctx); !apierrors.IsNotFound(err) {
				t.Errorf("%s: GET of a signal's /status: %v; want 404 NotFound (the package comment's +kubebuilder:subresource:status is ignored)", s.name, err)
			}
		}
		tables := table(t, "signals/fire")
		if want := fmt.Sprintf("%q [fire]", []string{"Name string", "Age date"}); tables["crd"] != want {
			t.Fatalf("the oracle: the CRD's table is %s; want %s", tables["crd"], want)
		}
		if tables["aagen"] != tables["crd"] {
			t.Errorf("the Table:\naagen: %s\nCRD:   %s", tables["aagen"], tables["crd"])
		}
	})

	// The intended differences: the CRD's schema of a hidden field is both fields' merged.
	t.Run("a member only the hidden field's type declares", func(t *testing.T) {
		answers, reads := write(t, "file", map[string]any{"url": url, "auth": map[string]any{"type": "Basic", "credentialsFile": "/etc/beacon/token"}})
		want := map[string]string{
			"crd":   `ok ` + group + `/v1 spec={"auth":{"credentialsFile":"/etc/beacon/token","type":"Basic"},"url":"` + url + `"}`,
			"aagen": `ok ` + group + `/v1 spec={"auth":{"type":"Basic"},"url":"` + url + `"}`,
		}
		for _, s := range servers {
			if answers[s.name] != want[s.name] || reads[s.name] != want[s.name] {
				t.Errorf("%s answered\n  %s\nand read back\n  %s\nwant %s", s.name, answers[s.name], reads[s.name], want[s.name])
			}
		}
	})
	t.Run("the hidden field's constraint", func(t *testing.T) {
		answers, _ := write(t, "long-note", map[string]any{"url": url, "note": "a longer note"})
		if !strings.HasPrefix(answers["crd"], "422 Invalid") || !strings.Contains(answers["crd"], "spec.note: Too long: may not be more than 4 bytes") {
			t.Errorf("the CRD answered\n  %s\nwant a 422 for the hidden note's MaxLength=4", answers["crd"])
		}
		if want := `ok ` + group + `/v1 spec={"note":"a longer note","url":"` + url + `"}`; answers["aagen"] != want {
			t.Errorf("the generated server answered\n  %s\nwant %s (the shallower note's MaxLength=64 alone)", answers["aagen"], want)
		}
	})
}
