package conformance

import "strings"

// IntendedDifference is a difference between the generated server and the CRD that is
// listed: by design (Known false), or known and not fixed yet (Known true). A listed
// difference either names whole cases (Case, no Rewrite) or takes its part out of the
// answers (Rewrite), so that the rest of the answers is still compared.
type IntendedDifference struct {
	// Name identifies it in the table.
	Name string
	// Reason says why the answers differ.
	Reason string
	// Known marks a difference that is not by design: a gap or bug of aagen not fixed yet.
	Known bool
	// Case, a regular expression, limits it to the cases whose ID ("<Kind> | <case> |
	// <op>", as the table prints it) it matches; "" is every case.
	Case string
	// Rewrite, when set, changes an answer's body (the generated server's when aagen is
	// set, else the CRD's) to take the difference out.
	Rewrite func(body map[string]any, aagen bool)
}

// Intended lists the differences by design and the known ones, each with its reason. A
// difference that none of them accounts for makes `aagen conformance` fail.
var Intended = []IntendedDifference{
	{
		Name: "cluster scope from +genclient:nonNamespaced",
		Reason: "aagen makes a kind cluster-scoped for +genclient:nonNamespaced, as its clientset is; controller-gen reads only " +
			"+kubebuilder:resource:scope=Cluster and writes a namespaced CRD (the comparison then gives the CRD the model's scope)",
		Case: `^\w+ \| scope \| CRD$`,
	},
	{
		Name: "empty list read back as none",
		Reason: "the generated server stores objects in protobuf (its --storage-media-type default), where an empty list and " +
			"no list are the same: a list sent as [] reads back as null (a field without omitempty) or not at all; the CRD, " +
			"stored as JSON, keeps []. The rewrite drops the empty lists under spec and status of the CRD's answer; it runs " +
			"before \"empty struct member\", so that a CRD's status holding only an empty list ends empty and is dropped as the Go type's",
		Rewrite: func(body map[string]any, aagen bool) {
			if aagen {
				return
			}
			forObjects(body, func(o map[string]any) {
				for _, k := range []string{"spec", "status"} {
					if st, ok := o[k].(map[string]any); ok {
						dropEmptyLists(st)
					}
				}
			})
		},
	},
	{
		Name: "empty struct member",
		Reason: "a Go struct field is always encoded (encoding/json's omitempty does not omit a struct), and a list or map " +
			"field without omitempty is encoded as null when it has no value, so the generated server answers \"status\": {} " +
			"(or \"spec\": {}, \"parents\": null) where the CRD, which keeps the JSON it was sent, has none; Kubernetes' own types do the same",
		Rewrite: func(body map[string]any, aagen bool) {
			forObjects(body, func(o map[string]any) {
				for _, k := range []string{"spec", "status"} {
					st, ok := o[k].(map[string]any)
					if !ok {
						continue
					}
					if aagen {
						dropNulls(st)
					}
					// An empty spec or status says nothing either side: the Go type's is
					// always there, and the CRD's {} was sent as {}.
					if len(st) == 0 {
						delete(o, k)
					}
				}
			})
		},
	},
	{
		Name: "a zero value Go drops",
		Reason: "a field with omitempty that is not a pointer cannot hold its zero value: Go drops a 0, \"\", false, empty list " +
			"or empty map sent, so the generated server stores the field as absent (and defaults it) where the CRD keeps the " +
			"value and checks it (a minimum, MinLength, MinItems, MinProperties, enum or pattern may refuse it); the corpus marks the " +
			"cases that send such a zero value \"(zero value, omitempty)\"; the fix is a pointer",
		Case: `\(zero value, omitempty\) \|`,
	},
	{
		Name: "list items without apiVersion and kind",
		Reason: "the items of a list of a Go type carry no apiVersion and kind (the list has them), as Kubernetes' own lists; " +
			"a CRD's list items keep theirs",
		Rewrite: func(body map[string]any, aagen bool) {
			if items, ok := body["items"].([]any); ok && !aagen {
				for _, it := range items {
					if m, ok := it.(map[string]any); ok {
						delete(m, "apiVersion")
						delete(m, "kind")
					}
				}
			}
		},
	},
	{
		Name:   "status subresource without +kubebuilder:subresource:status",
		Known:  true,
		Reason: "aagen serves /status for every kind with a status field; controller-gen's CRD has it only with the marker (the comparison then gives the CRD aagen's)",
		Case:   `^\w+ \| status subresource \| CRD$`,
	},
	{
		Name:  "managedFields: no \".\" entry for what a Go type always encodes",
		Known: true,
		Reason: "on create and update the field manager records as added what the previous object lacked; a Go type's empty " +
			"object already holds its struct members (spec, status, a pod template and its spec) and its lists and maps " +
			"without omitempty, so the generated server's field set owns their members but not the objects themselves " +
			"(\".\": {}, or \"f:spec\": {} alone), where the CRD's does; the rewrite drops \".\" under spec and status " +
			"on both sides, then a spec or status owned with nothing in it, then the managers left with no field",
		Rewrite: func(body map[string]any, aagen bool) {
			forObjects(body, func(o map[string]any) {
				editManagedFields(o, func(fs map[string]any) {
					for _, k := range []string{"f:spec", "f:status"} {
						if sub, ok := fs[k].(map[string]any); ok {
							dropSelfEntries(sub)
							if len(sub) == 0 {
								delete(fs, k)
							}
						}
					}
				})
			})
		},
	},
	{
		Name:  "managedFields: zero values sent on create not owned",
		Known: true,
		Reason: "on create, k8s.io/apiserver's field manager records as set what differs from an empty object of the kind; " +
			"a Go field without omitempty is never absent, so a zero value sent (0, \"\", false) equals the empty object's and " +
			"is not recorded (Kubernetes' built-in types do the same), nor is an empty struct written through /status; " +
			"a CRD's empty object has no fields. (A create the field manager records nothing of gives its manager the " +
			"top-level members the body sent, \"f:spec\": {}, as a CRD's does, so that later updates are tracked.) " +
			"The rewrite drops, on both sides, the managed-fields entries of members " +
			"holding a zero scalar or an empty object, and the managers left with no field",
		Rewrite: func(body map[string]any, aagen bool) {
			forObjects(body, func(o map[string]any) {
				editManagedFields(o, func(fs map[string]any) { dropZeroLeaves(fs, o) })
			})
		},
	},
	{
		Name: "unknown field in a merge patch under Strict: the message quotes the patched object",
		Reason: "both refuse the patch with the same reason; the message quotes the patched object as JSON, which for a Go type " +
			"carries its empty structs and the zero values of fields without omitempty (see \"empty struct member\")",
		Case: `\| unknown field [\w.]+, fieldValidation=Strict \| merge-patch$`,
	},
	{
		Name:  "unknown field outside status written through /status: warned",
		Known: true,
		Reason: "a write through /status decodes the whole body into the Go type, whose decoder warns about an unknown field " +
			"under spec (which /status then drops); kube-apiserver's status handler of testdata/example's Fleet CRD does not warn about it",
		Case: `\| status written through /status with a spec change \| status update$`,
	},
	{
		Name: "watch from resourceVersion 1: too old depends on the server's history",
		Reason: "which resourceVersions a watch can start from depends on each server's history: the generated server's etcd is " +
			"its own, begun at revision 1, and its watch cache holds the events since it started, so a watch from 1 replays them; " +
			"the CRD's kube-apiserver has a long history before the CRD, so 1 is too old there (410 Expired)",
		Case: `\| watch from resourceVersion 1 \(too old\) \| watch$`,
	},
	{
		Name:   "list metadata without continue \"\"",
		Known:  true,
		Reason: "the CRD's list answers carry \"continue\": \"\" on the last page, the generated server's leave it out",
		Rewrite: func(body map[string]any, aagen bool) {
			if md, ok := body["metadata"].(map[string]any); ok && !aagen {
				if c, ok := md["continue"].(string); ok && c == "" {
					delete(md, "continue")
				}
			}
		},
	},
	{
		Name:   "unsupported field selector message lists the supported ones",
		Known:  true,
		Reason: "the generated server's 400 for an unsupported field label names the supported labels; kube-apiserver's for a CRD does not",
		Case:   `\| unsupported field selector \|`,
	},
}

