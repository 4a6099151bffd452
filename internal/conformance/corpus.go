package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/aagen-dev/aagen/generator/markers"
	"github.com/aagen-dev/aagen/generator/model"
)

// target is one kind in the version the comparison sends requests in.
type target struct {
	kind                  *model.Kind
	group, version        string
	namespaced, hasStatus bool
	root                  *model.TypeExpr
	// sample is a valid object without metadata's name and namespace; sampleFrom says where
	// it comes from (a file of config/samples, or "synthesized from the schema").
	sample     map[string]any
	sampleFrom string
}

func (t *target) apiVersion() string { return t.group + "/" + t.version }

// collection is the URL path of the kind's objects in namespace ns.
func (t *target) collection(ns string) string {
	if t.namespaced {
		return fmt.Sprintf("/apis/%s/%s/namespaces/%s/%s", t.group, t.version, ns, t.kind.Plural)
	}
	return fmt.Sprintf("/apis/%s/%s/%s", t.group, t.version, t.kind.Plural)
}

// synthSample synthesizes the valid object of a kind of type root: its required fields,
// and its optional top-level objects but the status (a spec marked +optional, as
// cert-manager's kinds mark theirs), each with their own required fields: a valid object
// without a spec would leave every case under spec starting from no spec at all.
func (b *builder) synthSample(root *model.TypeExpr) map[string]any {
	sample, _ := b.synth(root, model.FieldValidation{}, 0).(map[string]any)
	if sample == nil {
		sample = map[string]any{}
	}
	for _, f := range b.structFields(root) {
		name := f.field.JSONName
		if name == "status" || sample[name] != nil || jsonKind(b.types, f.field.Type) != "object" {
			continue
		}
		if v := b.synth(f.field.Type, f.field.FieldValidation, 1); v != nil {
			sample[name] = v
		}
	}
	return sample
}

// sampleSynthesized is the sampleFrom of a sample synthesized from the schema.
const sampleSynthesized = "synthesized from the schema"

// object returns the sample named name (in namespace ns when the kind is namespaced).
func (t *target) object(name, ns string) map[string]any {
	return t.objectOf(t.sample, name, ns)
}

// objectOf returns a copy of sample as an object of t's kind named name (in namespace ns
// when the kind is namespaced).
func (t *target) objectOf(sample map[string]any, name, ns string) map[string]any {
	o := deepCopy(sample).(map[string]any)
	o["apiVersion"], o["kind"] = t.apiVersion(), t.kind.Name
	md, _ := o["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
	}
	md["name"] = name
	if t.namespaced {
		md["namespace"] = ns
	}
	o["metadata"] = md
	return o
}

// builder derives the corpus of a model.
type builder struct {
	types     *model.Types
	moduleDir string
	ns        string
	cases     []*Case
	rules     []*ruleCase
	// skipped are what the corpus could not cover, with why.
	skipped []string
	n       int
}

// targets are the model's kinds the comparison covers: every resource stored in etcd (not a
// +aagen:backend one), in its hub's version when served, else its preferred served version.
func targets(m *model.Model, moduleDir string, b *builder) []*target {
	samples := readSamples(moduleDir)
	var out []*target
	for _, g := range m.Groups {
		for _, r := range g.Resources {
			if r.Backend {
				b.skipped = append(b.skipped, fmt.Sprintf("%s: served from the user's backend (+aagen:backend), not stored: no CRD equivalent", r.Kind))
				continue
			}
			served := r.Served()
			if len(served) == 0 {
				continue
			}
			k := served[0]
			for _, s := range served {
				if s.Hub {
					k = s
				}
			}
			t := &target{kind: k, group: g.Name, version: k.Version.Name, namespaced: k.NamespaceScoped, hasStatus: k.HasStatus,
				root: &model.TypeExpr{Kind: model.ExprNamed, Name: model.GoType{Pkg: k.Version.ImportPath, Name: k.Name}}}
			if s, ok := samples[t.apiVersion()+"/"+k.Name]; ok {
				t.sample, t.sampleFrom = s.obj, s.file
			} else {
				t.sample = b.synthSample(t.root)
				t.sampleFrom = sampleSynthesized
			}
			delete(t.sample, "status")
			out = append(out, t)
		}
	}
	return out
}

type sample struct {
	obj  map[string]any
	file string
}

