// Command coredns is CoreDNS built from Go modules with the plugins the node tests' cluster
// DNS needs (e2e/cluster.StartNode): kubernetes (Services, headless Services and their Pods'
// records, read from kube-apiserver), bind, errors and ready. It is CoreDNS's own main
// with fewer plugins compiled in, the way CoreDNS documents building a smaller binary; a
// module of its own so that the main go.mod does not carry CoreDNS's dependencies.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() {
	coremain.Run()
}
