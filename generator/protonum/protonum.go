// Package protonum keeps the protobuf field numbers of an API package's types stable
// without editing the user's Go files (docs/protobuf.md).
//
// code-generator's go-to-protobuf numbers fields and then writes the numbers into the Go
// types as `protobuf:"..."` struct tags, so that the next run finds them. aagen never edits
// the user's files; instead the numbers live in a file aagen writes next to the generated
// code and the user commits. A field's number comes from its own `protobuf:` tag when it
// has one (types written in k8s.io/api's style keep their numbers), else from the file,
// else it is new and gets the type's highest number ever used plus one, in declaration
// order. A field that disappears leaves its number reserved in the file, never to be given
// again. So numbers never change as fields are added, removed or reordered.
//
// This package is the numbering only; generator/emit's Protobuf (zz_generated.protobuf.go)
// calls it for every API package and writes the file back.
package protonum

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// FileName is the name of the numbers file in an API package's directory.
const FileName = "zz_generated.protobuf-numbers.txt"

// Field is a field of a Go type that is a protobuf field (inline fields such as TypeMeta
// are not).
type Field struct {
	// Name is the Go field name.
	Name string
	// Tag is the field's `protobuf:"..."` struct tag, "" without one.
	Tag string
	// Pos is the field's position (file:line), for errors.
	Pos string
}

// Type is a Go struct that is a protobuf message, with its fields in declaration order.
type Type struct {
	Name   string
	Fields []Field
}

// Numbers are the field numbers of a package's types.
type Numbers struct {
	types map[string]*typeNumbers
}

// typeNumbers are the numbers of one type: of its current fields, and the reserved ones of
// fields that were removed.
type typeNumbers struct {
	fields   map[string]int
	reserved map[int]bool
}

// Parse reads a numbers file; file names it in errors. Empty data is an empty file.
func Parse(data []byte, file string) (*Numbers, error) {
	n := &Numbers{types: map[string]*typeNumbers{}}
	var cur *typeNumbers
	var curName string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		trimmed := strings.TrimSpace(text)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		fail := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s (the file is written by aagen generate; restore it from version control)", file, line, fmt.Sprintf(format, args...))
		}
		if !strings.HasPrefix(text, " ") {
			name, ok := strings.CutSuffix(trimmed, ":")
			if !ok || name == "" || strings.ContainsAny(name, " :") {
				return nil, fail("want a type name followed by ':', got %q", trimmed)
			}
			if n.types[name] != nil {
				return nil, fail("type %s appears twice", name)
			}
			curName = name
			cur = &typeNumbers{fields: map[string]int{}, reserved: map[int]bool{}}
			n.types[name] = cur
			continue
		}
		if cur == nil {
			return nil, fail("field line before any type")
		}
		key, value, ok := strings.Cut(trimmed, ":")
		if !ok {
			return nil, fail("want 'Field: number' or 'reserved: n, m', got %q", trimmed)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if key == "reserved" {
			for _, s := range strings.Split(value, ",") {
				num, err := parseNumber(strings.TrimSpace(s))
				if err != nil {
					return nil, fail("reserved number of %s: %v", curName, err)
				}
				cur.reserved[num] = true
			}
			continue
		}
		num, err := parseNumber(value)
		if err != nil {
			return nil, fail("%s.%s: %v", curName, key, err)
		}
		if _, dup := cur.fields[key]; dup {
			return nil, fail("field %s.%s appears twice", curName, key)
		}
		cur.fields[key] = num
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	for name, tn := range n.types {
		seen := map[int]string{}
		for f, num := range tn.fields {
			if other, ok := seen[num]; ok {
				return nil, fmt.Errorf("%s: %s.%s and %s.%s have the same number %d (restore the file from version control)", file, name, f, name, other, num)
			}
			if tn.reserved[num] {
				return nil, fmt.Errorf("%s: %s.%s has number %d, which is reserved (restore the file from version control)", file, name, f, num)
			}
			seen[num] = f
		}
	}
	return n, nil
}

// parseNumber parses a protobuf field number (1 to 2^29-1, without the reserved range
// 19000-19999 of the protobuf implementation).
func parseNumber(s string) (int, error) {
	num, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if num < 1 || num > 1<<29-1 || (num >= 19000 && num <= 19999) {
		return 0, fmt.Errorf("%d is not a valid protobuf field number", num)
	}
	return num, nil
}

// TagNumber returns the field number in a `protobuf:"bytes,3,opt,name=spec"` struct tag.
func TagNumber(tag string) (int, error) {
	parts := strings.Split(tag, ",")
	if len(parts) < 2 {
		return 0, fmt.Errorf("protobuf tag %q: want \"<wire type>,<number>,...\"", tag)
	}
	return parseNumber(parts[1])
}

