package robustness

import (
	"strings"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		kind   Kind
		code   int
		reason string
		want   Result
		err    string
	}{
		{Create, 201, "", OK, ""},
		{Get, 200, "", OK, ""},
		{Create, 0, "", Unknown, ""},
		{Update, 500, "InternalError", Unknown, ""},
		{Delete, 503, "ServiceUnavailable", Unknown, ""},
		{Update, 504, "Timeout", Unknown, ""},
		{Create, 429, "TooManyRequests", Unknown, ""},
		{Get, 404, "NotFound", NotFound, ""},
		{Update, 404, "NotFound", NotFound, ""},
		{Delete, 404, "NotFound", NotFound, ""},
		{Create, 409, "AlreadyExists", AlreadyExists, ""},
		{Update, 409, "Conflict", Conflict, ""},
		// Answers the operation cannot get: the server refused what it should serve.
		{Create, 404, "NotFound", Unknown, "unexpected answer to a create: 404 NotFound"},
		{Update, 409, "AlreadyExists", Unknown, "unexpected answer to a update: 409 AlreadyExists"},
		{Delete, 409, "Conflict", Unknown, "unexpected answer to a delete: 409 Conflict"},
		{Create, 422, "Invalid", Unknown, "unexpected answer to a create: 422 Invalid"},
		{Get, 403, "Forbidden", Unknown, "unexpected answer to a get: 403 Forbidden"},
		{Update, 400, "BadRequest", Unknown, "unexpected answer to a update: 400 BadRequest"},
	} {
		got, err := Classify(c.kind, c.code, c.reason)
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("Classify(%s, %d, %s) = %s, %v; want %s, %q", c.kind, c.code, c.reason, got, err, c.want, c.err)
		}
	}
}

func TestCheckLists(t *testing.T) {
	history := []Event{{"ADDED", "a", 3}, {"ADDED", "b", 4}, {"MODIFIED", "a", 5}, {"DELETED", "b", 6}}
	ops := []Op{{Client: 0, Name: "a", Kind: Update, Result: OK, RV: 5, Call: at(0), Return: at(10)}}
	for name, c := range map[string]struct {
		list List
		want string
	}{
		"snapshot":           {List{RV: 5, Items: map[string]int64{"a": 5, "b": 4}, Call: at(20)}, ""},
		"empty after delete": {List{RV: 7, Items: map[string]int64{"a": 5}, Call: at(20)}, ""},
		"at an older revision, sent before the write's answer": {List{RV: 4, Items: map[string]int64{"a": 3, "b": 4}, Call: at(5)}, ""},
		// A list mixing revisions: a at 5 with b already deleted is no revision's state.
		"torn":           {List{RV: 5, Items: map[string]int64{"a": 5}, Call: at(20)}, "b missing (stored at 4)"},
		"stale item":     {List{RV: 5, Items: map[string]int64{"a": 3, "b": 4}, Call: at(20)}, "a at 3 (stored at 5)"},
		"deleted item":   {List{RV: 6, Items: map[string]int64{"a": 5, "b": 4}, Call: at(20)}, "b at 4 not in the storage"},
		"phantom":        {List{RV: 6, Items: map[string]int64{"a": 5, "c": 9}, Call: at(20)}, "c at 9 not in the storage"},
		"stale snapshot": {List{RV: 4, Items: map[string]int64{"a": 3, "b": 4}, Call: at(20)}, "older than resourceVersion 5 answered before it was sent"},
	} {
		err := CheckLists([]List{c.list}, history, ops)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: got %v, want %q", name, err, c.want)
		}
	}
}

// probes are n probes that took d each and failed as said.
func probes(n int, d time.Duration, failed bool) []Probe {
	out := make([]Probe, n)
	for i := range out {
		out[i] = Probe{At: at(i * 100), Took: d, Failed: failed}
	}
	return out
}

func TestFaultEffective(t *testing.T) {
	ms := time.Millisecond
	for name, c := range map[string]struct {
		fault Fault
		want  string
	}{
		"killed, requests refused":      {Fault{Kind: "kill replica", Effect: Unreachable, Probes: append(probes(2, ms, false), probes(3, ms, true)...)}, ""},
		"partitioned, requests stalled": {Fault{Kind: "partition etcd member", Effect: Unreachable, Probes: probes(3, time.Second, true)}, ""},
		// A proxy that does not partition, or a kill that did not happen: every request answered.
		"not injected": {Fault{Kind: "partition etcd member", Target: "m1", Effect: Unreachable, Probes: probes(10, ms, false)},
			"partition etcd member of m1: none of the 10 requests to it during the fault failed or stalled"},
		"no probes":  {Fault{Kind: "kill replica", Effect: Unreachable}, "none of the 0 requests"},
		"slowed":     {Fault{Kind: "slow etcd member", Effect: Slower, Delay: 200 * ms, Baseline: probes(5, 2*ms, false), Probes: probes(5, 402*ms, false)}, ""},
		"not slowed": {Fault{Kind: "slow etcd member", Effect: Slower, Delay: 200 * ms, Baseline: probes(5, 2*ms, false), Probes: probes(5, 3*ms, false)}, "median latency 3ms during the fault"},
		"slow before": {Fault{Kind: "slow etcd member", Effect: Slower, Delay: 200 * ms, Baseline: probes(5, 300*ms, false), Probes: probes(5, 400*ms, false)},
			"against 300ms before"},
		"leader replaced": {Fault{Kind: "kill etcd member", Effect: Unreachable, Probes: probes(1, ms, true), LeaderBefore: 7, LeadersSeen: []uint64{0, 7, 9}}, ""},
		"leader kept": {Fault{Kind: "partition etcd member", Effect: Unreachable, Probes: probes(1, ms, true), LeaderBefore: 7, LeadersSeen: []uint64{7, 0, 7}},
			"no other member became leader during the fault"},
	} {
		err := c.fault.Effective()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: got %v, want %q", name, err, c.want)
		}
	}
}

