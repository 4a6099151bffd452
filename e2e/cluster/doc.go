// Package cluster runs the real parts the end-to-end tests and the bench command need, as
// child processes on loopback: etcd and kube-apiserver built from Go modules into the
// gitignored .cache/bin, a control plane with the aggregation layer configured (front-proxy
// client certificate, request-header CA and allowed names, an admin client certificate), and
// a generated server deployed behind it from the manifests aagen emits.
//
// Every function takes a T, which *testing.T and *testing.B satisfy; the bench command
// passes its own (see Runner).
package cluster

// T is the part of testing.TB the harness uses.
type T interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
	TempDir() string
	Failed() bool
}
