package objectimport

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// StateKey is the key of the migration state under the server's storage prefix
// (--etcd-prefix, /registry/<server name> by default). Its "_" cannot start an API group
// (a DNS subdomain), so no resource's keys can be next to it.
const StateKey = "_aagen/migration-state"

// State is the migration state: while InProgress, ImportPath accepts objects.
type State struct {
	// InProgress opens the import.
	InProgress bool `json:"inProgress"`
	// Since is when the state last changed (set by the server).
	Since time.Time `json:"since,omitzero"`
	// By is the user who changed it last (set by the server).
	By string `json:"by,omitempty"`
	// Source says where the objects come from (free text the migrate command sets, e.g.
	// "customresourcedefinition visitors.webapp.example.com").
	Source string `json:"source,omitempty"`
	// HandedBack says the group was handed back to where its objects came from (aagen
	// migrate rollback points its APIServices at the CRDs again). On the change to it,
	// every replica ends the watches it serves (runtime/server), so that their clients watch
	// again and kube-apiserver routes them to the CRDs: a watch kept open here would
	// never see another event. (runtime/server ends every watch it serves, of any group
	// and of direct clients too: those watch again from where they were, on the same
	// server, and miss nothing.)
	HandedBack bool `json:"handedBack,omitempty"`
}

// StateStore reads and writes the migration state in an etcd (or kine) under a prefix.
type StateStore struct {
	// KV is the etcd client of the server's storage.
	KV clientv3.KV
	// Prefix is the storage prefix (--etcd-prefix).
	Prefix string
}

func (s StateStore) key() string { return path.Join("/", s.Prefix, StateKey) }

// Read returns the stored state; no state stored is a State that is not in progress.
func (s StateStore) Read(ctx context.Context) (State, error) {
	resp, err := s.KV.Get(ctx, s.key())
	if err != nil {
		return State{}, fmt.Errorf("reading the migration state %s: %w", s.key(), err)
	}
	var st State
	if len(resp.Kvs) == 0 {
		return st, nil
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &st); err != nil {
		return State{}, fmt.Errorf("the migration state %s is not JSON: %w", s.key(), err)
	}
	return st, nil
}

// Write stores st (a state neither in progress nor handed back deletes the key).
func (s StateStore) Write(ctx context.Context, st State) error {
	if !st.InProgress && !st.HandedBack {
		if _, err := s.KV.Delete(ctx, s.key()); err != nil {
			return fmt.Errorf("clearing the migration state %s: %w", s.key(), err)
		}
		return nil
	}
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if _, err := s.KV.Put(ctx, s.key(), string(data)); err != nil {
		return fmt.Errorf("writing the migration state %s: %w", s.key(), err)
	}
	return nil
}

// OnHandBack calls handedBack each time the stored state changes to handed back, until ctx
// ends: one etcd watch on the state's key from the revision of a first read, opened again
// from where it was when it fails, so that no change is missed in between.
func (s StateStore) OnHandBack(ctx context.Context, c clientv3.KV, w clientv3.Watcher, handedBack func()) {
	var next int64 // the revision to watch from
	for ctx.Err() == nil && next == 0 {
		if resp, err := c.Get(ctx, s.key()); err == nil {
			next = resp.Header.Revision + 1
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	for ctx.Err() == nil {
		for resp := range w.Watch(clientv3.WithRequireLeader(ctx), s.key(), clientv3.WithRev(next)) {
			if resp.CompactRevision > 0 {
				next = resp.CompactRevision
			}
			for _, ev := range resp.Events {
				next = ev.Kv.ModRevision + 1
				var st State
				if ev.Type == clientv3.EventTypePut && json.Unmarshal(ev.Kv.Value, &st) == nil && st.HandedBack {
					handedBack()
				}
			}
			if resp.Err() != nil {
				break
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
