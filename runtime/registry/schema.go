package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	structuralobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/registry/rest"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Schema names the OpenAPI definition of a kind. The registry builds from it, once when
// the storage is created, the structural schema a CustomResourceDefinition with the same
// schema would have, and validates every create and update against it with the code
// CRDs use (k8s.io/apiextensions-apiserver): OpenAPI value validation (minimum, pattern,
// enum, required, ...), list-type checks (+listType=set and map keys) and CEL rules
// (x-kubernetes-validations, with oldSelf on update), so error messages are those a CRD
// user sees. Like a CRD's, the metadata of the object is validated separately (as every
// object's is), not by the schema.
type Schema struct {
	// Definitions are the generated OpenAPI definitions (the server's OpenAPIDefinitions).
	Definitions openapicommon.GetOpenAPIDefinitions
	// DocumentedEnums names, by definition, the properties whose enum is documentation
	// (the generated DocumentedEnums: a +enum type's constants without
	// +kubebuilder:validation:Enum): published with the definitions, as kube-apiserver
	// publishes its built-in enums, but not checked, as a CRD of the same types does not
	// check them (controller-gen ignores +enum). Every other enum is checked.
	DocumentedEnums map[string][]string
	// Name is the kind's definition name (its OpenAPIModelName).
	Name string
	// Validation is how objects are checked against the schema: typed (the zero value) or
	// crd. A server sets it for its kinds' storage with UseSchemaValidation.
	Validation SchemaValidation
}

// Definition names of types whose schema the structural schema replaces.
const (
	defObjectMeta   = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
	defIntOrString  = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
	defQuantity     = "io.k8s.apimachinery.pkg.api.resource.Quantity"
	defRawExtension = "io.k8s.apimachinery.pkg.runtime.RawExtension"
	defJSON         = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON"
)

// schemaValidator validates objects of one kind against its structural schema.
type schemaValidator struct {
	structural *structuralschema.Structural
	validator  apiextensionsvalidation.SchemaValidator
	// statusValidator validates the status alone, against the schema's status property
	// (nil without one): what a CRD's /status checks with the schema.
	statusValidator apiextensionsvalidation.SchemaValidator
	cel             *cel.Validator // nil without CEL rules
	// hiddenRequired is set when the schema has a required property without a default:
	// one decoding cannot tell apart from its zero value (0, false, ""), so a body that
	// leaves it out must be read (BodyInspector).
	hiddenRequired bool
	// optionalRequired is set when the schema has an optional object (a struct) with
	// required properties: decoding cannot tell it absent, where a CRD demands nothing of
	// it, from sent without them (BodyInspector).
	optionalRequired bool
	// statusSubresource is set when the kind has a /status subresource: then a write of
	// the main resource does not set the status (writeScope).
	statusSubresource bool
	// embedded is set when the schema has x-kubernetes-embedded-resource nodes: free-form
	// values that are Kubernetes objects, whose apiVersion, kind and metadata are
	// checked and whose metadata is pruned as a CRD's are.
	embedded bool
	// typed holds the typedCheck of each Go type validated (a typedKey to a typedCheck),
	// compiled on its first object: the schema's value validation read on
	// the typed object, so that a valid object skips the CRD's validator.
	typed sync.Map
	// crdOnly sends every object the CRD's way (SchemaValidationCRD), for comparison.
	crdOnly bool
}

// certain reports whether obj's typedCheck finds it certainly valid against the schema's
// value validation and list types (see typedCheck): then the CRD's validator, which would
// find nothing, is not run.
func (v *schemaValidator) certain(ctx context.Context, obj runtime.Object) bool {
	if v.crdOnly || v.embedded {
		return false
	}
	if _, ok := obj.(runtime.Unstructured); ok {
		return false // unstructured objects go the CRD's way
	}
	rv := reflect.ValueOf(obj)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return false
	}
	// Zero optional structs are dropped unless the absences check will read name fields
	// under them: a patch's (computed from its result) or a body's required fields left out.
	fields, _ := contextAbsences(ctx)
	key := typedKey{rv.Elem().Type(), !v.presence() || !hasPatch(ctx) && len(fields) == 0}
	c, ok := v.typed.Load(key)
	if !ok {
		c, _ = v.typed.LoadOrStore(key, typedCheckFor(v.structural, key.t, key.zeroStructsDropped))
	}
	check := c.(typedCheck)
	return check == nil || check(rv.Elem())
}

