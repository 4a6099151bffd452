// Package backend serves a kind from the user's own backend instead of etcd: data computed
// from other objects (as metrics-server computes its kinds), or held in another system that
// should only look like a Kubernetes API.
//
// The user implements Reader (get and list) and, optionally, Watcher (watch) and Writer
// (create, update and delete). New wraps it in a k8s.io/apiserver REST storage so that
// everything else stays the apiserver's: discovery lists exactly the verbs implemented (the
// apiserver installs a route only for the interfaces the storage has, so every other verb
// gets 405 MethodNotAllowed), tables and printer columns (Config.TableConvertor), label and
// field selectors (applied here to what List and Watch return), 404 and 409 with the usual
// Status bodies (from ErrNotFound, ErrConflict and ErrAlreadyExists), and admission and
// validation on writes. A backend that is also a Starter is started with a loopback client
// once the server runs.
//
// Code aagen generates for a kind marked +aagen:backend calls NewStorage with the kind's
// Resource (names, printer columns, selectable fields) and the backend the user's backend.go
// returns.
package backend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/aagen-dev/aagen/runtime/registry"
)

// Errors a backend returns; the wrapper turns them into the apiserver's Status errors for
// the resource (404 NotFound, 409 Conflict, 409 AlreadyExists). Wrap them to add detail.
var (
	ErrNotFound      = errors.New("not found")
	ErrConflict      = errors.New("the object has been modified")
	ErrAlreadyExists = errors.New("already exists")
)

// Object is what a backend serves: a pointer to an API type with object metadata.
type Object interface {
	runtime.Object
	metav1.Object
}

// Reader is the part every backend implements. namespace is "" for cluster-scoped kinds and
// for a list across all namespaces.
type Reader[T Object] interface {
	// Get returns the object, or an error wrapping ErrNotFound.
	Get(ctx context.Context, namespace, name string) (T, error)
	// List returns every object in namespace; the wrapper applies selectors and sorts.
	List(ctx context.Context, namespace string) ([]T, error)
}

// Watcher is implemented by backends that can report changes: `kubectl get -w` and
// informers then work on the kind.
type Watcher interface {
	// Watch reports changes in namespace after resourceVersion ("" or "0": from now) until
	// ctx ends or the result is stopped. Events carry the backend's object type.
	Watch(ctx context.Context, namespace, resourceVersion string) (watch.Interface, error)
}

// Writer is implemented by backends that store objects. Each call gets an object the
// apiserver has validated and admitted.
type Writer[T Object] interface {
	// Create stores a new object and returns it with its resourceVersion set, or an error
	// wrapping ErrAlreadyExists.
	Create(ctx context.Context, obj T) (T, error)
	// Update replaces the object if its resourceVersion is the stored one (an error
	// wrapping ErrConflict otherwise, ErrNotFound when it is gone) and returns it with the
	// new resourceVersion.
	Update(ctx context.Context, obj T) (T, error)
	// Delete removes the object and returns it as it was, or an error wrapping ErrNotFound.
	Delete(ctx context.Context, namespace, name string) (T, error)
}

// Config describes the served kind.
type Config[T Object] struct {
	// Resource is the group and plural resource name, for errors.
	Resource schema.GroupResource
	// SingularName is the singular resource name (kubectl get <singular>).
	SingularName string
	// NamespaceScoped tells whether objects live in namespaces.
	NamespaceScoped bool
	// NewFunc returns an empty object; NewListFunc an empty list of them.
	NewFunc     func() T
	NewListFunc func() runtime.Object
	// TableConvertor renders `kubectl get` tables (the generated printer columns); default:
	// name and age.
	TableConvertor rest.TableConvertor
	// SelectableFields returns the fields a field selector may name besides metadata.name
	// and metadata.namespace, e.g. {"spec.dock": obj.Spec.Dock}.
	SelectableFields func(T) fields.Set
	// ShortNames and Categories are published in discovery (kubectl get <short>, kubectl
	// get <category>).
	ShortNames, Categories []string
	// Backend serves the objects. It must implement Reader[T], and may implement Watcher,
	// Writer[T] and Starter.
	Backend Reader[T]
}

