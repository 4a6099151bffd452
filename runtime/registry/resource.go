package registry

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Object is what every served kind is: a runtime.Object with ObjectMeta.
// Generated code instantiates it with a pointer type such as *v1.Widget.
type Object interface {
	runtime.Object
	comparable
}

// Resource describes one served kind. The generator fills it in; see NewStorage.
type Resource[T Object] struct {
	// Group is the API group, e.g. "shop.example.com".
	Group string
	// Versions are the served versions of the kind, preferred first, each with its own
	// schema. T is the kind's storage version; objects in the other versions convert to and
	// from it through the scheme.
	Versions []Version
	// Kind is the Go and API kind name, e.g. "Widget".
	Kind string
	// Plural and Singular are the lower-case resource names, e.g. "widgets" and "widget".
	Plural, Singular string
	// ShortNames and Categories are published in discovery (kubectl get <short>, kubectl get all).
	ShortNames, Categories []string
	// NamespaceScoped is false for cluster-scoped kinds.
	NamespaceScoped bool

	// New returns an empty object; NewList an empty list of them.
	New     func() T
	NewList func() runtime.Object

	// SpecEqual reports whether two objects have the same desired state (everything but
	// metadata and status). A change bumps metadata.generation. Nil means the kind keeps no
	// generation beyond its initial value.
	SpecEqual func(a, b T) bool

	// Status is set when the kind has a status subresource.
	Status *StatusFuncs[T]

	// Columns are the columns kubectl get shows after NAME, as a CRD's
	// additionalPrinterColumns. Empty means NAME and AGE, a CRD's default.
	Columns []Column

	// SelectableFields are the fields usable in field selectors (kubectl get
	// --field-selector) besides metadata.name and metadata.namespace, which always are.
	SelectableFields []SelectableField[T]

	// Scale is set when the kind serves the /scale subresource (autoscaling/v1 Scale).
	Scale *ScaleFuncs[T]

	// ReadOnly serves the kind with get, list and watch only (+genclient:readonly): the
	// storage implements no write, so discovery lists only those verbs and writes are 405
	// (see ReadOnlyREST). It takes no Status, Scale or subresources.
	ReadOnly bool

	// Hooks is the user-owned value whose optional methods add behaviour; may be nil.
	Hooks any
}

// Version is one served version of a kind.
type Version struct {
	// Name is the version, e.g. "v1".
	Name string
	// Schema names the kind's OpenAPI definition in this version. When set, every create
	// and update made through this version is validated against it, with this version's
	// field paths, like a custom resource against its CRD's schema for that version (see
	// Schema); nil means no schema validation.
	Schema *Schema
}

// versionNames returns the names of the served versions, preferred first.
func (r *Resource[T]) versionNames() []string {
	out := make([]string, len(r.Versions))
	for i, v := range r.Versions {
		out[i] = v.Name
	}
	return out
}

// StatusFuncs move the status and the rest of the desired state between two objects of
// a kind with a status subresource.
type StatusFuncs[T Object] struct {
	// CopyStatus sets dst's status to src's.
	CopyStatus func(dst, src T)
	// CopySpec sets every top-level field of dst except TypeMeta, ObjectMeta and status to src's.
	CopySpec func(dst, src T)
}

// Column is one column of kubectl get, with the meaning of a CRD's additionalPrinterColumns
// entry.
type Column struct {
	// Name is the column header.
	Name string
	// Type is integer, number, string, boolean or date; a date column shows the age of the
	// timestamp it selects.
	Type string
	// Format is an optional OpenAPI format, passed on to clients.
	Format string
	// Description documents the column; empty means one naming JSONPath.
	Description string
	// Priority 0 columns are always shown; higher ones only with -o wide.
	Priority int32
	// JSONPath selects the cell's value, e.g. ".status.phase": it is wrapped in {} and
	// evaluated with k8s.io/client-go/util/jsonpath on the object's JSON form. A missing value
	// leaves the cell empty.
	JSONPath string
}

// SelectableField is a field usable in field selectors.
type SelectableField[T Object] struct {
	// Name is the field's label in selectors, e.g. "spec.color" (the JSON path without its
	// leading dot).
	Name string
	// Value returns the field's value as selectors compare it: a string as it is, an
	// integer in decimal, a boolean as true or false, and "" when it is unset.
	Value func(obj T) string
}