// typedKey names a compiled typedCheck of a schemaValidator.
type typedKey struct {
	t                  reflect.Type
	zeroStructsDropped bool
}

// newSchemaValidator builds the validator of the kind. CEL rules that do not compile
// against the schema are errors here, so the server does not start with them.
func newSchemaValidator(s *Schema) (*schemaValidator, error) {
	if s.Definitions == nil || s.Name == "" {
		return nil, fmt.Errorf("schema: Definitions and Name are required")
	}
	props, err := s.JSONSchemaProps()
	if err != nil {
		return nil, err
	}
	structural, err := structuralschema.NewStructural(props)
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", s.Name, err)
	}
	if err := compileRules(structural, nil, true); err != nil {
		return nil, err
	}
	validator, _, err := apiextensionsvalidation.NewSchemaValidator(props)
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", s.Name, err)
	}
	sv := &schemaValidator{structural: structural, validator: validator, cel: cel.NewValidator(structural, true, celconfig.PerCallLimit),
		hiddenRequired: hasHiddenRequired(structural), optionalRequired: hasOptionalRequired(structural), embedded: hasEmbeddedResource(structural),
		crdOnly: s.Validation == SchemaValidationCRD}
	if status, ok := props.Properties["status"]; ok {
		if sv.statusValidator, _, err = apiextensionsvalidation.NewSchemaValidator(&status); err != nil {
			return nil, fmt.Errorf("schema of %s, status: %w", s.Name, err)
		}
	}
	return sv, nil
}

// scope returns what a write of the kind sets: through /status, or of the main resource.
func (v *schemaValidator) scope(throughStatus bool) writeScope {
	return writeScope{throughStatus: throughStatus, statusSubresource: v.statusSubresource}
}

// presence reports whether decoding into Go can hide what a CRD would see absent: a
// required property that is not a string, or an optional object with required properties.
func (v *schemaValidator) presence() bool { return v.hiddenRequired || v.optionalRequired }

// hasEmbeddedResource reports whether a node of s is an embedded resource.
func hasEmbeddedResource(s *structuralschema.Structural) bool {
	if s == nil {
		return false
	}
	if s.XEmbeddedResource {
		return true
	}
	for _, p := range s.Properties {
		if hasEmbeddedResource(&p) {
			return true
		}
	}
	if s.AdditionalProperties != nil && hasEmbeddedResource(s.AdditionalProperties.Structural) {
		return true
	}
	return hasEmbeddedResource(s.Items)
}

// coerceEmbedded prunes the metadata of the embedded resources in obj to the fields of
// ObjectMeta (an embedded object's metadata.bogus is dropped, as by a CRD). Objects
// without embedded resources are left alone.
func (v *schemaValidator) coerceEmbedded(obj runtime.Object) {
	if v == nil || !v.embedded {
		return
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return // validation reports it
	}
	if err := structuralobjectmeta.Coerce(nil, u, v.structural, false, false); err != nil {
		return // malformed metadata: validation reports it (422), as for a CRD
	}
	_ = runtime.DefaultUnstructuredConverter.FromUnstructured(u, obj)
}

// compileRules compiles the CEL rules of every node, reporting the first node whose
// rules do not compile with every error of it.
func compileRules(s *structuralschema.Structural, path *field.Path, root bool) error {
	if s == nil {
		return nil
	}
	if len(s.XValidations) > 0 {
		results, err := cel.Compile(s, model.SchemaDeclType(s, root), celconfig.PerCallLimit,
			environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()), cel.NewExpressionsEnvLoader())
		if err != nil {
			return fmt.Errorf("CEL rules of %s: %w", pathString(path), err)
		}
		var msgs []string
		for i, r := range results {
			if r.Error != nil {
				msgs = append(msgs, fmt.Sprintf("rule %q: %s", s.XValidations[i].Rule, r.Error.Detail))
			}
			if r.MessageExpressionError != nil {
				msgs = append(msgs, fmt.Sprintf("messageExpression %q: %s", s.XValidations[i].MessageExpression, r.MessageExpressionError.Detail))
			}
		}
		if len(msgs) > 0 {
			return fmt.Errorf("CEL rules of %s do not compile: %s", pathString(path), strings.Join(msgs, "; "))
		}
	}
	for name, p := range s.Properties {
		if err := compileRules(&p, path.Child(name), false); err != nil {
			return err
		}
	}
	if s.Items != nil {
		if err := compileRules(s.Items, path.Index(0), false); err != nil {
			return err
		}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
		if err := compileRules(s.AdditionalProperties.Structural, path.Key("*"), false); err != nil {
			return err
		}
	}
	return nil
}

