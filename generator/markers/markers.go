package markers

import (
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Target is what a marker may annotate.
type Target int

// Targets of markers.
const (
	OnPackage Target = 1 << iota
	OnType
	OnField
)

func (t Target) String() string {
	var parts []string
	for _, x := range []struct {
		t Target
		s string
	}{{OnPackage, "package"}, {OnType, "type"}, {OnField, "field"}} {
		if t&x.t != 0 {
			parts = append(parts, x.s)
		}
	}
	return strings.Join(parts, " or ")
}

// Form is the syntax a marker takes.
type Form int

// Forms of markers.
const (
	// Flag is "+name" (or "+name=true"/"+name=false").
	Flag Form = iota
	// Value is "+name=value".
	Value
	// Args is "+name:key=value,key=value".
	Args
	// Raw takes anything after the name ("+name", "+name=...", "+name:..."): markers
	// of other tools that aagen recognises without reading their arguments.
	Raw
)

// ValueType is the type of a Value marker's value, as the marker reference names it; the
// definition's Parse reads it into a Go value.
type ValueType int

// Value types.
const (
	// String is any text (quotes removed).
	String ValueType = iota
	// Integer is a whole number.
	Integer
	// Number is a floating-point number.
	Number
	// Boolean is true or false.
	Boolean
	// StringList is "a;b" or "{a,b}".
	StringList
	// LiteralValue is controller-tools' literal syntax ("{from: Same}", "{a,b}", 3,
	// forty-two, "quoted"), typed by the field it is applied to.
	LiteralValue
)

func (t ValueType) String() string {
	return [...]string{"string", "integer", "number", "boolean", "list", "literal"}[t]
}

// Definition describes one marker.
type Definition struct {
	Name   string
	Target Target
	Form   Form
	// Keys are the argument names of an Args marker.
	Keys []string
	// Help is one line for the marker reference and error messages.
	Help string
	// Type is the type of a Value marker's value.
	Type ValueType
	// Same names the marker this one is another spelling of (+required is
	// +kubebuilder:validation:Required): both parse into the same Go type, so Find finds
	// either.
	Same string
	// Pending is set for markers aagen recognises but does not apply yet; using one is a
	// warning, never silence.
	Pending string
	// Ignored is set for markers of other tools or of CustomResourceDefinitions that do
	// not apply to an aggregated API server (or that other generators read from the
	// comments themselves): it says why. They are accepted silently.
	Ignored string
	// Parse reads the marker's value into a Go value of a type of the marker's own (Minimum,
	// Resource, ...), found with Find; an error (a *Problem for a fix) is reported at the
	// marker. Nil for markers whose value aagen does not read.
	Parse func(Marker) (any, error)
}

// Canonical is the name of the marker this one is a spelling of: Same, or its own name.
func (d *Definition) Canonical() string {
	if d.Same != "" {
		return d.Same
	}
	return d.Name
}

// Status says what aagen does with the marker, for the reference.
func (d *Definition) Status() string {
	switch {
	case d.Pending != "":
		return "recognised, not applied yet (warning): " + d.Pending
	case d.Ignored != "":
		return "ignored: " + d.Ignored
	}
	return "applied"
}

// Marker is one parsed marker occurrence.
type Marker struct {
	Def   *Definition
	Value string            // Value form; "true"/"false" for Flag
	Text  string            // Value form: the value as written, quotes kept
	Args  map[string]string // Args form
	Pos   token.Position
	Raw   string
	// Parsed is the value read by Def.Parse (nil without one).
	Parsed any
}

// Diagnostic is a problem found in markers, with its position.
type Diagnostic struct {
	Pos     token.Position
	Warning bool
	Msg     string
	Fix     string
	// ValueMsg is set when the marker is known but its value does not parse: what is
	// wrong with it (Msg says it with the marker's text), for the caller to name the node.
	ValueMsg string
	// Name is the marker's name, with ValueMsg.
	Name string
}

func (d Diagnostic) Error() string { return fmt.Sprintf("%s: %s", d.Pos, d.Msg) }

// Registry holds marker definitions by name.
type Registry struct {
	defs  map[string]*Definition
	owned []string
	// toolOwned are the owned prefixes of another tool's markers: an unknown one that is
	// not a typo of a known one is a warning (see catalog.go).
	toolOwned []string
	byLength  []*Definition
}

// NewRegistry returns a registry of defs; owned are the prefixes whose unknown markers are errors.
func NewRegistry(owned []string, defs ...*Definition) *Registry {
	r := &Registry{defs: map[string]*Definition{}, owned: owned}
	for _, d := range defs {
		r.defs[d.Name] = d
		r.byLength = append(r.byLength, d)
	}
	sort.Slice(r.byLength, func(i, j int) bool { return len(r.byLength[i].Name) > len(r.byLength[j].Name) })
	return r
}

// Definitions returns every definition sorted by name (for the marker reference).
func (r *Registry) Definitions() []*Definition {
	out := append([]*Definition(nil), r.byLength...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Set is the markers found on one node.
type Set []Marker

// Parse reads the markers in the comment groups (in source order) of a node of kind
// target. It returns the known markers and diagnostics for unknown, misplaced or
// malformed ones under owned prefixes.
func (r *Registry) Parse(fset *token.FileSet, target Target, groups ...*ast.CommentGroup) (Set, []Diagnostic) {
	var out Set
	var diags []Diagnostic
	for _, g := range groups {
		if g == nil {
			continue
		}
		for _, c := range g.List {
			text, ok := markerText(c.Text)
			if !ok {
				continue
			}
			pos := fset.Position(c.Slash)
			m, diag, known := r.parseOne(text, pos, target)
			if diag != nil {
				diags = append(diags, *diag)
			}
			if known && diag == nil || known && diag.Warning {
				out = append(out, m)
			}
		}
	}
	return out, diags
}

// ParseText parses a single marker text without the leading "+" (for tests and fuzzing).
func (r *Registry) ParseText(text string, target Target) (Marker, *Diagnostic, bool) {
	return r.parseOne(text, token.Position{}, target)
}

// markerText returns the marker in a "// +..." comment line.
func markerText(comment string) (string, bool) {
	if !strings.HasPrefix(comment, "//") {
		return "", false
	}
	t := strings.TrimSpace(strings.TrimPrefix(comment, "//"))
	if !strings.HasPrefix(t, "+") || len(t) < 2 {
		return "", false
	}
	return t[1:], true
}

func (r *Registry) owns(name string) bool {
	for _, p := range r.owned {
		if name == strings.TrimSuffix(p, ":") || strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func (r *Registry) parseOne(text string, pos token.Position, target Target) (Marker, *Diagnostic, bool) {
	m := Marker{Pos: pos, Raw: "+" + text}
	head, value, hasValue := strings.Cut(text, "=")
	head = strings.TrimSpace(head)
	if hasValue && strings.HasSuffix(head, ":") {
		// "+name:=value", controller-tools' spelling of "+name=value".
		head = strings.TrimSuffix(head, ":")
		text = head + "=" + value
	}
	errf := func(format string, args ...any) *Diagnostic {
		return &Diagnostic{Pos: pos, Msg: fmt.Sprintf("marker %s: ", m.Raw) + fmt.Sprintf(format, args...)}
	}
	def := r.defs[head]
	var argText string
	if def == nil || def.Form == Args {
		// "+name:k=v,k=v": the longest known name that prefixes head followed by ':'.
		for _, d := range r.byLength {
			if d.Form == Args && (text == d.Name || strings.HasPrefix(text, d.Name+":")) {
				def = d
				argText = strings.TrimPrefix(strings.TrimPrefix(text, d.Name), ":")
				break
			}
			if d.Form == Raw && (head == d.Name || strings.HasPrefix(head, d.Name+":") || strings.HasPrefix(head, d.Name+".")) {
				def = d
				break
			}
		}
	}
	if def == nil {
		if !r.owns(head) {
			// Markers of other tools pass through, but one a letter or two away from a
			// marker aagen reads (+optinal, +defualt=3) is almost certainly a typo.
			if near := r.nearMiss(head); near != "" {
				return m, &Diagnostic{Pos: pos, Warning: true, Msg: fmt.Sprintf("unknown marker %q is ignored; did you mean +%s?", "+"+head, near)}, false
			}
			return m, nil, false
		}
		if r.toolOwns(head) && !r.typo(head) {
			msg := fmt.Sprintf("unknown marker %q is ignored, as controller-gen ignores markers it does not know: nothing checks it", "+"+head)
			if like := r.alike(head); like != "" {
				msg += fmt.Sprintf("; did you mean %s?", like)
			}
			return m, &Diagnostic{Pos: pos, Warning: true, Msg: msg}, false
		}
		msg := fmt.Sprintf("unknown marker %q", "+"+head)
		if near := r.nearest(head); near != "" {
			msg += fmt.Sprintf("; did you mean +%s?", near)
		}
		return m, &Diagnostic{Pos: pos, Msg: msg}, false
	}
	m.Def = def
	if def.Target&target == 0 {
		if r.toolOwns(def.Name) {
			// controller-gen reads a marker only where it is registered (a type's marker in a
			// package's doc comment is not seen): a CRD of these types ignores it too.
			return m, &Diagnostic{Pos: pos, Warning: true, Msg: fmt.Sprintf("marker %s: +%s belongs on a %s, not on a %s: it is ignored here, as controller-gen ignores it; move it if it is meant",
				m.Raw, def.Name, def.Target, target)}, false
		}
		return m, errf("+%s belongs on a %s, not on a %s; move it", def.Name, def.Target, target), true
	}
	switch def.Form {
	case Raw:
		m.Value = strings.TrimSpace(value)
		if def.Parse == nil {
			return m, nil, true
		}
	case Flag:
		m.Value = "true"
		if hasValue {
			v := strings.TrimSpace(value)
			if v != "true" && v != "false" {
				return m, errf("+%s takes no value or =true/=false, got %q", def.Name, v), true
			}
			m.Value = v
		}
	case Value:
		if !hasValue || strings.TrimSpace(value) == "" {
			return m, errf("+%s needs a value: +%s=<value>", def.Name, def.Name), true
		}
		m.Text = strings.TrimSpace(value)
		if strings.HasPrefix(def.Name, "k8s:") {
			// k8s.io/gengo's tag syntax: "+k8s:maximum=1000 # why" ends with a comment.
			if i := strings.Index(m.Text, "#"); i > 0 && (m.Text[i-1] == ' ' || m.Text[i-1] == '\t') {
				m.Text = strings.TrimSpace(m.Text[:i])
			}
		}
		m.Value = unquote(m.Text)
		if def.Type == StringList {
			// Each item is unquoted by List: "a";"b" is two quoted items, not one quoted value.
			m.Value = m.Text
		}
	case Args:
		args, err := splitArgs(argText)
		if err != nil {
			return m, errf("%v", err), true
		}
		for k := range args {
			if !slices.Contains(def.Keys, k) {
				msg := fmt.Sprintf("unknown argument %q of +%s (known: %s)", k, def.Name, strings.Join(def.Keys, ", "))
				if near := nearestOf(k, def.Keys); near != "" {
					msg += fmt.Sprintf("; did you mean %s?", near)
				}
				return m, errf("%s", msg), true
			}
		}
		m.Args = args
	}
	if def.Parse != nil {
		v, err := def.Parse(m)
		if err != nil {
			d := errf("%v", err)
			d.Name, d.ValueMsg = def.Name, err.Error()
			var p *Problem
			if errors.As(err, &p) {
				d.Fix = p.Fix
			}
			return m, d, true
		}
		m.Parsed = v
	}
	if def.Pending != "" {
		return m, &Diagnostic{Pos: pos, Warning: true, Msg: fmt.Sprintf("marker +%s is recognised but not applied yet: %s", def.Name, def.Pending)}, true
	}
	return m, nil, true
}

// splitArgs splits "k=v,k2={a,b},k3=\"x,y\"" at top-level commas.
func splitArgs(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	var parts []string
	depth, quote, start := 0, byte(0), 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '`':
			quote = c
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced '}' in arguments %q", s)
			}
		case c == ',' && depth == 0:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in arguments %q", s)
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced '{' in arguments %q", s)
	}
	parts = append(parts, s[start:])
	for _, p := range parts {
		k, v, ok := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("argument %q is not key=value", strings.TrimSpace(p))
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("argument %q given twice", k)
		}
		out[k] = unquote(strings.TrimSpace(v))
	}
	return out, nil
}

// List splits a list argument: "a;b", "{a,b}" or "a". A separator inside a quoted item is
// part of it, as for controller-gen: +kubebuilder:validation:Enum="a;b";"c" has two values.
func List(v string) []string {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}") {
		return cleanList(splitUnquoted(v[1:len(v)-1], ','))
	}
	return cleanList(splitUnquoted(v, ';'))
}

