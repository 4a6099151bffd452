// Package robustness checks histories recorded against a Kubernetes-style API the way etcd's
// robustness tests check etcd: client operations for linearizability with porcupine, on a
// model of one object per name (exists, resourceVersion, value), and watch streams against
// the guarantees Kubernetes documents (ordered, no gaps, no duplicates, resumable from any
// delivered resourceVersion), compared with the storage's own event history.
package robustness

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// Kind is the kind of a client operation.
type Kind int

// The operations a history holds. A list is recorded as one Get per name of the key space,
// all with the list's call and return times.
const (
	Create Kind = iota
	Update      // with the resourceVersion the client last saw as precondition
	Delete
	Get
)

func (k Kind) String() string {
	return [...]string{"create", "update", "delete", "get"}[k]
}

// Result is how an operation ended.
type Result int

// Results. Unknown is an error that does not say whether a write was applied (timeout,
// connection lost, 5xx): the write may take effect at any time after its call.
const (
	OK Result = iota
	NotFound
	Conflict      // an update's precondition did not hold
	AlreadyExists // a create's name was taken
	Unknown
)

func (r Result) String() string {
	return [...]string{"ok", "not found", "conflict", "already exists", "unknown"}[r]
}

// Op is one recorded client operation on the object Name.
type Op struct {
	Client int
	Name   string
	Kind   Kind
	// Value is what a create or update writes (unique per write), or what a get read.
	Value int64
	// Precondition is an update's expected resourceVersion.
	Precondition int64
	Result       Result
	// RV is the resourceVersion a successful create, update or get answered.
	RV           int64
	Call, Return time.Time
	// ListRead marks one of the reads a list is recorded as (one per name, each with the
	// list's call and return times), so that requests are counted once.
	ListRead bool
}

func (o Op) String() string {
	return fmt.Sprintf("client %d %s %s value=%d precondition=%d -> %s rv=%d [%s, %s]", o.Client, o.Kind, o.Name, o.Value, o.Precondition,
		o.Result, o.RV, o.Call.Format("15:04:05.000000"), o.Return.Format("15:04:05.000000"))
}

// state is one object in the model. rv is 0 when a write whose answer was lost created or
// changed it (its resourceVersion is not known until a read shows it); after a delete it
// keeps the last known resourceVersion, which the next create's must exceed.
type state struct {
	exists bool
	rv     int64
	value  int64
}

type input struct {
	kind         Kind
	value        int64
	precondition int64
}

type output struct {
	result Result
	rv     int64
	value  int64
}

// step returns the states the object can be in after an operation with this input and
// output, from s; none if the operation could not have answered that from s.
func step(s state, in input, out output) []state {
	if out.result == Unknown {
		// Either not applied (yet, or ever), or applied with a resourceVersion nobody saw.
		next := []state{s}
		switch in.kind {
		case Create:
			if !s.exists {
				next = append(next, state{exists: true, value: in.value})
			}
		case Update:
			if s.exists && (s.rv == 0 || s.rv == in.precondition) {
				next = append(next, state{exists: true, value: in.value})
			}
		case Delete:
			if s.exists {
				next = append(next, state{rv: s.rv})
			}
		}
		return next
	}
	newer := func(rv int64) bool { return rv > 0 && (s.rv == 0 || rv > s.rv) }
	switch in.kind {
	case Create:
		switch {
		case out.result == OK && !s.exists && newer(out.rv):
			return []state{{exists: true, rv: out.rv, value: in.value}}
		case out.result == AlreadyExists && s.exists:
			return []state{s}
		}
	case Update:
		switch {
		case out.result == OK && s.exists && (s.rv == 0 || s.rv == in.precondition) && newer(out.rv):
			return []state{{exists: true, rv: out.rv, value: in.value}}
		case out.result == Conflict && s.exists && s.rv != in.precondition:
			return []state{s}
		case out.result == NotFound && !s.exists:
			return []state{s}
		}
	case Delete:
		switch {
		case out.result == OK && s.exists:
			return []state{{rv: s.rv}}
		case out.result == NotFound && !s.exists:
			return []state{s}
		}
	case Get:
		switch {
		case out.result == OK && s.exists && s.value == out.value && (s.rv == 0 || s.rv == out.rv):
			return []state{{exists: true, rv: out.rv, value: out.value}}
		case out.result == NotFound && !s.exists:
			return []state{s}
		}
	}
	return nil
}

// Model is the porcupine model of a key space of objects, partitioned by name: every name
// starts absent.
func Model() porcupine.Model {
	m := porcupine.NondeterministicModel{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			byName := map[string][]porcupine.Operation{}
			var names []string
			for _, op := range history {
				name := op.Metadata.(string)
				if _, ok := byName[name]; !ok {
					names = append(names, name)
				}
				byName[name] = append(byName[name], op)
			}
			out := make([][]porcupine.Operation, 0, len(names))
			for _, n := range names {
				out = append(out, byName[n])
			}
			return out
		},
		Init: func() []interface{} { return []interface{}{state{}} },
		Step: func(s, in, out interface{}) []interface{} {
			var next []interface{}
			for _, n := range step(s.(state), in.(input), out.(output)) {
				next = append(next, n)
			}
			return next
		},
		DescribeOperation: func(in, out interface{}) string {
			i, o := in.(input), out.(output)
			return fmt.Sprintf("%s value=%d precondition=%d -> %s rv=%d value=%d", i.kind, i.value, i.precondition, o.result, o.rv, o.value)
		},
		DescribeState: func(s interface{}) string { return fmt.Sprintf("%+v", s.(state)) },
	}
	return m.ToModel()
}

// Operations converts a history for porcupine: a write with an Unknown result may take
// effect at any time after its call, so it returns at the end of time; reads that failed
// say nothing and are left out.
func Operations(history []Op) []porcupine.Operation {
	var out []porcupine.Operation
	for _, o := range history {
		if o.Result == Unknown && o.Kind == Get {
			continue
		}
		ret := o.Return.UnixNano()
		if o.Result == Unknown {
			ret = math.MaxInt64
		}
		out = append(out, porcupine.Operation{
			ClientId: o.Client,
			Input:    input{kind: o.Kind, value: o.Value, precondition: o.Precondition},
			Call:     o.Call.UnixNano(),
			Output:   output{result: o.Result, rv: o.RV, value: o.Value},
			Return:   ret,
			Metadata: o.Name,
		})
	}
	return out
}

// CheckLinearizable checks history against Model within timeout. It returns the number of
// operations checked and an error describing a violation (with the operations of the
// offending object) or a check that did not finish.
func CheckLinearizable(history []Op, timeout time.Duration) (int, error) {
	ops := Operations(history)
	result, _ := porcupine.CheckOperationsVerbose(Model(), ops, timeout)
	switch result {
	case porcupine.Ok:
		return len(ops), nil
	case porcupine.Unknown:
		return len(ops), fmt.Errorf("linearizability check of %d operations did not finish within %s", len(ops), timeout)
	}
	// Find the first object whose own history is not linearizable, to show it.
	byName := map[string][]Op{}
	for _, o := range history {
		byName[o.Name] = append(byName[o.Name], o)
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if porcupine.CheckOperations(Model(), Operations(byName[n])) {
			continue
		}
		objOps := byName[n]
		slices.SortFunc(objOps, func(a, b Op) int { return a.Call.Compare(b.Call) })
		lines := ""
		for _, o := range objOps {
			lines += "\n  " + o.String()
		}
		return len(ops), fmt.Errorf("not linearizable: the operations on %s:%s", n, lines)
	}
	return len(ops), fmt.Errorf("not linearizable (%d operations)", len(ops))
}
