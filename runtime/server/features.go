package server

import (
	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// addFeatureGateFlag adds --feature-gates for k8s.io/apiserver's feature gates, so that
// gated upstream features can be turned on in a generated server as in kube-apiserver:
// for instance CBORServingAndStorage (KEP-4222, alpha and off in v0.37), with which the
// API groups also serve and accept application/cbor (newGroupInfo).
func addFeatureGateFlag(fs *pflag.FlagSet) {
	if fs.Lookup("feature-gates") == nil {
		utilfeature.DefaultMutableFeatureGate.AddFlag(fs)
	}
}
