// Package e2e holds the end-to-end tests: they build aagen, generate the example API
// into a temporary copy, compile the generated server and talk to it over HTTPS with
// client-go and kubectl (built, like kube-apiserver and etcd, from the modules e2e/tools
// pins). They are slow (the first build compiles k8s.io/apiserver and etcd), so
// `go test -short` skips them locally; `go test ./...` and CI run them, and under CI a skip
// fails (internal/testskip).
package e2e