// forObjects calls f on body and, for a list, on each item.
func forObjects(body map[string]any, f func(map[string]any)) {
	f(body)
	if items, ok := body["items"].([]any); ok {
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				f(m)
			}
		}
	}
}

// dropNulls removes the members of m that are null, in m and in every object below it.
func dropNulls(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			dropNulls(x)
		case []any:
			for _, it := range x {
				if im, ok := it.(map[string]any); ok {
					dropNulls(im)
				}
			}
		}
	}
}

// dropSelfEntries removes the "." entries (the node itself owned) from fs, a managed-fields
// set, and from every set below it.
func dropSelfEntries(fs map[string]any) {
	delete(fs, ".")
	for _, sub := range fs {
		if m, ok := sub.(map[string]any); ok {
			dropSelfEntries(m)
		}
	}
}

// dropZeroLeaves removes from fs, a managed-fields set (fieldsV1) of obj or of a member of
// it, the entries of members that hold a zero scalar ("", 0, false) or an empty object, and descends into the
// members that are objects (removing those left with no entry).
func dropZeroLeaves(fs map[string]any, obj map[string]any) {
	for k, sub := range fs {
		name, ok := strings.CutPrefix(k, "f:")
		if !ok {
			continue
		}
		switch v := obj[name].(type) {
		case map[string]any:
			if m, ok := sub.(map[string]any); ok && len(m) == 0 && len(v) == 0 {
				delete(fs, k) // an empty object
			} else if ok && len(m) > 0 {
				dropZeroLeaves(m, v)
				if len(m) == 0 {
					delete(fs, k) // it held only zero members
				}
			}
		case string, float64, bool, int64:
			if m, ok := sub.(map[string]any); ok && len(m) == 0 && zeroScalar(v) {
				delete(fs, k)
			}
		case nil:
			// A member the answer does not hold (an empty spec or status the "empty struct
			// member" rewrite took out): what was owned there was empty.
			if m, ok := sub.(map[string]any); ok && len(m) == 0 {
				delete(fs, k)
			}
		}
	}
}