// New returns the REST storage of the kind. Its type implements rest.Watcher only when the
// backend implements Watcher, and rest.Creater, rest.Updater and rest.GracefulDeleter only
// when it implements Writer[T]: that is what the apiserver's discovery and routes follow.
func New[T Object](cfg Config[T]) (rest.Storage, error) {
	if cfg.Backend == nil || cfg.NewFunc == nil || cfg.NewListFunc == nil {
		return nil, fmt.Errorf("backend for %s: Backend, NewFunc and NewListFunc are required", cfg.Resource)
	}
	if cfg.TableConvertor == nil {
		cfg.TableConvertor, _ = registry.NewTableConvertor(nil) // no columns: nothing to fail
	}
	r := &reader[T]{cfg: cfg}
	watcher, canWatch := cfg.Backend.(Watcher)
	writer, canWrite := cfg.Backend.(Writer[T])
	switch {
	case canWatch && canWrite:
		return &readWriteWatch[T]{readWrite[T]{r, writer}, watching[T]{r, watcher}}, nil
	case canWrite:
		return &readWrite[T]{r, writer}, nil
	case canWatch:
		return &readWatch[T]{r, watching[T]{r, watcher}}, nil
	}
	return r, nil
}

// reader serves get and list.
type reader[T Object] struct{ cfg Config[T] }

type readWatch[T Object] struct {
	*reader[T]
	watching[T]
}

type readWrite[T Object] struct {
	*reader[T]
	w Writer[T]
}

type readWriteWatch[T Object] struct {
	readWrite[T]
	watching[T]
}

type watching[T Object] struct {
	r *reader[T]
	w Watcher
}

func (r *reader[T]) New() runtime.Object     { return r.cfg.NewFunc() }
func (r *reader[T]) NewList() runtime.Object { return r.cfg.NewListFunc() }
func (r *reader[T]) Destroy()                {}
func (r *reader[T]) NamespaceScoped() bool   { return r.cfg.NamespaceScoped }
func (r *reader[T]) GetSingularName() string { return r.cfg.SingularName }
func (r *reader[T]) ShortNames() []string    { return r.cfg.ShortNames }
func (r *reader[T]) Categories() []string    { return r.cfg.Categories }
func (r *reader[T]) namespace(ctx context.Context) string {
	if !r.cfg.NamespaceScoped {
		return ""
	}
	return genericapirequest.NamespaceValue(ctx)
}

// ConvertToTable renders tables with Config.TableConvertor.
func (r *reader[T]) ConvertToTable(ctx context.Context, obj runtime.Object, opts runtime.Object) (*metav1.Table, error) {
	return r.cfg.TableConvertor.ConvertToTable(ctx, obj, opts)
}

// Get returns one object.
func (r *reader[T]) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	obj, err := r.cfg.Backend.Get(ctx, r.namespace(ctx), name)
	if err != nil {
		return nil, r.apiError(err, name)
	}
	return obj, nil
}

// List returns the objects that match the selectors, sorted by namespace and name.
func (r *reader[T]) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	objs, err := r.cfg.Backend.List(ctx, r.namespace(ctx))
	if err != nil {
		return nil, r.apiError(err, "")
	}
	match, err := r.matcher(opts)
	if err != nil {
		return nil, err
	}
	var items []runtime.Object
	var rv uint64
	for _, o := range objs {
		if !match(o) {
			continue
		}
		items = append(items, o)
		var n uint64
		if _, err := fmt.Sscan(o.GetResourceVersion(), &n); err == nil && n > rv {
			rv = n
		}
	}
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i].(metav1.Object), items[j].(metav1.Object)
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	})
	list := r.cfg.NewListFunc()
	if err := meta.SetList(list, items); err != nil {
		return nil, err
	}
	if rv > 0 {
		if lm, err := meta.ListAccessor(list); err == nil {
			lm.SetResourceVersion(fmt.Sprint(rv))
		}
	}
	return list, nil
}

// FieldLabels are the labels field selectors may use: metadata.name, metadata.namespace and
// the keys SelectableFields returns for an empty object (NewFunc). Package server registers
// them with the scheme, so that a selector on any other field is refused with this list.
func (r *reader[T]) FieldLabels() []string {
	out := []string{"metadata.name", "metadata.namespace"}
	if r.cfg.SelectableFields != nil {
		var extra []string
		for k := range r.cfg.SelectableFields(r.cfg.NewFunc()) {
			extra = append(extra, k)
		}
		sort.Strings(extra)
		out = append(out, extra...)
	}
	return out
}

// matcher returns whether an object matches the label and field selectors of opts.
func (r *reader[T]) matcher(opts *metainternalversion.ListOptions) (func(T) bool, error) {
	ls, fs := labels.Everything(), fields.Everything()
	if opts != nil && opts.LabelSelector != nil {
		ls = opts.LabelSelector
	}
	if opts != nil && opts.FieldSelector != nil {
		fs = opts.FieldSelector
	}
	known := r.FieldLabels()
	for _, req := range fs.Requirements() {
		if !slices.Contains(known, req.Field) {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
		}
	}
	return func(o T) bool {
		if !ls.Matches(labels.Set(o.GetLabels())) {
			return false
		}
		set := fields.Set{"metadata.name": o.GetName()}
		if r.cfg.NamespaceScoped {
			set["metadata.namespace"] = o.GetNamespace()
		}
		if r.cfg.SelectableFields != nil {
			for k, v := range r.cfg.SelectableFields(o) {
				set[k] = v
			}
		}
		return fs.Matches(set)
	}, nil
}

