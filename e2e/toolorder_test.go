package e2e

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestToolTestsRunAfterTheOthers: a test that can reach a build of a tool binary
// (e2e/cluster's buildTool, behind KubeBinary and the rest, or internal/conformance's Run,
// which builds kube-apiserver and controller-gen, also as `aagen conformance`) calls
// runsTools or runsToolsAlone, and a test that cannot calls neither. Reaching is read from
// the source by function name (a method call counts as a call of every method of that name
// in the three packages), which errs towards reaching.
func TestToolTestsRunAfterTheOthers(t *testing.T) {
	root := repoRoot(t)
	calls := map[string]map[string]bool{} // "pkg.Func" -> "pkg.Func" it may call
	var tests []string
	for _, pkg := range []struct{ dir, name string }{{"e2e", "e2e"}, {"e2e/cluster", "cluster"}, {"internal/conformance", "conformance"}} {
		files, err := filepath.Glob(filepath.Join(root, pkg.dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s (%v)", pkg.dir, err)
		}
		fset := token.NewFileSet()
		for _, file := range files {
			if pkg.name != "e2e" && strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, file, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				name := pkg.name + "." + fd.Name.Name
				if fd.Recv != nil {
					name = pkg.name + ".(method)." + fd.Name.Name
				}
				if pkg.name == "e2e" && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Test") && fd.Name.Name != "TestMain" {
					tests = append(tests, name)
				}
				if calls[name] == nil {
					calls[name] = map[string]bool{}
				}
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					// `aagen conformance`, run as a command, builds as conformance.Run does.
					for _, arg := range call.Args {
						if lit, ok := arg.(*ast.BasicLit); ok && lit.Value == `"conformance"` {
							calls[name]["conformance.Run"] = true
						}
					}
					switch fn := call.Fun.(type) {
					case *ast.Ident:
						calls[name][pkg.name+"."+fn.Name] = true
					case *ast.SelectorExpr:
						if x, ok := fn.X.(*ast.Ident); ok && (x.Name == "cluster" || x.Name == "conformance") {
							calls[name][x.Name+"."+fn.Sel.Name] = true
						} else {
							for _, p := range []string{"e2e", "cluster", "conformance"} {
								calls[name][p+".(method)."+fn.Sel.Name] = true
							}
						}
					}
					return true
				})
			}
		}
	}
	builds := map[string]bool{"cluster.buildTool": true, "conformance.Run": true}
	for _, name := range []string{"cluster.buildTool", "conformance.Run", "cluster.StartNode"} {
		if calls[name] == nil {
			t.Fatalf("%s is not declared where this test looks: update the test", name)
		}
	}
	// reacher says which functions may call one of targets.
	reacher := func(targets map[string]bool) func(string) bool {
		reaches := map[string]bool{}
		visiting := map[string]bool{}
		var reach func(string) bool
		reach = func(f string) bool {
			if targets[f] {
				return true
			}
			if r, ok := reaches[f]; ok {
				return r
			}
			if visiting[f] {
				return false
			}
			visiting[f] = true
			r := false
			for c := range calls[f] {
				if reach(c) {
					r = true
					break
				}
			}
			delete(visiting, f)
			reaches[f] = r
			return r
		}
		return reach
	}
	reach := reacher(builds)
	// A test on the node holds the machine's port 53, bridge and iptables rules.
	reachNode := reacher(map[string]bool{"cluster.StartNode": true})
	sort.Strings(tests)
	var tools []string
	for _, test := range tests {
		shared, alone := calls[test]["e2e.runsTools"], calls[test]["e2e.runsToolsAlone"]
		marked := shared || alone
		reached, node := false, false
		for c := range calls[test] {
			if c != "e2e.runsTools" && c != "e2e.runsToolsAlone" {
				reached = reached || reach(c)
				node = node || reachNode(c)
			}
		}
		switch {
		case shared && alone:
			t.Errorf("%s calls both runsTools and runsToolsAlone: it would wait for itself; call one", test)
		case node && !alone:
			t.Errorf("%s starts the node and does not call runsToolsAlone: call it after skipShort", test)
		case reached && !marked:
			t.Errorf("%s may build a tool binary and calls neither runsTools nor runsToolsAlone: call one after skipShort", test)
		case !reached && marked:
			t.Errorf("%s calls runsTools or runsToolsAlone but builds no tool binary: it need not wait for the others", test)
		case reached:
			tools = append(tools, strings.TrimPrefix(test, "e2e."))
		}
	}
	if len(tools) == 0 {
		t.Fatal("no test reaches a tool build: the reading of the source is broken")
	}
	t.Logf("%d of %d tests run tools: %s", len(tools), len(tests), strings.Join(tools, ", "))
}
