package codegen

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestDebugDump(t *testing.T) {
	out := os.Getenv("DUMP")
	if out == "" {
		t.Skip()
	}
	files, stats, err := RunWithStats(context.Background(), fixtureInput(copyFixture(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Log(stats)
	for _, f := range files {
		p := filepath.Join(out, f.Path)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, f.Content, 0o644)
	}
}
