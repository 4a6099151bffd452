package server

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSoftMemoryLimit(t *testing.T) {
	cgroup := func(t *testing.T, files map[string]string) string {
		root := t.TempDir()
		for name, content := range files {
			p := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return root
	}
	noEnv := func(string) string { return "" }
	cases := []struct {
		name   string
		files  map[string]string
		getenv func(string) string
		want   int64
	}{
		{"cgroup v2, 512 MiB", map[string]string{"memory.max": "536870912\n"}, noEnv, 536870912 / 100 * 90},
		{"cgroup v2, no limit", map[string]string{"memory.max": "max\n"}, noEnv, 0},
		{"cgroup v1, 512 MiB", map[string]string{"memory/memory.limit_in_bytes": "536870912\n"}, noEnv, 536870912 / 100 * 90},
		{"cgroup v1, no limit", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712\n"}, noEnv, 0},
		{"no cgroup files", nil, noEnv, 0},
		{"GOMEMLIMIT set", map[string]string{"memory.max": "536870912\n"}, func(k string) string {
			if k == "GOMEMLIMIT" {
				return "300MiB"
			}
			return ""
		}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, why, err := softMemoryLimit(c.getenv, cgroup(t, c.files))
			if err != nil || got != c.want {
				t.Errorf("softMemoryLimit = %d (%s), %v; want %d", got, why, err, c.want)
			}
		})
	}
	if _, _, err := softMemoryLimit(noEnv, cgroup(t, map[string]string{"memory.max": "lots"})); err == nil {
		t.Error("an unreadable memory.max: want an error")
	}
}
