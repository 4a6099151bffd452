package e2e

import (
	"testing"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// TestShortFuzz runs the fuzz targets for a few seconds each, so that every CI run also
// fuzzes the marker parser, the model builder and the JSONPath checks (go test runs one -fuzz target at a time,
// hence the subprocesses). Minimization is off: the fuzzing engine minimizes every new
// interesting input, and when its time runs out in the middle of that it fails the run with
// "context deadline exceeded" and no failing input (seen on a loaded 2-core machine). A
// real failure is still reported with its input, unminimized, in testdata/fuzz.
func TestShortFuzz(t *testing.T) {
	skipShort(t)
	for _, target := range []struct{ pkg, fn string }{
		{"./generator/markers", "FuzzParseText"},
		{"./generator/model", "FuzzBuild"},
		{"./generator/model", "FuzzParseJSONPath"},
	} {
		t.Run(target.fn, func(t *testing.T) {
			out := run(t, repoRoot(t), "go", "test", "-run=^$", "-fuzz=^"+target.fn+"$", "-fuzztime=10s", "-fuzzminimizetime=0", target.pkg)
			t.Log(cluster.Tail(out, 500))
		})
	}
}
