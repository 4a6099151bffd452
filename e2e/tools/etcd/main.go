// Command etcd is etcd v3.7.3 built from Go modules for the end-to-end tests
// (e2e/ha_test.go runs a 3-member cluster of it on loopback). This is a module of its own so
// that the main module's go.mod does not carry etcd's command-line dependencies; the
// version is the go.etcd.io/etcd/server/v3 the main module uses.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
