package registry

import (
	"context"
	"fmt"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// scaleKind is the kind the /scale subresource serves.
var scaleKind = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// unsetReplicas marks an old Scale whose object had no spec replicas, so that an update
// that does not set them fails instead of storing the marker (as for custom resources).
const unsetReplicas = -2147483648

// ScaleREST is the storage of the /scale subresource: it reads and writes the replicas of
// the kind as an autoscaling/v1 Scale, through the main resource's store (so
// resourceVersion, generation, validation, admission and watch behave as for any update).
type ScaleREST[T Object] struct {
	store    *genericregistry.Store
	res      *Resource[T]
	mappings managedfields.ResourcePathMappings
}

var (
	_ rest.Getter                   = &ScaleREST[*metav1.PartialObjectMetadata]{}
	_ rest.Updater                  = &ScaleREST[*metav1.PartialObjectMetadata]{}
	_ rest.Patcher                  = &ScaleREST[*metav1.PartialObjectMetadata]{}
	_ rest.GroupVersionKindProvider = &ScaleREST[*metav1.PartialObjectMetadata]{}
	_ rest.TableConvertor           = &ScaleREST[*metav1.PartialObjectMetadata]{}
)

func newScaleREST[T Object](store *genericregistry.Store, res *Resource[T]) (*ScaleREST[T], error) {
	path := strings.Split(strings.TrimPrefix(res.Scale.SpecReplicasPath, "."), ".")
	p, err := fieldpath.MakePath(toAny(path)...)
	if err != nil || len(path) == 0 || path[0] == "" {
		return nil, fmt.Errorf("registry.Resource %s: Scale.SpecReplicasPath %q is not a simple JSON path such as .spec.replicas", res.Kind, res.Scale.SpecReplicasPath)
	}
	mappings := managedfields.ResourcePathMappings{}
	for _, v := range res.Versions {
		mappings[schema.GroupVersion{Group: res.Group, Version: v.Name}.String()] = p
	}
	return &ScaleREST[T]{store: store, res: res, mappings: mappings}, nil
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// GroupVersionKind is autoscaling/v1 Scale whatever the version of the parent.
func (r *ScaleREST[T]) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return scaleKind
}

// New returns an empty Scale.
func (r *ScaleREST[T]) New() runtime.Object { return &autoscalingv1.Scale{} }

// Destroy does nothing: the main resource owns the storage.
func (r *ScaleREST[T]) Destroy() {}

// Get returns the Scale of the named object.
func (r *ScaleREST[T]) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	obj, err := r.store.Get(ctx, name, options)
	if err != nil {
		return nil, err
	}
	s, _ := r.scaleOf(obj.(T))
	return s, nil
}

// Update sets the spec replicas of the named object from the Scale of the request (PUT,
// or a patch applied to the current Scale). Nothing else of the object changes.
func (r *ScaleREST[T]) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	info := &scaleUpdatedObjectInfo[T]{req: objInfo, rest: r, gv: r.parentVersion(ctx)}
	// Admission and validation see Scales, as for built-in kinds and custom resources.
	toScale := func(obj runtime.Object) (runtime.Object, error) {
		o, ok := obj.(T)
		if !ok {
			return nil, fmt.Errorf("unexpected object %T", obj)
		}
		s, _ := r.scaleOf(o)
		return s, nil
	}
	create := func(ctx context.Context, obj runtime.Object) error {
		s, err := toScale(obj)
		if err != nil {
			return err
		}
		return createValidation(ctx, s)
	}
	update := func(ctx context.Context, obj, old runtime.Object) error {
		s, err := toScale(obj)
		if err != nil {
			return err
		}
		o, err := toScale(old)
		if err != nil {
			return err
		}
		return updateValidation(ctx, s, o)
	}
	if createValidation == nil {
		create = nil
	}
	if updateValidation == nil {
		update = nil
	}
	// Subresources never create the parent.
	obj, _, err := r.store.Update(ctx, name, info, create, update, false, options)
	if err != nil {
		return nil, false, err
	}
	s, _ := r.scaleOf(obj.(T))
	return s, false, nil
}

// parentVersion is the version of the request, which server-side apply records on the
// managed fields of the replicas.
func (r *ScaleREST[T]) parentVersion(ctx context.Context) schema.GroupVersion {
	if info, ok := genericapirequest.RequestInfoFrom(ctx); ok && info.APIGroup == r.res.Group && contains(r.res.versionNames(), info.APIVersion) {
		return schema.GroupVersion{Group: r.res.Group, Version: info.APIVersion}
	}
	return schema.GroupVersion{Group: r.res.Group, Version: r.res.Versions[0].Name}
}

