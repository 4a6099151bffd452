package model

import (
	"fmt"
	"go/token"
	"slices"
	"strings"

	"k8s.io/client-go/util/jsonpath"

	"github.com/aagen-dev/aagen/generator/markers"
)

// Column types and formats a CRD's additionalPrinterColumns accept.
var (
	columnTypes   = []string{"integer", "number", "string", "boolean", "date"}
	columnFormats = []string{"int32", "int64", "float", "double", "byte", "date", "date-time", "password"}
)

// jsonPathMarkers reads the markers that name JSON paths into a kind and shape how it is served:
// printer columns, selectable fields and the /scale subresource. It reports false when
// any of them is wrong.
func (b *builder) jsonPathMarkers(k *Kind, d *typeDecl) bool {
	root := &TypeExpr{Kind: ExprNamed, Name: GoType{Pkg: k.Version.ImportPath, Name: k.Name}, String: k.Name}
	good := true
	seenCols := map[string]token.Position{}
	for _, pc := range markers.FindAll[markers.PrintColumn](d.markers) {
		m := pc.Marker
		col, ok := b.printColumn(k, root, pc.Value, m)
		if !ok {
			good = false
			continue
		}
		if prev, dup := seenCols[col.Name]; dup {
			// kube-apiserver takes a CRD with two columns of one name, and kubectl prints both
			// (Cluster API's MachineDeployment ships one), so both are kept.
			b.warnf(m.Pos, "give each column its own name", "%s has two printer columns named %q (the first at line %d): both are kept, and kubectl prints both under that heading", k.Name, col.Name, prev.Line)
		} else {
			seenCols[col.Name] = m.Pos
		}
		k.PrintColumns = append(k.PrintColumns, col)
	}
	seenFields := map[string]token.Position{}
	for _, sf := range markers.FindAll[markers.SelectableField](d.markers) {
		m := sf.Marker
		fp, ok := b.selectableField(k, root, sf.Value.JSONPath, m)
		if !ok {
			good = false
			continue
		}
		if prev, dup := seenFields[fp.Label()]; dup {
			b.errorf(m.Pos, "remove one of them", "%s lists selectable field %s twice (the first at line %d)", k.Name, fp.JSONPath, prev.Line)
			good = false
			continue
		}
		seenFields[fp.Label()] = m.Pos
		k.SelectableFields = append(k.SelectableFields, fp)
	}
	if ms := markers.FindAll[markers.Scale](d.markers); len(ms) > 0 {
		if len(ms) > 1 {
			b.errorf(ms[1].Pos, "keep one +kubebuilder:subresource:scale marker", "%s has more than one +kubebuilder:subresource:scale marker", k.Name)
			good = false
		} else if sc, ok := b.scale(k, root, ms[0].Value, ms[0].Marker); ok {
			k.Scale = sc
		} else {
			good = false
		}
	}
	return good
}

func (b *builder) printColumn(k *Kind, root *TypeExpr, pc markers.PrintColumn, m markers.Marker) (PrintColumn, bool) {
	col := PrintColumn{
		Name: pc.Name, Type: pc.Type, Format: pc.Format,
		Description: pc.Description, JSONPath: pc.JSONPath, Priority: pc.Priority,
	}
	good := true
	fail := func(fix, format string, args ...any) {
		b.errorf(m.Pos, fix, "+kubebuilder:printcolumn of %s: "+format, append([]any{k.Name}, args...)...)
		good = false
	}
	if strings.TrimSpace(col.Name) == "" {
		fail("add name=<column header>, e.g. name=Phase", "name is required")
	}
	switch {
	case col.Type == "":
		fail("add type=integer|number|string|boolean|date", "type is required")
	case !slices.Contains(columnTypes, col.Type):
		fail("use type=integer|number|string|boolean|date", "type=%s is not one of %s", col.Type, strings.Join(columnTypes, ", "))
	}
	if col.Format != "" && !slices.Contains(columnFormats, col.Format) {
		fail("use one of format="+strings.Join(columnFormats, "|")+", or leave format out", "format=%s is not one of %s", col.Format, strings.Join(columnFormats, ", "))
	}
	if col.JSONPath == "" {
		fail("add JSONPath=<path>, e.g. JSONPath=.status.phase", "JSONPath is required")
		return col, false
	}
	names, simple, err := parseJSONPath(col.JSONPath)
	if err != nil {
		fail("write a JSONPath such as .spec.size or .status.conditions[?(@.type==\"Ready\")].status (quote it when it has commas)",
			"JSONPath %s: %v", col.JSONPath, err)
		return col, false
	}
	w, err := b.types.walkJSON(root, k.Name, names)
	if err != nil {
		// A CRD takes such a column (its JSONPath is only parsed) and prints it empty;
		// published CRDs ship them (OpenShift's routes), so it is a warning.
		b.warnf(m.Pos, "point JSONPath at a field of "+k.Name+" by its JSON name, or remove the column",
			"+kubebuilder:printcolumn of %s: JSONPath %s: %v; the column %q is kept and prints empty, as a CRD's would", k.Name, col.JSONPath, err, col.Name)
		return col, good
	}
	if simple && len(w.rest) == 0 && good {
		if got, ok := b.types.columnFits(col.Type, w.leaf); !ok {
			fail("use type="+suggestColumnType(got)+", or point JSONPath at a field of that type",
				"column %q has type=%s but %s is %s", col.Name, col.Type, col.JSONPath, got)
		}
	}
	return col, good
}

