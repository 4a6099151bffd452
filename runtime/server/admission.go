package server

import (
	"fmt"
	"slices"

	"k8s.io/apiserver/pkg/admission"
	genericapiserver "k8s.io/apiserver/pkg/server"
	clientrest "k8s.io/client-go/rest"
)

// Admission describes a server's own in-process admission plugins, registered the way
// k8s.io/sample-apiserver registers its BanFlunder plugin: into k8s.io/apiserver's
// admission.Plugins registry, enabled by default after upstream's plugins (so
// --disable-admission-plugins turns one off), and initialized by plugin initializers that
// hand them what they need (informers on the server's own API, typically).
type Admission struct {
	// Register adds the plugins to the registry, e.g. banflunder.Register(plugins).
	Register func(plugins *admission.Plugins)
	// Initializers returns the plugin initializers, given the server's loopback client
	// configuration, and a function that starts what they hand out (the informers) once
	// the server runs; start may be nil.
	Initializers func(loopback *clientrest.Config) (initializers []admission.PluginInitializer, start func(stop <-chan struct{}), err error)
}

// ownAdmission is the state of a server's own admission plugins during one New.
type ownAdmission struct {
	spec     *Admission
	registry *admission.Plugins
	// plugins are the names Register added, in the order they run.
	plugins []string
	// initializers and start are what spec.Initializers returned.
	initializers []admission.PluginInitializer
	start        func(stop <-chan struct{})
}

// registerAdmission registers spec's own plugins with upstream's admission options, which
// enable them (or not, by flag) when the server is delegated to by kube-apiserver. It
// returns nil when the server has none (Register registered nothing).
func registerAdmission(spec *Spec, o *Options) *ownAdmission {
	a := spec.Admission
	if a == nil || a.Register == nil || o.Recommended.Admission == nil {
		return nil
	}
	plugins := o.Recommended.Admission.Plugins
	before := plugins.Registered()
	a.Register(plugins)
	own := &ownAdmission{spec: a, registry: plugins}
	for _, name := range plugins.Registered() {
		if !slices.Contains(before, name) {
			own.plugins = append(own.plugins, name)
		}
	}
	if len(own.plugins) == 0 {
		return nil // nothing registered: no initializers, no informers to start
	}
	o.Recommended.Admission.RecommendedPluginOrder = append(o.Recommended.Admission.RecommendedPluginOrder, own.plugins...)
	o.Recommended.ExtraAdmissionInitializers = func(c *genericapiserver.RecommendedConfig) ([]admission.PluginInitializer, error) {
		if own.spec.Initializers == nil {
			return nil, nil
		}
		// Upstream's options call this before New's own useProtobufOnLoopback.
		useProtobufOnLoopback(c.LoopbackClientConfig, *spec)
		var err error
		own.initializers, own.start, err = own.spec.Initializers(c.LoopbackClientConfig)
		if err != nil {
			return nil, fmt.Errorf("admission plugin initializers: %w", err)
		}
		return own.initializers, nil
	}
	return own
}

// localChain builds the admission chain of local mode, which runs without kube-apiserver
// and so without upstream's plugins (they need its informers): the server's own plugins
// only, all of them, in registration order.
func (own *ownAdmission) localChain() (admission.Interface, error) {
	config, err := admission.ReadAdmissionConfiguration(own.plugins, "", nil)
	if err != nil {
		return nil, err
	}
	return own.registry.NewFromPlugins(own.plugins, config, admission.PluginInitializers(own.initializers), nil)
}

// startHook starts what the initializers handed to the plugins once the server runs.
func (own *ownAdmission) startHook() genericapiserver.PostStartHookFunc {
	return func(ctx genericapiserver.PostStartHookContext) error {
		if own.start != nil {
			own.start(ctx.Done())
		}
		return nil
	}
}
