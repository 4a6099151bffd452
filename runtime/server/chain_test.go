package server

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// The generated server's handler chain has no priority and fairness of its own unless
// --enable-priority-and-fairness asks for it: k8s.io/apiserver's DefaultBuildHandlerChain
// installs the APF filter exactly when the config's FlowControl is set, and the
// max-in-flight limit otherwise.
func TestPriorityAndFairnessOffByDefault(t *testing.T) {
	for _, c := range []struct {
		args    []string
		wantAPF bool
	}{
		{nil, false},
		{[]string{"--enable-priority-and-fairness=true"}, true},
	} {
		scheme := runtime.NewScheme()
		spec := &Spec{Name: "t", Scheme: scheme}
		o := NewOptions(spec)
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		cfg := genericapiserver.NewRecommendedConfig(spec.codecs())
		client := fake.NewClientset()
		if err := o.Recommended.Features.ApplyTo(&cfg.Config, client, informers.NewSharedInformerFactory(client, 0)); err != nil {
			t.Fatal(err)
		}
		if got := cfg.FlowControl != nil; got != c.wantAPF {
			t.Errorf("args %v: priority and fairness installed = %v, want %v", c.args, got, c.wantAPF)
		}
		// docs/benchmarks.md: without APF, 400 read-only and 200 mutating requests at once.
		if !c.wantAPF && (cfg.MaxRequestsInFlight != 400 || cfg.MaxMutatingRequestsInFlight != 200) {
			t.Errorf("args %v: without APF the max-in-flight limits must be 400 and 200, got %d and %d", c.args, cfg.MaxRequestsInFlight, cfg.MaxMutatingRequestsInFlight)
		}
	}
}

// TestOptionDefaults pins the defaults README and docs/storage.md state: the storage
// migration's 50 objects a second and etcd compaction every five minutes.
func TestOptionDefaults(t *testing.T) {
	o := NewOptions(&Spec{Name: "t", Scheme: runtime.NewScheme()})
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if o.StorageMigrationQPS != 50 {
		t.Errorf("--storage-migration-qps defaults to %v, want 50", o.StorageMigrationQPS)
	}
	if got := o.Recommended.Etcd.StorageConfig.CompactionInterval; got != 5*time.Minute {
		t.Errorf("--etcd-compaction-interval defaults to %v, want 5m", got)
	}
}
