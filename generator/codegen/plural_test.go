package codegen

import (
	"slices"
	"testing"
)

// TestPluralExceptionsKeepTheKindsCapitals: gengo's plural namers return an exception as
// given, with only its first letter changed, so an exception "DockOccupancy:dockoccupancies"
// made the clientset's method Dockoccupancies(). The exception carries the kind's capitals.
func TestPluralExceptionsKeepTheKindsCapitals(t *testing.T) {
	for _, c := range []struct{ kind, plural, want string }{
		{"DockOccupancy", "dockoccupancies", "DockOccupancies"},
		{"Boat", "boats", "Boats"},
		{"Person", "people", "People"},
		{"IPPool", "ippools", "IPPools"},
		{"Endpoints", "endpoints", "Endpoints"},
		{"Box", "crates", "crates"},
	} {
		if got := camelPlural(c.kind, c.plural); got != c.want {
			t.Errorf("camelPlural(%q, %q) = %q, want %q", c.kind, c.plural, got, c.want)
		}
	}
	in := Input{Packages: []Package{{Kinds: []Kind{{Name: "DockOccupancy", Plural: "dockoccupancies"}, {Name: "Boat", Plural: "boats"}}}}}
	if got, want := in.pluralExceptions(), []string{"Boat:Boats", "DockOccupancy:DockOccupancies"}; !slices.Equal(got, want) {
		t.Errorf("pluralExceptions() = %q, want %q", got, want)
	}
}
