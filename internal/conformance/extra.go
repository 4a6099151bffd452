package conformance

import (
	"fmt"

	"github.com/aagen-dev/aagen/generator/model"
)

// kindCases are the cases of a kind that do not come from one constraint: the sample as it
// is, unknown fields under each fieldValidation, status writes, dry run, generateName,
// finalizers, lists with selectors and pages, deletecollection.
func (b *builder) kindCases(t *target) {
	coll := t.collection(b.ns)
	post := func(obj map[string]any, query string) Step {
		return Step{Method: "POST", Path: coll, Query: query, Body: jsonBody(obj), ContentType: "application/json"}
	}
	add := func(name, opName string, steps ...Step) {
		b.cases = append(b.cases, &Case{Kind: t.kind.Name, Name: name, Op: opName, Steps: steps})
	}

	// The sample as it is, then read back.
	name := b.name()
	add("sample ("+t.sampleFrom+")", "create", post(t.object(name, b.ns), ""))
	add("sample ("+t.sampleFrom+")", "get", Step{Method: "GET", Path: coll + "/" + name})

	// Unknown fields, at the root and under each top-level object member.
	for _, mode := range []string{"Strict", "Warn", "Ignore"} {
		q := "fieldValidation=" + mode
		for _, where := range []fieldPath{{"unknownField"}, {"spec", "unknownField"}} {
			if where[0] == "spec" {
				if _, ok := t.sample["spec"].(map[string]any); !ok {
					continue
				}
			}
			label := fmt.Sprintf("unknown field %s, fieldValidation=%s", where, mode)
			n := b.name()
			obj := t.object(n, b.ns)
			setAt(obj, where, "x", false)
			add(label, "create", post(obj, q))
			n = b.name()
			base := t.object(n, b.ns)
			patch := mergePatch(mutation{path: where, value: "x"})
			add(label, "merge-patch", post(base, ""), Step{Method: "PATCH", Path: coll + "/" + n, Query: q, ContentType: "application/merge-patch+json", Body: jsonBody(patch)})
			n = b.name()
			base = t.object(n, b.ns)
			add(label, "update", post(base, ""), Step{Method: "GET", Path: coll + "/" + n},
				Step{Method: "PUT", Path: coll + "/" + n, Query: q, ContentType: "application/json", FromPrevious: func(prev map[string]any) any {
					c := deepCopy(prev).(map[string]any)
					setAt(c, where, "x", false)
					return c
				}})
			n = b.name()
			applied := t.object(n, b.ns)
			setAt(applied, where, "x", false)
			add(label, "apply", Step{Method: "PATCH", Path: coll + "/" + n, Query: q + "&fieldManager=conformance", ContentType: "application/apply-patch+yaml", Body: jsonBody(applied)})
		}
	}

	// Status: written with the object on create (dropped when /status is its own), and
	// through /status (spec changes dropped there).
	if t.hasStatus {
		n := b.name()
		withStatus := t.object(n, b.ns)
		st := b.statusValue(t)
		if st != nil {
			withStatus["status"] = st
			add("status set on create", "create", post(withStatus, ""))
			n = b.name()
			add("status written through /status with a spec change", "status update", post(t.object(n, b.ns), ""), Step{Method: "GET", Path: coll + "/" + n},
				Step{Method: "PUT", Path: coll + "/" + n + "/status", ContentType: "application/json", FromPrevious: func(prev map[string]any) any {
					c := deepCopy(prev).(map[string]any)
					c["status"] = deepCopy(st)
					if spec, ok := c["spec"].(map[string]any); ok {
						spec["unknownField"] = "x"
					}
					return c
				}})
			n = b.name()
			add("status written through the object", "update", post(t.object(n, b.ns), ""), Step{Method: "GET", Path: coll + "/" + n},
				Step{Method: "PUT", Path: coll + "/" + n, ContentType: "application/json", FromPrevious: func(prev map[string]any) any {
					c := deepCopy(prev).(map[string]any)
					c["status"] = deepCopy(st)
					return c
				}})
			n = b.name()
			add("status merge patch through /status", "status merge-patch", post(t.object(n, b.ns), ""),
				Step{Method: "PATCH", Path: coll + "/" + n + "/status", ContentType: "application/merge-patch+json", Body: jsonBody(map[string]any{"status": st})})
		}
	}

	// Dry run: answered, not stored.
	n := b.name()
	add("dry run create", "create", post(t.object(n, b.ns), "dryRun=All"))
	add("dry run create, then get", "get", Step{Method: "GET", Path: coll + "/" + n})

	// generateName.
	gen := t.object("", b.ns)
	md := gen["metadata"].(map[string]any)
	delete(md, "name")
	md["generateName"] = generatedPrefix
	add("generateName", "create", post(gen, ""))

	// Finalizers: delete marks, removing the finalizer deletes.
	n = b.name()
	fin := t.object(n, b.ns)
	fin["metadata"].(map[string]any)["finalizers"] = []any{"example.com/conformance"}
	add("finalizer", "create", post(fin, ""))
	add("finalizer", "delete", Step{Method: "DELETE", Path: coll + "/" + n})
	add("finalizer", "get after delete", Step{Method: "GET", Path: coll + "/" + n})
	add("finalizer removed", "merge-patch", Step{Method: "PATCH", Path: coll + "/" + n, ContentType: "application/merge-patch+json", Body: jsonBody(map[string]any{"metadata": map[string]any{"finalizers": nil}})})
	add("finalizer removed", "get", Step{Method: "GET", Path: coll + "/" + n})

	// Delete, and a missing object.
	n = b.name()
	add("delete", "delete", post(t.object(n, b.ns), ""), Step{Method: "DELETE", Path: coll + "/" + n})
	add("missing object", "get", Step{Method: "GET", Path: coll + "/does-not-exist"})
	add("missing object", "delete", Step{Method: "DELETE", Path: coll + "/does-not-exist"})
	add("create twice", "create", post(t.object("cf-twice", b.ns), ""), post(t.object("cf-twice", b.ns), ""))
	add("stale resourceVersion", "update", post(t.object("cf-stale", b.ns), ""), Step{Method: "GET", Path: coll + "/cf-stale"},
		Step{Method: "PUT", Path: coll + "/cf-stale", ContentType: "application/json", FromPrevious: func(prev map[string]any) any {
			c := deepCopy(prev).(map[string]any)
			c["metadata"].(map[string]any)["resourceVersion"] = "1"
			return c
		}})
	add("invalid name", "create", post(t.object("Not_A_Name", b.ns), ""))
	add("name mismatch", "update", post(t.object("cf-mismatch", b.ns), ""), Step{Method: "GET", Path: coll + "/cf-mismatch"},
		Step{Method: "PUT", Path: coll + "/cf-mismatch", ContentType: "application/json", FromPrevious: func(prev map[string]any) any {
			c := deepCopy(prev).(map[string]any)
			c["metadata"].(map[string]any)["name"] = "cf-other"
			return c
		}})

	// Lists: label selectors and pages (the collection holds the same objects on both).
	lbl := t.object("cf-labelled", b.ns)
	lmd := lbl["metadata"].(map[string]any)
	lmd["labels"] = map[string]any{"conformance": "yes"}
	add("labelled", "create", post(lbl, ""))
	add("label selector conformance=yes", "list", Step{Method: "GET", Path: coll, Query: "labelSelector=conformance%3Dyes"})
	add("invalid label selector", "list", Step{Method: "GET", Path: coll, Query: "labelSelector=%3D%3D%3D"})
	add("field selector metadata.name=cf-labelled", "list", Step{Method: "GET", Path: coll, Query: "fieldSelector=metadata.name%3Dcf-labelled"})
	add("unsupported field selector", "list", Step{Method: "GET", Path: coll, Query: "fieldSelector=spec.nothing%3Dx"})
	b.watchCases(t, add, post)
	add("deletecollection conformance=yes", "deletecollection", Step{Method: "DELETE", Path: coll, Query: "labelSelector=conformance%3Dyes"})
	add("after deletecollection", "list", Step{Method: "GET", Path: coll, Query: "labelSelector=conformance%3Dyes"})
}

