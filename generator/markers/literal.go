package markers

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// LiteralKind is the syntactic shape of a marker value in controller-tools' literal syntax.
type LiteralKind int

// Shapes of literal values.
const (
	// Bare is an unquoted word or phrase (forty-two, 3, true, Same): its type comes from
	// the field it is applied to.
	Bare LiteralKind = iota
	// Quoted is a double-quoted (Go escapes) or back-quoted (raw) string: always a string.
	Quoted
	// ListLit is "{a, b}", "a;b", or JSON's "[a, b]".
	ListLit
	// MapLit is "{key: value, ...}" or a JSON object.
	MapLit
	// EmptyBraces is "{}": an empty list or an empty object, whichever the field is.
	EmptyBraces
	// JSONNull is a value written as JSON null.
	JSONNull
)

// Literal is a marker value parsed with controller-tools' literal syntax (the syntax of
// +kubebuilder:default and +kubebuilder:example): "{key: value}" maps, "{a, b}" lists,
// nested, unquoted strings, double-quoted strings with Go escapes and raw back-quoted
// strings. Values written as JSON parse to the same tree. Its Go or JSON type is decided
// by what it is applied to (see the model's defaults): Literal only records the shape.
type Literal struct {
	Kind LiteralKind
	// Text is the word of a Bare literal and the string of a Quoted one.
	Text string
	// Items are the elements of a ListLit.
	Items []Literal
	// Keys and Values are the entries of a MapLit, in source order.
	Keys   []string
	Values []Literal
}

// ParseLiteral parses a marker value in controller-tools' literal syntax, or as JSON.
func ParseLiteral(s string) (Literal, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Literal{}, fmt.Errorf("empty value")
	}
	if s[0] == '[' || s[0] == '{' || s == "null" {
		// JSON first: lists are only JSON, and a JSON object is a literal map too.
		var v any
		if err := json.Unmarshal([]byte(s), &v); err == nil {
			return fromJSON(v), nil
		} else if s[0] == '[' {
			return Literal{}, fmt.Errorf("%s is not JSON: %v", s, err)
		}
	}
	p := &literalParser{src: s}
	lit, err := p.value()
	if err != nil {
		return Literal{}, err
	}
	p.space()
	if p.pos < len(p.src) {
		return Literal{}, fmt.Errorf("unexpected %q at offset %d of %s", p.src[p.pos:], p.pos, s)
	}
	return lit, nil
}

func fromJSON(v any) Literal {
	switch v := v.(type) {
	case nil:
		return Literal{Kind: JSONNull}
	case string:
		return Literal{Kind: Quoted, Text: v}
	case bool:
		return Literal{Kind: Bare, Text: strconv.FormatBool(v)}
	case float64:
		return Literal{Kind: Bare, Text: strconv.FormatFloat(v, 'f', -1, 64)}
	case []any:
		out := Literal{Kind: ListLit, Items: []Literal{}}
		for _, x := range v {
			out.Items = append(out.Items, fromJSON(x))
		}
		return out
	case map[string]any:
		if len(v) == 0 {
			return Literal{Kind: EmptyBraces}
		}
		out := Literal{Kind: MapLit}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out.Keys = append(out.Keys, k)
			out.Values = append(out.Values, fromJSON(v[k]))
		}
		return out
	}
	return Literal{Kind: Bare, Text: fmt.Sprint(v)}
}

type literalParser struct {
	src string
	pos int
}

func (p *literalParser) space() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

func (p *literalParser) peek() byte {
	p.space()
	if p.pos >= len(p.src) {
		return 0
	}
	return p.src[p.pos]
}

// value parses one value: a scalar, braces, or a bare "a;b" list (controller-tools'
// slice syntax without braces).
func (p *literalParser) value() (Literal, error) {
	first, err := p.scalarOrBraces(false)
	if err != nil {
		return Literal{}, err
	}
	if p.peek() != ';' {
		return first, nil
	}
	list := Literal{Kind: ListLit, Items: []Literal{first}}
	for p.peek() == ';' {
		p.pos++
		item, err := p.scalarOrBraces(false)
		if err != nil {
			return Literal{}, err
		}
		list.Items = append(list.Items, item)
	}
	return list, nil
}

func (p *literalParser) scalarOrBraces(inMap bool) (Literal, error) {
	switch c := p.peek(); c {
	case 0:
		return Literal{}, fmt.Errorf("missing value at the end of %s", p.src)
	case '{':
		return p.braces()
	case '"', '`':
		s, err := p.quoted()
		if err != nil {
			return Literal{}, err
		}
		return Literal{Kind: Quoted, Text: s}, nil
	}
	start := p.pos
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == ',' || c == ';' || c == '}' || inMap && c == ':' {
			break
		}
		p.pos++
	}
	word := strings.TrimSpace(p.src[start:p.pos])
	if word == "" {
		return Literal{}, fmt.Errorf("missing value at offset %d of %s", start, p.src)
	}
	return Literal{Kind: Bare, Text: word}, nil
}

