package test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/aagen-dev/aagen/runtime/servertest"

	marinav1alpha1 "example.com/marina/pkg/apis/marina/v1alpha1"
	"example.com/marina/pkg/apiserver"
	"example.com/marina/pkg/generated/clientset/versioned"
	"example.com/marina/pkg/generated/clientset/versioned/scheme"
)

// TestSubresources uses Boat's imperative subresources with the generated client (depart,
// berth), the REST client (the log stream) and client-go's websocket executor (the attach
// connection). It runs against an in-process server, or against the cluster of the
// kubeconfig in $MARINA_KUBECONFIG (the aggregation end-to-end test sets it to reach the
// server through kube-apiserver), in the namespace $MARINA_NAMESPACE (default "harbour").
func TestSubresources(t *testing.T) {
	cfg := subresourcesTarget(t)
	ns := os.Getenv("MARINA_NAMESPACE")
	if ns == "" {
		ns = "harbour"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	boats := versioned.NewForConfigOrDie(cfg).MarinaV1alpha1().Boats(ns)
	name := "subresources-" + time.Now().Format("150405.000000")
	name = strings.ReplaceAll(name, ".", "-")
	if _, err := boats.Create(ctx, &marinav1alpha1.Boat{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       marinav1alpha1.BoatSpec{Dock: "north", LengthMeters: 9},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The view: read, then write (the boat moves).
	berth, err := boats.GetBerth(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("GetBerth: %v", err)
	}
	if berth.Dock != "north" || berth.Name != name {
		t.Errorf("GetBerth: %+v", berth)
	}
	berth.Dock, berth.Berth = "east", 7
	if got, err := boats.UpdateBerth(ctx, name, berth, metav1.UpdateOptions{}); err != nil || got.Dock != "east" || got.Berth != 7 {
		t.Fatalf("UpdateBerth: %+v %v", got, err)
	}
	if b, err := boats.Get(ctx, name, metav1.GetOptions{}); err != nil || b.Spec.Dock != "east" || b.Status.Berth != 7 || b.Status.Phase != "Berthed" {
		t.Errorf("after UpdateBerth the boat is %+v %+v (%v)", b.Spec, b.Status, err)
	}
	// A merge patch of the view applies to the current view.
	if _, err := boats.Patch(ctx, name, types.MergePatchType, []byte(`{"berth":3}`), metav1.PatchOptions{}, "berth"); err != nil {
		t.Fatalf("merge patch of the berth: %v", err)
	}
	if b, err := boats.Get(ctx, name, metav1.GetOptions{}); err != nil || b.Spec.Dock != "east" || b.Status.Berth != 3 {
		t.Errorf("after the patch the boat is %+v %+v (%v)", b.Spec, b.Status, err)
	}
	// The view read before the patch carries a stale resourceVersion: writing it back is a
	// conflict, as for /scale, not a lost update.
	if _, err := boats.UpdateBerth(ctx, name, berth, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("UpdateBerth with a stale resourceVersion: want 409, got %v", err)
	}
	// A view that breaks the kind's schema is refused like any update of the boat.
	if berth, err = boats.GetBerth(ctx, name, metav1.GetOptions{}); err != nil {
		t.Fatalf("GetBerth: %v", err)
	}
	berth.Dock = "Not A Dock"
	if _, err := boats.UpdateBerth(ctx, name, berth, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("UpdateBerth with an invalid dock: want 422, got %v", err)
	}

	// The action, answered with the boat as stored.
	departed, err := boats.Depart(ctx, name, &marinav1alpha1.DepartureRequest{Destination: "Brest"}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("Depart: %v", err)
	}
	if departed.Status.Phase != "Departed" || len(departed.Status.Conditions) != 1 || departed.Status.Conditions[0].Message != "bound for Brest" {
		t.Errorf("Depart answered %+v", departed.Status)
	}
	if stored, err := boats.Get(ctx, name, metav1.GetOptions{}); err != nil || stored.ResourceVersion != departed.ResourceVersion {
		t.Errorf("Depart's answer is not the stored boat: %v", err)
	}
	if _, err := boats.Depart(ctx, name, &marinav1alpha1.DepartureRequest{}, metav1.CreateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("second Depart: want 409, got %v", err)
	}
	if _, err := boats.Depart(ctx, "no-such-boat", &marinav1alpha1.DepartureRequest{}, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Depart of a missing boat: want 404, got %v", err)
	}

	// The stream, followed until the client closes it.
	rc, err := rest.RESTClientFor(restConfigFor(cfg))
	if err != nil {
		t.Fatal(err)
	}
	streamCtx, stopStream := context.WithCancel(ctx)
	body, err := rc.Get().Namespace(ns).Resource("boats").Name(name).SubResource("log").Param("follow", "true").Stream(streamCtx)
	if err != nil {
		t.Fatalf("log stream: %v", err)
	}
	lines := bufio.NewScanner(body)
	var got []string
	for len(got) < 4 && lines.Scan() {
		got = append(got, lines.Text())
	}
	stopStream()
	body.Close()
	if len(got) < 4 || !strings.HasPrefix(got[0], "logbook of "+name) || !strings.Contains(got[1], "Departed: bound for Brest") || !strings.HasPrefix(got[3], "watch bell 2") {
		t.Errorf("log: %q (%v)", got, lines.Err())
	}

	// The connection: the radio answers every line until the client closes its input.
	url := rc.Post().Namespace(ns).Resource("boats").Name(name).SubResource("attach").URL()
	exec, err := remotecommand.NewWebSocketExecutor(cfg, "GET", url.String())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("radio check\n"), Stdout: &out}); err != nil {
		t.Fatalf("attach: %v", err)
	}
	if want := name + " on channel 16, over\n" + name + " copies: radio check, over\n" + name + " out\n"; out.String() != want {
		t.Errorf("attach: %q, want %q", out.String(), want)
	}
}

// subresourcesTarget is the config of $MARINA_KUBECONFIG, or of an in-process server.
func subresourcesTarget(t *testing.T) *rest.Config {
	t.Helper()
	if kc := os.Getenv("MARINA_KUBECONFIG"); kc != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kc)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	spec, err := apiserver.NewSpec()
	if err != nil {
		t.Fatal(err)
	}
	return servertest.Start(t, spec).Config
}

// restConfigFor is cfg for a REST client of marina.example.com/v1alpha1.
func restConfigFor(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &marinav1alpha1.SchemeGroupVersion
	c.APIPath = "/apis"
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return c
}