func (b *builder) selectableField(k *Kind, root *TypeExpr, jp string, m markers.Marker) (FieldPath, bool) {
	fail := func(fix, format string, args ...any) (FieldPath, bool) {
		b.errorf(m.Pos, fix, "+kubebuilder:selectablefield of %s: "+format, append([]any{k.Name}, args...)...)
		return FieldPath{}, false
	}
	if jp == "" {
		return fail("add JSONPath=<path>, e.g. JSONPath=.spec.color", "JSONPath is required")
	}
	if jp == ".metadata" || strings.HasPrefix(jp, ".metadata.") {
		return fail("select on metadata.name and metadata.namespace without a marker; other metadata is not selectable",
			"JSONPath %s points into metadata", jp)
	}
	fp, leaf, err := b.types.resolveSimple(root, k.Name, jp)
	if err != nil {
		return fail("point JSONPath at a string, integer or boolean field of "+k.Name+" by its JSON names, e.g. .spec.color", "JSONPath %s: %v", jp, err)
	}
	if fp.Leaf == "" || fp.Leaf == "number" {
		return fail("select on a string, integer or boolean field (like a CRD's selectableFields)",
			"JSONPath %s is %s; selectable fields must be strings, integers or booleans", jp, describeType(leaf))
	}
	return fp, true
}

func (b *builder) scale(k *Kind, root *TypeExpr, marked markers.Scale, m markers.Marker) (*Scale, bool) {
	paths := map[string]string{"specpath": marked.SpecPath, "statuspath": marked.StatusPath, "selectorpath": marked.SelectorPath}
	good := true
	path := func(key, example string, under []string, basic string, required bool) *FieldPath {
		jp := paths[key]
		fail := func(fix, format string, args ...any) *FieldPath {
			b.errorf(m.Pos, fix, "+kubebuilder:subresource:scale of %s: "+format, append([]any{k.Name}, args...)...)
			good = false
			return nil
		}
		if jp == "" {
			if required {
				return fail("add "+key+"="+example, "%s is required", key)
			}
			return nil
		}
		if !slices.ContainsFunc(under, func(prefix string) bool { return strings.HasPrefix(jp, prefix+".") }) {
			return fail("use a path under "+strings.Join(under, " or ")+", e.g. "+key+"="+example, "%s=%s is not under %s", key, jp, strings.Join(under, " or "))
		}
		fp, leaf, err := b.types.resolveSimple(root, k.Name, jp)
		if err != nil {
			return fail("point "+key+" at a field of "+k.Name+" by its JSON names, e.g. "+example, "%s=%s: %v", key, jp, err)
		}
		if u := b.types.under(leaf); u == nil || u.Kind != ExprBasic || u.Basic != basic || b.types.isOpaque(leaf) {
			pointer := ""
			if basic == "int32" && key == "specpath" {
				pointer = " or *int32"
			}
			return fail("make the field "+basic+pointer+", or point "+key+" at one",
				"%s=%s is %s; it must be %s%s", key, jp, describeType(leaf), basic, pointer)
		}
		if key == "statuspath" || key == "selectorpath" {
			return &fp
		}
		for _, st := range fp.Steps[:len(fp.Steps)-1] {
			if st.Pointer && st.Elem.IsZero() {
				return fail("declare the struct on the path as a named type", "%s=%s goes through the pointer field %s to an unnamed struct, which /scale cannot allocate", key, jp, st.GoName)
			}
		}
		return &fp
	}
	sc := &Scale{}
	if fp := path("specpath", ".spec.replicas", []string{".spec"}, "int32", true); fp != nil {
		sc.SpecReplicas = *fp
	}
	if fp := path("statuspath", ".status.replicas", []string{".status"}, "int32", true); fp != nil {
		sc.StatusReplicas = *fp
	}
	sc.Selector = path("selectorpath", ".status.selector", []string{".spec", ".status"}, "string", false)
	return sc, good
}

