package e2e

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// computedKind checks the example's DockOccupancy, a kind served from the example's own
// backend (+aagen:backend) and computed from its Docks and Boats, through kubectl with
// kubeconfig (the local server of `aagen up`, or kube-apiserver's aggregator): kubectl get,
// -o wide, a label and a field selector, -w seeing a boat arrive, kubectl create answered
// 405 MethodNotAllowed, and discovery listing exactly get, list and watch. Boats go to ns,
// which must exist. The docks and boats it creates are its own (names occ-*).
func computedKind(t *testing.T, kubeconfig, ns string) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	list, err := discovery.NewDiscoveryClientForConfigOrDie(cfg).ServerResourcesForGroupVersion("marina.example.com/v1alpha1")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range list.APIResources {
		if r.Name == "dockoccupancies" {
			found = true
			if verbs := slices.Sorted(slices.Values(r.Verbs)); strings.Join(verbs, ",") != "get,list,watch" {
				t.Errorf("discovery: dockoccupancies verbs %v, want exactly get, list, watch", verbs)
			}
		}
		if strings.HasPrefix(r.Name, "dockoccupancies/") {
			t.Errorf("discovery: dockoccupancies has a subresource %s", r.Name)
		}
	}
	if !found {
		t.Fatalf("discovery: no dockoccupancies in %v", list.APIResources)
	}

	manifest := `apiVersion: marina.example.com/v1alpha1
kind: Dock
metadata:
  name: occ-east
  labels: {e2e: occupancy}
spec:
  berths: 2
---
apiVersion: marina.example.com/v1alpha1
kind: Dock
metadata:
  name: occ-west
  labels: {e2e: occupancy}
spec:
  berths: 1
---
apiVersion: marina.example.com/v1alpha1
kind: Boat
metadata:
  name: occ-a
  namespace: ` + ns + `
spec:
  dock: occ-west
  lengthMeters: 8
`
	if out, err := kubectl(t, kubeconfig, manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}

	// kubectl get: NAME and the columns of priority 0; the occupancies follow the
	// informers, so wait until the boat is counted.
	var out string
	deadline := time.Now().Add(time.Minute)
	for {
		out, err = kubectl(t, kubeconfig, "", "get", "dockoccupancies", "-l", "e2e=occupancy")
		rows := table(out)
		if err == nil && cells(rows, "occ-west", 3) == "1 1 0" && cells(rows, "occ-east", 3) == "2 0 2" {
			if got := strings.Join(rows["NAME"], " "); got != "BERTHS OCCUPIED FREE" {
				t.Errorf("kubectl get dockoccupancies: header %q\n%s", got, out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl get dockoccupancies: %v\n%s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// -o wide adds the priority-1 column BOATS (a list: kubectl prints it as JSON).
	out, err = kubectl(t, kubeconfig, "", "get", "occ", "-l", "e2e=occupancy", "-o", "wide")
	rows := table(out)
	if err != nil || strings.Join(rows["NAME"], " ") != "BERTHS OCCUPIED FREE BOATS" || cells(rows, "occ-west", 4) != `1 1 0 ["`+ns+`/occ-a"]` {
		t.Errorf("kubectl get -o wide: %v\n%s", err, out)
	}

	// A label selector (the label the backend sets) and a field selector (+kubebuilder:selectablefield).
	out, err = kubectl(t, kubeconfig, "", "get", "dockoccupancies", "-l", "e2e=occupancy,marina.example.com/full=true", "-o", "name")
	if err != nil || strings.TrimSpace(out) != "dockoccupancy.marina.example.com/occ-west" {
		t.Errorf("kubectl get -l marina.example.com/full=true: %v\n%s", err, out)
	}
	out, err = kubectl(t, kubeconfig, "", "get", "dockoccupancies", "-l", "e2e=occupancy", "--field-selector", "full=false", "-o", "name")
	if err != nil || strings.TrimSpace(out) != "dockoccupancy.marina.example.com/occ-east" {
		t.Errorf("kubectl get --field-selector full=false: %v\n%s", err, out)
	}

	// kubectl get -w sees the occupancy change when a boat arrives.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	watchOut := &cluster.Buffer{}
	w := exec.CommandContext(ctx, cluster.KubeBinary(t, "kubectl"), "--kubeconfig", kubeconfig,
		"get", "dockoccupancies", "-l", "e2e=occupancy", "-w", "--output-watch-events")
	w.Stdout, w.Stderr = watchOut, watchOut
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = w.Wait()
	}()
	// The initial list comes first: then the watch is open.
	for !strings.Contains(watchOut.String(), "occ-east") {
		if ctx.Err() != nil {
			t.Fatalf("kubectl get -w: no initial list:\n%s", watchOut.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	boat := "apiVersion: marina.example.com/v1alpha1\nkind: Boat\nmetadata:\n  name: occ-b\n  namespace: " + ns + "\nspec:\n  dock: occ-east\n  lengthMeters: 5\n"
	if out, err := kubectl(t, kubeconfig, boat, "create", "-f", "-"); err != nil {
		t.Fatalf("kubectl create boat: %v\n%s", err, out)
	}
	for {
		var seen bool
		for _, line := range strings.Split(watchOut.String(), "\n") {
			if f := strings.Fields(line); len(f) >= 5 && f[0] == "MODIFIED" && f[1] == "occ-east" && strings.Join(f[2:5], " ") == "2 1 1" {
				seen = true
			}
		}
		if seen {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("kubectl get -w: no MODIFIED occ-east with 1 boat:\n%s", watchOut.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Writes are not served: kubectl create is answered 405 MethodNotAllowed.
	occ := "apiVersion: marina.example.com/v1alpha1\nkind: DockOccupancy\nmetadata:\n  name: occ-new\nberths: 3\noccupied: 0\nfree: 3\nfull: false\n"
	out, err = kubectl(t, kubeconfig, occ, "create", "-f", "-")
	if err == nil || !strings.Contains(out, "MethodNotAllowed") {
		t.Errorf("kubectl create dockoccupancy: want MethodNotAllowed, got %v\n%s", err, out)
	}

	if out, err := kubectl(t, kubeconfig, "", "delete", "boat", "occ-a", "occ-b", "-n", ns); err != nil {
		t.Errorf("kubectl delete boats: %v\n%s", err, out)
	}
	if out, err := kubectl(t, kubeconfig, "", "delete", "dock", "occ-east", "occ-west"); err != nil {
		t.Errorf("kubectl delete docks: %v\n%s", err, out)
	}
}
