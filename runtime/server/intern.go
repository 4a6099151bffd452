package server

import (
	"bytes"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Bounds of the storage codec's intern table.
const (
	// maxInterned is the number of distinct values the table keeps; past it, new values
	// are not shared (the table never evicts, so it cannot churn).
	maxInterned = 4096
	// maxInternedLen is the longest string kept; longer values are rarely shared.
	maxInternedLen = 64
	// maxInternedFieldsLen is the longest managed-fields set kept.
	maxInternedFieldsLen = 4096
	// maxInternedFieldsBytes bounds the bytes of all managed-fields sets kept.
	maxInternedFieldsBytes = 256 << 10
)

// interningCodec is the storage codec with one addition: the metadata of every object it
// decodes from etcd shares its repeated values with the objects decoded before it. The
// watch cache keeps every object decoded, and among objects written by the same clients
// the managed fields (manager, operation, API version, and the set of fields, often the
// same bytes for every object a client writes the same way), the namespace and the label
// keys and values are mostly equal: each decoded copy of them cost memory per object.
//
// Shared values are never written to in place: strings are immutable, and the managed
// fields' bytes are only read (apimachinery's managedfields parses them into new sets and
// DeepCopy copies them).
type interningCodec struct {
	runtime.Codec
	table *internTable
}

func newInterningCodec(c runtime.Codec) runtime.Codec {
	return interningCodec{Codec: c, table: &internTable{strs: map[string]string{}, fields: map[string][]byte{}}}
}

// Decode implements runtime.Decoder.
func (c interningCodec) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := c.Codec.Decode(data, defaults, into)
	if err == nil {
		c.table.internMeta(obj)
	}
	return obj, gvk, err
}

// internTable holds the shared values, bounded by maxInterned.
type internTable struct {
	mu         sync.RWMutex
	strs       map[string]string
	fields     map[string][]byte
	fieldBytes int
}

// internMeta replaces obj's namespace, label keys and values and managed fields' values
// by shared equal ones.
func (t *internTable) internMeta(obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	if ns := m.GetNamespace(); ns != "" {
		m.SetNamespace(t.str(ns))
	}
	if labels := m.GetLabels(); len(labels) > 0 {
		for k, v := range labels {
			// Assigning to an existing key replaces the map's copy of the key too.
			labels[t.str(k)] = t.str(v)
		}
	}
	managed := m.GetManagedFields()
	for i := range managed {
		e := &managed[i]
		e.Manager = t.str(e.Manager)
		e.Operation = metav1.ManagedFieldsOperationType(t.str(string(e.Operation)))
		e.APIVersion = t.str(e.APIVersion)
		e.FieldsType = t.str(e.FieldsType)
		e.Subresource = t.str(e.Subresource)
		if e.FieldsV1 != nil {
			e.FieldsV1.Raw = t.bytes(e.FieldsV1.Raw)
		}
	}
}

// str returns the shared copy of s, keeping a copy of s when there is room.
func (t *internTable) str(s string) string {
	if s == "" || len(s) > maxInternedLen {
		return s
	}
	t.mu.RLock()
	v, ok := t.strs[s]
	t.mu.RUnlock()
	if ok {
		return v
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.strs[s]; ok {
		return v
	}
	if len(t.strs) < maxInterned {
		s = strings.Clone(s) // not a reference into whatever s was cut from
		t.strs[s] = s
	}
	return s
}

// bytes returns the shared copy of b, keeping a copy of b when there is room.
func (t *internTable) bytes(b []byte) []byte {
	if len(b) == 0 || len(b) > maxInternedFieldsLen {
		return b
	}
	t.mu.RLock()
	v, ok := t.fields[string(b)]
	t.mu.RUnlock()
	if ok {
		return v
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.fields[string(b)]; ok {
		return v
	}
	if len(t.fields) < maxInterned && t.fieldBytes+len(b) <= maxInternedFieldsBytes {
		b = bytes.Clone(b)
		t.fields[string(b)] = b
		t.fieldBytes += len(b)
	}
	return b
}
