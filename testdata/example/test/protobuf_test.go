package test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"

	marinav1alpha1 "example.com/marina/pkg/apis/marina/v1alpha1"
	"example.com/marina/pkg/generated/clientset/versioned"
)

// protoMessage is what aagen's zz_generated.protobuf.go gives every kind and list.
type protoMessage interface {
	runtime.Object
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// TestProtobufRoundTrip fills every kind and list with random values (apimachinery's
// fuzzer) and checks typed -> protobuf -> typed gives the value back.
func TestProtobufRoundTrip(t *testing.T) {
	objects := []func() protoMessage{
		func() protoMessage { return &marinav1alpha1.Boat{} },
		func() protoMessage { return &marinav1alpha1.BoatList{} },
		func() protoMessage { return &marinav1alpha1.Dock{} },
		func() protoMessage { return &marinav1alpha1.DockList{} },
		func() protoMessage { return &marinav1alpha1.Fleet{} },
		func() protoMessage { return &marinav1alpha1.FleetList{} },
		func() protoMessage { return &marinav1alpha1.DockOccupancy{} },
		func() protoMessage { return &marinav1alpha1.DockOccupancyList{} },
	}
	codecs := serializer.NewCodecFactory(runtime.NewScheme())
	for seed := int64(0); seed < 50; seed++ {
		f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(seed), codecs).NilChance(0.2).NumElements(0, 3)
		for _, newObj := range objects {
			in := newObj()
			f.Fill(in)
			data, err := in.Marshal()
			if err != nil {
				t.Fatalf("seed %d: marshal %T: %v", seed, in, err)
			}
			out := newObj()
			if err := out.Unmarshal(data); err != nil {
				t.Fatalf("seed %d: unmarshal %T: %v", seed, in, err)
			}
			clearTypeMeta(in)
			if !apiequality.Semantic.DeepEqual(in, out) {
				t.Fatalf("seed %d: %T changed in the round trip:\nbefore: %#v\nafter:  %#v", seed, in, in, out)
			}
		}
	}
}

// clearTypeMeta empties apiVersion and kind, which protobuf carries in its envelope.
func clearTypeMeta(obj runtime.Object) {
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
}

// TestProtobufServed talks to the generated server in protobuf only, through the generated
// clientset: create, get, list and watch a Boat, and the same object read as JSON is equal.
// Like TestSubresources it runs against an in-process server, or against the cluster of
// $MARINA_KUBECONFIG (through kube-apiserver) in $MARINA_NAMESPACE.
func TestProtobufServed(t *testing.T) {
	cfg := subresourcesTarget(t)
	ns := os.Getenv("MARINA_NAMESPACE")
	if ns == "" {
		ns = "harbour"
	}
	protoCfg := rest.CopyConfig(cfg)
	protoCfg.ContentType = "application/vnd.kubernetes.protobuf"
	protoCfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf"
	protoCS := versioned.NewForConfigOrDie(protoCfg)
	jsonCS := versioned.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := strings.ReplaceAll("proto-"+time.Now().Format("150405.000000"), ".", "-")

	boats := protoCS.MarinaV1alpha1().Boats(ns)
	w, err := boats.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatalf("watch in protobuf: %v", err)
	}
	defer w.Stop()
	created, err := boats.Create(ctx, newBoat(name, 12), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create in protobuf: %v", err)
	}
	got, err := boats.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get in protobuf: %v", err)
	}
	viaJSON, err := jsonCS.MarinaV1alpha1().Boats(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(got, viaJSON) || got.Spec.LengthMeters != 12 || got.ResourceVersion != created.ResourceVersion {
		t.Errorf("protobuf and JSON read different objects:\nprotobuf: %#v\njson:     %#v", got, viaJSON)
	}
	list, err := boats.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list in protobuf: %v", err)
	}
	if !slices.ContainsFunc(list.Items, func(b marinav1alpha1.Boat) bool { return b.Name == name }) {
		t.Errorf("list in protobuf lacks %s: %v", name, list.Items)
	}
	select {
	case ev := <-w.ResultChan():
		b, ok := ev.Object.(*marinav1alpha1.Boat)
		if !ok || b.Name != name {
			t.Errorf("watch in protobuf: event %s %#v", ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("watch in protobuf: no event")
	}
	// What the request asked for is what came back: a raw GET with only protobuf accepted.
	raw, err := protoCS.MarinaV1alpha1().RESTClient().Get().Namespace(ns).Resource("boats").Name(name).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) < 4 || string(raw[:4]) != "k8s\x00" {
		t.Errorf("response is not protobuf: %q", fmt.Sprintf("%.40q", raw))
	}
	if err := boats.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("delete in protobuf: %v", err)
	}
}
