package registry

import (
	"context"
	"fmt"
	"maps"
	"reflect"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// strategy is the create, update and delete strategy of the main resource.
type strategy[T Object] struct {
	runtime.ObjectTyper
	names.NameGenerator
	res   *Resource[T]
	hooks hooks[T]
	// schema validates against the OpenAPI schema of the version of each request.
	schema *versionedSchemas
}

func newStrategy[T Object](typer runtime.ObjectTyper, res *Resource[T], h hooks[T], schema *versionedSchemas) *strategy[T] {
	return &strategy[T]{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator, res: res, hooks: h, schema: schema}
}

func (s *strategy[T]) NamespaceScoped() bool { return s.res.NamespaceScoped }

// GetResetFields names the fields that writes to the main resource cannot set: the status,
// when it has its own subresource.
func (s *strategy[T]) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	if s.res.Status == nil {
		return nil
	}
	return resetFields(s.res, fieldpath.MakePathOrDie("status"))
}

func (s *strategy[T]) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	o := obj.(T)
	if meta := objectMeta(o); len(meta.ManagedFields) == 0 {
		ownSentMembers(ctx, meta, s.schema.members(ctx))
	}
	if s.res.Status != nil {
		s.res.Status.CopyStatus(o, s.res.New())
	}
	objectMeta(o).Generation = 1
	s.schema.coerceEmbedded(o)
	if s.hooks.prepareCreate != nil {
		s.hooks.prepareCreate.PrepareForCreate(ctx, o)
	}
}

func (s *strategy[T]) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	o, prev := obj.(T), old.(T)
	ownLabels(objectMeta(prev))
	if s.res.Status != nil {
		s.res.Status.CopyStatus(o, prev)
	}
	s.schema.coerceEmbedded(o)
	bumpGeneration(s.res, o, prev)
	if s.hooks.prepareUpdate != nil {
		s.hooks.prepareUpdate.PrepareForUpdate(ctx, o, prev)
	}
}

func (s *strategy[T]) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	o := obj.(T)
	errs := apimachineryvalidation.ValidateObjectMetaAccessor(objectMeta(o), s.res.NamespaceScoped,
		apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, objectMetadataCounts(objectMeta(o), nil)...)
	errs = append(errs, s.schema.validate(ctx, o, nil)...)
	errs = append(errs, s.validateScaleSpec(o)...)
	if s.hooks.validate != nil {
		errs = append(errs, s.hooks.validate.Validate(ctx, o)...)
	}
	return errs
}

func (s *strategy[T]) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	o, prev := obj.(T), old.(T)
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(objectMeta(o), objectMeta(prev), field.NewPath("metadata"))
	errs = append(errs, objectMetadataCounts(objectMeta(o), objectMeta(prev))...)
	errs = append(errs, s.schema.validate(ctx, o, prev)...)
	errs = append(errs, s.validateScaleSpec(o)...)
	if s.hooks.validate != nil {
		errs = append(errs, s.hooks.validate.Validate(ctx, o)...)
	}
	if s.hooks.validateUpdate != nil {
		errs = append(errs, s.hooks.validateUpdate.ValidateUpdate(ctx, o, prev)...)
	}
	return errs
}

// validateScaleSpec checks the spec replicas of a kind with the /scale subresource as
// kube-apiserver checks a custom resource's (ValidateScaleSpec of apiextensions-apiserver):
// a negative value is invalid at the path SpecReplicasPath names, whatever the schema
// says. Values above MaxInt32, its other check, do not fit the int32 field.
func (s *strategy[T]) validateScaleSpec(o T) field.ErrorList {
	if s.res.Scale == nil {
		return nil
	}
	if n, ok := s.res.Scale.SpecReplicas(o); ok && n < 0 {
		return field.ErrorList{field.Invalid(field.NewPath(s.res.Scale.SpecReplicasPath), int64(n), "should be a non-negative integer")}
	}
	return nil
}

func (s *strategy[T]) WarningsOnCreate(ctx context.Context, obj runtime.Object) []string {
	if s.hooks.warningsOnCreate == nil {
		return nil
	}
	return s.hooks.warningsOnCreate.WarningsOnCreate(ctx, obj.(T))
}

func (s *strategy[T]) WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string {
	if s.hooks.warningsOnUpdate == nil {
		return nil
	}
	return s.hooks.warningsOnUpdate.WarningsOnUpdate(ctx, obj.(T), old.(T))
}

func (s *strategy[T]) Canonicalize(obj runtime.Object) {
	if s.hooks.canonicalize != nil {
		s.hooks.canonicalize.Canonicalize(obj.(T))
	}
}