// splitUnquoted splits v at each sep that stands outside a double-quoted (with backslash
// escapes) or back-quoted part.
func splitUnquoted(v string, sep byte) []string {
	var out []string
	var quote byte
	start := 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case quote == '"' && c == '\\':
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '`':
			quote = c
		case c == sep:
			out = append(out, v[start:i])
			start = i + 1
		}
	}
	return append(out, v[start:])
}

// cleanList trims and unquotes the items, dropping the empty ones ("a;" or "a;;b"); a
// quoted empty string ("") is kept, as controller-gen keeps it: kueue's
// +kubebuilder:validation:Enum=kueue.x-k8s.io/workloadpriorityclass;scheduling.k8s.io/priorityclass;"".
func cleanList(in []string) []string {
	var out []string
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, unquote(s))
		}
	}
	return out
}

// unquote removes the quotes around a value. A double-quoted value is a Go string literal
// (as for controller-gen: ".status.conditions[?(@.type==\"Ready\")].status"); one that is
// not a valid literal, and a back-quoted value, just lose their quotes.
func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
		return s[1 : len(s)-1]
	}
	if len(s) >= 2 && s[0] == '`' && s[len(s)-1] == '`' {
		return s[1 : len(s)-1]
	}
	return s
}

func (r *Registry) nearest(name string) string {
	names := make([]string, 0, len(r.defs))
	for n := range r.defs {
		names = append(names, n)
	}
	sort.Strings(names)
	return nearestOf(name, names)
}

