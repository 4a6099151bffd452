package markers

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Schema is the value constraints markers put on one schema node (a field, or a type).
// They become the OpenAPI schema of the node (published in /openapi/v2 and /openapi/v3)
// and, through it, the validation the server runs: the same structural schema validation
// and CEL rules as a CustomResourceDefinition with that schema.
type Schema struct {
	Minimum, Maximum, MultipleOf       *float64
	ExclusiveMinimum, ExclusiveMaximum bool
	MinLength, MaxLength               *int64
	MinItems, MaxItems                 *int64
	MinProperties, MaxProperties       *int64
	Pattern                            string
	// Format is an OpenAPI string format a CRD supports (date-time, email, uri, ...).
	Format string
	// Enum holds the allowed values, as JSON values of the node's type.
	Enum []any
	// Rules are CEL rules (+kubebuilder:validation:XValidation), in marker order.
	Rules []Rule
}

// Rule is one CEL validation rule, with the meaning of a CRD's x-kubernetes-validations
// entry.
type Rule struct {
	Rule, Message, MessageExpression, Reason, FieldPath string
	OptionalOldSelf                                     *bool
}

// IsZero reports whether s constrains nothing.
func (s Schema) IsZero() bool {
	return s.Minimum == nil && s.Maximum == nil && s.MultipleOf == nil && !s.ExclusiveMinimum && !s.ExclusiveMaximum &&
		s.MinLength == nil && s.MaxLength == nil && s.MinItems == nil && s.MaxItems == nil &&
		s.MinProperties == nil && s.MaxProperties == nil && s.Pattern == "" && s.Format == "" && len(s.Enum) == 0 && len(s.Rules) == 0
}

// Merge fills what s leaves unset from base (a field's own markers win over its type's).
func (s Schema) Merge(base Schema) Schema {
	out := s
	if out.Minimum == nil {
		out.Minimum, out.ExclusiveMinimum = base.Minimum, base.ExclusiveMinimum || s.ExclusiveMinimum
	}
	if out.Maximum == nil {
		out.Maximum, out.ExclusiveMaximum = base.Maximum, base.ExclusiveMaximum || s.ExclusiveMaximum
	}
	for _, p := range []struct{ dst, src **int64 }{
		{&out.MinLength, &base.MinLength}, {&out.MaxLength, &base.MaxLength}, {&out.MinItems, &base.MinItems},
		{&out.MaxItems, &base.MaxItems}, {&out.MinProperties, &base.MinProperties}, {&out.MaxProperties, &base.MaxProperties},
	} {
		if *p.dst == nil {
			*p.dst = *p.src
		}
	}
	if out.MultipleOf == nil {
		out.MultipleOf = base.MultipleOf
	}
	if out.Pattern == "" {
		out.Pattern = base.Pattern
	}
	if out.Format == "" {
		out.Format = base.Format
	}
	if len(out.Enum) == 0 {
		out.Enum = base.Enum
	}
	out.Rules = append(slices.Clone(base.Rules), s.Rules...)
	return out
}

// Node is what a schema marker needs to know of the node it annotates.
type Node struct {
	// Kind is the node's JSON type: string, integer, number, boolean, array, object,
	// int-or-string, or unknown.
	Kind string
	// Fields are the JSON names of the fields of a struct node; IsStruct is set for one.
	Fields   []string
	IsStruct bool
}

// SchemaValue is the value of a marker that constrains the schema of the node it
// annotates: adding such a marker is its definition and its ApplyToSchema.
type SchemaValue interface {
	// ApplyToSchema adds the constraint to s, or says why it does not fit node.
	ApplyToSchema(s *Schema, node Node) *Problem
}

