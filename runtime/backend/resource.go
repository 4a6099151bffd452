package backend

import (
	"fmt"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/aagen-dev/aagen/runtime/registry"
)

// Resource describes a kind served from a backend the way the generator knows it (from the
// kind's markers). NewStorage turns it into a Config.
type Resource[T Object] struct {
	// Group is the API group, e.g. "shop.example.com"; Kind the kind name.
	Group, Kind string
	// Plural and Singular are the lower-case resource names.
	Plural, Singular string
	// ShortNames and Categories are published in discovery.
	ShortNames, Categories []string
	// NamespaceScoped is false for cluster-scoped kinds.
	NamespaceScoped bool
	// New returns an empty object; NewList an empty list of them.
	New     func() T
	NewList func() runtime.Object
	// Columns are the printer columns of kubectl get (registry.Column, as for stored kinds).
	Columns []registry.Column
	// SelectableFields are the fields usable in field selectors besides metadata.name and
	// metadata.namespace.
	SelectableFields []SelectableField[T]
}

// SelectableField is a field usable in field selectors.
type SelectableField[T Object] struct {
	// Name is the field's label, e.g. "spec.dock".
	Name string
	// Value returns the field's value as selectors compare it ("" when unset).
	Value func(obj T) string
}

// NewStorage returns the storage of the resource served by b, keyed by the plural name as
// server.StorageFunc returns it.
func NewStorage[T Object](res Resource[T], b Reader[T]) (map[string]rest.Storage, error) {
	gr := schema.GroupResource{Group: res.Group, Resource: res.Plural}
	if b == nil {
		return nil, fmt.Errorf("%s: the backend is nil (see NewBackend in the kind's backend.go)", gr)
	}
	table, err := registry.NewTableConvertor(res.Columns)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", gr, err)
	}
	cfg := Config[T]{
		Resource: gr, SingularName: res.Singular, NamespaceScoped: res.NamespaceScoped,
		NewFunc: res.New, NewListFunc: res.NewList, TableConvertor: table,
		ShortNames: res.ShortNames, Categories: res.Categories, Backend: b,
	}
	if len(res.SelectableFields) > 0 {
		sel := res.SelectableFields
		cfg.SelectableFields = func(obj T) fields.Set {
			set := make(fields.Set, len(sel))
			for _, f := range sel {
				set[f.Name] = f.Value(obj)
			}
			return set
		}
	}
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return map[string]rest.Storage{res.Plural: s}, nil
}
