package conformance

import "testing"

// TestIntendedCasesCompile: every listed difference's Case is a regular expression, so a
// bad one fails here and not after a run's minutes of building; a bad one is refused.
func TestIntendedCasesCompile(t *testing.T) {
	if err := checkListed(Intended); err != nil {
		t.Fatal(err)
	}
	if err := checkListed([]IntendedDifference{{Name: "broken", Case: "Boat | ("}}); err == nil {
		t.Fatal("a Case that does not compile was accepted")
	}
}