// The schema markers' values.
type (
	// Minimum is +kubebuilder:validation:Minimum (+k8s:minimum).
	Minimum float64
	// Maximum is +kubebuilder:validation:Maximum (+k8s:maximum).
	Maximum float64
	// MultipleOf is +kubebuilder:validation:MultipleOf, a positive number.
	MultipleOf float64
	// ExclusiveMinimum is +kubebuilder:validation:ExclusiveMinimum.
	ExclusiveMinimum bool
	// ExclusiveMaximum is +kubebuilder:validation:ExclusiveMaximum.
	ExclusiveMaximum bool
	// MinLength is +kubebuilder:validation:MinLength.
	MinLength int64
	// MaxLength is +kubebuilder:validation:MaxLength (+k8s:maxLength).
	MaxLength int64
	// MinItems is +kubebuilder:validation:MinItems.
	MinItems int64
	// MaxItems is +kubebuilder:validation:MaxItems (+k8s:maxItems).
	MaxItems int64
	// MinProperties is +kubebuilder:validation:MinProperties.
	MinProperties int64
	// MaxProperties is +kubebuilder:validation:MaxProperties.
	MaxProperties int64
	// UniqueItems is +kubebuilder:validation:UniqueItems=false (=true is refused when parsed).
	UniqueItems bool
	// Pattern is +kubebuilder:validation:Pattern, a valid RE2 expression.
	Pattern string
	// Format is +kubebuilder:validation:Format, one a CRD validates.
	Format string
	// Enum is +kubebuilder:validation:Enum, the values as written.
	Enum []string
	// XValidation is +kubebuilder:validation:XValidation, a CEL rule that parses.
	XValidation Rule
	// Immutable is +k8s:immutable.
	Immutable bool
	// ExactlyOneOf is +kubebuilder:validation:ExactlyOneOf: JSON field names.
	ExactlyOneOf []string
	// AtMostOneOf is +kubebuilder:validation:AtMostOneOf: JSON field names.
	AtMostOneOf []string
	// AtLeastOneOf is +kubebuilder:validation:AtLeastOneOf: JSON field names.
	AtLeastOneOf []string
)

// crdFormats are the string formats a CRD's schema validation knows (see
// k8s.io/apiextensions-apiserver/pkg/apiserver/validation/formats.go); others are
// silently dropped there, so they are errors here.
var crdFormats = []string{
	"bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid", "uuid3", "uuid4", "uuid5",
	"isbn", "isbn10", "isbn13", "creditcard", "ssn", "hexcolor", "rgbcolor", "byte", "password", "date", "duration",
	"datetime", "date-time",
}

func isNumber(node Node) *Problem {
	if node.Kind != "integer" && node.Kind != "number" {
		return problem("use it on an integer or floating-point field, or remove it", "the field is %s, not a number", Article(node.Kind))
	}
	return nil
}

// number checks that f fits a number node: whole on an integer node (unless whole is false).
func number(f float64, node Node, whole bool) (*float64, *Problem) {
	if p := isNumber(node); p != nil {
		return nil, p
	}
	if whole && node.Kind == "integer" && f != math.Trunc(f) {
		return nil, problem("write an integer", "the field is an integer and %q is not", strconv.FormatFloat(f, 'g', -1, 64))
	}
	return &f, nil
}

func count(n int64, node Node, want ...string) (*int64, *Problem) {
	if !slices.Contains(want, node.Kind) {
		return nil, problem("use it on "+strings.Join(want, " or ")+" fields, or remove it", "the field is %s", Article(node.Kind))
	}
	return &n, nil
}

func isString(node Node) *Problem {
	if node.Kind != "string" {
		return problem("use it on a string field, or remove it", "the field is %s", Article(node.Kind))
	}
	return nil
}

func (v Minimum) ApplyToSchema(s *Schema, node Node) (p *Problem) {
	s.Minimum, p = number(float64(v), node, true)
	return p
}

func (v Maximum) ApplyToSchema(s *Schema, node Node) (p *Problem) {
	s.Maximum, p = number(float64(v), node, true)
	return p
}

func (v MultipleOf) ApplyToSchema(s *Schema, node Node) (p *Problem) {
	s.MultipleOf, p = number(float64(v), node, false)
	return p
}

func (v ExclusiveMinimum) ApplyToSchema(s *Schema, node Node) *Problem {
	if p := isNumber(node); p != nil {
		return p
	}
	s.ExclusiveMinimum = bool(v)
	return nil
}

func (v ExclusiveMaximum) ApplyToSchema(s *Schema, node Node) *Problem {
	if p := isNumber(node); p != nil {
		return p
	}
	s.ExclusiveMaximum = bool(v)
	return nil
}

func (v MinLength) ApplyToSchema(s *Schema, node Node) (p *Problem) {
	s.MinLength, p = count(int64(v), node, "string")
	return p
}

func (v MaxLength) ApplyToSchema(s *Schema, node Node) (p *Problem) {
	s.MaxLength, p = count(int64(v), node, "string")
	return p
}

func (v MinItems) ApplyToSchema(s *Schema, node Node) (p *Problem) {
	s.MinItems, p = count(int64(v), node, "array")
	return p
}

func (v MaxItems) ApplyToSchema(s *Schema, node Node) (p *Problem) {
	s.MaxItems, p = count(int64(v), node, "array")
	return p
}

func (v MinProperties) ApplyToSchema(s *Schema, node Node) (p *Problem) {
	s.MinProperties, p = count(int64(v), node, "object")
	return p
}

func (v MaxProperties) ApplyToSchema(s *Schema, node Node) (p *Problem) {
	s.MaxProperties, p = count(int64(v), node, "object")
	return p
}