func pathString(p *field.Path) string {
	if p == nil {
		return "the object"
	}
	return p.String()
}

// validate checks obj (and, on update, the change from old) like a CRD's strategy does.
func (v *schemaValidator) validate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return v.check(ctx, obj, old, false)
}

// validateStatus checks an update through /status like a CRD's status strategy does: the
// schema checks the status alone, against the status property's schema (so its messages
// name paths from the status down, "conditions[0].type", under the field path
// "status.conditions[0].type"); list types and CEL rules check the whole object, as on any
// update.
func (v *schemaValidator) validateStatus(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return v.check(ctx, obj, old, true)
}

func (v *schemaValidator) check(ctx context.Context, obj, old runtime.Object, throughStatus bool) field.ErrorList {
	// A typed object the typedCheck finds valid needs nothing of the CRD's validator; without
	// CEL rules, nothing is left to check (with them, the rules still read the object as a
	// CRD's do, below). Through /status, the whole object being valid covers its status.
	certain := v.certain(ctx, obj)
	if certain && v.cel == nil {
		return nil
	}
	scope := v.scope(throughStatus)
	statusOnly := throughStatus && v.statusValidator != nil
	u, err := schemaInput(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	// A typed object has nulls for nil pointers, slices and maps without omitempty, and
	// zero values where a request left fields out; drop them, so that the schema sees
	// what a CRD would (see dropUnset). When the request's body was read (a create's or
	// update's, or a patch), the absences below say which fields it left out, and an
	// empty string elsewhere was sent.
	empty := emptyUnset
	if v.presence() && (bodyRead(ctx) || hasPatch(ctx)) {
		empty = emptySent
	}
	dropUnset(obj, u, v.structural, empty)
	var ou map[string]any
	if old != nil {
		if ou, err = schemaInput(old); err != nil {
			return field.ErrorList{field.InternalError(nil, err)}
		}
		// The stored object's "" in a required string of a struct written was sent, and
		// stays, as in a CRD's stored JSON (a patch's base, CEL rules' oldSelf).
		stored := emptyUnset
		if v.presence() {
			stored = emptyStored
		}
		dropUnset(old, ou, v.structural, stored)
	}
	if v.presence() {
		// What the request left out (a create's or update's body) or what is absent from the
		// result of a patch, computed on JSON as a CRD computes the patch.
		fields, objects, ok := patchAbsences(ctx, v.structural, scope, obj, u, ou)
		if !ok {
			fields, objects = contextAbsences(ctx)
		}
		dropAbsent(u, fields, objects, v.structural)
	}
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u, v.structural)
	var errs field.ErrorList
	var celOpts []cel.Option
	if v.embedded && !statusOnly {
		// apiVersion, kind and metadata of embedded resources, as a CRD's strategy checks them.
		errs = append(errs, structuralobjectmeta.Validate(ctx, nil, u, v.structural, false)...)
	}
	if certain {
		if old != nil {
			structuraldefaulting.PruneNonNullableNullsWithoutDefaults(ou, v.structural)
			celOpts = append(celOpts, cel.WithRatcheting(common.NewCorrelatedObject(u, ou, &model.Structural{Structural: v.structural})))
		}
	} else if old == nil {
		errs = append(errs, apiextensionsvalidation.ValidateCustomResource(nil, u, v.validator)...)
		errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, v.structural, u)...)
	} else {
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(ou, v.structural)
		// Ratcheting, as for CRDs: an invalid value that the update does not change is
		// not an error, so tightening a constraint does not block unrelated updates.
		correlated := common.NewCorrelatedObject(u, ou, &model.Structural{Structural: v.structural})
		if !statusOnly {
			errs = append(errs, apiextensionsvalidation.ValidateCustomResourceUpdate(nil, u, ou, v.validator, apiextensionsvalidation.WithRatcheting(correlated))...)
		} else if status, ok := u["status"]; ok {
			errs = append(errs, apiextensionsvalidation.ValidateCustomResourceUpdate(field.NewPath("status"), status, ou["status"], v.statusValidator,
				apiextensionsvalidation.WithRatcheting(correlated.Key("status")))...)
		}
		if oldErrs := structurallisttype.ValidateListSetsAndMaps(nil, v.structural, ou); len(oldErrs) == 0 {
			errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, v.structural, u)...)
		}
		celOpts = append(celOpts, cel.WithRatcheting(correlated))
	}
	if v.cel != nil {
		if blocking(errs) {
			errs = append(errs, field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
		} else {
			var oldObj any
			if ou != nil {
				oldObj = ou
			}
			celErrs, _ := v.cel.Validate(ctx, nil, v.structural, u, oldObj, celconfig.RuntimeCELCostBudget, celOpts...)
			errs = append(errs, celErrs...)
		}
	}
	return errs
}

