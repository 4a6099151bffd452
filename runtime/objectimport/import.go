package objectimport

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage"
	storeerr "k8s.io/apiserver/pkg/storage/errors"
)

// Target is a resource objects can be imported into.
type Target struct {
	// Kind is the resource's kind.
	Kind schema.GroupKind
	// Store is the resource's storage (the main resource's, not a subresource's).
	Store *genericregistry.Store
}

// Import writes obj, of the store's type, into the store as it is: every field the object holds is
// kept, its resourceVersion is the storage's new one. It first validates obj as a create
// would (the create strategy's Validate: metadata, the schema of the version ctx's request
// info names, else of the storage version, and the kind's own hooks), and refuses an
// object without uid or name, an object in the wrong scope, an object being deleted
// without finalizers (it could never finish), and an object that would replace another
// one of the same name with a different uid (409 Conflict). Importing an object that is
// stored already with the same content changes nothing, its resourceVersion included.
func (t Target) Import(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	m, key, err := t.check(ctx, obj)
	if err != nil {
		return nil, err
	}
	store, gr, name := t.Store, t.Store.DefaultQualifiedResource, m.GetName()
	out := store.NewFunc()
	err = store.Storage.GuaranteedUpdate(ctx, key, out, true, nil,
		func(existing runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
			if err := t.sameUID(existing, m); err != nil {
				return nil, nil, err
			}
			next := obj.DeepCopyObject()
			nm, err := meta.Accessor(next)
			if err != nil {
				return nil, nil, err
			}
			nm.SetResourceVersion("")
			return next, nil, nil
		}, false, nil)
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsInvalid(err) {
			return nil, err
		}
		return nil, storeerr.InterpretUpdateError(err, gr, name)
	}
	return out, nil
}

// check refuses what Import refuses before writing, and returns obj's metadata and key.
func (t Target) check(ctx context.Context, obj runtime.Object) (metav1.Object, string, error) {
	store := t.Store
	gr := store.DefaultQualifiedResource
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, "", apierrors.NewBadRequest(fmt.Sprintf("importing into %s: %v", gr, err))
	}
	name := m.GetName()
	var errs field.ErrorList
	if m.GetUID() == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "uid"), "an import keeps the uid of the object it copies; send the object as the source cluster serves it"))
	}
	if ts := m.GetCreationTimestamp(); ts.IsZero() {
		errs = append(errs, field.Required(field.NewPath("metadata", "creationTimestamp"), "an import keeps the creationTimestamp of the object it copies"))
	}
	switch {
	case store.NamespaceScoped() && m.GetNamespace() == "":
		errs = append(errs, field.Required(field.NewPath("metadata", "namespace"), fmt.Sprintf("%s is namespaced", gr)))
	case !store.NamespaceScoped() && m.GetNamespace() != "":
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "namespace"), fmt.Sprintf("%s is cluster-scoped", gr)))
	}
	if m.GetDeletionTimestamp() != nil && len(m.GetFinalizers()) == 0 {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "deletionTimestamp"), m.GetDeletionTimestamp(),
			"an object being deleted is imported only while finalizers hold it; without them it is gone, leave it out"))
	}
	if len(errs) == 0 {
		errs = store.CreateStrategy.Validate(ctx, obj)
	}
	if len(errs) > 0 {
		return nil, "", apierrors.NewInvalid(t.Kind, name, errs)
	}
	if store.NamespaceScoped() {
		ctx = genericapirequest.WithNamespace(ctx, m.GetNamespace())
	}
	key, err := store.KeyFunc(ctx, name)
	if err != nil {
		return nil, "", apierrors.NewBadRequest(fmt.Sprintf("importing %s %q: %v", gr, name, err))
	}
	return m, key, nil
}

// DryRun checks obj as Import does, the object of the same name it would replace
// included, and writes nothing. It returns obj as Import would store it (without
// resourceVersion).
func (t Target) DryRun(ctx context.Context, obj runtime.Object) (runtime.Object, error) {
	m, key, err := t.check(ctx, obj)
	if err != nil {
		return nil, err
	}
	existing := t.Store.NewFunc()
	if err := t.Store.Storage.Get(ctx, key, storage.GetOptions{IgnoreNotFound: true}, existing); err != nil {
		return nil, storeerr.InterpretGetError(err, t.Store.DefaultQualifiedResource, m.GetName())
	}
	if err := t.sameUID(existing, m); err != nil {
		return nil, err
	}
	out := obj.DeepCopyObject()
	om, err := meta.Accessor(out)
	if err != nil {
		return nil, err
	}
	om.SetResourceVersion("")
	return out, nil
}

// sameUID refuses to replace existing (if any) with an object of another uid.
func (t Target) sameUID(existing runtime.Object, m metav1.Object) error {
	em, err := meta.Accessor(existing)
	if err != nil || em.GetUID() == "" || em.GetUID() == m.GetUID() {
		return nil
	}
	return apierrors.NewConflict(t.Store.DefaultQualifiedResource, m.GetName(),
		fmt.Errorf("the server holds another object of this name (uid %s, importing uid %s): delete it first if it is to be replaced", em.GetUID(), m.GetUID()))
}
