package model

import (
	"strings"
	"testing"
)

func TestParseJSONPath(t *testing.T) {
	for _, c := range []struct {
		in     string
		names  string
		simple bool
		err    string
	}{
		{in: ".spec.size", names: "spec,size", simple: true},
		{in: ".metadata.creationTimestamp", names: "metadata,creationTimestamp", simple: true},
		{in: `.status.conditions[?(@.type=="Ready")].status`, names: "status,conditions"},
		{in: ".spec.items[0].name", names: "spec,items"},
		{in: ".spec.*", names: "spec"},
		{in: "spec.size", err: "starts with '.'"},
		{in: "", err: "starts with '.'"},
		{in: ".spec.size[", err: "unterminated array"},
		{in: ".spec}{.status", err: "not a single JSONPath expression"},
	} {
		names, simple, err := parseJSONPath(c.in)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
		case err != nil || strings.Join(names, ",") != c.names || simple != c.simple:
			t.Errorf("%q: %v %v %v, want %s %v", c.in, names, simple, err, c.names, c.simple)
		}
	}
}

// FuzzParseJSONPath checks that no marker argument makes the JSONPath check panic.
func FuzzParseJSONPath(f *testing.F) {
	for _, s := range []string{".spec.size", `.status.conditions[?(@.type=="Ready")].status`, ".a[0:2].b", ".a..b", ".a['x']", "{", ".a}{.b", ".a[-1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, simple, err := parseJSONPath(s)
		if err == nil && simple && len(names) == 0 && s != "." {
			t.Errorf("%q: simple path without names", s)
		}
	})
}
