package robustness

import "fmt"

// Event is one watch event as the checks compare it.
type Event struct {
	Type string // ADDED, MODIFIED or DELETED
	Name string
	RV   int64
}

func (e Event) String() string { return fmt.Sprintf("%s %s at %d", e.Type, e.Name, e.RV) }

// CheckWatch checks the events a watch opened at fromRV delivered (across reopens, each
// from the last delivered resourceVersion) against history, the storage's own events of the
// key space in revision order: the watch must deliver exactly the events of history after
// fromRV, in order, up to its last one (ordered, no gaps, no duplicates). If upTo is not 0,
// the watch must also have reached it.
func CheckWatch(delivered, history []Event, fromRV, upTo int64) error {
	var want []Event
	for _, e := range history {
		if e.RV > fromRV {
			want = append(want, e)
		}
	}
	last := fromRV
	for i, got := range delivered {
		if got.RV <= last {
			return fmt.Errorf("event %d (%s) does not come after resourceVersion %d: out of order or duplicate", i, got, last)
		}
		if i >= len(want) {
			return fmt.Errorf("event %d (%s) is not in the storage's history", i, got)
		}
		if got != want[i] {
			if got.RV > want[i].RV {
				return fmt.Errorf("event %d: gap, %s delivered where the storage has %s", i, got, want[i])
			}
			return fmt.Errorf("event %d: %s delivered where the storage has %s", i, got, want[i])
		}
		last = got.RV
	}
	if upTo != 0 && last < upTo {
		next := "nothing"
		if len(delivered) < len(want) {
			next = want[len(delivered)].String()
		}
		return fmt.Errorf("the watch stopped at resourceVersion %d before %d (next in the storage: %s)", last, upTo, next)
	}
	return nil
}