// ApplyToSchema of UniqueItems=false constrains nothing.
func (v UniqueItems) ApplyToSchema(*Schema, Node) *Problem { return nil }

func (v Pattern) ApplyToSchema(s *Schema, node Node) *Problem {
	if p := isString(node); p != nil {
		return p
	}
	s.Pattern = string(v)
	return nil
}

func (v Format) ApplyToSchema(s *Schema, node Node) *Problem {
	if p := isString(node); p != nil {
		return p
	}
	s.Format = string(v)
	return nil
}

func (v Enum) ApplyToSchema(s *Schema, node Node) *Problem {
	if !slices.Contains([]string{"string", "integer", "number", "boolean"}, node.Kind) {
		return problem("use +kubebuilder:validation:Enum on a string, number or boolean field (or its named type)", "the field is %s; enum values must be scalars", Article(node.Kind))
	}
	for _, e := range v {
		val, err := enumValue(e, node.Kind)
		if err != nil {
			return problem("list values of the field's type separated by ';', e.g. +kubebuilder:validation:Enum=Wood;Steel", "%v", err)
		}
		s.Enum = append(s.Enum, val)
	}
	return nil
}

func enumValue(s, kind string) (any, error) {
	switch kind {
	case "string":
		return s, nil
	case "boolean":
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("enum value %q is not a boolean", s)
		}
		return b, nil
	default:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || kind == "integer" && f != math.Trunc(f) {
			return nil, fmt.Errorf("enum value %q is not %s", s, Article(kind))
		}
		if kind == "integer" {
			return int64(f), nil
		}
		return f, nil
	}
}

func (v XValidation) ApplyToSchema(s *Schema, _ Node) *Problem {
	s.Rules = append(s.Rules, Rule(v))
	return nil
}

// ApplyToSchema adds controller-gen's rule and message for +k8s:immutable.
func (v Immutable) ApplyToSchema(s *Schema, _ Node) *Problem {
	if v {
		s.Rules = append(s.Rules, Rule{Rule: "self == oldSelf", Message: "field is immutable"})
	}
	return nil
}

// ApplyToSchema adds the CEL rule controller-gen writes for ExactlyOneOf.
func (v ExactlyOneOf) ApplyToSchema(s *Schema, node Node) *Problem {
	return oneOf(s, node, "ExactlyOneOf", v)
}

// ApplyToSchema adds the CEL rule controller-gen writes for AtMostOneOf.
func (v AtMostOneOf) ApplyToSchema(s *Schema, node Node) *Problem {
	return oneOf(s, node, "AtMostOneOf", v)
}

// ApplyToSchema adds the CEL rule controller-gen writes for AtLeastOneOf.
func (v AtLeastOneOf) ApplyToSchema(s *Schema, node Node) *Problem {
	return oneOf(s, node, "AtLeastOneOf", v)
}

// oneOf adds the CEL rule controller-gen writes for +kubebuilder:validation:<which> on a
// struct type: fields are the JSON names of its fields.
func oneOf(s *Schema, node Node, which string, fields []string) *Problem {
	if !node.IsStruct {
		return problem("put it on a struct type", "the type is not a struct")
	}
	if len(fields) == 0 {
		return problem("list JSON field names separated by ';', e.g. +kubebuilder:validation:"+which+"=http;https", "no fields")
	}
	for _, f := range fields {
		if !slices.Contains(node.Fields, f) {
			return problem("use the JSON names of the type's fields: "+strings.Join(node.Fields, ", "), "no field %q", f)
		}
	}
	var sum, or []string
	for _, f := range fields {
		sum = append(sum, "(has(self."+f+")?1:0)")
		or = append(or, "has(self."+f+")")
	}
	switch which {
	case "ExactlyOneOf":
		s.Rules = append(s.Rules, Rule{Rule: strings.Join(sum, "+") + " == 1", Message: fmt.Sprintf("exactly one of the fields in %v must be set", fields)})
	case "AtMostOneOf":
		s.Rules = append(s.Rules, Rule{Rule: strings.Join(sum, "+") + " <= 1", Message: fmt.Sprintf("at most one of the fields in %v may be set", fields)})
	default:
		s.Rules = append(s.Rules, Rule{Rule: strings.Join(or, "||"), Message: fmt.Sprintf("at least one of the fields in %v must be set", fields)})
	}
	return nil
}

// Article puts "a" or "an" before a JSON kind: "an integer", "a string".
func Article(kind string) string {
	switch kind {
	case "integer", "array", "object", "int-or-string":
		return "an " + kind
	case "unknown":
		return "of a type without a JSON schema"
	}
	return "a " + kind
}
