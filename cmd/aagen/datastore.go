package main

import (
	"fmt"
	"path/filepath"
)

// Datastores aagen up can run a server on.
const (
	upDatastoreEtcd   = "etcd"
	upDatastoreSQLite = "sqlite"
)

// upStorageArgs returns the server flags that put its data in state on datastore: embedded
// etcd in state/etcd, or SQLite through kine in state/sqlite/state.db.
func upStorageArgs(datastore, state string) ([]string, error) {
	switch datastore {
	case upDatastoreEtcd, "":
		return []string{"--embedded-etcd-dir=" + filepath.Join(state, "etcd")}, nil
	case upDatastoreSQLite:
		return []string{"--datastore-endpoint=sqlite://" + filepath.Join(state, "sqlite", "state.db")}, nil
	}
	return nil, fmt.Errorf("--datastore=%q: want %s (embedded etcd, the default) or %s (SQLite through kine, in the state directory)",
		datastore, upDatastoreEtcd, upDatastoreSQLite)
}