// apiError maps the backend's errors to Status errors; others pass through (500).
func (r *reader[T]) apiError(err error, name string) error {
	switch {
	case errors.Is(err, ErrNotFound):
		return apierrors.NewNotFound(r.cfg.Resource, name)
	case errors.Is(err, ErrConflict):
		return apierrors.NewConflict(r.cfg.Resource, name, err)
	case errors.Is(err, ErrAlreadyExists):
		return apierrors.NewAlreadyExists(r.cfg.Resource, name)
	}
	return err
}

// Watch reports the backend's changes that match the selectors.
func (w watching[T]) Watch(ctx context.Context, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	match, err := w.r.matcher(opts)
	if err != nil {
		return nil, err
	}
	rv := ""
	if opts != nil {
		rv = opts.ResourceVersion
	}
	in, err := w.w.Watch(ctx, w.r.namespace(ctx), rv)
	if err != nil {
		return nil, w.r.apiError(err, "")
	}
	filtered := watch.Filter(in, func(ev watch.Event) (watch.Event, bool) {
		o, ok := ev.Object.(T)
		if !ok {
			return ev, ev.Type == watch.Error || ev.Type == watch.Bookmark
		}
		return ev, match(o)
	})
	if sendsInitialEvents(opts) {
		return w.withInitialEvents(ctx, opts, filtered)
	}
	return filtered, nil
}

// Create validates and stores a new object.
func (rw *readWrite[T]) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	o, ok := obj.(T)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a %s: %T", rw.cfg.Resource, obj))
	}
	if rw.cfg.NamespaceScoped {
		o.SetNamespace(genericapirequest.NamespaceValue(ctx))
	}
	o.SetUID(types.UID(uuid.NewUUID()))
	o.SetCreationTimestamp(metav1.Now())
	o.SetResourceVersion("")
	if createValidation != nil {
		if err := createValidation(ctx, o); err != nil {
			return nil, err
		}
	}
	out, err := rw.w.Create(ctx, o)
	if err != nil {
		return nil, rw.apiError(err, o.GetName())
	}
	return out, nil
}

// Update replaces an object; a stale resourceVersion is a 409 Conflict (from the backend),
// an update without one applies to the current object. It never creates.
func (rw *readWrite[T]) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, _ *metav1.UpdateOptions) (runtime.Object, bool, error) {
	old, err := rw.cfg.Backend.Get(ctx, rw.namespace(ctx), name)
	if err != nil {
		return nil, false, rw.apiError(err, name)
	}
	updated, err := objInfo.UpdatedObject(ctx, old.DeepCopyObject())
	if err != nil {
		return nil, false, err
	}
	o, ok := updated.(T)
	if !ok {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("not a %s: %T", rw.cfg.Resource, updated))
	}
	if o.GetResourceVersion() == "" {
		o.SetResourceVersion(old.GetResourceVersion())
	}
	o.SetNamespace(old.GetNamespace())
	o.SetUID(old.GetUID())
	o.SetCreationTimestamp(old.GetCreationTimestamp())
	if updateValidation != nil {
		if err := updateValidation(ctx, o, old); err != nil {
			return nil, false, err
		}
	}
	out, err := rw.w.Update(ctx, o)
	if err != nil {
		return nil, false, rw.apiError(err, name)
	}
	return out, false, nil
}

// Delete removes an object after checking the UID and resourceVersion preconditions.
func (rw *readWrite[T]) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	old, err := rw.cfg.Backend.Get(ctx, rw.namespace(ctx), name)
	if err != nil {
		return nil, false, rw.apiError(err, name)
	}
	if opts != nil && opts.Preconditions != nil {
		p := opts.Preconditions
		if p.UID != nil && *p.UID != old.GetUID() {
			return nil, false, apierrors.NewConflict(rw.cfg.Resource, name, fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, old.GetUID()))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != old.GetResourceVersion() {
			return nil, false, apierrors.NewConflict(rw.cfg.Resource, name, fmt.Errorf("precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, old.GetResourceVersion()))
		}
	}
	if deleteValidation != nil {
		if err := deleteValidation(ctx, old); err != nil {
			return nil, false, err
		}
	}
	out, err := rw.w.Delete(ctx, old.GetNamespace(), name)
	if err != nil {
		return nil, false, rw.apiError(err, name)
	}
	return out, true, nil
}
