package conformance

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/aagen-dev/aagen/generator/model"
)

// maxRepairRounds bounds the dry runs repairSample makes: each round sets one optional
// field, so it is the number of fields a kind's rules may want set together.
const maxRepairRounds = 4

// repairSample makes a synthesized valid object that the CRD refuses valid where an
// optional field left out is what a rule wants (a port a Service reference must have, one
// of two alternatives a rule wants set): at the field path of each cause the CRD gives (and
// then at its parents), it sets the optional fields left out there one at a time,
// synthesized with at least one item, and keeps the first that the CRD takes on a dry run
// or that leaves it fewer causes. It returns the CRD's last answer to the sample: nil
// once the CRD takes it. crd answers the dry runs; coll is the kind's collection path.
func (b *builder) repairSample(ctx context.Context, crd *server, t *target, coll string) (*response, error) {
	try := func(sample map[string]any) (*response, error) {
		o := t.objectOf(sample, "cf-valid-object", b.ns)
		r, err := crd.do(ctx, Step{Method: "POST", Path: coll, Query: "dryRun=All", ContentType: "application/json", Body: jsonBody(o)}, nil)
		if err != nil {
			return nil, fmt.Errorf("creating the valid object of %s (dry run): %w", t.kind.Name, err)
		}
		if r.code >= 200 && r.code <= 299 {
			return nil, nil
		}
		return r, nil
	}
	r, err := try(t.sample)
	if err != nil || r == nil || t.sampleFrom != sampleSynthesized {
		return r, err
	}
	for round := 0; round < maxRepairRounds && r != nil; round++ {
		best, bestCauses := map[string]any(nil), len(causeFields(r))
		var bestAnswer *response
	search:
		for _, cause := range causeFields(r) {
			for path := cause; ; path = path[:len(path)-1] {
				for _, candidate := range b.withOptionalField(t, path) {
					cr, err := try(candidate)
					if err != nil {
						return nil, err
					}
					if cr == nil {
						t.sample = candidate
						return nil, nil
					}
					if n := len(causeFields(cr)); n < bestCauses {
						best, bestCauses, bestAnswer = candidate, n, cr
						break search
					}
				}
				if len(path) == 0 {
					break
				}
			}
		}
		if best == nil {
			return r, nil
		}
		t.sample, r = best, bestAnswer
	}
	return r, nil
}

// withOptionalField returns copies of t's sample, each with one optional field left out of
// the object at path set to a synthesized value (a list or map with one item).
func (b *builder) withOptionalField(t *target, path []string) []map[string]any {
	node, ok := nodeAt(t.sample, path)
	obj, isObj := node.(map[string]any)
	e := b.typeAt(t.root, path)
	if !ok || !isObj || e == nil || jsonKind(b.types, e) != "object" {
		return nil
	}
	var out []map[string]any
	for _, f := range b.structFields(e) {
		if _, set := obj[f.field.JSONName]; set || f.required() {
			continue
		}
		v := b.synth(f.field.Type, atLeastOneItem(f.field.FieldValidation), len(path)+1)
		if v == nil {
			continue
		}
		c := deepCopy(t.sample).(map[string]any)
		at, _ := nodeAt(c, path)
		at.(map[string]any)[f.field.JSONName] = v
		out = append(out, c)
	}
	return out
}

// typeAt returns the type of the node at path (JSON names, list indices, map keys) in a
// value of type root.
func (b *builder) typeAt(root *model.TypeExpr, path []string) *model.TypeExpr {
	e := root
	for _, step := range path {
		switch jsonKind(b.types, e) {
		case "object":
			var next *model.TypeExpr
			for _, f := range b.structFields(e) {
				if f.field.JSONName == step {
					next = f.field.Type
				}
			}
			e = next
		case "array":
			e = listElem(b.types, e)
		case "map":
			e = mapValue(b.types, e)
		default:
			return nil
		}
		if e == nil {
			return nil
		}
	}
	return e
}

// nodeAt returns the node at path (member names, list indices) of v.
func nodeAt(v any, path []string) (any, bool) {
	for _, step := range path {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[step]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// fieldPathStep splits a field path as an API error gives it ("spec.rules[0].ports[1]",
// "metadata.labels[app]") into its steps.
var fieldPathStep = regexp.MustCompile(`[^.\[\]]+`)

// causeFields are the field paths of the causes of a refusal, each as its steps; the
// whole object ([]) for a cause without a field.
func causeFields(r *response) [][]string {
	details, _ := r.body["details"].(map[string]any)
	causes, _ := details["causes"].([]any)
	var out [][]string
	for _, c := range causes {
		m, _ := c.(map[string]any)
		f, _ := m["field"].(string)
		if strings.HasPrefix(f, "<") { // "<nil>": the object itself
			f = ""
		}
		out = append(out, fieldPathStep.FindAllString(f, -1))
	}
	if len(out) == 0 {
		out = append(out, nil)
	}
	return out
}
