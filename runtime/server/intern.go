package server

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"sync"
	"unsafe"

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
	// maxInternedLabels is the most labels a shared label set has.
	maxInternedLabels = 16
)

// interningCodec is the storage codec with one addition: the metadata of every object it
// decodes from etcd shares its repeated values with the objects decoded before it. The
// watch cache keeps every object decoded, and among objects written by the same clients
// the managed fields (manager, operation, API version, and the set of fields, often the
// same bytes for every object a client writes the same way), the namespace and the label
// keys and values are mostly equal: each decoded copy of them cost memory per object.
//
// Objects with equal labels share one label map as well: a map of two labels takes about
// 340 bytes, and the objects of one workload mostly carry the same few label sets.
//
// Shared values are never written to in place: strings are immutable, the managed
// fields' bytes are only read (apimachinery's managedfields parses them into new sets and
// DeepCopy copies them), and a decoded object's label map is only read or replaced, never
// written into: objects from storage are read-only to k8s.io/apiserver (the watch cache
// hands out shallow copies that already share their maps with the cache, and an update
// starts from a deep copy), and a request's object, which handlers and admission do
// change, is decoded from the request body, not by this codec.
type interningCodec struct {
	runtime.Codec
	table *internTable
}

func newInterningCodec(c runtime.Codec) runtime.Codec {
	return interningCodec{Codec: c, table: newInternTable()}
}

func newInternTable() *internTable {
	return &internTable{strs: map[string]string{}, fields: map[string][]byte{}, labelSets: map[string]map[string]string{}}
}

// Decode implements runtime.Decoder.
func (c interningCodec) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if into != nil {
		// JSON and CBOR decode into the maps into already has, which may be shared.
		if m, err := meta.Accessor(into); err == nil && m.GetLabels() != nil {
			m.SetLabels(nil)
		}
	}
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
	// labelSets are the shared label maps by labelSetKey.
	labelSets map[string]map[string]string
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
		if shared := t.labelSet(labels); shared != nil {
			m.SetLabels(shared)
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
	v, ok := shared(&t.mu, t.strs, s, func() (string, string, bool) {
		c := strings.Clone(s) // not a reference into whatever s was cut from
		return c, c, len(t.strs) < maxInterned
	})
	if !ok {
		return s
	}
	return v
}

// bytes returns the shared copy of b, keeping a copy of b when there is room.
func (t *internTable) bytes(b []byte) []byte {
	if len(b) == 0 || len(b) > maxInternedFieldsLen {
		return b
	}
	// The lookup key aliases b; a kept value is stored under its copy's own string.
	v, ok := shared(&t.mu, t.fields, unsafe.String(&b[0], len(b)), func() (string, []byte, bool) {
		if len(t.fields) >= maxInterned || t.fieldBytes+len(b) > maxInternedFieldsBytes {
			return "", nil, false
		}
		c := bytes.Clone(b)
		t.fieldBytes += len(c)
		return string(c), c, true
	})
	if !ok {
		return b
	}
	return v
}

// labelSet returns the shared label map equal to labels, keeping labels as the shared one
// when there is room; nil when labels is not to be shared (more than maxInternedLabels
// labels, or a value longer than maxInternedLen).
func (t *internTable) labelSet(labels map[string]string) map[string]string {
	key, ok := labelSetKey(labels)
	if !ok {
		return nil
	}
	v, _ := shared(&t.mu, t.labelSets, key, func() (string, map[string]string, bool) {
		return key, labels, len(t.labelSets) < maxInterned
	})
	return v
}

// shared returns m's value for key, else the value keep gives, stored under the key keep
// gives when keep says there is room; false when key has no value and keep kept none.
// keep runs under mu's write lock; the usual case, a value already shared, takes the read
// lock only.
func shared[V any](mu *sync.RWMutex, m map[string]V, key string, keep func() (string, V, bool)) (V, bool) {
	mu.RLock()
	v, ok := m[key]
	mu.RUnlock()
	if ok {
		return v, true
	}
	mu.Lock()
	defer mu.Unlock()
	if v, ok := m[key]; ok {
		return v, true
	}
	k, v, room := keep()
	if !room {
		var zero V
		return zero, false
	}
	m[k] = v
	return v, true
}

// labelSetKey is a key that tells label sets apart: each label's key and value, sorted by
// key, each preceded by its length.
func labelSetKey(labels map[string]string) (string, bool) {
	if len(labels) > maxInternedLabels {
		return "", false
	}
	keys := make([]string, 0, len(labels))
	n := 0
	for k, v := range labels {
		if len(k) > 2*maxInternedLen || len(v) > maxInternedLen {
			return "", false
		}
		keys = append(keys, k)
		n += len(k) + len(v) + 4
	}
	slices.Sort(keys)
	b := make([]byte, 0, n)
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		v := labels[k]
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return string(b), true
}