// AllowCreateOnUpdate is false: PUT to a missing name is 404, as for built-in types.
func (s *strategy[T]) AllowCreateOnUpdate(context.Context) bool { return false }

// AllowUnconditionalUpdate is true: an update without resourceVersion overwrites, as
// kubectl replace expects; one with a stale resourceVersion still gets 409 Conflict.
func (s *strategy[T]) AllowUnconditionalUpdate(context.Context) bool { return true }

// statusStrategy is the update strategy of the /status subresource: it takes nothing from
// the request but the status (and the managedFields the field manager computed for it).
type statusStrategy[T Object] struct {
	*strategy[T]
}

func (s statusStrategy[T]) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields(s.res, fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata"))
}

func (s statusStrategy[T]) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	o, prev := obj.(T), old.(T)
	meta := objectMeta(o)
	managed := meta.ManagedFields
	*meta = *objectMeta(prev).DeepCopy()
	meta.ManagedFields = managed
	s.res.Status.CopySpec(o, prev)
}

// ValidateUpdate is the strategy's, but the schema checks the status alone, as a CRD's
// /status does (validateStatus).
func (s statusStrategy[T]) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	o, prev := obj.(T), old.(T)
	errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(objectMeta(o), objectMeta(prev), field.NewPath("metadata"))
	errs = append(errs, objectMetadataCounts(objectMeta(o), objectMeta(prev))...)
	errs = append(errs, s.schema.validateStatus(ctx, o, prev)...)
	if s.hooks.validate != nil {
		errs = append(errs, s.hooks.validate.Validate(ctx, o)...)
	}
	if s.hooks.validateUpdate != nil {
		errs = append(errs, s.hooks.validateUpdate.ValidateUpdate(ctx, o, prev)...)
	}
	return errs
}

func (s statusStrategy[T]) WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string {
	return nil
}

func resetFields[T Object](res *Resource[T], paths ...fieldpath.Path) map[fieldpath.APIVersion]*fieldpath.Set {
	out := make(map[fieldpath.APIVersion]*fieldpath.Set, len(res.Versions))
	for _, v := range res.Versions {
		out[fieldpath.APIVersion(res.Group+"/"+v.Name)] = fieldpath.NewSet(paths...)
	}
	return out
}

func bumpGeneration[T Object](res *Resource[T], obj, old T) {
	meta, oldMeta := objectMeta(obj), objectMeta(old)
	meta.Generation = oldMeta.Generation
	if res.SpecEqual != nil && !res.SpecEqual(obj, old) {
		meta.Generation = oldMeta.Generation + 1
	}
}

// objectMeta returns a pointer to the ObjectMeta embedded in obj. A kind may declare a
// GetObjectMeta method of its own that hides ObjectMeta's (cert-manager's Issuer returns a
// *metav1.ObjectMeta): then the embedded field itself.
func objectMeta(obj runtime.Object) *metav1.ObjectMeta {
	if a, ok := obj.(metav1.ObjectMetaAccessor); ok {
		if m, ok := a.GetObjectMeta().(*metav1.ObjectMeta); ok {
			return m
		}
	}
	return reflect.ValueOf(obj).Elem().FieldByName("ObjectMeta").Addr().Interface().(*metav1.ObjectMeta)
}

// getAttrs returns the labels and fields a list or watch selects on: metadata.name,
// metadata.namespace (for namespaced kinds) and the selectable fields.
func getAttrs[T Object](res *Resource[T]) storage.AttrFunc {
	return func(obj runtime.Object) (labels.Set, fields.Set, error) {
		meta := objectMeta(obj)
		set := generic.ObjectMetaFieldsSet(meta, res.NamespaceScoped)
		if len(res.SelectableFields) > 0 {
			o, ok := obj.(T)
			if !ok {
				return nil, nil, fmt.Errorf("%s: unexpected object %T", res.Kind, obj)
			}
			for _, f := range res.SelectableFields {
				set[f.Name] = f.Value(o)
			}
		}
		return meta.Labels, set, nil
	}
}

// ownLabels gives the stored object an update starts from (the hooks' old) a label map
// of its own. The storage codec lets objects it decodes with equal labels share one map
// (runtime/server's interningCodec); upstream hands an update a deep copy or a fresh
// decoding, so a hook that writes into old's labels (or sets the new object's labels to
// old's and writes into those) changed nothing shared, and with this it still does not.
func ownLabels(m metav1.Object) {
	if l := m.GetLabels(); l != nil {
		m.SetLabels(maps.Clone(l))
	}
}
