// Package localauth creates and maintains the credentials of a generated API
// server running in local (standalone) mode.
//
// Run with --local, a generated aggregated API server has no kube-apiserver in
// front of it to authenticate users. It still must not serve anonymous
// requests, so it authenticates clients by certificate against a private CA
// that this package keeps in a directory:
//
//	ca.crt, ca.key           self-signed CA (10 years); the server trusts it for client certificates
//	serving.crt, serving.key serving certificate signed by the CA (1 year); SANs localhost, 127.0.0.1, ::1,
//	                         the host of Options.ServerURL and Options.Hosts
//	admin.crt, admin.key     client certificate signed by the CA (1 year); CN "aagen-local-admin",
//	                         O "system:masters", a group k8s.io/apiserver's authorizer always allows
//	kubeconfig               a kubeconfig for that admin user, with the CA and client credentials embedded
//
// Ensure is meant to run at every start of the server. It reuses valid material
// as is (the files keep their exact bytes, so kubeconfigs handed out earlier
// keep working) and only replaces what is missing, damaged, expiring within a
// day, signed by another CA, or no longer matching the options. Replacing the CA
// replaces everything signed by it.
//
// Keys are ECDSA P-256 (runtime/certs). Files are written atomically and durably
// (runtime/atomicfile: temporary file, fsync, rename, fsync of the directory); keys and the kubeconfig get mode 0600 and the directory 0700.
// Concurrent calls to Ensure on the same directory, from one process or
// several, are serialised with a lock file on platforms that support flock
// (runtime/filelock).
//
// The package holds no package-level state.
package localauth