// statusValue is a value of the kind's status: its required members, plus its first scalar
// member.
func (b *builder) statusValue(t *target) any {
	for _, f := range b.structFields(t.root) {
		if f.field.JSONName != "status" {
			continue
		}
		st, _ := b.synth(f.field.Type, model.FieldValidation{}, 0).(map[string]any)
		if st == nil {
			return nil
		}
		for _, sf := range b.structFields(f.field.Type) {
			k := jsonKind(b.types, sf.field.Type)
			if k == "string" || k == "integer" || k == "number" || k == "boolean" {
				if _, set := st[sf.field.JSONName]; !set {
					st[sf.field.JSONName] = b.synth(sf.field.Type, sf.field.FieldValidation, 1)
				}
				break
			}
		}
		return st
	}
	return nil
}

// watchCases are the cases of watches, resourceVersions and pages, on objects of their
// own (labelled, so that what other cases leave in the collection does not count): a
// watch from the resourceVersion of a write, a WatchList and its initial-events-end
// bookmark, a watch from a resourceVersion too old, lists at an exact resourceVersion and
// not older than one, and three pages of one object (and a set-based selector with a limit).
func (b *builder) watchCases(t *target, add func(name, opName string, steps ...Step), post func(map[string]any, string) Step) {
	coll := t.collection(b.ns)
	labelled := func(name, key string) map[string]any {
		o := t.object(name, b.ns)
		o["metadata"].(map[string]any)["labels"] = map[string]any{key: "yes"}
		return o
	}
	const watched = "labelSelector=conformance-watch%3Dyes"
	annotate := Step{Method: "PATCH", Path: coll + "/cf-w-a", ContentType: "application/merge-patch+json",
		Body: jsonBody(map[string]any{"metadata": map[string]any{"annotations": map[string]any{"conformance": "changed"}}})}
	add("watch from the resourceVersion of a create", "watch", post(labelled("cf-w-a", "conformance-watch"), ""), annotate,
		post(labelled("cf-w-b", "conformance-watch"), ""),
		Step{Method: "GET", Path: coll, Query: "watch=true&" + watched, ResourceVersionFrom: 1, Watch: &WatchRead{Events: 2}})
	add("WatchList: sendInitialEvents=true, resourceVersionMatch=NotOlderThan, allowWatchBookmarks=true", "watch", watchListStep(coll, watched))
	add("sendInitialEvents=true without resourceVersionMatch", "watch",
		Step{Method: "GET", Path: coll, Query: "watch=true&sendInitialEvents=true&" + watched, Watch: &WatchRead{InitialEventsEnd: true}})
	// A labelled object of its own first: the watch expects an event (or an error) only
	// when the collection has one, and a kind whose sample both servers refuse compares
	// that refusal instead.
	add("watch from resourceVersion 1 (too old)", "watch", post(labelled("cf-w-d", "conformance-watch"), ""),
		Step{Method: "GET", Path: coll, Query: "watch=true&resourceVersion=1&" + watched, Watch: &WatchRead{Events: 1}})
	add("list at the exact resourceVersion of a create (deleted since)", "list", post(labelled("cf-w-c", "conformance-watch"), ""),
		Step{Method: "DELETE", Path: coll + "/cf-w-c"},
		Step{Method: "GET", Path: coll, Query: "resourceVersionMatch=Exact&" + watched, ResourceVersionFrom: 1})
	add("list not older than the resourceVersion of a list", "list", Step{Method: "GET", Path: coll, Query: watched},
		Step{Method: "GET", Path: coll, Query: "resourceVersionMatch=NotOlderThan&" + watched, ResourceVersionFrom: 1})
	add("list at resourceVersion 0 (any)", "list", Step{Method: "GET", Path: coll, Query: "resourceVersion=0&" + watched})
	add("resourceVersionMatch=Exact without resourceVersion", "list", Step{Method: "GET", Path: coll, Query: "resourceVersionMatch=Exact&" + watched})
	add("invalid continue token", "list", Step{Method: "GET", Path: coll, Query: "limit=1&continue=not-a-token&" + watched})

	const paged = "labelSelector=conformance-page%3Dyes&limit=1"
	add("objects to page through", "create", post(labelled("cf-p-1", "conformance-page"), ""), post(labelled("cf-p-2", "conformance-page"), ""),
		post(labelled("cf-p-3", "conformance-page"), ""))
	page := Step{Method: "GET", Path: coll, Query: paged}
	next := Step{Method: "GET", Path: coll, Query: paged, ContinueFromPrevious: true}
	add("page 1 of 3, limit=1", "list", page)
	add("page 2 of 3, limit=1", "list", page, next)
	add("page 3 of 3, limit=1", "list", page, next, next)
	add("label selector conformance-page=yes,conformance!=yes, limit=2", "list", Step{Method: "GET", Path: coll, Query: "labelSelector=conformance-page%3Dyes%2Cconformance%21%3Dyes&limit=2"})
	add("continue with a resourceVersion", "list", page,
		Step{Method: "GET", Path: coll, Query: paged + "&resourceVersion=1", ContinueFromPrevious: true})
}

// watchListStep is a WatchList of the collection at path coll (a watch with
// sendInitialEvents=true, resourceVersionMatch=NotOlderThan and bookmarks, as an informer
// that lists by watching sends it) with the query selector: its initial events must end with
// the initial-events-end bookmark.
func watchListStep(coll, selector string) Step {
	return Step{Method: "GET", Path: coll, Query: "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&" + selector,
		Watch: &WatchRead{InitialEventsEnd: true}}
}

// generatedPrefix is the generateName of the corpus's generateName case.
const generatedPrefix = "gen-"
