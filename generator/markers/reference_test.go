package markers

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/markers.md")

// TestReference keeps docs/markers.md equal to what the registry renders.
func TestReference(t *testing.T) {
	const path = "../../docs/markers.md"
	want := Reference(Default())
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is out of date: go test ./generator/markers -run TestReference -update", path)
	}
}