// readSamples reads config/samples/*.yaml of the module, by apiVersion/kind.
func readSamples(moduleDir string) map[string]sample {
	out := map[string]sample{}
	files, _ := filepath.Glob(filepath.Join(moduleDir, "config", "samples", "*.yaml"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var o map[string]any
			if err := dec.Decode(&o); err != nil {
				if err != io.EOF {
					break
				}
				break
			}
			av, _ := o["apiVersion"].(string)
			k, _ := o["kind"].(string)
			if av == "" || k == "" {
				continue
			}
			if md, ok := o["metadata"].(map[string]any); ok {
				delete(md, "name")
				delete(md, "namespace")
				delete(md, "generateName")
			}
			delete(o, "apiVersion")
			delete(o, "kind")
			rel, _ := filepath.Rel(moduleDir, f)
			if _, dup := out[av+"/"+k]; !dup {
				out[av+"/"+k] = sample{obj: normalizeNumbers(o).(map[string]any), file: rel}
			}
		}
	}
	return out
}

// normalizeNumbers turns whole float64s (YAML's numbers) into int64.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, vv := range x {
			x[k] = normalizeNumbers(vv)
		}
	case []any:
		for i, vv := range x {
			x[i] = normalizeNumbers(vv)
		}
	case float64:
		if x == float64(int64(x)) {
			return int64(x)
		}
	case int:
		return int64(x)
	}
	return v
}

// place is where a value of a node goes in an object: the member at prefix is set to
// build(v). Outside lists and maps build is nil (the value itself); inside them it wraps the
// value into the list or map (and the item made of the synthesized rest) the member gets.
type place struct {
	prefix fieldPath
	build  func(v any) any
	// display is the node's path as the table prints it (spec.crew[], spec.amenities{}).
	display string
}

func (p place) value(v any) any {
	if p.build == nil {
		return v
	}
	return p.build(v)
}

