// Package migrate is `aagen migrate`: moving a CRD's objects into the generated server of
// the same types. Its plan (Plan) compares the CRDs of a group, as a cluster serves them,
// with the generated server (versions, storage version, scope, schemas from /openapi/v3)
// and dry-runs every existing object on the generated server, reporting each one the
// server would refuse with its fields and reasons, before anything changes. Copy copies the
// objects through the generated server's import (runtime/objectimport, Importer), which
// keeps each object's identity; Freeze and Lift freeze and unfreeze writes to the group
// on the cluster.
package migrate
