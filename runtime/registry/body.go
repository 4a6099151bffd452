package registry

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// BodyInspector is implemented by the storage of a kind whose versions have schemas. The
// server calls it on the body of a create, an update, a merge patch or an apply before
// anything else reads the body, for two things a typed object cannot tell afterwards:
//
//   - whether the body breaks a size limit: such a request is refused for what it costs to
//     parse, not for what computing its managed fields and validating it would cost (which
//     grows with the size the limit exists to refuse);
//   - which required fields a whole object (a create or an update) left out: decoded into
//     Go, a missing number reads as 0, a missing struct as {}. The server passes them on
//     with WithAbsentFields, and validation reports them as a CRD does ("Required value").
type BodyInspector interface {
	// InspectBody reads body, an object of version in format. A body that does not parse
	// gives an empty report: the decoder answers for it.
	InspectBody(version string, body []byte, format BodyFormat, opts InspectOptions) BodyReport
	// GroupKind is the kind the errors are about.
	GroupKind() schema.GroupKind
}

// BodyFormat is the encoding of a body.
type BodyFormat int

// The formats InspectBody reads. Every format is checked against the same limits, with the
// same errors; the required fields a body leaves out are read from JSON and YAML only
// (protobuf and CBOR bodies are written by Go clients from typed objects, which send
// every field without omitempty).
const (
	FormatJSON BodyFormat = iota
	FormatYAML
	FormatProtobuf
	FormatCBOR
)

// InspectOptions say what to look for in a body.
type InspectOptions struct {
	// Limits asks for the size limits the body breaks.
	Limits bool
	// Absent asks for the required fields the body leaves out; set it only when the body
	// is a whole object (a create or an update, not a patch).
	Absent bool
	// Status is set when the body is written through the /status subresource: then only
	// its status is read for what it leaves out (the rest of it is not written).
	Status bool
}

// BodyReport is what InspectBody found.
type BodyReport struct {
	// Name is the object's metadata.name.
	Name string
	// OverLimits are the limits the body breaks (maxProperties, maxItems and maxLength of
	// the schema, label and annotation sizes), with the messages validation gives them.
	OverLimits field.ErrorList
	// Absent are the JSON paths of required fields without a default that the body leaves
	// out or sets to null, inside the top-level members the write sets (writeScope) and
	// the parents it sends. The Go zero value openapi-gen publishes as the
	// default of every field without omitempty ("" or 0) does not count as a default:
	// it says what decoding leaves there, not what the API chose.
	Absent [][]string
	// AbsentObjects are the JSON paths of the optional objects with required properties
	// that the body leaves out or sets to null, inside the top-level members the write
	// sets (writeScope) and the parents it sends: validation demands nothing of them unless something after decoding
	// (a hook) gave them a required value.
	AbsentObjects [][]string
	// Read is set when Absent and AbsentObjects were read from the body (a JSON or YAML
	// create or update of a kind whose schema needs it): a field they do not list was
	// sent, so an empty string there is a value the client set, not decoding's zero value.
	Read bool
}

var _ BodyInspector = &REST{}

// GroupKind is the kind the storage holds.
func (r *REST) GroupKind() schema.GroupKind { return r.groupKind }

