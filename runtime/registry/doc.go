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
//     and all field errors of a request come back together as one 422 Invalid;
//   - with Schema, every create and update is also validated against the kind's OpenAPI
//     schema the way a custom resource is against its CRD's (k8s.io/apiextensions-apiserver:
//     value validation, list types, CEL rules with oldSelf on update, ratcheting), with
//     the same messages;
//   - with Columns, kubectl get shows NAME and the columns (priority above 0 only with
//     -o wide), without AGE, cells computed like a CRD's additionalPrinterColumns (JSONPath on
//     the object's JSON, an empty cell for a missing value, an age for a date);
//   - field selectors take metadata.name, metadata.namespace and the SelectableFields
//     (values compared as strings, like a CRD's selectableFields); REST.FieldLabels lists
//     them for the scheme's field label conversion, which package server registers;
//   - with Scale, "<plural>/scale" serves autoscaling/v1 Scale: GET reads the replicas and
//     selector, PUT and PATCH set the spec replicas through the main store (so
//     resourceVersion preconditions, generation, admission, watch and the managed fields
//     of the replicas behave as for Deployments and custom resources);
//   - a watch from a resourceVersion the watch cache no longer holds (after a restart of
//     the server, or past the cache's history) is served from etcd, so it resumes without
//     missing an event instead of answering 410 Gone; only a revision etcd has compacted
//     gets 410 (see resume.go).
package registry
