package server

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/features"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
)

// The storage-version migration reads the version of stored objects in every media type
// the storage codec writes (JSON, protobuf, CBOR), and reports what it cannot read.
func TestStoredVersion(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.CBORServingAndStorage, true)
	spec, gv := protoSpec()
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"x": "1"}}
	for _, mt := range []string{"application/json", "application/vnd.kubernetes.protobuf", "application/cbor"} {
		codec, err := (storageMedia{scheme: spec.Scheme, versions: spec.StorageVersions}).codec(mt)
		if err != nil {
			t.Fatal(err)
		}
		var stored bytes.Buffer
		if err := codec.Encode(obj, &stored); err != nil {
			t.Fatal(err)
		}
		got, err := storedVersion(stored.Bytes())
		if err != nil || got != gv.String() {
			t.Errorf("%s: stored version %q, %v; want %s", mt, got, err, gv)
		}
	}
	for name, data := range map[string][]byte{
		"encrypted":          []byte("k8s:enc:aescbc:v1:key1:\x01\x02"),
		"truncated protobuf": []byte("k8s\x00\x0a\x20ab"),
	} {
		if got, err := storedVersion(data); err == nil {
			t.Errorf("%s: got version %q, want an error", name, got)
		}
	}
}

// events records the limiter's waits and the storage's updates in order.
type events struct{ log []string }

// countingLimiter records each Wait; from the failAfter-th on it answers as a limiter
// whose context is done.
type countingLimiter struct {
	ev        *events
	waits     int
	failAfter int
}

func (l *countingLimiter) Wait(ctx context.Context) error {
	l.waits++
	if l.failAfter > 0 && l.waits >= l.failAfter {
		return context.Canceled
	}
	l.ev.log = append(l.ev.log, "wait")
	return nil
}

// updateStorage records the keys GuaranteedUpdate is called on.
type updateStorage struct {
	storage.Interface
	ev *events
}

func (s *updateStorage) GuaranteedUpdate(_ context.Context, key string, _ runtime.Object, _ bool, _ *storage.Preconditions, _ storage.UpdateFunc, _ runtime.Object) error {
	s.ev.log = append(s.ev.log, "update "+key)
	return nil
}

// TestStorageMigrationQPS checks that --storage-migration-qps configures the migration's
// rate limiter (a token bucket of that many objects a second, burst 1) and that every
// rewrite waits for it, by counting calls through an injected limiter, not by timing.
func TestStorageMigrationQPS(t *testing.T) {
	o := NewOptions(&Spec{Name: "t", Scheme: runtime.NewScheme()})
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--storage-migration-qps=7"}); err != nil {
		t.Fatal(err)
	}
	for qps, want := range map[float64]rate.Limit{o.StorageMigrationQPS: 7, 0: DefaultStorageMigrationQPS} {
		lim, ok := newStorageMigrator(nil, storagebackend.Config{}, qps).limiter.(*rate.Limiter)
		if !ok || lim.Limit() != want || lim.Burst() != 1 {
			t.Fatalf("qps %v: limiter %#v, want %v a second, burst 1", qps, lim, want)
		}
	}
	// The limiter so configured lets one rewrite through every 1/7 s (explicit times).
	lim := newStorageMigrator(nil, storagebackend.Config{}, 7).limiter.(*rate.Limiter)
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		at   time.Duration
		want bool
	}{{0, true}, {0, false}, {142 * time.Millisecond, false}, {143 * time.Millisecond, true}, {200 * time.Millisecond, false}, {286 * time.Millisecond, true}} {
		if got := lim.AllowN(t0.Add(c.at), 1); got != c.want {
			t.Errorf("a rewrite at +%v allowed = %v, want %v", c.at, got, c.want)
		}
	}

	// Every rewrite waits for the limiter first; a Wait that fails (the context is done)
	// stops the migration before its rewrite.
	ev := &events{}
	store := &genericregistry.Store{
		NewFunc: func() runtime.Object { return &metav1.PartialObjectMetadata{} },
		Storage: genericregistry.DryRunnableStorage{Storage: &updateStorage{ev: ev}},
	}
	m := newStorageMigrator([]migratedResource{{store: store}}, storagebackend.Config{}, 7)
	m.limiter = &countingLimiter{ev: ev}
	stale := map[int][]string{0: {"/boats/a", "/boats/b", "/boats/c"}}
	if done := m.rewrite(context.Background(), stale, 3); done != 3 {
		t.Errorf("rewrote %d objects, want 3", done)
	}
	if got, want := strings.Join(ev.log, ", "), "wait, update /boats/a, wait, update /boats/b, wait, update /boats/c"; got != want {
		t.Errorf("calls %q, want %q", got, want)
	}
	ev.log = nil
	m.limiter = &countingLimiter{ev: ev, failAfter: 2}
	if done := m.rewrite(context.Background(), stale, 3); done != 1 {
		t.Errorf("with the limiter's context done at the second wait: rewrote %d objects, want 1", done)
	}
	if got, want := strings.Join(ev.log, ", "), "wait, update /boats/a"; got != want {
		t.Errorf("calls %q, want %q", got, want)
	}
}
