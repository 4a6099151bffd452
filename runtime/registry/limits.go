package registry

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// LimitChecker is implemented by the storage of a kind whose versions have schemas. The
// server calls it on the body of a create, an update, a merge patch or an apply before
// anything else reads the body: a request over one of the schema's size limits is refused
// for what it costs to parse, not for what computing its managed fields and validating it
// would cost (which grows with the size the limit exists to refuse).
type LimitChecker interface {
	// CheckLimits returns the limits the body breaks (maxProperties, maxItems and
	// maxLength of the schema of version, and the sizes of labels and annotations) and
	// the object's name. yamlBody is set when the body is YAML. A body that does not
	// parse is left to the decoder.
	CheckLimits(version string, body []byte, yamlBody bool) (name string, errs field.ErrorList)
	// GroupKind is the kind the errors are about.
	GroupKind() schema.GroupKind
}

var _ LimitChecker = &REST{}

// GroupKind is the kind the storage holds.
func (r *REST) GroupKind() schema.GroupKind { return r.groupKind }

// CheckLimits implements LimitChecker.
func (r *REST) CheckLimits(version string, body []byte, yamlBody bool) (name string, errs field.ErrorList) {
	if r.schemas == nil {
		return "", nil
	}
	v := r.schemas.byVersion[version]
	if v == nil {
		return "", nil
	}
	if yamlBody {
		var err error
		if body, err = yaml.YAMLToJSON(body); err != nil {
			return "", nil
		}
	}
	var obj map[string]any
	if err := json.Unmarshal(body, &obj); err != nil {
		return "", nil
	}
	errs = overLimits(obj, v.structural, nil)
	if meta, ok := obj["metadata"].(map[string]any); ok {
		name, _ = meta["name"].(string)
		path := field.NewPath("metadata")
		if labels, ok := stringMap(meta["labels"]); ok {
			errs = append(errs, metav1validation.ValidateLabels(labels, path.Child("labels"))...)
		}
		if annotations, ok := stringMap(meta["annotations"]); ok {
			errs = append(errs, apimachineryvalidation.ValidateAnnotations(annotations, path.Child("annotations"))...)
		}
	}
	return name, errs
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
