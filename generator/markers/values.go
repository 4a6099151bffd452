package markers

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
)

// A marker's value is parsed once, when the marker is read (Registry.Parse), into a Go
// value of a type of its own (Definition.Parse): +kubebuilder:validation:Minimum=1 into
// Minimum(1), +kubebuilder:resource:path=boats into Resource{Path: "boats"}. Every
// spelling of a marker (+required, +k8s:required) parses into the same type, and the
// model finds markers by that type (Find, FindAll, Is), so a misspelt marker is a compile
// error. Errors in a value are reported at the marker's position, with a fix.

// Problem is what is wrong with a marker's value, and how to fix it.
type Problem struct {
	Msg, Fix string
}

func (p *Problem) Error() string { return p.Msg }

func problem(fix, format string, args ...any) *Problem {
	return &Problem{Msg: fmt.Sprintf(format, args...), Fix: fix}
}

// Found is a marker of a Set with its value of type T.
type Found[T any] struct {
	Value T
	Marker
}

// Find returns the value of the first marker of s whose value has type T.
func Find[T any](s Set) (T, Marker, bool) {
	for _, m := range s {
		if v, ok := m.Parsed.(T); ok {
			return v, m, true
		}
	}
	var zero T
	return zero, Marker{}, false
}

// FindAll returns every marker of s whose value has type T, in source order.
func FindAll[T any](s Set) []Found[T] {
	var out []Found[T]
	for _, m := range s {
		if v, ok := m.Parsed.(T); ok {
			out = append(out, Found[T]{v, m})
		}
	}
	return out
}

// Is reports whether s holds a flag marker of type T that is not "=false".
func Is[T ~bool](s Set) bool {
	v, _, ok := Find[T](s)
	return ok && bool(v)
}

// Package markers.

// GroupName is +groupName: the API group of the package's kinds.
type GroupName string

// GroupGoName is +groupGoName: the group's name in the Go identifiers of the generated
// clients (client-gen's CertManagerV1() for cert-manager.io), instead of its first label.
type GroupGoName string

// ResourceName is +resourceName: the kind's resource name (client-gen's URL path, e.g.
// pods for k8s.io/metrics' PodMetrics), instead of the plural of the kind.
type ResourceName string

// OpenAPIEnum is +enum (kube-openapi): the named string type is an enum of the constants
// of that type its package declares.
type OpenAPIEnum bool

// ReadOnly is +genclient:readonly: the kind is read, never written, through the API.
type ReadOnly bool

// Skip is +kubebuilder:skip: aagen serves none of the package's kinds.
type Skip bool

// SkipVersion is +kubebuilder:skipversion: the package, or the kind, is not served.
type SkipVersion bool

// Kind markers.

// GenClient is +genclient: the type is a kind.
type GenClient bool

// ObjectRoot is +kubebuilder:object:root: the type is a kind or a kind's list.
type ObjectRoot bool

// NonNamespaced is +genclient:nonNamespaced: the kind is cluster-scoped.
type NonNamespaced bool

// NoStatus is +genclient:noStatus: no /status subresource.
type NoStatus bool

// StatusSubresource is +kubebuilder:subresource:status.
type StatusSubresource bool

// StorageVersion is +kubebuilder:storageversion.
type StorageVersion bool

// UnservedVersion is +kubebuilder:unservedversion.
type UnservedVersion bool

// Backend is +aagen:backend: the kind is served from the user's code.
type Backend bool

// Resource is +kubebuilder:resource: the kind's names and scope; "" where not given.
type Resource struct {
	Path, Scope, Singular  string
	ShortNames, Categories []string
}

// Scale is +kubebuilder:subresource:scale: JSON paths of the /scale subresource.
type Scale struct {
	SpecPath, StatusPath, SelectorPath string
}

// PrintColumn is +kubebuilder:printcolumn: a column of kubectl get.
type PrintColumn struct {
	Name, Type, JSONPath, Description, Format string
	Priority                                  int32
}

// SelectableField is +kubebuilder:selectablefield: a field usable in a field selector.
type SelectableField struct {
	JSONPath string
}

// DeprecatedVersion is +kubebuilder:deprecatedversion; Warning is "" when not given.
type DeprecatedVersion struct {
	Warning string
}

// Subresource is one of the +aagen:subresource markers: an imperative subresource.
type Subresource struct {
	// Form is the marker's last word: action, view, stream or connection.
	Form string
	Name string
	// Input and Output are an action's types (Output "" for the kind itself).
	Input, Output string
	// Type is a view's type; Update is set when the view takes PUT and PATCH too.
	Type   string
	Update bool
}