func zeroScalar(v any) bool {
	switch x := v.(type) {
	case string:
		return x == ""
	case float64:
		return x == 0
	case int64:
		return x == 0
	case bool:
		return !x
	}
	return false
}

// dropEmptyLists removes from m the members that are empty lists, in m and in every object
// below it.
func dropEmptyLists(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case []any:
			if len(x) == 0 {
				delete(m, k)
				continue
			}
			for _, it := range x {
				if im, ok := it.(map[string]any); ok {
					dropEmptyLists(im)
				}
			}
		case map[string]any:
			dropEmptyLists(x)
		}
	}
}

// editManagedFields calls edit on the field set of each managed-fields entry of object o,
// then drops the entries edit left with no field (and managedFields, when none is left).
func editManagedFields(o map[string]any, edit func(fs map[string]any)) {
	md, _ := o["metadata"].(map[string]any)
	mfs, _ := md["managedFields"].([]any)
	var kept []any
	for _, mf := range mfs {
		m, _ := mf.(map[string]any)
		if fs, ok := m["fieldsV1"].(map[string]any); ok && len(fs) > 0 {
			edit(fs)
			if len(fs) == 0 {
				continue
			}
		}
		kept = append(kept, mf)
	}
	switch {
	case len(kept) == 0 && len(mfs) > 0:
		delete(md, "managedFields")
	case len(kept) != len(mfs):
		md["managedFields"] = kept
	}
}
