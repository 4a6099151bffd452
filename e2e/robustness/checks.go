package robustness

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Classify is the result of an operation of kind k answered with HTTP status code and
// reason (code 0: no answer, such as a timeout or a lost connection). A 5xx, a 429 or no
// answer is Unknown: the write may or may not have been applied. A 404 or 409 is a result
// only where the operation can get it (404 for an update, delete or get; 409
// AlreadyExists for a create, 409 Conflict for an update); any other 4xx is an error: the
// server refused a request it should have served.
func Classify(k Kind, code int, reason string) (Result, error) {
	switch {
	case code >= 200 && code < 300:
		return OK, nil
	case code == 0 || code >= 500 || code == 429:
		return Unknown, nil
	case code == 404 && k != Create:
		return NotFound, nil
	case code == 409 && k == Create && reason == "AlreadyExists":
		return AlreadyExists, nil
	case code == 409 && k == Update && reason == "Conflict":
		return Conflict, nil
	}
	return Unknown, fmt.Errorf("unexpected answer to a %s: %d %s", k, code, reason)
}

// List is one list of the whole key space: the names and resourceVersions of its items
// and the list's own resourceVersion, the revision it is a snapshot of.
type List struct {
	Client       int
	RV           int64
	Items        map[string]int64
	Call, Return time.Time
}

// StateAt is the key space at revision rv according to history, the storage's own events
// of a key space that was empty before the first: each existing name and its
// resourceVersion.
func StateAt(history []Event, rv int64) map[string]int64 {
	state := map[string]int64{}
	for _, e := range history {
		if e.RV > rv {
			break
		}
		if e.Type == "DELETED" {
			delete(state, e.Name)
		} else {
			state[e.Name] = e.RV
		}
	}
	return state
}

// CheckLists checks every list as a snapshot: its items must be exactly the key space of
// the storage's history at the list's resourceVersion (names and resourceVersions), and
// that resourceVersion must not be older than any resourceVersion a client was answered
// before the list was sent (a list is a consistent read). history is the storage's events
// of a key space that was empty before the first; ops is the client history.
func CheckLists(lists []List, history []Event, ops []Op) error {
	var errs []error
	for _, l := range lists {
		want := StateAt(history, l.RV)
		if !maps.Equal(want, l.Items) {
			errs = append(errs, fmt.Errorf("client %d's list at resourceVersion %d [%s, %s] is not the storage's state at that revision: %s",
				l.Client, l.RV, l.Call.Format("15:04:05.000"), l.Return.Format("15:04:05.000"), diffState(want, l.Items)))
		}
		for _, o := range ops {
			if o.Result == OK && o.RV > l.RV && o.Return.Before(l.Call) {
				errs = append(errs, fmt.Errorf("client %d's list at resourceVersion %d [%s, %s] is older than resourceVersion %d answered before it was sent (%s)",
					l.Client, l.RV, l.Call.Format("15:04:05.000"), l.Return.Format("15:04:05.000"), o.RV, o))
				break
			}
		}
	}
	return errors.Join(errs...)
}

func diffState(want, got map[string]int64) string {
	var d []string
	for _, n := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[n]; !ok {
			d = append(d, fmt.Sprintf("%s missing (stored at %d)", n, want[n]))
		} else if g != want[n] {
			d = append(d, fmt.Sprintf("%s at %d (stored at %d)", n, g, want[n]))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[n]; !ok {
			d = append(d, fmt.Sprintf("%s at %d not in the storage", n, got[n]))
		}
	}
	return strings.Join(d, ", ")
}

// Probe is one request a fault's prober sent to the fault's target during the fault (or
// before it, for a baseline): when, how long it took and whether it failed (a timeout
// is a failure).
type Probe struct {
	At     time.Time
	Took   time.Duration
	Failed bool
}

// Fault is one injected fault and what was observed while it lasted.
type Fault struct {
	Kind       string
	Target     string
	Start, End time.Time
	// Effect is what shows that the fault took effect.
	Effect Effect
	// Delay is the latency a slowing fault adds to each direction of the target's
	// traffic.
	Delay time.Duration
	// Baseline is the prober's requests just before the fault, Probes those during it.
	Baseline, Probes []Probe
	// LeaderBefore is the target's member ID if it was etcd's leader when the fault
	// began (0 otherwise): then the other members must elect another one, and
	// LeadersSeen is the leaders they reported during the fault.
	LeaderBefore uint64
	LeadersSeen  []uint64
}

// Effect is the observation that shows a fault took effect.
type Effect int

const (
	// Unreachable: requests to the target fail or stall (a process killed, a member
	// partitioned).
	Unreachable Effect = iota
	// Slower: the target's median latency rose by at least Delay over the baseline.
	Slower
)