// quoted reads a "..." (Go escapes) or `...` (raw) string at p.pos.
func (p *literalParser) quoted() (string, error) {
	q := p.src[p.pos]
	end := p.pos + 1
	for end < len(p.src) && p.src[end] != q {
		if q == '"' && p.src[end] == '\\' {
			end++
		}
		end++
	}
	if end >= len(p.src) {
		return "", fmt.Errorf("unterminated string %s", p.src[p.pos:])
	}
	raw := p.src[p.pos : end+1]
	p.pos = end + 1
	s, err := strconv.Unquote(raw)
	if err != nil {
		return "", fmt.Errorf("string %s: %v", raw, err)
	}
	return s, nil
}

// braces reads "{}", "{a, b}" (a list) or "{k: v, ...}" (a map): a map when the first
// element is a string followed by ':', as controller-tools decides.
func (p *literalParser) braces() (Literal, error) {
	open := p.pos
	p.pos++ // '{'
	if p.peek() == '}' {
		p.pos++
		return Literal{Kind: EmptyBraces}, nil
	}
	isMap := p.looksLikeMap()
	out := Literal{Kind: ListLit}
	if isMap {
		out.Kind = MapLit
	}
	for {
		if isMap {
			var key string
			if c := p.peek(); c == '"' || c == '`' {
				k, err := p.quoted()
				if err != nil {
					return Literal{}, err
				}
				key = k
			} else {
				k, err := p.scalarOrBraces(true)
				if err != nil {
					return Literal{}, err
				}
				if k.Kind != Bare {
					return Literal{}, fmt.Errorf("map key at offset %d of %s is not a string", p.pos, p.src)
				}
				key = k.Text
			}
			if p.peek() != ':' {
				return Literal{}, fmt.Errorf("expected ':' after map key %q in %s", key, p.src)
			}
			p.pos++
			v, err := p.value()
			if err != nil {
				return Literal{}, err
			}
			for _, k := range out.Keys {
				if k == key {
					return Literal{}, fmt.Errorf("map key %q given twice in %s", key, p.src)
				}
			}
			out.Keys = append(out.Keys, key)
			out.Values = append(out.Values, v)
		} else {
			v, err := p.value()
			if err != nil {
				return Literal{}, err
			}
			out.Items = append(out.Items, v)
		}
		switch p.peek() {
		case ',':
			p.pos++
			if p.peek() == '}' { // a trailing comma
				p.pos++
				return out, nil
			}
		case '}':
			p.pos++
			return out, nil
		default:
			return Literal{}, fmt.Errorf("unclosed '{' at offset %d of %s", open, p.src)
		}
	}
}

// looksLikeMap reports whether the braces at p.pos start with "key:".
func (p *literalParser) looksLikeMap() bool {
	save := p.pos
	defer func() { p.pos = save }()
	switch c := p.peek(); c {
	case '{':
		return false
	case '"', '`':
		if _, err := p.quoted(); err != nil {
			return false
		}
	default:
		if _, err := p.scalarOrBraces(true); err != nil {
			return false
		}
	}
	return p.peek() == ':'
}