// scaleOf returns the Scale of obj and whether its spec replicas are set.
func (r *ScaleREST[T]) scaleOf(obj T) (*autoscalingv1.Scale, bool) {
	m := objectMeta(obj)
	f := r.res.Scale
	spec, ok := f.SpecReplicas(obj)
	s := &autoscalingv1.Scale{
		// The kind is set so that conversion sees the object is already what was asked for.
		TypeMeta: metav1.TypeMeta{APIVersion: scaleKind.GroupVersion().String(), Kind: scaleKind.Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name:              m.Name,
			Namespace:         m.Namespace,
			UID:               m.UID,
			ResourceVersion:   m.ResourceVersion,
			CreationTimestamp: m.CreationTimestamp,
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: spec},
		Status: autoscalingv1.ScaleStatus{Replicas: f.StatusReplicas(obj)},
	}
	if f.Selector != nil {
		s.Status.Selector = f.Selector(obj)
	}
	return s, ok
}

// ConvertToTable renders Scales like kubectl does for built-in kinds: NAME, DESIRED,
// AVAILABLE, AGE.
func (r *ScaleREST[T]) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{}
	if opt, ok := tableOptions.(*metav1.TableOptions); !ok || opt == nil || !opt.NoHeaders {
		table.ColumnDefinitions = []metav1.TableColumnDefinition{
			{Name: "Name", Type: "string", Format: "name", Description: objectMetaDescriptions["name"]},
			{Name: "Desired", Type: "integer", Description: autoscalingv1.ScaleSpec{}.SwaggerDoc()["replicas"]},
			{Name: "Available", Type: "integer", Description: autoscalingv1.ScaleStatus{}.SwaggerDoc()["replicas"]},
			{Name: "Age", Type: "date", Description: objectMetaDescriptions["creationTimestamp"]},
		}
	}
	if m, err := meta.CommonAccessor(object); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	var err error
	table.Rows, err = metatable.MetaToTableRow(object, func(obj runtime.Object, _ metav1.Object, name, age string) ([]any, error) {
		s, ok := obj.(*autoscalingv1.Scale)
		if !ok {
			return nil, fmt.Errorf("unexpected object %T in a Scale table", obj)
		}
		return []any{name, int64(s.Spec.Replicas), int64(s.Status.Replicas), age}, nil
	})
	return table, err
}

// scaleUpdatedObjectInfo turns the Scale of an update into the updated object: the stored
// object with the new spec replicas.
type scaleUpdatedObjectInfo[T Object] struct {
	req  rest.UpdatedObjectInfo
	rest *ScaleREST[T]
	gv   schema.GroupVersion
}

func (i *scaleUpdatedObjectInfo[T]) Preconditions() *metav1.Preconditions {
	return i.req.Preconditions()
}

func (i *scaleUpdatedObjectInfo[T]) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	obj := oldObj.DeepCopyObject().(T)
	m := objectMeta(obj)
	managed := managedfields.NewScaleHandler(m.ManagedFields, i.gv, i.rest.mappings)
	old, set := i.rest.scaleOf(obj)
	if !set {
		old.Spec.Replicas = unsetReplicas
	}
	scaleManaged, err := managed.ToSubresource()
	if err != nil {
		return nil, err
	}
	old.ManagedFields = scaleManaged

	updated, err := i.req.UpdatedObject(ctx, old)
	if err != nil {
		return nil, err
	}
	if updated == nil {
		return nil, apierrors.NewBadRequest("nil update passed to Scale")
	}
	scale, ok := updated.(*autoscalingv1.Scale)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("wrong object passed to Scale update: %T", updated))
	}
	if scale.Spec.Replicas == unsetReplicas {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the spec replicas field %q cannot be empty", i.rest.res.Scale.SpecReplicasPath))
	}
	if scale.Spec.Replicas < 0 {
		return nil, apierrors.NewInvalid(scaleKind.GroupKind(), scale.Name, field.ErrorList{
			field.Invalid(field.NewPath("spec", "replicas"), scale.Spec.Replicas, "must be greater than or equal to 0"),
		})
	}
	i.rest.res.Scale.SetSpecReplicas(obj, scale.Spec.Replicas)
	if scale.ResourceVersion != "" {
		// A resourceVersion in the Scale is a precondition: a stale one is a 409 Conflict.
		m.ResourceVersion = scale.ResourceVersion
	}
	entries, err := managed.ToParent(scale.ManagedFields)
	if err != nil {
		return nil, err
	}
	m.ManagedFields = entries
	return obj, nil
}