// InspectBody implements BodyInspector.
func (r *REST) InspectBody(version string, body []byte, format BodyFormat, opts InspectOptions) BodyReport {
	var out BodyReport
	if r.schemas == nil {
		return out
	}
	v := r.schemas.byVersion[version]
	if v == nil {
		return out
	}
	if !opts.Limits && !v.presence() {
		return out // nothing to look for: no parse on the hot path
	}
	var obj map[string]any
	switch format {
	case FormatJSON, FormatYAML:
		if format == FormatYAML {
			var err error
			if body, err = yaml.YAMLToJSON(body); err != nil {
				return out
			}
		}
		if err := json.Unmarshal(body, &obj); err != nil {
			return out
		}
	case FormatProtobuf:
		opts.Absent = false
		if !opts.Limits {
			return out
		}
		gvk := r.groupKind.WithVersion(version)
		typed, err := r.schemas.scheme.New(gvk)
		if err != nil {
			return out
		}
		var ok bool
		if obj, ok = protoObject(body, reflect.TypeOf(typed).Elem()); !ok {
			return out
		}
	case FormatCBOR:
		opts.Absent = false
		if !opts.Limits {
			return out
		}
		if err := cbordirect.Unmarshal(body, &obj); err != nil {
			return out
		}
	default:
		return out
	}
	meta, _ := obj["metadata"].(map[string]any)
	out.Name, _ = meta["name"].(string)
	if opts.Limits {
		out.OverLimits = overLimits(obj, v.structural, nil)
		if meta != nil {
			path := field.NewPath("metadata")
			labelMap, _ := meta["labels"].(map[string]any)
			annotationMap, _ := meta["annotations"].(map[string]any)
			finalizers, _ := meta["finalizers"].([]any)
			counts := metadataCounts(nonNull(labelMap), nonNull(annotationMap), len(finalizers), nil)
			out.OverLimits = append(out.OverLimits, counts...)
			if labels, ok := stringMap(meta["labels"]); ok && len(labelMap) <= MaxLabels {
				out.OverLimits = append(out.OverLimits, metav1validation.ValidateLabels(labels, path.Child("labels"))...)
			}
			if annotations, ok := stringMap(meta["annotations"]); ok && len(annotationMap) <= MaxAnnotations {
				out.OverLimits = append(out.OverLimits, apimachineryvalidation.ValidateAnnotations(annotations, path.Child("annotations"))...)
			}
		}
	}
	if opts.Absent && v.presence() {
		scope := v.scope(opts.Status)
		out.Absent, out.AbsentObjects = absences(obj, v.structural, nil, &scope)
		out.Read = true
	}
	return out
}

// writeScope says which top-level members of an object a write sets, as a CRD's strategies
// take them: a write of the main resource sets every member but apiVersion, kind and
// metadata, and but the status when the kind has a /status subresource; a write through
// /status sets the status alone. A member a write does not set is neither absent from it
// nor removed by it.
type writeScope struct {
	throughStatus     bool // the write is through /status
	statusSubresource bool // the kind has a /status subresource
}

// sets reports whether a write of the scope sets the top-level member name.
func (w writeScope) sets(name string) bool {
	switch name {
	case "apiVersion", "kind", "metadata":
		return false
	case "status":
		return w.throughStatus || !w.statusSubresource
	}
	return !w.throughStatus
}

// absences returns the paths of the required properties without a default that value, an
// object of schema s, leaves out or sets to null, and those inside the properties, items
// and map values it has (fields), and the paths of the optional objects
// (structs) with required properties that value leaves out or sets to null (objects): a
// CRD demands nothing of an object that is absent, while decoding into Go fills it with
// zero values (and its defaults). At the top (scope not nil), only the members the write
// sets are looked at.
func absences(value any, s *structuralschema.Structural, path []string, scope *writeScope) (fields, objects [][]string) {
	if s == nil {
		return nil, nil
	}
	unwritten := func(name string) bool { return scope != nil && !scope.sets(name) }
	switch v := value.(type) {
	case map[string]any:
		if s.ValueValidation != nil {
			for _, name := range s.ValueValidation.Required {
				if v[name] != nil || unwritten(name) {
					continue
				}
				if p, ok := s.Properties[name]; ok && p.Default.Object != nil && !zeroJSON(p.Default.Object) {
					continue // a CRD would default it
				}
				fields = append(fields, append(slices.Clone(path), name))
			}
		}
		for name, p := range s.Properties {
			if unwritten(name) || v[name] != nil {
				continue
			}
			if optionalObject(s, name, &p) {
				objects = append(objects, append(slices.Clone(path), name))
			}
		}
		for name, child := range v {
			if unwritten(name) {
				continue
			}
			var f, o [][]string
			if p, ok := s.Properties[name]; ok {
				f, o = absences(child, &p, append(slices.Clone(path), name), nil)
			} else if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
				f, o = absences(child, s.AdditionalProperties.Structural, append(slices.Clone(path), name), nil)
			}
			fields, objects = append(fields, f...), append(objects, o...)
		}
	case []any:
		for i, item := range v {
			f, o := absences(item, s.Items, append(slices.Clone(path), strconv.Itoa(i)), nil)
			fields, objects = append(fields, f...), append(objects, o...)
		}
	}
	return fields, objects
}