// blocking reports errors after which CEL rules are not evaluated (as for CRDs: the
// rules' cost estimates assume the schema's bounds and types hold).
func blocking(errs field.ErrorList) bool {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return true
		}
	}
	return false
}

// JSONSchemaProps returns the schema the server checks objects of the definition with:
// the definition with every reference resolved, in the form a CustomResourceDefinition
// carries it: metadata is an object (validated elsewhere), int-or-string types
// (IntOrString, Quantity) are x-kubernetes-int-or-string, runtime.RawExtension and types
// without a schema type keep unknown fields, and the documented enums are left out.
func (sc *Schema) JSONSchemaProps() (*apiextensions.JSONSchemaProps, error) {
	name := sc.Name
	all := sc.Definitions(func(path string) spec.Ref { return spec.MustCreateRef("#/definitions/" + path) })
	r := &resolver{defs: all, documentedEnums: sc.DocumentedEnums, visiting: map[string]bool{}}
	s, err := r.definition(name)
	if err != nil {
		return nil, err
	}
	if s.Properties != nil {
		if _, ok := s.Properties["metadata"]; ok {
			s.Properties["metadata"] = spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}}}
		}
	}
	data, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", name, err)
	}
	var v1 apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal(data, &v1); err != nil {
		return nil, fmt.Errorf("schema of %s: %w", name, err)
	}
	var out apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1, &out, nil); err != nil {
		return nil, fmt.Errorf("schema of %s: %w", name, err)
	}
	return &out, nil
}

type resolver struct {
	defs            map[string]openapicommon.OpenAPIDefinition
	documentedEnums map[string][]string
	visiting        map[string]bool
}

func (r *resolver) definition(name string) (*spec.Schema, error) {
	switch name {
	case defIntOrString, defQuantity:
		return &spec.Schema{
			SchemaProps: spec.SchemaProps{AnyOf: []spec.Schema{
				{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"integer"}}},
				{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"string"}}},
			}},
			VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-int-or-string": true}},
		}, nil
	case defRawExtension:
		return preserveUnknown(), nil
	case defJSON:
		// Any JSON value, as controller-gen writes apiextensions' JSON into a CRD.
		return &spec.Schema{VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-preserve-unknown-fields": true}}}, nil
	case defObjectMeta:
		return &spec.Schema{SchemaProps: spec.SchemaProps{Type: spec.StringOrArray{"object"}}}, nil
	}
	def, ok := r.defs[name]
	if !ok {
		return nil, fmt.Errorf("no OpenAPI definition %q", name)
	}
	s := def.Schema
	if v2, ok := s.Extensions[openapicommon.ExtensionV2Schema].(spec.Schema); ok {
		s = v2
	}
	if r.visiting[name] {
		// A recursive type (apiextensions' JSONSchemaProps): a structural schema cannot
		// repeat, so its repetition keeps what decoding into the Go type keeps (the model
		// warns about it at the field that repeats the type).
		if len(s.Type) == 1 && s.Type[0] == "object" {
			return preserveUnknown(), nil
		}
		return &spec.Schema{VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-preserve-unknown-fields": true}}}, nil
	}
	r.visiting[name] = true
	defer delete(r.visiting, name)
	if len(s.Type) == 0 {
		return preserveUnknown(), nil
	}
	if props := r.documentedEnums[name]; len(props) > 0 && s.Properties != nil {
		s.Properties = maps.Clone(s.Properties)
		for _, p := range props {
			if ps, ok := s.Properties[p]; ok {
				s.Properties[p] = withoutEnums(ps)
			}
		}
	}
	return r.schema(s)
}