// Number returns the number of typ's field, and whether it has one.
func (n *Numbers) Number(typ, field string) (int, bool) {
	tn := n.types[typ]
	if tn == nil {
		return 0, false
	}
	num, ok := tn.fields[field]
	return num, ok
}

// Assign returns the numbers of types: n's numbers, with the fields' own tags, new fields
// numbered, and removed fields' numbers reserved. n is not changed. Types that n knows and
// types does not list keep their numbers (a type that comes back gets them again). An
// error names the field's position and how to fix it.
func (n *Numbers) Assign(types []Type) (*Numbers, error) {
	out := &Numbers{types: map[string]*typeNumbers{}}
	for name, tn := range n.types {
		out.types[name] = &typeNumbers{fields: maps.Clone(tn.fields), reserved: maps.Clone(tn.reserved)}
	}
	for _, t := range types {
		old := out.types[t.Name]
		if old == nil {
			old = &typeNumbers{fields: map[string]int{}, reserved: map[int]bool{}}
		}
		next := &typeNumbers{fields: map[string]int{}, reserved: maps.Clone(old.reserved)}
		owner := map[int]string{}
		// First the fields with their own tags, then those the file knows, then new ones.
		for _, f := range t.Fields {
			if f.Tag == "" {
				continue
			}
			num, err := TagNumber(f.Tag)
			if err != nil {
				return nil, fmt.Errorf("%s: %s.%s: %v; fix the tag or remove it (aagen numbers untagged fields)", f.Pos, t.Name, f.Name, err)
			}
			if was, ok := old.fields[f.Name]; ok && was != num {
				return nil, fmt.Errorf("%s: %s.%s has protobuf tag number %d, but it was %d (%s): a changed number breaks stored objects and clients; restore the tag's number %d", f.Pos, t.Name, f.Name, num, was, FileName, was)
			}
			if next.reserved[num] {
				return nil, fmt.Errorf("%s: %s.%s has protobuf tag number %d, which a removed field used (reserved in %s); choose another number", f.Pos, t.Name, f.Name, num, FileName)
			}
			if other, ok := owner[num]; ok {
				return nil, fmt.Errorf("%s: %s.%s and %s.%s have the same protobuf tag number %d; give one of them another number", f.Pos, t.Name, f.Name, t.Name, other, num)
			}
			owner[num] = f.Name
			next.fields[f.Name] = num
		}
		for _, f := range t.Fields {
			if f.Tag != "" {
				continue
			}
			num, ok := old.fields[f.Name]
			if !ok {
				continue
			}
			if other, taken := owner[num]; taken {
				return nil, fmt.Errorf("%s: %s.%s has protobuf tag number %d, which %s.%s has (%s); give %s another number", positionOf(t, other), t.Name, other, num, t.Name, f.Name, FileName, other)
			}
			owner[num] = f.Name
			next.fields[f.Name] = num
		}
		highest := 0
		for num := range old.reserved {
			highest = max(highest, num)
		}
		for _, num := range old.fields {
			highest = max(highest, num)
		}
		for num := range owner {
			highest = max(highest, num)
		}
		for _, f := range t.Fields {
			if _, ok := next.fields[f.Name]; ok {
				continue
			}
			highest++
			if highest == 19000 {
				highest = 20000
			}
			next.fields[f.Name] = highest
		}
		// Fields that are gone keep their numbers out of use.
		for name, num := range old.fields {
			if _, ok := next.fields[name]; !ok {
				next.reserved[num] = true
			}
		}
		out.types[t.Name] = next
	}
	return out, nil
}

func positionOf(t Type, field string) string {
	for _, f := range t.Fields {
		if f.Name == field {
			return f.Pos
		}
	}
	return t.Name
}

// Marshal returns the file's content: types by name, fields by number, then the reserved
// numbers; the same numbers always give the same bytes.
func (n *Numbers) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString("# Protobuf field numbers of this package's API types, written by aagen generate.\n")
	b.WriteString("# Commit this file: a number, once given to a field, is never changed or given again.\n")
	for _, name := range slices.Sorted(maps.Keys(n.types)) {
		tn := n.types[name]
		fmt.Fprintf(&b, "%s:\n", name)
		fields := slices.SortedFunc(maps.Keys(tn.fields), func(a, c string) int { return tn.fields[a] - tn.fields[c] })
		for _, f := range fields {
			fmt.Fprintf(&b, "  %s: %d\n", f, tn.fields[f])
		}
		if len(tn.reserved) > 0 {
			var nums []string
			for _, num := range slices.Sorted(maps.Keys(tn.reserved)) {
				nums = append(nums, strconv.Itoa(num))
			}
			fmt.Fprintf(&b, "  reserved: %s\n", strings.Join(nums, ", "))
		}
	}
	return b.Bytes()
}
