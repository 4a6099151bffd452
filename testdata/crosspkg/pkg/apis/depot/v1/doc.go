// Package v1 contains API Schema definitions for the depot v1 API group: a kind whose spec
// is made of structs declared elsewhere, one in another package of this module
// (pkg/common) and one in a second module of the user's (example.com/extlib, reached
// through a replace in go.mod). Their markers are the kind's constraints.
// +kubebuilder:object:generate=true
// +groupName=depot.example.com
package v1