// withoutEnums returns s without the enums of its inline schema: its own, its items' and its
// additional properties' (a list or a map of a +enum type), and those of allOf.
func withoutEnums(s spec.Schema) spec.Schema {
	s.Enum = nil
	if s.Items != nil && s.Items.Schema != nil {
		it := withoutEnums(*s.Items.Schema)
		s.Items = &spec.SchemaOrArray{Schema: &it}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		ap := withoutEnums(*s.AdditionalProperties.Schema)
		s.AdditionalProperties = &spec.SchemaOrBool{Allows: s.AdditionalProperties.Allows, Schema: &ap}
	}
	if len(s.AllOf) > 0 {
		all := make([]spec.Schema, len(s.AllOf))
		for i, a := range s.AllOf {
			all[i] = withoutEnums(a)
		}
		s.AllOf = all
	}
	return s
}

// schema returns s (a copy) with its references and those of its children resolved.
func (r *resolver) schema(s spec.Schema) (*spec.Schema, error) {
	if ref := s.Ref.String(); ref != "" {
		target, err := r.definition(strings.TrimPrefix(ref, "#/definitions/"))
		if err != nil {
			return nil, err
		}
		out := *target
		// What the referring property adds to the type's schema (kube-openapi puts a
		// field's description, default, validation and CEL rules next to the $ref).
		s.Ref = spec.Ref{}
		mergeSchema(&out, s)
		return &out, nil
	}
	out := s
	out.Extensions = withoutExtensions(s.Extensions)
	if s.Properties != nil {
		out.Properties = make(map[string]spec.Schema, len(s.Properties))
		for k, p := range s.Properties {
			rp, err := r.schema(p)
			if err != nil {
				return nil, err
			}
			out.Properties[k] = *rp
		}
	}
	if s.Items != nil && s.Items.Schema != nil {
		it, err := r.schema(*s.Items.Schema)
		if err != nil {
			return nil, err
		}
		out.Items = &spec.SchemaOrArray{Schema: it}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		ap, err := r.schema(*s.AdditionalProperties.Schema)
		if err != nil {
			return nil, err
		}
		out.AdditionalProperties = &spec.SchemaOrBool{Allows: true, Schema: ap}
	}
	out.AllOf = nil
	for _, a := range s.AllOf {
		ra, err := r.schema(a)
		if err != nil {
			return nil, err
		}
		if out.Items != nil && out.Items.Schema != nil && onlyItems(ra) {
			// kube-openapi writes the constraints of list items (+k8s:validation:items:...)
			// as allOf: [{items: {...}}]; a CRD has them in items itself.
			merged := *out.Items.Schema
			mergeSchema(&merged, *ra.Items.Schema)
			out.Items = &spec.SchemaOrArray{Schema: &merged}
			continue
		}
		out.AllOf = append(out.AllOf, *ra)
	}
	return &out, nil
}

// onlyItems reports whether s says nothing but a schema for list items.
func onlyItems(s *spec.Schema) bool {
	if s.Items == nil || s.Items.Schema == nil || len(s.Items.Schemas) > 0 {
		return false
	}
	rest := *s
	rest.Items = nil
	data, err := json.Marshal(rest)
	return err == nil && string(data) == "{}"
}