// optionalObject reports whether p, the property name of s, is an optional object (a
// struct) with required properties of its own and no default other than {} (what
// openapi-gen publishes for a struct: decoding's zero value, not the API's choice).
func optionalObject(s *structuralschema.Structural, name string, p *structuralschema.Structural) bool {
	return !required(s, name) && p.Type == "object" && len(p.Properties) > 0 &&
		(p.Default.Object == nil || zeroJSON(p.Default.Object)) && hasRequired(p)
}

// hasRequired reports whether s, an object, lists required properties of its own.
func hasRequired(s *structuralschema.Structural) bool {
	return s.ValueValidation != nil && len(s.ValueValidation.Required) > 0
}

// hasOptionalRequired reports whether s has, anywhere, an optional object property
// without a default that has required properties (absences' objects).
func hasOptionalRequired(s *structuralschema.Structural) bool {
	if s == nil {
		return false
	}
	for name, p := range s.Properties {
		if optionalObject(s, name, &p) {
			return true
		}
		if hasOptionalRequired(&p) {
			return true
		}
	}
	if s.AdditionalProperties != nil && hasOptionalRequired(s.AdditionalProperties.Structural) {
		return true
	}
	return hasOptionalRequired(s.Items)
}

// overLimits returns the size limits of s that value breaks, with the messages the
// schema validator gives for them. Only the limits are checked; everything else is left
// to validation after decoding.
func overLimits(value any, s *structuralschema.Structural, path *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	vv := s.ValueValidation
	switch v := value.(type) {
	case map[string]any:
		if vv != nil && vv.MaxProperties != nil {
			if n := nonNull(v); int64(n) > *vv.MaxProperties {
				errs = append(errs, field.TooMany(path, n, int(*vv.MaxProperties)))
			}
		}
		for name, child := range v {
			if p, ok := s.Properties[name]; ok {
				errs = append(errs, overLimits(child, &p, path.Child(name))...)
			} else if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
				errs = append(errs, overLimits(child, s.AdditionalProperties.Structural, path.Key(name))...)
			}
		}
	case []any:
		if vv != nil && vv.MaxItems != nil && int64(len(v)) > *vv.MaxItems {
			errs = append(errs, field.TooMany(path, len(v), int(*vv.MaxItems)))
		}
		if s.Items != nil {
			for i, item := range v {
				errs = append(errs, overLimits(item, s.Items, path.Index(i))...)
			}
		}
	case string:
		if vv != nil && vv.MaxLength != nil && int64(utf8.RuneCountInString(v)) > *vv.MaxLength {
			errs = append(errs, field.TooLong(path, "", int(*vv.MaxLength)))
		}
	}
	return errs
}

// nonNull counts the members of m that are not null: in a merge patch, null deletes.
func nonNull(m map[string]any) int {
	n := 0
	for _, v := range m {
		if v != nil {
			n++
		}
	}
	return n
}

func stringMap(v any) (map[string]string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(m))
	for k, val := range m {
		out[k] = fmt.Sprint(val)
	}
	return out, true
}

// hasHiddenRequired reports whether s has, anywhere, a required property with no default
// other than its zero value: decoding leaves the zero value (0, false, "") both where the
// body sent it and where it left the field out.
func hasHiddenRequired(s *structuralschema.Structural) bool {
	if s == nil {
		return false
	}
	if s.ValueValidation != nil {
		for _, name := range s.ValueValidation.Required {
			p, ok := s.Properties[name]
			if ok && (p.Default.Object == nil || zeroJSON(p.Default.Object)) {
				return true
			}
		}
	}
	for _, p := range s.Properties {
		if hasHiddenRequired(&p) {
			return true
		}
	}
	if s.AdditionalProperties != nil && hasHiddenRequired(s.AdditionalProperties.Structural) {
		return true
	}
	return hasHiddenRequired(s.Items)
}
