// Package server assembles and runs an aggregated API server from a Spec that generated
// code provides: the scheme, the OpenAPI definitions and the REST storage of each group.
//
// It is a thin layer over k8s.io/apiserver's RecommendedOptions and generic server, so a
// generated server has every upstream flag and behaviour (secure serving, delegated
// authentication and authorization to kube-apiserver, audit, admission, priority and
// fairness, /livez /readyz /healthz /metrics, legacy and aggregated discovery, OpenAPI v2
// and v3, server-side apply, the watch cache) and adds what users of sample-apiserver end up
// writing by hand:
//
//   - Storage is etcd: the cluster named by --etcd-servers, or, when none is given, an etcd
//     embedded in the process (go.etcd.io/etcd/server/v3/embed) whose data lives in
//     --embedded-etcd-dir and survives restarts.
//   - Local mode (--local) runs without kube-apiserver: a local CA signs a serving
//     certificate and an admin client certificate, the server trusts only that CA (anonymous
//     requests are rejected with 401, other users with 403), a kubeconfig is written, and
//     "export KUBECONFIG=<path>" is printed on its own line once /readyz is ok.
//
// Nothing here is package-level mutable state: each Run builds its own configuration, so
// several servers can run in one process (tests do).
package server
