// Package e2e holds the end-to-end tests: they build aagen, generate the example API
// into a temporary copy, compile the generated server and talk to it over HTTPS with
// client-go and kubectl. They are slow (the first build compiles k8s.io/apiserver and
// etcd), so `go test -short` skips them; `go test ./...` and CI run them.
package e2e
