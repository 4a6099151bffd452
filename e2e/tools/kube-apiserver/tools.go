//go:build tools

// Package tools pins kube-apiserver for the aggregation end-to-end tests. This is a module
// of its own because k8s.io/kubernetes can only be required with every staging module
// replaced by its published version; `go build k8s.io/kubernetes/cmd/kube-apiserver` here
// builds the binary the tests start, kube-controller-manager runs the ClusterRole aggregation controller,
// and kubectl is the client the tests drive the APIs with.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"

import _ "k8s.io/kubernetes/cmd/kube-controller-manager"

import _ "k8s.io/kubernetes/cmd/kubectl"

// The single-node cluster of the node tests (cluster.StartNode): kubelet on containerd,
// kube-scheduler and kube-proxy.
import _ "k8s.io/kubernetes/cmd/kubelet"

import _ "k8s.io/kubernetes/cmd/kube-scheduler"

import _ "k8s.io/kubernetes/cmd/kube-proxy"
