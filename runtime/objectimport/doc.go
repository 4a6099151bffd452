// Package objectimport writes objects into a generated server's storage with their
// identity, for a migration from a CRD (aagen migrate): the uid, creationTimestamp,
// generation, labels, annotations, finalizers, ownerReferences, managedFields, status and
// deletionTimestamp the object had in the cluster it comes from are kept; only its
// resourceVersion is new. The public API cannot do this (a create sets a new uid, its own
// creationTimestamp and generation 1, and drops status and deletionTimestamp), so the
// import is a path of its own, guarded twice:
//
//   - authorization: each object needs the verb "import" on its resource, asked of the
//     server's authorizer (deployed: kube-apiserver's, through a SubjectAccessReview), on
//     top of the non-resource URL permission on ImportPath the handler chain checks;
//   - a migration in progress: the import is refused unless the migration state, a key in
//     the server's own storage (StateKey), says a migration is in progress. The state
//     lives in storage rather than in a server flag because the migrate command is a
//     client: it can set it without restarting or redeploying the server, every replica of
//     the server reads the same state, and it survives a restart of the server or of the
//     command (an interrupted migration stays visible until it is finished or rolled back).
package objectimport
