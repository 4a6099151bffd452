package registry

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// versionedSchemas validates an object with the schema of the version its request was
// made in, as a CRD does: the storage holds the kind's storage version (T), so an object
// written through another version is converted back to that version first, and the
// errors carry that version's field paths.
type versionedSchemas struct {
	scheme *runtime.Scheme
	group  string
	// storage is the version of the Go type the storage holds: runtime.APIVersionInternal
	// for an internal type (k8s.io/sample-apiserver's layout).
	storage string
	// unqualified is the version requests without request info are checked in: the
	// storage version, or for an internal type the preferred served version.
	unqualified string
	// byVersion holds a validator for each served version with a schema.
	byVersion map[string]*schemaValidator
}

// newVersionedSchemas builds the validator of each version of r that names a schema.
// CEL rules that do not compile are errors here, so the server does not start with them.
func newVersionedSchemas[T Object](scheme *runtime.Scheme, r *Resource[T]) (*versionedSchemas, error) {
	out := &versionedSchemas{scheme: scheme, group: r.Group, byVersion: map[string]*schemaValidator{}}
	for _, v := range r.Versions {
		if v.Schema == nil {
			continue
		}
		sv, err := newSchemaValidator(v.Schema)
		if err != nil {
			return nil, fmt.Errorf("version %s: %w", v.Name, err)
		}
		sv.statusSubresource = r.Status != nil
		out.byVersion[v.Name] = sv
	}
	if len(out.byVersion) == 0 {
		return out, nil
	}
	kinds, _, err := scheme.ObjectKinds(r.New())
	if err != nil {
		return nil, fmt.Errorf("the scheme does not know the storage type: %w", err)
	}
	for _, gvk := range kinds {
		if gvk.Group == r.Group && gvk.Version != runtime.APIVersionInternal {
			out.storage = gvk.Version
			break
		}
	}
	out.unqualified = out.storage
	if out.storage == "" {
		for _, gvk := range kinds {
			if gvk.Group == r.Group && gvk.Version == runtime.APIVersionInternal {
				// An internal type is never serialized, nor validated as itself: every
				// request is checked in its own version after conversion.
				out.storage = runtime.APIVersionInternal
				out.unqualified = r.Versions[0].Name
			}
		}
	}
	if out.storage == "" {
		return nil, fmt.Errorf("the storage type %T is registered in no version of %s", r.New(), r.Group)
	}
	return out, nil
}

// validate checks obj (and, on update, the change from old) against the schema of the
// request's version. Requests without request info (internal callers) are checked in the
// storage version.
func (s *versionedSchemas) validate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return s.check(ctx, obj, old, false)
}

// validateStatus checks an update through /status in the request's version, as validate
// does, with the schema checking the status alone (schemaValidator.validateStatus).
func (s *versionedSchemas) validateStatus(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return s.check(ctx, obj, old, true)
}

func (s *versionedSchemas) check(ctx context.Context, obj, old runtime.Object, status bool) field.ErrorList {
	if s == nil || len(s.byVersion) == 0 {
		return nil
	}
	version := s.unqualified
	if info, ok := genericapirequest.RequestInfoFrom(ctx); ok && info.APIGroup == s.group {
		if _, ok := s.byVersion[info.APIVersion]; ok {
			version = info.APIVersion
		}
	}
	v := s.byVersion[version]
	if v == nil {
		return nil
	}
	if version != s.storage {
		gv := schema.GroupVersion{Group: s.group, Version: version}
		var err error
		if obj, err = s.scheme.ConvertToVersion(obj, gv); err != nil {
			return field.ErrorList{field.InternalError(nil, fmt.Errorf("converting to %s: %w", gv, err))}
		}
		if old != nil {
			if old, err = s.scheme.ConvertToVersion(old, gv); err != nil {
				return field.ErrorList{field.InternalError(nil, fmt.Errorf("converting to %s: %w", gv, err))}
			}
		}
	}
	if status {
		return v.validateStatus(ctx, obj, old)
	}
	return v.validate(ctx, obj, old)
}

// coerceEmbedded prunes the metadata of embedded resources in obj (of the storage
// version) as a CRD does when it decodes a request.
func (s *versionedSchemas) coerceEmbedded(obj runtime.Object) {
	if s == nil {
		return
	}
	s.byVersion[s.storage].coerceEmbedded(obj)
}

// members returns the top-level properties of the schema of the request's version that a
// write of the main resource sets (writeScope). Nil without a schema.
func (s *versionedSchemas) members(ctx context.Context) map[string]bool {
	if s == nil {
		return nil
	}
	info, ok := genericapirequest.RequestInfoFrom(ctx)
	if !ok || info.APIGroup != s.group {
		return nil
	}
	v := s.byVersion[info.APIVersion]
	if v == nil || v.structural == nil {
		return nil
	}
	scope := v.scope(false)
	out := map[string]bool{}
	for name := range v.structural.Properties {
		if scope.sets(name) {
			out[name] = true
		}
	}
	return out
}
