package e2e

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// fuzzTarget is one fuzz function, the package that holds it and how many calls of it
// TestShortFuzz asks for (-fuzztime=Nx). A count, not a time, so that a loaded machine fuzzes
// as much as a quiet one: the count includes the seed inputs the engine replays first
// ("gathering baseline coverage"), and with a time limit FuzzBuild's 76 seeds, at about 5 a
// second on a loaded 2-core machine, used all of 10 s and nothing was fuzzed. Each count is
// several times what the target's seeds take and a few seconds on a quiet machine.
type fuzzTarget struct {
	pkg, fn string
	execs   int
}

// name is what identifies the target: its package and function.
func (f fuzzTarget) name() string { return f.pkg + "." + f.fn }

// fuzzTargets are every fuzz function of the module; TestFuzzTargetsListed fails when one
// is added, renamed or removed without this list following.
func fuzzTargets() []fuzzTarget {
	return []fuzzTarget{
		{"./generator/markers", "FuzzParseLiteral", 20000},
		{"./generator/markers", "FuzzParseText", 5000},
		{"./generator/model", "FuzzBuild", 300},
		{"./generator/model", "FuzzParseJSONPath", 5000},
	}
}

// TestShortFuzz fuzzes every target of fuzzTargets for its count of calls, so that every CI run
// also fuzzes the marker parsers, the model builder and the JSONPath checks (go test runs
// one -fuzz target at a time, hence the subprocesses). A run passes only if its output shows
// the named target fuzzed (checkFuzzOutput): go test exits 0 when -fuzz matches nothing.
// Minimization is off: the fuzzing engine minimizes every new interesting input, and when
// its time runs out in the middle of that it fails the run with "context deadline exceeded"
// and no failing input (seen on a loaded 2-core machine). A real failure is still reported
// with its input, unminimized, in testdata/fuzz.
func TestShortFuzz(t *testing.T) {
	skipShort(t)
	for _, target := range fuzzTargets() {
		t.Run(target.fn, func(t *testing.T) {
			budget := strconv.Itoa(target.execs) + "x"
			// A fresh fuzz cache per run: go test replays every input it cached before
			// ("gathering baseline coverage") inside -fuzztime, and a cache that grew over
			// many CI runs (287 inputs) would leave no calls to fuzz with.
			out := run(t, repoRoot(t), "go", "test", "-run=^$", "-fuzz=^"+target.fn+"$", "-fuzztime="+budget, "-fuzzminimizetime=0", target.pkg,
				"-args", "-test.fuzzcachedir="+t.TempDir())
			execs, err := checkFuzzOutput(out)
			if err != nil {
				t.Fatalf("%s in %s: %v\n%s", target.fn, target.pkg, err, cluster.Tail(out, 2000))
			}
			t.Logf("%s: %d executions of %s\n%s", target.fn, execs, budget, cluster.Tail(out, 500))
		})
	}
}

// checkFuzzOutput returns the executions the output of `go test -fuzz` reports, or an error
// if it shows no target fuzzed: no fuzz test matched, no test ran, or no executions.
func checkFuzzOutput(out string) (int, error) {
	for _, none := range []string{"no fuzz tests to fuzz", "no tests to run", "[no test files]"} {
		if strings.Contains(out, none) {
			return 0, fmt.Errorf("nothing was fuzzed: go test says %q", none)
		}
	}
	// The fuzzing engine's progress lines that count executions.
	progress := regexp.MustCompile(`(?m)^fuzz: elapsed: \d+s, execs: (\d+) `)
	m := progress.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		return 0, fmt.Errorf("nothing was fuzzed: no line \"fuzz: elapsed: ..., execs: N\" in the output")
	}
	execs, err := strconv.Atoi(m[len(m)-1][1])
	if err != nil || execs == 0 {
		return 0, fmt.Errorf("nothing was fuzzed: the last progress line counts %q executions", m[len(m)-1][1])
	}
	return execs, nil
}

