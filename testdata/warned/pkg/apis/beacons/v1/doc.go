// Package v1 holds types that published APIs write and that aagen generates with a warning,
// where controller-gen writes a CRD without one: a marker controller-gen does not know, two
// printer columns of one name, and fields hidden behind shallower ones of the same JSON
// name, through an inlined struct and through an inlined pointer; and a kind without printer
// columns, for the table; and a type's marker in this package comment, where controller-gen
// does not read it. e2e's TestWarnedInputsLikeControllerGenCRD compares the generated server
// with that CRD on kube-apiserver.
// +kubebuilder:object:generate=true
// +kubebuilder:subresource:status
// +groupName=beacons.example.com
package v1
