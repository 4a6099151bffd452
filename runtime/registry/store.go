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
	main := newStrategy(scheme, r, h)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return r.New() },
		NewListFunc:               r.NewList,
		DefaultQualifiedResource:  r.GroupResource(),
		SingularQualifiedResource: r.singularResource(),
		CreateStrategy:            main,
		UpdateStrategy:            main,
		DeleteStrategy:            main,
		ResetFieldsStrategy:       main,
		TableConvertor:            rest.NewDefaultTableConvertor(r.GroupResource()),
	}
	opts := &generic.StoreOptions{RESTOptions: getter, AttrFunc: getAttrs(r.NamespaceScoped)}
	if err := store.CompleteWithOptions(opts); err != nil {
		return nil, fmt.Errorf("%s: %w", r.GroupResource(), err)
	}
	out := map[string]rest.Storage{
		r.Plural: &REST{Store: store, shortNames: r.ShortNames, categories: r.Categories},
	}
	if r.Status != nil {
		statusStore := *store
		ss := statusStrategy[T]{main}
		statusStore.UpdateStrategy = ss
		statusStore.ResetFieldsStrategy = ss
		out[r.Plural+"/status"] = &StatusREST{store: &statusStore}
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
	}
	return nil
}

func (r *Resource[T]) singularResource() schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Singular}
}

// REST is the storage of the main resource: the generic registry Store plus the
// discovery metadata it does not carry itself.
type REST struct {
	*genericregistry.Store
	shortNames []string
	categories []string
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
