// This file is yours: aagen created it once and never overwrites it.

package apiserver

import (
	"example.com/marina/pkg/generated/informers/externalversions"
	"k8s.io/apiserver/pkg/admission"
)

// registerAdmissionPlugins registers the server's own admission plugins, which run inside the
// server on every write, the way k8s.io/sample-apiserver registers BanFlunder:
//
//	banflunder.Register(plugins)
//
// They are enabled by default, after k8s.io/apiserver's own (--disable-admission-plugins turns
// one off); with --local, where k8s.io/apiserver's need a kube-apiserver, they run alone.
func registerAdmissionPlugins(plugins *admission.Plugins) {}

// admissionInitializers returns the initializers that hand the plugins what they need.
// informers are the generated informers of this server's own API, started with the server.
// A plugin with a SetInformers(externalversions.SharedInformerFactory) method (WantsInformers)
// gets them without one; an initializer like sample-apiserver's wardleinitializer passes them on:
//
//	return []admission.PluginInitializer{wardleinitializer.New(informers)}
func admissionInitializers(informers externalversions.SharedInformerFactory) []admission.PluginInitializer {
	return nil
}