// mergeSchema copies what is set in add onto dst (add's type, if any, is ignored: the
// referenced type decides).
func mergeSchema(dst *spec.Schema, add spec.Schema) {
	if add.Description != "" {
		dst.Description = add.Description
	}
	if add.Default != nil {
		dst.Default = add.Default
	}
	a, d := &add.SchemaProps, &dst.SchemaProps
	if a.Minimum != nil {
		d.Minimum, d.ExclusiveMinimum = a.Minimum, a.ExclusiveMinimum
	}
	if a.Maximum != nil {
		d.Maximum, d.ExclusiveMaximum = a.Maximum, a.ExclusiveMaximum
	}
	if a.MultipleOf != nil {
		d.MultipleOf = a.MultipleOf
	}
	if a.MinLength != nil {
		d.MinLength = a.MinLength
	}
	if a.MaxLength != nil {
		d.MaxLength = a.MaxLength
	}
	if a.Pattern != "" {
		d.Pattern = a.Pattern
	}
	if a.MinItems != nil {
		d.MinItems = a.MinItems
	}
	if a.MaxItems != nil {
		d.MaxItems = a.MaxItems
	}
	if a.MinProperties != nil {
		d.MinProperties = a.MinProperties
	}
	if a.MaxProperties != nil {
		d.MaxProperties = a.MaxProperties
	}
	if len(a.Enum) > 0 {
		d.Enum = a.Enum
	}
	if a.Format != "" {
		d.Format = a.Format
	}
	if len(a.AllOf) > 0 {
		d.AllOf = append(d.AllOf, a.AllOf...)
	}
	for k, v := range withoutExtensions(add.Extensions) {
		if dst.Extensions == nil {
			dst.Extensions = spec.Extensions{}
		}
		if k == "x-kubernetes-validations" {
			if prev, ok := dst.Extensions[k].([]any); ok {
				if more, ok := v.([]any); ok {
					v = append(append([]any{}, prev...), more...)
				}
			}
		}
		dst.Extensions[k] = v
	}
}

// withoutExtensions drops the extensions a CRD schema does not have.
func withoutExtensions(e spec.Extensions) spec.Extensions {
	if len(e) == 0 {
		return e
	}
	out := spec.Extensions{}
	for k, v := range e {
		switch k {
		case "x-kubernetes-group-version-kind", "x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key", "x-kubernetes-unions", openapicommon.ExtensionV2Schema:
			continue
		}
		out[k] = v
	}
	return out
}

func preserveUnknown() *spec.Schema {
	return &spec.Schema{
		SchemaProps:      spec.SchemaProps{Type: spec.StringOrArray{"object"}},
		VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-preserve-unknown-fields": true}},
	}
}

// NewBodyValidator returns a validator of objects of the OpenAPI definition s.Name (the
// body of an action, the type of a view) against the schema it publishes (its documented
// enums left out, as for a kind), with the code
// a kind's objects are validated with (apiextensions-apiserver's validators, CEL rules
// included; old, when not nil, is the previous value, for ratcheting and oldSelf). Field
// paths are relative to the body. Like a kind's, the body's metadata is not validated by
// the schema; every other member, a status included, is the body's own (the validator's
// writeScope is that of a kind without /status).
func NewBodyValidator(s *Schema) (func(ctx context.Context, obj, old runtime.Object) field.ErrorList, error) {
	v, err := newSchemaValidator(s)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, obj, old runtime.Object) field.ErrorList {
		return v.validate(ctx, obj, old)
	}, nil
}

// SchemaValidation is how a storage checks objects against their kinds' schemas
// (a generated server's --schema-validation).
type SchemaValidation string

const (
	// SchemaValidationTyped reads the typed object first (typedCheck) and hands only the
	// objects it cannot vouch for to the CRD's validator, which finds and words every error.
	// A Schema's zero Validation means it.
	SchemaValidationTyped SchemaValidation = "typed"
	// SchemaValidationCRD hands every object to the CRD's validator, as the registry did
	// before typed checks: to compare.
	SchemaValidationCRD SchemaValidation = "crd"
)

// Validate reports a value other than typed and crd.
func (m SchemaValidation) Validate() error {
	switch m {
	case SchemaValidationTyped, SchemaValidationCRD:
		return nil
	}
	return fmt.Errorf("%q is not %q or %q", string(m), SchemaValidationTyped, SchemaValidationCRD)
}

func (m *SchemaValidation) String() string { return string(*m) }

// Set sets m from a flag's value.
func (m *SchemaValidation) Set(s string) error {
	if err := SchemaValidation(s).Validate(); err != nil {
		return err
	}
	*m = SchemaValidation(s)
	return nil
}

// Type names the flag's value in help.
func (m *SchemaValidation) Type() string { return "typed|crd" }

// UseSchemaValidation sets how the storage NewStorage built checks objects against their
// schemas: typed (NewStorage's default) or crd. Storage of other kinds is left alone.
func UseSchemaValidation(storage map[string]rest.Storage, m SchemaValidation) {
	for _, s := range storage {
		if r, ok := s.(*REST); ok && r.schemas != nil {
			for _, v := range r.schemas.byVersion {
				v.crdOnly = m == SchemaValidationCRD
			}
		}
	}
}