// String renders the literal in controller-tools' syntax.
func (l Literal) String() string {
	switch l.Kind {
	case Quoted:
		return strconv.Quote(l.Text)
	case ListLit:
		parts := make([]string, len(l.Items))
		for i, it := range l.Items {
			parts[i] = it.String()
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case MapLit:
		parts := make([]string, len(l.Keys))
		for i, k := range l.Keys {
			parts[i] = k + ": " + l.Values[i].String()
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case EmptyBraces:
		return "{}"
	case JSONNull:
		return "null"
	}
	return l.Text
}

// Guess returns the JSON value of a literal applied to a value of unknown type
// (interface{}, runtime.RawExtension), as controller-tools guesses it: true and false
// are booleans, integers and decimal numbers are numbers, other words are strings, "{}"
// is an empty object.
func (l Literal) Guess() any {
	switch l.Kind {
	case Quoted:
		return l.Text
	case JSONNull:
		return nil
	case ListLit:
		out := make([]any, len(l.Items))
		for i, it := range l.Items {
			out[i] = it.Guess()
		}
		return out
	case MapLit:
		out := make(map[string]any, len(l.Keys))
		for i, k := range l.Keys {
			out[k] = l.Values[i].Guess()
		}
		return out
	case EmptyBraces:
		return map[string]any{}
	}
	switch l.Text {
	case "true":
		return true
	case "false":
		return false
	}
	if isDecimalNumber(l.Text) {
		return json.Number(l.Text)
	}
	return l.Text
}

// isDecimalNumber reports whether s is a JSON number (no leading zeros, no octal or hex:
// controller-tools reads "0987" and "087bdd" as strings).
func isDecimalNumber(s string) bool {
	var v json.Number
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return false
	}
	return string(v) == s
}

// Shape is the JSON type a literal is read as: the schema type of the field a default
// or example is applied to.
type Shape struct {
	// Type is string, integer, number, boolean, int-or-string, array, object or "" (any
	// value: interface{}, runtime.RawExtension, free-form JSON).
	Type string
	// Items is the shape of an array's elements.
	Items *Shape
	// Properties are a struct's fields by JSON name (nil for a map).
	Properties map[string]*Shape
	// Values is the shape of a map's values (nil for a struct).
	Values *Shape
}

// MismatchError is a literal that does not fit the shape it is read as.
type MismatchError struct {
	// Path leads from the literal to the mismatching part ("item 1", "from"); empty
	// when the whole literal mismatches.
	Path []string
	// Msg says what is wrong.
	Msg string
	// WrongType is set when the value is not of the shape's type (rather than, say, an
	// object with a key the struct does not have).
	WrongType bool
}

func (e *MismatchError) Error() string {
	if len(e.Path) == 0 {
		return e.Msg
	}
	return strings.Join(e.Path, ".") + ": " + e.Msg
}

func (e *MismatchError) under(p string) *MismatchError {
	return &MismatchError{Path: append([]string{p}, e.Path...), Msg: e.Msg, WrongType: e.WrongType}
}

// JSON returns the JSON value of l read as shape s (nil: any value, guessed as
// controller-tools does): on a string an unquoted word is a string, on an integer it is
// a number, "{}" is an empty list or object, "{k: v}" on a struct is an object whose keys
// must be the struct's JSON field names. A value that does not fit is a *MismatchError.
func (l Literal) JSON(s *Shape) (any, error) {
	v, err := l.json(s)
	if err != nil {
		return nil, err
	}
	return v, nil
}

func (l Literal) json(s *Shape) (any, *MismatchError) {
	if s == nil || s.Type == "" {
		return l.Guess(), nil
	}
	mismatch := func() *MismatchError {
		return &MismatchError{Msg: fmt.Sprintf("%s is not %s", l.String(), Article(s.Type)), WrongType: true}
	}
	if l.Kind == JSONNull {
		return nil, mismatch()
	}
	switch s.Type {
	case "string":
		if l.Kind == Bare || l.Kind == Quoted {
			return l.Text, nil
		}
		return nil, mismatch()
	case "boolean":
		if l.Kind == Bare && (l.Text == "true" || l.Text == "false") {
			return l.Text == "true", nil
		}
		return nil, mismatch()
	case "integer", "number":
		if l.Kind != Bare || !isDecimalNumber(l.Text) {
			return nil, mismatch()
		}
		if s.Type == "integer" {
			if _, err := strconv.ParseInt(l.Text, 10, 64); err != nil {
				return nil, mismatch()
			}
		}
		return json.Number(l.Text), nil
	case "int-or-string":
		switch {
		case l.Kind == Bare && isDecimalNumber(l.Text):
			if _, err := strconv.ParseInt(l.Text, 10, 64); err != nil {
				return nil, mismatch()
			}
			return json.Number(l.Text), nil
		case l.Kind == Bare || l.Kind == Quoted:
			return l.Text, nil
		}
		return nil, mismatch()
	case "array":
		switch l.Kind {
		case EmptyBraces:
			return []any{}, nil
		case ListLit:
		default:
			return nil, mismatch()
		}
		out := make([]any, 0, len(l.Items))
		for i, it := range l.Items {
			v, err := it.json(s.Items)
			if err != nil {
				return nil, err.under(fmt.Sprintf("[%d]", i))
			}
			out = append(out, v)
		}
		return out, nil
	case "object":
		switch l.Kind {
		case EmptyBraces:
			return map[string]any{}, nil
		case MapLit:
		default:
			return nil, mismatch()
		}
		out := make(map[string]any, len(l.Keys))
		for i, k := range l.Keys {
			vs := s.Values
			if s.Properties != nil {
				p, ok := s.Properties[k]
				if !ok {
					known := make([]string, 0, len(s.Properties))
					for n := range s.Properties {
						known = append(known, n)
					}
					sort.Strings(known)
					msg := fmt.Sprintf("no field %q (fields: %s)", k, strings.Join(known, ", "))
					if near := nearestOf(k, known); near != "" {
						msg += fmt.Sprintf("; did you mean %s?", near)
					}
					return nil, &MismatchError{Msg: msg}
				}
				vs = p
			}
			v, err := l.Values[i].json(vs)
			if err != nil {
				return nil, err.under(k)
			}
			out[k] = v
		}
		return out, nil
	}
	return l.Guess(), nil
}