// ScaleFuncs read and write the fields behind the /scale subresource.
type ScaleFuncs[T Object] struct {
	// SpecReplicasPath is the JSON path of the desired replicas, e.g. ".spec.replicas"; it
	// maps the managed fields of kubectl scale and server-side apply between the kind and
	// Scale.
	SpecReplicasPath string
	// SpecReplicas returns the desired replicas; ok is false when they are unset (a nil
	// pointer on the path).
	SpecReplicas func(obj T) (replicas int32, ok bool)
	// SetSpecReplicas sets the desired replicas, allocating what is nil on the path.
	SetSpecReplicas func(obj T, replicas int32)
	// StatusReplicas returns the observed replicas (0 when unset).
	StatusReplicas func(obj T) int32
	// Selector returns the label selector of the replicas in string form; nil when the kind
	// has none.
	Selector func(obj T) string
}

// GroupResource is the resource's group and plural name.
func (r *Resource[T]) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Plural}
}

// Validator is implemented by hooks that validate a new object. The errors are returned
// together with the generated validation errors as one 422 Invalid.
type Validator[T Object] interface {
	Validate(ctx context.Context, obj T) field.ErrorList
}

// UpdateValidator is implemented by hooks that validate an update against the stored object.
type UpdateValidator[T Object] interface {
	ValidateUpdate(ctx context.Context, obj, old T) field.ErrorList
}

// CreatePreparer is implemented by hooks that change an object before it is validated and created.
type CreatePreparer[T Object] interface {
	PrepareForCreate(ctx context.Context, obj T)
}

// UpdatePreparer is implemented by hooks that change an object before an update is validated.
type UpdatePreparer[T Object] interface {
	PrepareForUpdate(ctx context.Context, obj, old T)
}

// Canonicalizer is implemented by hooks that normalise an object before it is stored.
type Canonicalizer[T Object] interface {
	Canonicalize(obj T)
}

// CreateWarner is implemented by hooks that return warnings (shown by kubectl) on create.
type CreateWarner[T Object] interface {
	WarningsOnCreate(ctx context.Context, obj T) []string
}

// UpdateWarner is implemented by hooks that return warnings on update.
type UpdateWarner[T Object] interface {
	WarningsOnUpdate(ctx context.Context, obj, old T) []string
}

// hooks holds the methods of a user hooks value, resolved once.
type hooks[T Object] struct {
	validate         Validator[T]
	validateUpdate   UpdateValidator[T]
	prepareCreate    CreatePreparer[T]
	prepareUpdate    UpdatePreparer[T]
	canonicalize     Canonicalizer[T]
	warningsOnCreate CreateWarner[T]
	warningsOnUpdate UpdateWarner[T]
}

// resolveHooks finds the optional methods of h. A method with a known name but the wrong
// signature is an error: silently skipping it would drop the user's validation.
func resolveHooks[T Object](kind string, h any) (hooks[T], error) {
	var out hooks[T]
	if h == nil {
		return out, nil
	}
	var errs []error
	check := func(name string, iface reflect.Type, ok bool) {
		if ok {
			return
		}
		if m, found := reflect.TypeOf(h).MethodByName(name); found {
			want, _ := iface.MethodByName(name)
			errs = append(errs, fmt.Errorf("%s hooks: method %s has type %s, want %s; fix the signature in the hooks file or rename the method",
				kind, name, m.Type, want.Type))
		}
	}
	var ok bool
	out.validate, ok = h.(Validator[T])
	check("Validate", reflect.TypeFor[Validator[T]](), ok)
	out.validateUpdate, ok = h.(UpdateValidator[T])
	check("ValidateUpdate", reflect.TypeFor[UpdateValidator[T]](), ok)
	out.prepareCreate, ok = h.(CreatePreparer[T])
	check("PrepareForCreate", reflect.TypeFor[CreatePreparer[T]](), ok)
	out.prepareUpdate, ok = h.(UpdatePreparer[T])
	check("PrepareForUpdate", reflect.TypeFor[UpdatePreparer[T]](), ok)
	out.canonicalize, ok = h.(Canonicalizer[T])
	check("Canonicalize", reflect.TypeFor[Canonicalizer[T]](), ok)
	out.warningsOnCreate, ok = h.(CreateWarner[T])
	check("WarningsOnCreate", reflect.TypeFor[CreateWarner[T]](), ok)
	out.warningsOnUpdate, ok = h.(UpdateWarner[T])
	check("WarningsOnUpdate", reflect.TypeFor[UpdateWarner[T]](), ok)
	if len(errs) > 0 {
		return out, errors.Join(errs...)
	}
	return out, nil
}