// Field markers.

// Required is +kubebuilder:validation:Required (+required, +k8s:required).
type Required bool

// Optional is +kubebuilder:validation:Optional (+optional, +k8s:optional).
type Optional bool

// DefaultValue is +kubebuilder:default or +default: the value as written, read as a literal.
type DefaultValue struct {
	// Text is the value as written, quotes kept.
	Text string
	// Literal is Text read in controller-tools' literal syntax; unset when Ref is.
	Literal Literal
	// Ref is set for code-generator's +default=ref(...), which names a value instead of giving it.
	Ref bool
	// CodeGenerator is set for the +default spelling, which +kubebuilder:default wins over.
	CodeGenerator bool
}

// PreserveUnknownFields is +kubebuilder:pruning:PreserveUnknownFields (or its X spelling).
type PreserveUnknownFields bool

// EmbeddedResource is +kubebuilder:validation:EmbeddedResource (or its X spelling).
type EmbeddedResource bool

// Items is a +kubebuilder:validation:items:* marker: a schema marker for each item of a list.
type Items struct {
	Value SchemaValue
}

// parsers of the values of the forms.

func flagOf[T ~bool]() func(Marker) (any, error) {
	return func(m Marker) (any, error) { return T(m.Value != "false"), nil }
}

func stringOf[T ~string]() func(Marker) (any, error) {
	return func(m Marker) (any, error) { return T(m.Value), nil }
}

// choiceOf accepts one of the values kube-openapi and server-side apply know for the marker
// (+listType=atomic|set|map, ...), so that a value they do not know is an error at the
// marker, not applyconfiguration-gen's refusal naming another type.
func choiceOf(values ...string) func(Marker) (any, error) {
	return func(m Marker) (any, error) {
		if !slices.Contains(values, m.Value) {
			var spelled []string
			for _, v := range values {
				spelled = append(spelled, "+"+m.Def.Name+"="+v)
			}
			return nil, problem("write one of "+strings.Join(spelled, ", "),
				"%q is not a value of +%s (it is one of %s)", m.Value, m.Def.Name, strings.Join(values, ", "))
		}
		return m.Value, nil
	}
}

func numberOf[T ~float64]() func(Marker) (any, error) {
	return func(m Marker) (any, error) {
		f, err := strconv.ParseFloat(m.Value, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, problem("write a number, e.g. +"+m.Def.Name+"=1", "%q is not a number", m.Value)
		}
		return T(f), nil
	}
}

func countOf[T ~int64]() func(Marker) (any, error) {
	return func(m Marker) (any, error) {
		n, err := strconv.ParseInt(m.Value, 10, 64)
		if err != nil || n < 0 {
			return nil, problem("write a non-negative integer, e.g. +"+m.Def.Name+"=1", "%q is not a non-negative integer", m.Value)
		}
		return T(n), nil
	}
}

func stringsOf[T ~[]string]() func(Marker) (any, error) {
	return func(m Marker) (any, error) { return T(List(m.Value)), nil }
}

func parseResource(m Marker) (any, error) {
	return Resource{Path: m.Args["path"], Scope: m.Args["scope"], Singular: m.Args["singular"],
		ShortNames: List(m.Args["shortName"]), Categories: List(m.Args["categories"])}, nil
}

func parseScale(m Marker) (any, error) {
	return Scale{SpecPath: m.Args["specpath"], StatusPath: m.Args["statuspath"], SelectorPath: m.Args["selectorpath"]}, nil
}

func parsePrintColumn(m Marker) (any, error) {
	col := PrintColumn{Name: m.Args["name"], Type: m.Args["type"], JSONPath: m.Args["JSONPath"],
		Description: m.Args["description"], Format: m.Args["format"]}
	if p, ok := m.Args["priority"]; ok {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 {
			return nil, problem("use priority=0 (always shown) or a positive integer (shown with -o wide)", "priority=%s is not an integer >= 0", p)
		}
		col.Priority = int32(n)
	}
	return col, nil
}

func parseSubresource(form string) func(Marker) (any, error) {
	return func(m Marker) (any, error) {
		s := Subresource{Form: form, Name: m.Args["name"], Input: m.Args["input"], Output: m.Args["output"], Type: m.Args["type"]}
		switch u := m.Args["update"]; u {
		case "", "false":
		case "true":
			s.Update = true
		default:
			return nil, problem("use update=true or leave it out", "update=%q", u)
		}
		return s, nil
	}
}

