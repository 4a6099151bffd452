//go:build tools

// Package tools pins controller-gen (sigs.k8s.io/controller-tools), which the end-to-end
// tests run to write the CustomResourceDefinition of a fixture's types: an oracle for the
// constraints aagen serves that does not come from aagen's own OpenAPI. A module of its
// own, so the main go.mod does not carry it; its k8s.io/* are the release aagen pins.
package tools

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"
