package registry

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// NewStorage builds the REST storage of one kind on the etcd storage that getter
// describes. It returns the storage keyed the way APIGroupInfo expects: the plural
// name for the resource and "<plural>/status" for its status subresource.
func NewStorage[T Object](scheme *runtime.Scheme, getter generic.RESTOptionsGetter, res Resource[T]) (map[string]rest.Storage, error) {
	if err := res.validate(); err != nil {
		return nil, err
	}
	h, err := resolveHooks[T](res.Kind, res.Hooks)
	if err != nil {
		return nil, err
	}
	r := &res
	schemas, err := newVersionedSchemas(scheme, r)
	if err != nil {
		return nil, fmt.Errorf("registry.Resource %s: %w", r.Kind, err)
	}
	main := newStrategy(scheme, r, h, schemas)
	table, err := NewTableConvertor(r.Columns)
	if err != nil {
		return nil, fmt.Errorf("registry.Resource %s: %w", r.Kind, err)
	}
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return r.New() },
		NewListFunc:               r.NewList,
		DefaultQualifiedResource:  r.GroupResource(),
		SingularQualifiedResource: r.singularResource(),
		CreateStrategy:            main,
		UpdateStrategy:            main,
		DeleteStrategy:            main,
		ResetFieldsStrategy:       main,
		TableConvertor:            table,
	}
	opts := &generic.StoreOptions{RESTOptions: resumingGetter{getter}, AttrFunc: getAttrs(r)}
	if err := store.CompleteWithOptions(opts); err != nil {
		return nil, fmt.Errorf("%s: %w", r.GroupResource(), err)
	}
	resource := &REST{Store: store, shortNames: r.ShortNames, categories: r.Categories, fieldLabels: r.fieldLabels(),
		groupKind: schema.GroupKind{Group: r.Group, Kind: r.Kind}, schemas: schemas}
	if r.ReadOnly {
		return map[string]rest.Storage{r.Plural: &ReadOnlyREST{readable: resource}}, nil
	}
	out := map[string]rest.Storage{r.Plural: resource}
	if r.Status != nil {
		statusStore := *store
		ss := statusStrategy[T]{main}
		statusStore.UpdateStrategy = ss
		statusStore.ResetFieldsStrategy = ss
		out[r.Plural+"/status"] = &StatusREST{store: &statusStore}
	}
	if r.Scale != nil {
		scale, err := newScaleREST(store, r)
		if err != nil {
			return nil, err
		}
		out[r.Plural+"/scale"] = scale
	}
	return out, nil
}

func (r *Resource[T]) validate() error {
	switch {
	case r.Group == "" || r.Kind == "" || r.Plural == "" || r.Singular == "":
		return fmt.Errorf("registry.Resource %q: Group, Kind, Plural and Singular are required", r.Kind)
	case len(r.Versions) == 0:
		return fmt.Errorf("registry.Resource %s: at least one served version is required", r.Kind)
	case r.New == nil || r.NewList == nil:
		return fmt.Errorf("registry.Resource %s: New and NewList are required", r.Kind)
	case r.Status != nil && (r.Status.CopyStatus == nil || r.Status.CopySpec == nil):
		return fmt.Errorf("registry.Resource %s: Status needs CopyStatus and CopySpec", r.Kind)
	case r.ReadOnly && (r.Status != nil || r.Scale != nil):
		return fmt.Errorf("registry.Resource %s: a read-only resource has no Status or Scale (they are written)", r.Kind)
	case r.Scale != nil && (r.Scale.SpecReplicas == nil || r.Scale.SetSpecReplicas == nil || r.Scale.StatusReplicas == nil):
		return fmt.Errorf("registry.Resource %s: Scale needs SpecReplicas, SetSpecReplicas and StatusReplicas", r.Kind)
	}
	seen := map[string]bool{"metadata.name": true, "metadata.namespace": true}
	for _, f := range r.SelectableFields {
		switch {
		case f.Name == "" || f.Value == nil:
			return fmt.Errorf("registry.Resource %s: selectable field %q needs a Name and a Value", r.Kind, f.Name)
		case seen[f.Name]:
			return fmt.Errorf("registry.Resource %s: selectable field %q is given twice or is built in", r.Kind, f.Name)
		}
		seen[f.Name] = true
	}
	return nil
}

// fieldLabels are the fields usable in field selectors: metadata.name, metadata.namespace
// and the selectable fields.
func (r *Resource[T]) fieldLabels() []string {
	out := []string{"metadata.name", "metadata.namespace"}
	for _, f := range r.SelectableFields {
		out = append(out, f.Name)
	}
	return out
}

func (r *Resource[T]) singularResource() schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Singular}
}

// readable is what ReadOnlyREST serves of a REST: reads and discovery metadata.
type readable interface {
	rest.Storage
	rest.Scoper
	rest.Getter
	rest.Lister
	rest.Watcher
	rest.SingularNameProvider
	rest.ShortNamesProvider
	rest.CategoriesProvider
	FieldLabels() []string
}

// ReadOnlyREST is the storage of a read-only resource (Resource.ReadOnly,
// +genclient:readonly): get, list and watch of its REST and nothing that writes, so
// k8s.io/apiserver installs only those verbs (discovery lists get, list, watch) and a
// write is 405 Method Not Allowed.
type ReadOnlyREST struct {
	readable
}

var _ readable = &REST{}

// REST is the storage of the main resource: the generic registry Store plus the
// discovery metadata it does not carry itself.
type REST struct {
	*genericregistry.Store
	shortNames  []string
	categories  []string
	fieldLabels []string
	groupKind   schema.GroupKind
	// schemas are the schemas of the served versions, for CheckLimits.
	schemas *versionedSchemas
}

var (
	_ rest.StandardStorage      = &REST{}
	_ rest.ShortNamesProvider   = &REST{}
	_ rest.CategoriesProvider   = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

// ShortNames are the kubectl abbreviations published in discovery.
func (r *REST) ShortNames() []string { return r.shortNames }

// Categories are the groupings (such as "all") published in discovery.
func (r *REST) Categories() []string { return r.categories }

// FieldLabels are the fields usable in field selectors: metadata.name, metadata.namespace
// and the kind's selectable fields. Package server registers them with the scheme as the
// kind's field label conversion, so that other labels are rejected with the list of these.
func (r *REST) FieldLabels() []string { return r.fieldLabels }

// StatusREST is the storage of the /status subresource: get, update and patch, where
// only the status of the request is kept.
type StatusREST struct {
	store *genericregistry.Store
}

var (
	_ rest.Getter  = &StatusREST{}
	_ rest.Updater = &StatusREST{}
	_ rest.Patcher = &StatusREST{}
)

// New returns an empty object.
func (r *StatusREST) New() runtime.Object { return r.store.New() }

// Destroy does nothing: the main resource owns the storage.
func (r *StatusREST) Destroy() {}

// Get returns the object with its status.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update writes the status of the object; everything else is taken from storage.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	// Subresources never create the parent.
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields names the fields a status write cannot set.
func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// ConvertToTable renders the object for kubectl.
func (r *StatusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}