// toolOwns says whether name is under a prefix of another tool's markers.
func (r *Registry) toolOwns(name string) bool {
	for _, p := range r.toolOwned {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// typo says whether name is one or two edits away from a known marker name (compared
// without case): +kubebuilder:validation:Minimun, +kubebuilder:validation:maximum.
func (r *Registry) typo(name string) bool {
	for n := range r.defs {
		if d := distance(strings.ToLower(name), strings.ToLower(n)); d <= 2 {
			return true
		}
	}
	return false
}

// alike returns the known marker names under the same prefix whose last element contains
// name's last element (+kubebuilder:validation:OneOf: AtLeastOneOf, AtMostOneOf,
// ExactlyOneOf), as "+a, +b or +c", or "".
func (r *Registry) alike(name string) string {
	i := strings.LastIndex(name, ":")
	if i < 0 || i == len(name)-1 {
		return ""
	}
	prefix, last := name[:i+1], strings.ToLower(name[i+1:])
	var names []string
	for n := range r.defs {
		rest, ok := strings.CutPrefix(n, prefix)
		if ok && !strings.Contains(rest, ":") && strings.Contains(strings.ToLower(rest), last) {
			names = append(names, "+"+n)
		}
	}
	sort.Strings(names)
	if len(names) > 3 {
		return ""
	}
	if len(names) > 1 {
		return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
	}
	return strings.Join(names, "")
}

// nearMiss returns the known marker name outside aagen's own prefixes (+optional,
// +required, +default, ...) that name is a likely typo of: one or two edits away, for names
// of five letters or more, or "".
func (r *Registry) nearMiss(name string) string {
	if len(name) < 5 {
		return ""
	}
	best, bestD := "", 3
	for n := range r.defs {
		if r.owns(n) || strings.EqualFold(n, name) {
			continue
		}
		if d := distance(strings.ToLower(name), strings.ToLower(n)); d > 0 && d < bestD || d == bestD && n < best {
			best, bestD = n, d
		}
	}
	return best
}

// nearestOf returns the candidate closest to s by edit distance, if close enough to be a typo.
func nearestOf(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := distance(strings.ToLower(s), strings.ToLower(c))
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 || bestD > max(3, len(s)/3) {
		return ""
	}
	return best
}

func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