func TestCheckProgress(t *testing.T) {
	var history []Op
	for i := 0; i < 10; i++ {
		history = append(history, Op{Kind: Get, Result: OK, Call: at(i * 100), Return: at(i*100 + 50)})
	}
	// A list is one request, however many names it reads.
	lists := []List{{Call: at(300), Return: at(360)}}
	for _, n := range []string{"a", "b", "c"} {
		history = append(history, Op{Name: n, Kind: Get, Result: NotFound, Call: at(300), Return: at(360), ListRead: true})
	}
	// Writes that failed during the fault do not count.
	history = append(history, Op{Kind: Create, Result: Unknown, Call: at(1000), Return: at(1100)})
	fault := Fault{Kind: "kill replica", Target: "replica0", Start: at(200), End: at(500)}
	if err := CheckProgress(history, lists, []Fault{fault}, 11, 4); err != nil {
		t.Errorf("enough progress: %v", err)
	}
	err := CheckProgress(history, lists, []Fault{fault}, 12, 5)
	if err == nil || !strings.Contains(err.Error(), "11 requests acknowledged, want at least 12") ||
		!strings.Contains(err.Error(), "4 requests acknowledged during the kill replica of replica0 (300ms), want at least 5") {
		t.Errorf("too little progress: got %v", err)
	}
	// Every request answered 5xx: nothing acknowledged.
	failing := []Op{{Kind: Create, Result: Unknown, Call: at(0), Return: at(10)}}
	if err := CheckProgress(failing, nil, nil, 1, 0); err == nil {
		t.Error("a history of failures passes the progress check")
	}
}

func TestCheckFaultKinds(t *testing.T) {
	effective := func(kind string) Fault {
		return Fault{Kind: kind, Effect: Unreachable, Probes: probes(1, 0, true)}
	}
	ineffective := Fault{Kind: "partition etcd member", Effect: Unreachable, Probes: probes(1, 0, false)}
	if err := CheckFaultKinds([]Fault{effective("kill replica"), effective("kill etcd member")}, 2); err != nil {
		t.Errorf("two kinds: %v", err)
	}
	for name, faults := range map[string][]Fault{
		"one kind twice":            {effective("kill replica"), effective("kill replica")},
		"second kind not effective": {effective("kill replica"), ineffective},
		"nothing injected":          nil,
	} {
		if err := CheckFaultKinds(faults, 2); err == nil || !strings.Contains(err.Error(), "want at least 2 kinds") {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

// TestFinalReadCatchesADroppedWrite is the deliberate defect of a server that acknowledges
// a write and loses it: the final read of every name written finds it missing, and the
// history is not linearizable.
func TestFinalReadCatchesADroppedWrite(t *testing.T) {
	history := []Op{
		{Client: 0, Name: "a", Kind: Create, Value: 1, Result: OK, RV: 5, Call: at(0), Return: at(10)},
		{Client: 1, Name: "a", Kind: Update, Value: 2, Precondition: 5, Result: OK, RV: 8, Call: at(20), Return: at(30)},
		// A write whose answer was lost may still be applied later: it cannot explain a
		// missing object unless it deletes it.
		{Client: 2, Name: "a", Kind: Update, Value: 3, Precondition: 5, Result: Unknown, Call: at(25), Return: at(40)},
	}
	if _, err := CheckLinearizable(history, 10*time.Second); err != nil {
		t.Fatalf("before the final read: %v", err)
	}
	finalRead := func(o Op) []Op {
		o.Client, o.Name, o.Kind, o.Call, o.Return = 100, "a", Get, at(1000), at(1010)
		return append(append([]Op(nil), history...), o)
	}
	if _, err := CheckLinearizable(finalRead(Op{Value: 2, Result: OK, RV: 8}), 10*time.Second); err != nil {
		t.Errorf("final read of the acknowledged write: %v", err)
	}
	for name, read := range map[string]Op{
		"dropped":         {Result: NotFound},
		"rolled back":     {Value: 1, Result: OK, RV: 5},
		"different value": {Value: 4, Result: OK, RV: 8},
		"other revision":  {Value: 2, Result: OK, RV: 9},
	} {
		_, err := CheckLinearizable(finalRead(read), 10*time.Second)
		if err == nil || !strings.Contains(err.Error(), "not linearizable: the operations on a") {
			t.Errorf("%s: want a violation on a, got %v", name, err)
		}
	}
}