// child is the place of member name of the struct at p, whose synthesized value is parent.
func (p place) child(name string, parent any) place {
	d := name
	if p.display != "" {
		d = p.display + "." + name
	}
	if p.build == nil {
		return place{prefix: append(append(fieldPath{}, p.prefix...), name), display: d}
	}
	return place{prefix: p.prefix, display: d, build: func(v any) any {
		m, _ := deepCopy(parent).(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		m[name] = deepCopy(v)
		return p.build(m)
	}}
}

func (p place) item() place {
	return place{prefix: p.prefix, display: p.display + "[]", build: func(v any) any { return p.value([]any{v}) }}
}

func (p place) mapValue() place {
	return place{prefix: p.prefix, display: p.display + "{}", build: func(v any) any { return p.value(map[string]any{"ka": v}) }}
}

// mutation changes one member of a valid object: sets it to value, or removes it.
type mutation struct {
	path   fieldPath
	value  any
	remove bool
}

// walkKind derives the cases of a kind from its type: the fields under its root.
func (b *builder) walkKind(t *target) {
	root := place{}
	for _, f := range b.structFields(t.root) {
		switch f.field.JSONName {
		case "metadata", "apiVersion", "kind":
			continue
		}
		b.walk(t, f.field.Type, f.field.FieldValidation, root.child(f.field.JSONName, t.sample), f.required(), f.field.DropsZeroValue(), 0, map[model.GoType]bool{})
	}
	if rt := b.types.Lookup(t.root.Name); rt != nil && len(rt.Validation.Rules) > 0 {
		b.addRules(t, root, rt.Validation.Rules, t.root, t.sample)
	}
}

// walk derives the cases of one node (a field, a list item, a map value) and descends.
//
// dropsZero is set for a field Go leaves out at its zero value (model.Field.DropsZeroValue):
// the cases that send that value say so in their ID, "(zero value, omitempty)".
func (b *builder) walk(t *target, e *model.TypeExpr, fv model.FieldValidation, p place, required, dropsZero bool, depth int, seen map[model.GoType]bool) {
	if depth > 6 || e == nil {
		return
	}
	kind := jsonKind(b.types, e)
	b.constraintCases(t, e, fv, p, kind, dropsZero)
	if p.build == nil && len(p.prefix) > 0 {
		if required && fv.Default == "" {
			b.opCases(t, fmt.Sprintf("%s required: absent", p.display), mutation{path: p.prefix, remove: true}, allOps)
		}
		if fv.Default != "" {
			b.opCases(t, fmt.Sprintf("%s default %s: absent", p.display, fv.Default), mutation{path: p.prefix, remove: true}, []op{opCreate, opApply})
		}
	}
	if len(fv.Validation.Rules) > 0 {
		b.addRules(t, p, fv.Validation.Rules, e, nil)
	}
	// Descend; into Kubernetes' own types only where their markers constrain them (as
	// controller-gen applies them: metav1.Condition's status enum, type pattern, lengths).
	d := e.Deref()
	if d != nil && d.Kind == model.ExprNamed {
		nt := b.types.Lookup(d.Name)
		if nt == nil || nt.Origin == model.InKubernetes && !constrainsValues(nt) || nt.OwnSchema || nt.Underlying == nil || seen[d.Name] {
			return
		}
		seen = copySeen(seen)
		seen[d.Name] = true
		if nt.IsStruct() && len(nt.Validation.Rules) > 0 {
			b.addRules(t, p, nt.Validation.Rules, e, nil)
		}
	}
	switch kind {
	case "object":
		parent := b.synth(e, model.FieldValidation{}, depth)
		if p.build == nil {
			if cur, ok := nodeAt(t.sample, p.prefix); ok {
				parent = cur
			}
		}
		for _, f := range b.structFields(e) {
			b.walk(t, f.field.Type, f.field.FieldValidation, p.child(f.field.JSONName, parent), f.required() && p.build == nil, f.field.DropsZeroValue(), depth+1, seen)
		}
	case "array":
		var iv model.FieldValidation
		if fv.Items != nil {
			iv.Validation = *fv.Items
		}
		b.walk(t, listElem(b.types, e), iv, p.item(), false, false, depth+1, seen)
	case "map":
		b.walk(t, mapValue(b.types, e), model.FieldValidation{}, p.mapValue(), false, false, depth+1, seen)
	}
}

// constrainsValues reports whether the markers of t, or of its fields, constrain values
// (a constraint, a default, a required field), not only say a field is optional: the
// corpus descends into Kubernetes' own types where they do (metav1.Condition), not into
// every type of +optional fields (PodSpec).
func constrainsValues(t *model.Type) bool {
	if !t.Validation.IsZero() {
		return true
	}
	for _, f := range t.Fields() {
		if f.FieldValidation.Constrains() {
			return true
		}
	}
	return false
}

func copySeen(s map[model.GoType]bool) map[model.GoType]bool {
	out := make(map[model.GoType]bool, len(s)+1)
	for k, v := range s {
		out[k] = v
	}
	return out
}

// boundary is a value of a node for a constraint: at the boundary (valid) or past it.
type boundary struct {
	label string
	value any
}

// boundaries are the values at and past each constraint of a node.
func (b *builder) boundaries(e *model.TypeExpr, fv model.FieldValidation, kind string) []boundary {
	v := fv.Validation
	var out []boundary
	num := kind == "integer" || kind == "number"
	integer := kind == "integer"
	step := 1.0
	if !integer {
		step = 0.5
	}
	if num && v.Minimum != nil {
		m := *v.Minimum
		if v.ExclusiveMinimum {
			out = append(out, boundary{fmt.Sprintf("ExclusiveMinimum=%v: %v", m, m+step), number(m+step, integer)}, boundary{fmt.Sprintf("ExclusiveMinimum=%v: %v", m, m), number(m, integer)})
		} else {
			out = append(out, boundary{fmt.Sprintf("Minimum=%v: %v", m, m), number(m, integer)}, boundary{fmt.Sprintf("Minimum=%v: %v", m, m-step), number(m-step, integer)})
		}
	}
	if num && v.Maximum != nil {
		m := *v.Maximum
		if v.ExclusiveMaximum {
			out = append(out, boundary{fmt.Sprintf("ExclusiveMaximum=%v: %v", m, m-step), number(m-step, integer)}, boundary{fmt.Sprintf("ExclusiveMaximum=%v: %v", m, m), number(m, integer)})
		} else {
			out = append(out, boundary{fmt.Sprintf("Maximum=%v: %v", m, m), number(m, integer)}, boundary{fmt.Sprintf("Maximum=%v: %v", m, m+step), number(m+step, integer)})
		}
	}
	if num && v.MultipleOf != nil && *v.MultipleOf != 0 {
		k := *v.MultipleOf
		base := synthNumber(v, integer)
		f, _ := toFloat(base)
		off := 1.0
		if !integer || k == 1 {
			off = k / 2
		}
		out = append(out, boundary{fmt.Sprintf("MultipleOf=%v: %v", k, f), base}, boundary{fmt.Sprintf("MultipleOf=%v: %v", k, f+off), number(f+off, integer)})
	}
	if kind == "string" {
		fill := synthString(model.Validation{Pattern: v.Pattern, Format: v.Format})
		if v.MinLength != nil && *v.MinLength > 0 {
			n := *v.MinLength
			out = append(out, boundary{fmt.Sprintf("MinLength=%d: %d characters", n, n), sized(fill, n)}, boundary{fmt.Sprintf("MinLength=%d: %d characters", n, n-1), sized(fill, n-1)})
		}
		if v.MaxLength != nil {
			n := *v.MaxLength
			out = append(out, boundary{fmt.Sprintf("MaxLength=%d: %d characters", n, n), sized(fill, n)}, boundary{fmt.Sprintf("MaxLength=%d: %d characters", n, n+1), sized(fill, n+1)})
		}
		if v.Pattern != "" {
			if s, ok := matchingString(v.Pattern); ok {
				out = append(out, boundary{fmt.Sprintf("Pattern=%s: %q", v.Pattern, s), s})
			} else {
				b.skipped = append(b.skipped, fmt.Sprintf("Pattern %s: no matching string synthesized", v.Pattern))
			}
			if s, ok := nonMatchingString(v.Pattern); ok {
				out = append(out, boundary{fmt.Sprintf("Pattern=%s: %q", v.Pattern, s), s})
			}
		}
		if fv, ok := formatValues[v.Format]; ok {
			out = append(out, boundary{fmt.Sprintf("Format=%s: %q", v.Format, fv[0]), fv[0]}, boundary{fmt.Sprintf("Format=%s: %q", v.Format, fv[1]), fv[1]})
		} else if v.Format != "" {
			b.skipped = append(b.skipped, fmt.Sprintf("Format %s: no values known", v.Format))
		}
	}
	if len(v.Enum) > 0 {
		for i, x := range v.Enum {
			if i >= 4 {
				break
			}
			out = append(out, boundary{fmt.Sprintf("Enum: %v", x), normalizeNumbers(x)})
		}
		var bad any = "NotInTheEnum"
		if num {
			bad = int64(987654)
		}
		out = append(out, boundary{fmt.Sprintf("Enum: %v", bad), bad})
	}
	if kind == "array" {
		elem := listElem(b.types, e)
		var iv model.FieldValidation
		if fv.Items != nil {
			iv.Validation = *fv.Items
		}
		one := b.synth(elem, iv, 1)
		list := func(n int64) []any {
			item := distinctItems(one, iv.Validation)
			l := []any{}
			for i := int64(0); i < n; i++ {
				l = append(l, item(int(i)))
			}
			return l
		}
		if v.MinItems != nil && *v.MinItems > 0 {
			n := *v.MinItems
			out = append(out, boundary{fmt.Sprintf("MinItems=%d: %d items", n, n), list(n)}, boundary{fmt.Sprintf("MinItems=%d: %d items", n, n-1), list(n - 1)})
		}
		if v.MaxItems != nil {
			n := *v.MaxItems
			out = append(out, boundary{fmt.Sprintf("MaxItems=%d: %d items", n, n), list(n)}, boundary{fmt.Sprintf("MaxItems=%d: %d items", n, n+1), list(n + 1)})
		}
	}
	if kind == "map" {
		val := b.synth(mapValue(b.types, e), model.FieldValidation{}, 1)
		m := func(n int64) map[string]any {
			o := map[string]any{}
			for i := int64(0); i < n; i++ {
				o[keyName(int(i))] = deepCopy(val)
			}
			return o
		}
		if v.MinProperties != nil && *v.MinProperties > 0 {
			n := *v.MinProperties
			out = append(out, boundary{fmt.Sprintf("MinProperties=%d: %d", n, n), m(n)}, boundary{fmt.Sprintf("MinProperties=%d: %d", n, n-1), m(n - 1)})
		}
		if v.MaxProperties != nil {
			n := *v.MaxProperties
			out = append(out, boundary{fmt.Sprintf("MaxProperties=%d: %d", n, n), m(n)}, boundary{fmt.Sprintf("MaxProperties=%d: %d", n, n+1), m(n + 1)})
		}
	}
	return out
}

func sized(fill string, n int64) string {
	s := fill
	for int64(len(s)) < n {
		s += lastChar(s)
	}
	return s[:max(n, 0)]
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case int:
		return float64(x), true
	}
	return 0, false
}

