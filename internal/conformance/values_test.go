package conformance

import (
	"regexp"
	"testing"

	"github.com/aagen-dev/aagen/generator/model"
)

// TestDistinctItemsStayValid checks that a long synthesized list's items are distinct and
// stay within the items' MaxLength and pattern: Gateway API's TLSRoute takes up to 1,024
// hostnames of at most 253 characters, and its 1,024 items must all be valid for the
// boundary case to test MaxItems alone.
func TestDistinctItemsStayValid(t *testing.T) {
	const hostname = `^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	maxLen := int64(253)
	for _, c := range []struct {
		name string
		one  any
		v    model.Validation
		n    int
	}{
		{"hostnames", "a", model.Validation{Pattern: hostname, MaxLength: &maxLen}, 1025},
		{"digits only", "7", model.Validation{Pattern: `^[0-9]+$`}, 300},
		{"short", "ab", model.Validation{MaxLength: ptr(int64(4))}, 500},
		{"numbers", int64(3), model.Validation{}, 50},
	} {
		item := distinctItems(c.one, c.v)
		var re *regexp.Regexp
		if c.v.Pattern != "" {
			re = regexp.MustCompile(c.v.Pattern)
		}
		seen := map[any]int{}
		for i := 0; i < c.n; i++ {
			x := item(i)
			if j, ok := seen[x]; ok {
				t.Fatalf("%s: items %d and %d are both %v", c.name, j, i, x)
			}
			seen[x] = i
			s, ok := x.(string)
			if !ok {
				continue
			}
			if c.v.MaxLength != nil && int64(len(s)) > *c.v.MaxLength {
				t.Errorf("%s: item %d %q is longer than %d", c.name, i, s, *c.v.MaxLength)
			}
			if re != nil && !re.MatchString(s) {
				t.Errorf("%s: item %d %q does not match %s", c.name, i, s, c.v.Pattern)
			}
		}
	}
	enum := distinctItems("Red", model.Validation{Enum: []any{"Red", "Green"}})
	if a, b := enum(0), enum(1); a != "Red" || b != "Green" {
		t.Errorf("enum items: %v, %v", a, b)
	}
	for i, want := range map[int]string{1: "a", 26: "z", 27: "aa", 702: "zz", 703: "aaa"} {
		if got := numbered(i, "abcdefghijklmnopqrstuvwxyz"); got != want {
			t.Errorf("numbered(%d) = %q, want %q", i, got, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
