package conformance

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestIntendedCasesCompile: every listed difference's Case is a regular expression, so a
// bad one fails here and not after a run's minutes of building; a bad one is refused.
func TestIntendedCasesCompile(t *testing.T) {
	if err := checkListed(Intended); err != nil {
		t.Fatal(err)
	}
	if err := checkListed([]IntendedDifference{{Name: "broken", Case: "Boat | ("}}); err == nil {
		t.Fatal("a Case that does not compile was accepted")
	}
}

// TestZeroValuesOwnedOnCreate: the rewrite of "managedFields: zero values sent on create not
// owned" makes a CRD's answer, whose manager owns a 0 and an "" it was sent, equal to the
// generated server's, whose manager does not, and leaves owned non-zero members alone.
func TestZeroValuesOwnedOnCreate(t *testing.T) {
	answer := func(fields string) map[string]any {
		var o map[string]any
		body := `{"metadata":{"managedFields":[{"manager":"m","fieldsV1":` + fields + `}]},"spec":{"berths":0,"dock":"","depth":"3m","sub":{"n":0}}}`
		if err := json.Unmarshal([]byte(body), &o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	crd := answer(`{"f:spec":{"f:berths":{},"f:dock":{},"f:depth":{},"f:sub":{"f:n":{}}}}`)
	aagen := answer(`{"f:spec":{"f:depth":{}}}`)
	var rewrite func(map[string]any, bool)
	for _, in := range Intended {
		if in.Name == "managedFields: zero values sent on create not owned" {
			rewrite = in.Rewrite
		}
	}
	rewrite(crd, false)
	rewrite(aagen, true)
	if a, c := string(jsonBody(aagen)), string(jsonBody(crd)); a != c {
		t.Errorf("after the rewrite:\naagen: %s\ncrd:   %s", a, c)
	}
	if !strings.Contains(string(jsonBody(crd)), `"f:depth":{}`) {
		t.Errorf("the rewrite dropped a non-zero member: %s", jsonBody(crd))
	}
}

// TestEmptyListReadBackAsNone: the rewrite of "empty list read back as none" makes a CRD's
// answer holding [] (at any depth under spec and status) equal to the generated server's,
// which read null back from protobuf, and leaves non-empty lists alone.
func TestEmptyListReadBackAsNone(t *testing.T) {
	var rewrites []func(map[string]any, bool)
	for _, in := range Intended {
		if in.Name == "empty list read back as none" || in.Name == "empty struct member" {
			rewrites = append(rewrites, in.Rewrite)
		}
	}
	if len(rewrites) != 2 {
		t.Fatalf("found %d of the two rewrites", len(rewrites))
	}
	parse := func(s string) map[string]any {
		var o map[string]any
		if err := json.Unmarshal([]byte(s), &o); err != nil {
			t.Fatal(err)
		}
		return o
	}
	crd := parse(`{"status":{"listeners":[{"name":"a","conditions":[]}],"parents":["x"]}}`)
	aagen := parse(`{"status":{"listeners":[{"name":"a","conditions":null}],"parents":["x"]}}`)
	for _, r := range rewrites {
		r(crd, false)
		r(aagen, true)
	}
	if a, c := string(jsonBody(aagen)), string(jsonBody(crd)); a != c || !strings.Contains(c, `"parents":["x"]`) {
		t.Errorf("after the rewrites:\naagen: %s\ncrd:   %s", a, c)
	}
}