// constraintCases adds, for each constraint of the node, the writes of a value at its
// boundary and of one past it.
func (b *builder) constraintCases(t *target, e *model.TypeExpr, fv model.FieldValidation, p place, kind string, dropsZero bool) {
	for _, bd := range b.boundaries(e, fv, kind) {
		label := fmt.Sprintf("%s %s", p.display, bd.label)
		if dropsZero && kind != "object" && isZeroJSON(bd.value) {
			label += " " + zeroValueOmitEmpty
		}
		b.opCases(t, label, mutation{path: p.prefix, value: p.value(bd.value)}, allOps)
	}
}

// zeroValueOmitEmpty ends the ID of a case that sends the zero value of a field Go leaves
// out at its zero value (listed as intended: "a zero value Go drops").
const zeroValueOmitEmpty = "(zero value, omitempty)"

// isZeroJSON reports whether v is the JSON form of a Go zero value: 0, "", false, an
// empty list or object.
func isZeroJSON(v any) bool {
	switch x := v.(type) {
	case string:
		return x == ""
	case bool:
		return !x
	case int64:
		return x == 0
	case float64:
		return x == 0
	case int:
		return x == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// ruleCase is a CEL rule of a node: the comparison looks for a value that violates it by
// sending candidates to the CRD with dryRun (see resolveRules), then sends it to both.
type ruleCase struct {
	t          *target
	rule       markers.Rule
	display    string
	transition bool
	candidates []mutation
}

// addRules records the CEL rules of a node, with candidate values that may violate them:
// the boundary values of the scalar members under the node, their zero values, and each
// member set to another member's value.
func (b *builder) addRules(t *target, p place, rules []markers.Rule, e *model.TypeExpr, parent any) {
	var cands []mutation
	type leaf struct {
		p     place
		value any
		kind  string
	}
	var leaves []leaf
	var collect func(e *model.TypeExpr, fv model.FieldValidation, p place, depth int)
	collect = func(e *model.TypeExpr, fv model.FieldValidation, p place, depth int) {
		kind := jsonKind(b.types, e)
		switch kind {
		case "object":
			if depth > 2 {
				return
			}
			par := b.synth(e, model.FieldValidation{}, 1)
			if p.build == nil {
				if cur, ok := nodeAt(t.sample, p.prefix); ok {
					par = cur
				}
			}
			for _, f := range b.structFields(e) {
				collect(f.field.Type, f.field.FieldValidation, p.child(f.field.JSONName, par), depth+1)
			}
			return
		}
		var cur any
		if p.build == nil {
			cur, _ = nodeAt(t.sample, p.prefix)
		}
		leaves = append(leaves, leaf{p, cur, kind})
		for _, bd := range b.boundaries(e, fv, kind) {
			cands = append(cands, mutation{path: p.prefix, value: p.value(bd.value)})
		}
		switch kind {
		case "string":
			cands = append(cands, mutation{path: p.prefix, value: p.value("")}, mutation{path: p.prefix, value: p.value(strings.Repeat("x", 300))})
		case "integer", "number":
			cands = append(cands, mutation{path: p.prefix, value: p.value(int64(0))}, mutation{path: p.prefix, value: p.value(int64(1000000))}, mutation{path: p.prefix, value: p.value(int64(-1))})
		case "boolean":
			cands = append(cands, mutation{path: p.prefix, value: p.value(false)}, mutation{path: p.prefix, value: p.value(true)})
		case "array":
			cands = append(cands, mutation{path: p.prefix, value: p.value([]any{})})
		case "map":
			cands = append(cands, mutation{path: p.prefix, value: p.value(map[string]any{})})
		}
		if p.build == nil {
			cands = append(cands, mutation{path: p.prefix, remove: true})
		}
	}
	collect(e, model.FieldValidation{}, p, 0)
	for _, a := range leaves {
		for _, o := range leaves {
			if a.p.display != o.p.display && a.kind == o.kind && o.value != nil && a.p.build == nil {
				cands = append(cands, mutation{path: a.p.prefix, value: o.value})
			}
		}
	}
	for _, r := range rules {
		b.rules = append(b.rules, &ruleCase{t: t, rule: r, display: p.display, transition: strings.Contains(r.Rule, "oldSelf"), candidates: cands})
	}
}

// op is one way of writing a change.
type op string

const (
	opCreate    op = "create"
	opUpdate    op = "update"
	opMerge     op = "merge-patch"
	opJSONPatch op = "json-patch"
	opApply     op = "apply"
)

var allOps = []op{opCreate, opUpdate, opMerge, opJSONPatch, opApply}

// opCases adds the case of each op for a mutation of the kind's sample. A mutation under
// status of a kind with the /status subresource is written there (and not on create).
func (b *builder) opCases(t *target, label string, m mutation, ops []op) {
	status := t.hasStatus && len(m.path) > 0 && m.path[0] == "status"
	for _, o := range ops {
		if status && o == opCreate {
			continue
		}
		b.cases = append(b.cases, b.opCase(t, label, m, o, status))
	}
}

func (b *builder) name() string {
	b.n++
	return fmt.Sprintf("cf-%d", b.n)
}

// opCase is one write of a mutation: on create the sample with the change, otherwise a
// sample created first, then changed by op.
func (b *builder) opCase(t *target, label string, m mutation, o op, status bool) *Case {
	name := b.name()
	coll := t.collection(b.ns)
	obj := t.object(name, b.ns)
	changed := func(base map[string]any) map[string]any {
		c := deepCopy(base).(map[string]any)
		setAt(c, m.path, m.value, m.remove)
		return c
	}
	opName := string(o)
	sub := ""
	if status {
		opName, sub = "status "+opName, "/status"
	}
	c := &Case{Kind: t.kind.Name, Name: label, Op: opName}
	if o == opCreate {
		c.Steps = []Step{{Method: "POST", Path: coll, Body: jsonBody(changed(obj)), ContentType: "application/json"}}
		return c
	}
	create := Step{Method: "POST", Path: coll, Body: jsonBody(obj), ContentType: "application/json"}
	objPath := coll + "/" + name + sub
	switch o {
	case opUpdate:
		put := func(prev map[string]any) any { return changed(prev) }
		if status {
			// Both servers get the same status to change, an empty one (the valid object
			// has none), not each one's own GET's (a Go type's holds "status":
			// {"parents": null} where the CRD's holds no status).
			put = func(prev map[string]any) any {
				c := deepCopy(prev).(map[string]any)
				c["status"] = map[string]any{}
				return changed(c)
			}
		}
		c.Steps = []Step{create, {Method: "GET", Path: coll + "/" + name}, {Method: "PUT", Path: objPath, ContentType: "application/json", FromPrevious: put}}
	case opMerge:
		c.Steps = []Step{create, {Method: "PATCH", Path: objPath, ContentType: "application/merge-patch+json", Body: jsonBody(mergePatch(m))}}
	case opJSONPatch:
		patch, ok := jsonPatch(obj, m)
		if !ok {
			return &Case{Kind: t.kind.Name, Name: label, Op: opName, Skip: "nothing to remove"}
		}
		c.Steps = []Step{create, {Method: "PATCH", Path: objPath, ContentType: "application/json-patch+json", Body: jsonBody(patch)}}
	case opApply:
		c.Steps = []Step{create, {Method: "PATCH", Path: objPath, Query: "fieldManager=conformance&force=true", ContentType: "application/apply-patch+yaml", Body: jsonBody(changed(obj))}}
	}
	return c
}

func jsonBody(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

// mergePatch is the JSON merge patch of a mutation (null removes).
func mergePatch(m mutation) map[string]any {
	patch := map[string]any{}
	var v any = m.value
	if m.remove {
		v = nil
	}
	cur := patch
	for i, name := range m.path {
		if i == len(m.path)-1 {
			cur[name] = v
			break
		}
		next := map[string]any{}
		cur[name] = next
		cur = next
	}
	return patch
}

// jsonPatch is the JSON patch of a mutation applied to base: add at the first member the
// base lacks (with the rest nested in its value), or replace, or remove; false when a
// removal finds nothing to remove.
func jsonPatch(base map[string]any, m mutation) ([]map[string]any, bool) {
	ptr := func(p fieldPath) string {
		var b strings.Builder
		for _, s := range p {
			b.WriteString("/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(s))
		}
		return b.String()
	}
	if m.remove {
		if _, ok := nodeAt(base, m.path); !ok {
			return nil, false
		}
		return []map[string]any{{"op": "remove", "path": ptr(m.path)}}, true
	}
	for i := 1; i <= len(m.path); i++ {
		if _, ok := nodeAt(base, m.path[:i]); !ok {
			v := m.value
			for j := len(m.path) - 1; j >= i; j-- {
				v = map[string]any{m.path[j]: v}
			}
			return []map[string]any{{"op": "add", "path": ptr(m.path[:i]), "value": v}}, true
		}
	}
	return []map[string]any{{"op": "replace", "path": ptr(m.path), "value": m.value}}, true
}