// Effective returns an error unless the fault's observations show it took effect: requests
// to the target failed or stalled (Unreachable), or its median latency rose by at least the
// one-way delay injected (Slower); and if the target was etcd's leader, another member was
// seen as leader during the fault.
func (f Fault) Effective() error {
	var errs []error
	switch f.Effect {
	case Unreachable:
		failed := 0
		for _, p := range f.Probes {
			if p.Failed {
				failed++
			}
		}
		if failed == 0 {
			errs = append(errs, fmt.Errorf("%s of %s: none of the %d requests to it during the fault failed or stalled", f.Kind, f.Target, len(f.Probes)))
		}
	case Slower:
		base, during := median(f.Baseline), median(f.Probes)
		if len(f.Baseline) == 0 || len(f.Probes) == 0 || during < base+f.Delay {
			errs = append(errs, fmt.Errorf("%s of %s by %s each way: median latency %s during the fault (%d requests) against %s before (%d requests), want at least %s more",
				f.Kind, f.Target, f.Delay, during, len(f.Probes), base, len(f.Baseline), f.Delay))
		}
	}
	if f.LeaderBefore != 0 && !slices.ContainsFunc(f.LeadersSeen, func(l uint64) bool { return l != 0 && l != f.LeaderBefore }) {
		seen := slices.Clone(f.LeadersSeen)
		slices.Sort(seen)
		errs = append(errs, fmt.Errorf("%s of %s, etcd's leader: no other member became leader during the fault (%d answers, leaders named: %x)",
			f.Kind, f.Target, len(f.LeadersSeen), slices.Compact(seen)))
	}
	return errors.Join(errs...)
}

// median is the median duration of the probes that did not fail, or of all if all failed.
func median(ps []Probe) time.Duration {
	var ds []time.Duration
	for _, p := range ps {
		if !p.Failed {
			ds = append(ds, p.Took)
		}
	}
	if len(ds) == 0 {
		for _, p := range ps {
			ds = append(ds, p.Took)
		}
	}
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// Acknowledged counts the requests of history and lists that got a definite answer (any
// result but Unknown): each operation but a list's reads of its names, and each list once.
func Acknowledged(history []Op, lists []List) int {
	return AcknowledgedDuring(history, lists, time.Time{}, time.Unix(1<<62, 0))
}

// AcknowledgedDuring counts the requests of history and lists that got a definite answer
// between from and to, as Acknowledged does.
func AcknowledgedDuring(history []Op, lists []List, from, to time.Time) int {
	n := 0
	for _, o := range history {
		if o.Result != Unknown && !o.ListRead && !o.Return.Before(from) && o.Return.Before(to) {
			n++
		}
	}
	for _, l := range lists {
		if !l.Return.Before(from) && l.Return.Before(to) {
			n++
		}
	}
	return n
}

// CheckProgress fails a history with fewer than minTotal acknowledged requests, or with
// fewer than minPerFault answered while one of the faults lasted: a run whose requests all
// failed would otherwise pass every other check.
func CheckProgress(history []Op, lists []List, faults []Fault, minTotal, minPerFault int) error {
	var errs []error
	if n := Acknowledged(history, lists); n < minTotal {
		errs = append(errs, fmt.Errorf("%d requests acknowledged, want at least %d", n, minTotal))
	}
	for _, f := range faults {
		if n := AcknowledgedDuring(history, lists, f.Start, f.End); n < minPerFault {
			errs = append(errs, fmt.Errorf("%d requests acknowledged during the %s of %s (%s), want at least %d",
				n, f.Kind, f.Target, f.End.Sub(f.Start).Round(time.Millisecond), minPerFault))
		}
	}
	return errors.Join(errs...)
}

// CheckFaultKinds fails unless the faults shown effective are of at least min kinds.
func CheckFaultKinds(faults []Fault, min int) error {
	kinds := map[string]bool{}
	for _, f := range faults {
		if f.Effective() == nil {
			kinds[f.Kind] = true
		}
	}
	if len(kinds) < min {
		return fmt.Errorf("faults of %d kinds shown effective (%s) out of %d injected, want at least %d kinds",
			len(kinds), strings.Join(slices.Sorted(maps.Keys(kinds)), ", "), len(faults), min)
	}
	return nil
}

// Observed says what the fault's observations were, for the test's report.
func (f Fault) Observed() string {
	failed := 0
	for _, p := range f.Probes {
		if p.Failed {
			failed++
		}
	}
	var s string
	switch f.Effect {
	case Unreachable:
		s = fmt.Sprintf("%d of %d requests to it failed or stalled", failed, len(f.Probes))
	case Slower:
		s = fmt.Sprintf("median latency %s, %s before", median(f.Probes).Round(time.Millisecond), median(f.Baseline).Round(time.Millisecond))
	}
	if f.LeaderBefore != 0 {
		var others []string
		for _, l := range f.LeadersSeen {
			if l != 0 && l != f.LeaderBefore && !slices.Contains(others, fmt.Sprintf("%x", l)) {
				others = append(others, fmt.Sprintf("%x", l))
			}
		}
		s += fmt.Sprintf("; it was leader (%x), other leaders seen: [%s]", f.LeaderBefore, strings.Join(others, " "))
	}
	return s
}