// parseJSONPath parses a CRD-style JSON path (".a.b[0].c", wrapped in {} for
// k8s.io/client-go/util/jsonpath). It returns the leading field names and whether the
// path is nothing but field names.
func parseJSONPath(jp string) (names []string, simple bool, err error) {
	if !strings.HasPrefix(jp, ".") {
		return nil, false, fmt.Errorf("a JSONPath starts with '.', e.g. .spec.size")
	}
	parser, err := jsonpath.Parse("path", "{"+jp+"}")
	if err != nil {
		return nil, false, err
	}
	if len(parser.Root.Nodes) != 1 {
		return nil, false, fmt.Errorf("not a single JSONPath expression")
	}
	list, ok := parser.Root.Nodes[0].(*jsonpath.ListNode)
	if !ok {
		return nil, false, fmt.Errorf("not a JSONPath expression")
	}
	simple = true
	for _, n := range list.Nodes {
		f, ok := n.(*jsonpath.FieldNode)
		if !ok {
			simple = false
			break
		}
		if f.Value == "" {
			return nil, false, fmt.Errorf("empty field name")
		}
		names = append(names, f.Value)
	}
	return names, simple, nil
}

// resolveSimple resolves a path of field names only (".spec.replicas") to a leaf field,
// with no map, list or type with its own JSON encoding on the way.
func (g *Types) resolveSimple(root *TypeExpr, kind, jp string) (FieldPath, *TypeExpr, error) {
	names, simple, err := parseJSONPath(jp)
	if err != nil {
		return FieldPath{}, nil, err
	}
	if !simple || len(names) == 0 {
		return FieldPath{}, nil, fmt.Errorf("not a simple path of field names (no [], filters, wildcards or ..)")
	}
	w, err := g.walkJSON(root, kind, names)
	if err != nil {
		return FieldPath{}, nil, err
	}
	if len(w.rest) > 0 {
		return FieldPath{}, nil, fmt.Errorf("%s is %s, whose keys or items cannot be part of the path", w.at, describeType(w.leaf))
	}
	fp := FieldPath{JSONPath: jp, Steps: w.steps}
	leaf := w.leaf
	if leaf.Kind == ExprNamed && leaf.Name.Pkg != "" {
		fp.LeafType = leaf.Name
	}
	if u := g.under(leaf); u != nil && u.Kind == ExprBasic && !g.isOpaque(leaf) {
		fp.LeafBasic = u.Basic
		fp.Leaf = BasicKind(u.Basic)
	}
	return fp, leaf, nil
}

// walked is where a walk through JSON field names ended.
type walked struct {
	steps []FieldStep
	// leaf is the type reached, without pointers.
	leaf *TypeExpr
	// at is the JSON path walked so far, e.g. ".spec.crew".
	at string
	// rest are the names left when the walk reached something it cannot look into: a map, a
	// list, an interface or a type with its own JSON encoding (metav1.Time, resource.Quantity).
	rest []string
}

// walkJSON follows JSON field names from the kind's type through its struct fields.
func (g *Types) walkJSON(root *TypeExpr, kind string, names []string) (walked, error) {
	w := walked{leaf: root.Deref()}
	where := kind
	for i, name := range names {
		t := w.leaf
		if g.isOpaque(t) {
			w.rest = names[i:]
			return w, nil
		}
		u := g.under(t)
		if u == nil || u.Kind != ExprStruct {
			if u != nil {
				switch u.Kind {
				case ExprMap, ExprSlice, ExprArray, ExprInterface:
					w.rest = names[i:]
					return w, nil
				}
			}
			return w, fmt.Errorf("%s is %s, which has no field %q", where, describeType(t), name)
		}
		hops, ok := g.lookupJSON(u.Fields, name, 0)
		if !ok {
			return w, fmt.Errorf("%s has no field %q (its fields: %s)", describeStruct(t, where), name, strings.Join(g.jsonNames(u.Fields, 0), ", "))
		}
		for _, h := range hops {
			step := FieldStep{GoName: h.GoName}
			if h.Type.Kind == ExprPointer {
				step.Pointer = true
				if e := h.Type.Elem; e.Kind == ExprNamed && e.Name.Pkg != "" {
					if eu := g.under(e); eu != nil && eu.Kind == ExprStruct {
						step.Elem = e.Name
					}
				}
			}
			w.steps = append(w.steps, step)
		}
		w.at += "." + name
		where = w.at
		w.leaf = hops[len(hops)-1].Type.Deref()
	}
	// The leaf's own pointer-to-struct Elem is not needed: nothing below it is set.
	if n := len(w.steps); n > 0 {
		if u := g.under(w.leaf); u == nil || u.Kind != ExprStruct {
			w.steps[n-1].Elem = GoType{}
		}
	}
	return w, nil
}

