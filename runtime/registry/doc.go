// Package registry turns a description of one Go API kind into the REST storage
// k8s.io/apiserver serves: a generic registry Store on etcd (with the watch cache),
// a create/update/delete strategy, and the status subresource when the kind has one.
//
// Generated servers call NewStorage once per kind with a Resource value that the
// generator fills from the types package and its markers. Behaviour that markers
// cannot express lives in a user-owned hooks value whose optional methods
// (Validator, UpdateValidator, CreatePreparer, UpdatePreparer, Canonicalizer,
// CreateWarner, UpdateWarner) the strategy calls at the same points where
// Kubernetes' built-in strategies run their code.
//
// Semantics follow built-in types and CRDs:
//   - metadata.generation starts at 1 and increases when the spec changes;
//   - with a status subresource, status is dropped on create, writes to the main
//     resource keep the stored status, and writes to /status change nothing but status
//     (and managedFields); server-side apply resets the same fields;
//   - object names are DNS subdomains, metadata is validated like every other object,
//     and all field errors of a request come back together as one 422 Invalid.
package registry