func TestCheckFuzzOutput(t *testing.T) {
	fuzzed := "fuzz: elapsed: 0s, gathering baseline coverage: 0/12 completed\n" +
		"fuzz: elapsed: 0s, gathering baseline coverage: 12/12 completed, now fuzzing with 2 workers\n" +
		"fuzz: elapsed: 3s, execs: 21456 (7150/sec), new interesting: 2 (total: 14)\n" +
		"fuzz: elapsed: 8s, execs: 52011 (6108/sec), new interesting: 3 (total: 15)\nPASS\nok  \tgithub.com/aagen-dev/aagen/generator/markers\t8.213s\n"
	if n, err := checkFuzzOutput(fuzzed); err != nil || n != 52011 {
		t.Errorf("a fuzzed target: %d, %v", n, err)
	}
	for name, out := range map[string]string{
		// What go test prints, exiting 0, for a -fuzz pattern no target matches (a renamed one).
		"renamed target": "testing: warning: no fuzz tests to fuzz\nPASS\nok  \tgithub.com/aagen-dev/aagen/generator/markers\t0.012s\n",
		"no tests":       "testing: warning: no tests to run\nPASS\nok  \tgithub.com/aagen-dev/aagen/generator/markers\t0.012s [no tests to run]\n",
		"baseline only":  "fuzz: elapsed: 0s, gathering baseline coverage: 0/12 completed\nPASS\n",
		"no executions":  "fuzz: elapsed: 8s, execs: 0 (0/sec), new interesting: 0 (total: 12)\nPASS\n",
		"empty":          "",
	} {
		if _, err := checkFuzzOutput(out); err == nil || !strings.Contains(err.Error(), "nothing was fuzzed") {
			t.Errorf("%s: got %v, want nothing was fuzzed", name, err)
		}
	}
}

// TestFuzzTargetsListed finds every fuzz function of the module (func FuzzX(*testing.F) in
// a _test.go file, outside testdata and nested modules) and fails unless fuzzTargets lists
// exactly those, so that none is left out of TestShortFuzz.
func TestFuzzTargetsListed(t *testing.T) {
	root := repoRoot(t)
	var found []fuzzTarget
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // another module: not this one's tests
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Fuzz") || !takesTestingF(fn) {
				continue
			}
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			found = append(found, fuzzTarget{pkg: "./" + filepath.ToSlash(rel), fn: fn.Name.Name})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	less := func(a, b fuzzTarget) int { return strings.Compare(a.name(), b.name()) }
	named := func(ts []fuzzTarget, x fuzzTarget) bool {
		return slices.ContainsFunc(ts, func(u fuzzTarget) bool { return u.name() == x.name() })
	}
	slices.SortFunc(found, less)
	listed := slices.SortedFunc(slices.Values(fuzzTargets()), less)
	if len(found) == 0 {
		t.Fatal("no fuzz function found in the module")
	}
	for _, f := range found {
		if !named(listed, f) {
			t.Errorf("%s in %s is not in fuzzTargets (e2e/fuzz_test.go): TestShortFuzz does not run it", f.fn, f.pkg)
		}
	}
	for i, l := range listed {
		if i > 0 && listed[i-1].name() == l.name() {
			t.Errorf("fuzzTargets lists %s in %s twice (e2e/fuzz_test.go)", l.fn, l.pkg)
		}
		if l.execs <= 0 {
			t.Errorf("fuzzTargets gives %s in %s no count of calls (e2e/fuzz_test.go)", l.fn, l.pkg)
		}
		if !named(found, l) {
			t.Errorf("fuzzTargets lists %s in %s, which is no fuzz function of the module (renamed or removed?)", l.fn, l.pkg)
		}
	}
	if !t.Failed() {
		t.Logf("%d fuzz functions, all listed", len(found))
	}
}

// takesTestingF tells whether fn's only parameter is a *testing.F.
func takesTestingF(fn *ast.FuncDecl) bool {
	params := fn.Type.Params.List
	if len(params) != 1 || len(params[0].Names) > 1 {
		return false
	}
	star, ok := params[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "testing" && sel.Sel.Name == "F"
}
