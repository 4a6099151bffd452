package robustness

import (
	"strings"
	"testing"
	"time"
)

// at is a time n milliseconds into a test history.
func at(n int) time.Time { return time.Unix(1000, 0).Add(time.Duration(n) * time.Millisecond) }

func TestModelAcceptsLinearizable(t *testing.T) {
	history := []Op{
		{Client: 0, Name: "a", Kind: Create, Value: 1, Result: OK, RV: 5, Call: at(0), Return: at(10)},
		{Client: 1, Name: "a", Kind: Get, Value: 1, Result: OK, RV: 5, Call: at(5), Return: at(20)},
		{Client: 0, Name: "a", Kind: Update, Value: 2, Precondition: 5, Result: Unknown, Call: at(30), Return: at(40)},
		// The lost update applied: a read shows it with its resourceVersion.
		{Client: 1, Name: "a", Kind: Get, Value: 2, Result: OK, RV: 9, Call: at(50), Return: at(60)},
		{Client: 1, Name: "a", Kind: Update, Value: 3, Precondition: 5, Result: Conflict, Call: at(70), Return: at(80)},
		{Client: 0, Name: "a", Kind: Delete, Result: OK, Call: at(90), Return: at(100)},
		{Client: 0, Name: "a", Kind: Create, Value: 4, Result: OK, RV: 12, Call: at(110), Return: at(120)},
		{Client: 2, Name: "b", Kind: Create, Value: 5, Result: Unknown, Call: at(0), Return: at(10)},
		{Client: 2, Name: "b", Kind: Get, Result: NotFound, Call: at(20), Return: at(30)},
		{Client: 2, Name: "b", Kind: Get, Value: 5, Result: OK, RV: 7, Call: at(40), Return: at(50)},
	}
	if n, err := CheckLinearizable(history, 10*time.Second); err != nil || n != len(history) {
		t.Fatalf("linearizable history: %d operations, %v", n, err)
	}
}

func TestModelRejectsViolations(t *testing.T) {
	base := []Op{
		{Client: 0, Name: "a", Kind: Create, Value: 1, Result: OK, RV: 5, Call: at(0), Return: at(10)},
		{Client: 0, Name: "a", Kind: Update, Value: 2, Precondition: 5, Result: OK, RV: 6, Call: at(20), Return: at(30)},
	}
	for name, bad := range map[string]Op{
		"stale read":                       {Client: 1, Name: "a", Kind: Get, Value: 1, Result: OK, RV: 5, Call: at(40), Return: at(50)},
		"lost write":                       {Client: 1, Name: "a", Kind: Get, Result: NotFound, Call: at(40), Return: at(50)},
		"read of a value never written":    {Client: 1, Name: "a", Kind: Get, Value: 9, Result: OK, RV: 6, Call: at(40), Return: at(50)},
		"update with a stale precondition": {Client: 1, Name: "a", Kind: Update, Value: 3, Precondition: 5, Result: OK, RV: 8, Call: at(40), Return: at(50)},
		"resourceVersion going back":       {Client: 1, Name: "a", Kind: Update, Value: 3, Precondition: 6, Result: OK, RV: 4, Call: at(40), Return: at(50)},
		"create over an existing object":   {Client: 1, Name: "a", Kind: Create, Value: 3, Result: OK, RV: 8, Call: at(40), Return: at(50)},
		"conflict without a change":        {Client: 1, Name: "a", Kind: Update, Value: 3, Precondition: 6, Result: Conflict, Call: at(40), Return: at(50)},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := CheckLinearizable(append(append([]Op(nil), base...), bad), 10*time.Second)
			if err == nil || !strings.Contains(err.Error(), "not linearizable: the operations on a") {
				t.Fatalf("want a violation on a, got %v", err)
			}
		})
	}
}

func TestCheckWatch(t *testing.T) {
	history := []Event{{"ADDED", "a", 3}, {"ADDED", "b", 4}, {"MODIFIED", "a", 5}, {"DELETED", "b", 6}}
	for name, c := range map[string]struct {
		delivered []Event
		from, to  int64
		want      string
	}{
		"all":           {history, 0, 6, ""},
		"resumed":       {history[2:], 4, 6, ""},
		"prefix":        {history[:2], 0, 0, ""},
		"gap":           {[]Event{history[0], history[2]}, 0, 0, "gap"},
		"duplicate":     {[]Event{history[0], history[0]}, 0, 0, "duplicate"},
		"out of order":  {[]Event{history[0], history[1], history[2], history[1]}, 0, 0, "out of order"},
		"wrong type":    {[]Event{{"MODIFIED", "a", 3}}, 0, 0, "where the storage has"},
		"not caught up": {history[:3], 0, 6, "stopped at resourceVersion 5"},
		"unknown event": {append(append([]Event(nil), history...), Event{"ADDED", "c", 9}), 0, 0, "not in the storage"},
	} {
		err := CheckWatch(c.delivered, history, c.from, c.to)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: got %v, want %q", name, err, c.want)
		}
	}
}
