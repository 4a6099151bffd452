package server

import (
	"context"
	"io"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	genericapiserver "k8s.io/apiserver/pkg/server"
	clientrest "k8s.io/client-go/rest"
)

// denyAll is an admission plugin that rejects every request, with an initializer check.
type denyAll struct {
	*admission.Handler
	initialized bool
}

func (d *denyAll) Validate(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	return admission.NewForbidden(nil, nil)
}

func (d *denyAll) ValidateInitialization() error {
	if !d.initialized {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// markInitialized is a plugin initializer, as sample-apiserver's wardleinitializer is.
type markInitialized struct{}

func (markInitialized) Initialize(p admission.Interface) {
	if d, ok := p.(*denyAll); ok {
		d.initialized = true
	}
}

// TestOwnAdmissionPlugins registers a spec's own plugin with upstream's admission options
// (after the recommended plugins, enabled by default, so that a server behind kube-apiserver
// runs it with its own), and builds the local chain of that plugin alone, initialized.
func TestOwnAdmissionPlugins(t *testing.T) {
	spec := &Spec{Name: "t", Scheme: runtime.NewScheme(), Admission: &Admission{
		Register: func(plugins *admission.Plugins) {
			plugins.Register("DenyAll", func(io.Reader) (admission.Interface, error) {
				return &denyAll{Handler: admission.NewHandler(admission.Create)}, nil
			})
		},
	}}
	o := NewOptions(spec)
	order := o.Recommended.Admission.RecommendedPluginOrder
	if order[len(order)-1] != "DenyAll" || !slices.Contains(o.Recommended.Admission.Plugins.Registered(), "DenyAll") {
		t.Fatalf("plugin order %v, registered %v; want DenyAll registered, last", order, o.Recommended.Admission.Plugins.Registered())
	}
	if o.Recommended.Admission.DefaultOffPlugins.Has("DenyAll") {
		t.Error("DenyAll is off by default")
	}
	o.admission.initializers = []admission.PluginInitializer{markInitialized{}}
	chain, err := o.admission.localChain()
	if err != nil {
		t.Fatal(err)
	}
	if !chain.Handles(admission.Create) || chain.Handles(admission.Delete) {
		t.Errorf("the local chain handles create %v, delete %v; want DenyAll's create only", chain.Handles(admission.Create), chain.Handles(admission.Delete))
	}
	o.admission.initializers = nil
	if _, err := o.admission.localChain(); err == nil {
		t.Error("an uninitialized plugin built a chain; want its ValidateInitialization error")
	}
}

// TestNoOwnAdmissionPlugins leaves upstream's admission as it is when the spec's Register
// registers nothing (the admission.go aagen creates).
func TestNoOwnAdmissionPlugins(t *testing.T) {
	o := NewOptions(&Spec{Name: "t", Scheme: runtime.NewScheme(), Admission: &Admission{Register: func(*admission.Plugins) {}}})
	if o.admission != nil || o.Recommended.ExtraAdmissionInitializers == nil || len(o.Recommended.Admission.RecommendedPluginOrder) != 5 {
		t.Errorf("own admission %v, plugin order %v; want none and upstream's five", o.admission, o.Recommended.Admission.RecommendedPluginOrder)
	}
}

// TestAdmissionInitializersReadProtobuf: the plugin initializers get the loopback client
// configuration that reads protobuf (upstream's options call them before the server is
// built, so before New's own change to it).
func TestAdmissionInitializersReadProtobuf(t *testing.T) {
	var got *clientrest.Config
	spec := &Spec{Name: "t", Scheme: plainAndProtoScheme(),
		Groups: []Group{{Name: protoGV.Group, Resources: []Resource{{Plural: "statuses", Versions: []ResourceVersion{{Name: protoGV.Version}}}}}},
		Admission: &Admission{
			Register: func(plugins *admission.Plugins) {
				plugins.Register("DenyAll", func(io.Reader) (admission.Interface, error) {
					return &denyAll{Handler: admission.NewHandler(admission.Create)}, nil
				})
			},
			Initializers: func(loopback *clientrest.Config) ([]admission.PluginInitializer, func(<-chan struct{}), error) {
				got = clientrest.CopyConfig(loopback)
				return []admission.PluginInitializer{markInitialized{}}, nil, nil
			},
		}}
	o := NewOptions(spec)
	cfg := &genericapiserver.RecommendedConfig{Config: genericapiserver.Config{LoopbackClientConfig: &clientrest.Config{Host: "https://127.0.0.1:1"}}}
	if _, err := o.Recommended.ExtraAdmissionInitializers(cfg); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.AcceptContentTypes != loopbackProtobufAccept || !got.DisableCompression {
		t.Errorf("the initializers got %+v; want it to accept %q, without compression", got, loopbackProtobufAccept)
	}
}
