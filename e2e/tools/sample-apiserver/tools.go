//go:build tools

// Package tools pins k8s.io/sample-apiserver, the hand-written aggregated API server of the
// Kubernetes project, which the bench command starts next to a generated server (startup to
// ready on the same etcd and kube-apiserver). A module of its own, so the main go.mod does
// not carry it; its k8s.io/* version is the one aagen pins.
package tools

import _ "k8s.io/sample-apiserver"