func parseDefault(m Marker) (any, error) {
	d := DefaultValue{Text: m.Text, CodeGenerator: m.Def.Name == "default"}
	if d.CodeGenerator && strings.HasPrefix(m.Value, "ref(") {
		d.Ref = true
		return d, nil
	}
	lit, err := ParseLiteral(m.Text)
	if err != nil {
		return nil, problem(`write the default in controller-tools' syntax (3, Wood, {a, b}, {key: value}) or as JSON`, "%v", err)
	}
	d.Literal = lit
	return d, nil
}

func parsePattern(m Marker) (any, error) {
	if _, err := regexp.Compile(m.Value); err != nil {
		return nil, problem("write a regular expression in Go (RE2) syntax; quote it when it contains commas", "invalid regular expression %q: %v", m.Value, err)
	}
	return Pattern(m.Value), nil
}

func parseFormat(m Marker) (any, error) {
	if !slices.Contains(crdFormats, m.Value) {
		return nil, problem("use one of "+strings.Join(crdFormats, ", "), "format %q is not one a Kubernetes server validates", m.Value)
	}
	return Format(m.Value), nil
}

func parseMultipleOf(m Marker) (any, error) {
	v, err := numberOf[MultipleOf]()(m)
	if err != nil {
		return nil, err
	}
	if v.(MultipleOf) <= 0 {
		return nil, problem("use a positive number", "%s is not positive", m.Value)
	}
	return v, nil
}

func parseUniqueItems(m Marker) (any, error) {
	switch m.Value {
	case "true":
		return nil, problem("use +listType=set, which the server checks in linear time", "uniqueItems is not allowed in Kubernetes structural schemas (its runtime cost is quadratic)")
	case "false":
		return UniqueItems(false), nil
	}
	return nil, problem("write =true or =false", "%q is not true or false", m.Value)
}

var celReasons = []string{"FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate"}

// parseRule reads a +kubebuilder:validation:XValidation marker. The rule and the message
// expression are parsed with cel-go here, so syntax errors have a position; type errors
// (a field that does not exist) are reported when the server builds the kind's schema.
func parseRule(m Marker) (any, error) {
	r := Rule{Rule: m.Args["rule"], Message: m.Args["message"], MessageExpression: m.Args["messageExpression"],
		Reason: m.Args["reason"], FieldPath: m.Args["fieldPath"]}
	if strings.TrimSpace(r.Rule) == "" {
		return nil, problem(`add rule="<CEL expression>", e.g. rule="self.min <= self.max"`, "rule is required")
	}
	if r.Message != "" && r.MessageExpression != "" {
		return nil, problem("keep message or messageExpression", "message and messageExpression are mutually exclusive")
	}
	if r.Reason != "" && !slices.Contains(celReasons, r.Reason) {
		return nil, problem("use reason="+strings.Join(celReasons, "|"), "reason %q is not one of %s", r.Reason, strings.Join(celReasons, ", "))
	}
	if r.FieldPath != "" && !strings.HasPrefix(r.FieldPath, ".") {
		return nil, problem("write fieldPath as a JSON path from the annotated node, e.g. fieldPath=.spec.size", "fieldPath %q must start with '.'", r.FieldPath)
	}
	if s, ok := m.Args["optionalOldSelf"]; ok {
		bv, err := strconv.ParseBool(s)
		if err != nil {
			return nil, problem("write optionalOldSelf=true or optionalOldSelf=false", "optionalOldSelf=%q is not a boolean", s)
		}
		r.OptionalOldSelf = &bv
	}
	env, err := cel.NewEnv()
	if err != nil {
		return nil, fmt.Errorf("a CEL environment to parse the rule in: %w", err)
	}
	for _, e := range []struct{ name, src string }{{"rule", r.Rule}, {"messageExpression", r.MessageExpression}} {
		if e.src == "" {
			continue
		}
		if _, iss := env.Parse(e.src); iss != nil && iss.Err() != nil {
			return nil, problem("fix the CEL expression (quote the marker's value when it contains commas)", "%s %q does not parse: %s",
				e.name, e.src, strings.Join(strings.Fields(iss.Err().Error()), " "))
		}
	}
	return XValidation(r), nil
}

// itemsOf parses a +kubebuilder:validation:items:* marker as its base marker, for each item.
func itemsOf(base func(Marker) (any, error)) func(Marker) (any, error) {
	return func(m Marker) (any, error) {
		v, err := base(m)
		if err != nil {
			return nil, err
		}
		sv, ok := v.(SchemaValue)
		if !ok {
			return nil, fmt.Errorf("+%s: an items marker needs a schema constraint, not %T", m.Def.Name, v)
		}
		return Items{sv}, nil
	}
}