// lookupJSON finds the field serialised as name among fields: a field with that JSON name,
// or one promoted from an inline embedded struct (returned with the embedded fields first).
func (g *Types) lookupJSON(fields []*Field, name string, depth int) ([]*Field, bool) {
	if depth > 8 {
		return nil, false
	}
	for _, f := range fields {
		jn := f.JSONName
		if jn == "-" || !f.Exported || f.Embedded && jn == "" {
			continue
		}
		if jn == "" {
			jn = f.GoName
		}
		if jn == name {
			return []*Field{f}, true
		}
	}
	for _, f := range fields {
		if !f.Embedded || f.JSONName != "" || !f.Exported {
			continue
		}
		inner := g.under(f.Type.Deref())
		if inner == nil || inner.Kind != ExprStruct {
			continue
		}
		if hops, ok := g.lookupJSON(inner.Fields, name, depth+1); ok {
			return append([]*Field{f}, hops...), true
		}
	}
	return nil, false
}

// jsonNames lists the JSON field names of a struct's fields, inline embedded structs included.
func (g *Types) jsonNames(fields []*Field, depth int) []string {
	var out []string
	for _, f := range fields {
		jn := f.JSONName
		switch {
		case jn == "-" || !f.Exported:
		case f.Embedded && jn == "":
			if inner := g.under(f.Type.Deref()); inner != nil && inner.Kind == ExprStruct && depth < 8 {
				out = append(out, g.jsonNames(inner.Fields, depth+1)...)
			}
		case jn == "":
			out = append(out, f.GoName)
		default:
			out = append(out, jn)
		}
	}
	return out
}

// isOpaque reports whether e encodes itself to JSON (metav1.Time, resource.Quantity,
// intstr.IntOrString, runtime.RawExtension, ...): its Go fields say nothing about its JSON.
func (g *Types) isOpaque(e *TypeExpr) bool {
	if e == nil || e.Kind != ExprNamed {
		return false
	}
	t := g.Lookup(e.Name)
	return t != nil && t.MarshalsJSON
}

// columnFits reports whether a column of type colType shows the leaf's values, and what the
// leaf is in JSON terms.
func (g *Types) columnFits(colType string, leaf *TypeExpr) (string, bool) {
	if g.isOpaque(leaf) {
		if leaf.IsNamed(metav1Path, "Time") || leaf.IsNamed(metav1Path, "MicroTime") {
			return "a timestamp (" + describeType(leaf) + ")", colType == "date" || colType == "string"
		}
		return describeType(leaf), true // Quantity, IntOrString, ...: JSON type unknown here
	}
	var got string
	u := g.under(leaf)
	switch {
	case u == nil:
		return describeType(leaf), true
	case u.Kind == ExprBasic:
		got = BasicKind(u.Basic)
	case u.Kind == ExprStruct || u.Kind == ExprMap:
		got = "object"
	case u.Kind == ExprSlice || u.Kind == ExprArray:
		got = "array"
	default:
		return describeType(leaf), true
	}
	article := "a"
	if got == "integer" || got == "object" || got == "array" {
		article = "an"
	}
	desc := fmt.Sprintf("%s %s (%s)", article, got, describeType(leaf))
	switch colType {
	case "string":
		return desc, true
	case "integer", "number":
		return desc, got == "integer" || got == "number"
	case "boolean":
		return desc, got == "boolean"
	case "date":
		return desc, got == "string"
	}
	return desc, true
}

func suggestColumnType(got string) string {
	for _, t := range []string{"integer", "number", "boolean", "date"} {
		if strings.Contains(got, t) || t == "date" && strings.Contains(got, "timestamp") {
			return t
		}
	}
	return "string"
}

func describeType(e *TypeExpr) string { return "Go type " + e.String }

func describeStruct(e *TypeExpr, where string) string {
	if e.Kind == ExprNamed {
		if where == e.Name.Name {
			return where
		}
		return where + " (" + e.Name.Name + ")"
	}
	return where
}
