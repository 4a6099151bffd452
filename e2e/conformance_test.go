package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/aagen-dev/aagen/e2e/cluster"
	"github.com/aagen-dev/aagen/generator"
	"github.com/aagen-dev/aagen/internal/conformance"
	"github.com/aagen-dev/aagen/runtime/etcd"
)

// exampleKnownDifferences are the differences between testdata/example's generated server and
// controller-gen's CRD that aagen conformance finds and that are neither by design nor fixed
// yet (not in conformance.Intended): the test asserts exactly this set, so a new difference
// fails it, and so does one fixed without updating the list.
var exampleKnownDifferences = []string{}

// TestConformanceExample runs `aagen conformance` (package internal/conformance) on
// testdata/example: the same corpus, derived from the types, is sent to the generated server
// and to controller-gen's CRD on kube-apiserver. Every difference must be listed as intended
// (conformance.Intended) or be one of exampleKnownDifferences. Then the test breaks one
// marker's translation (it drops MaxLength from spec.dock in the CRD, through the
// AlterCRD hook) and asserts that the command reports the difference.
func TestConformanceExample(t *testing.T) {
	skipShort(t)
	runsTools(t)
	root := repoRoot(t)
	run := func(t *testing.T, alter func(*apiextensionsv1.CustomResourceDefinition)) (*conformance.Result, string) {
		dir := t.TempDir()
		copyTree(t, filepath.Join(root, "testdata", "example"), dir, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		var out, log bytes.Buffer
		// conformance.Run builds these too when they are missing: through e2e/cluster, a
		// build under way in the background (cluster.Prebuild) is waited for and raised.
		cluster.KubeBinary(t, "kube-apiserver")
		cluster.ControllerGenBinary(t)
		res, err := conformance.Run(ctx, conformance.Options{
			Generate: generator.Options{Dir: dir, Patterns: []string{"./pkg/apis/..."}, Runtime: generator.RuntimeRef{Replace: root}},
			BinDir:   filepath.Join(root, ".cache", "bin"),
			Out:      &out, Log: &log,
			AlterCRD: alter,
		})
		if err != nil {
			t.Fatalf("conformance: %v\n%s", err, log.String())
		}
		return res, out.String()
	}

	t.Run("testdata/example", func(t *testing.T) {
		res, out := run(t, nil)
		t.Logf("%d cases, %d equal, %d different (%d listed, %d not listed)", res.Cases, res.Equal, len(res.Differences), len(res.Differences)-len(res.Unlisted), len(res.Unlisted))
		t.Logf("table:\n%s", out[:strings.Index(out, "\n\n")])
		if res.Cases < 300 {
			t.Errorf("%d cases; want at least 300", res.Cases)
		}
		assertKnownDifferences(t, res, exampleKnownDifferences)
		for _, name := range []string{"cluster scope from +genclient:nonNamespaced", "empty struct member", "list items without apiVersion and kind",
			"status subresource without +kubebuilder:subresource:status", "managedFields: no \".\" entry for what a Go type always encodes",
			"list metadata without continue \"\"", "unsupported field selector message lists the supported ones",
			"managedFields: zero values sent on create not owned", "unknown field in a merge patch under Strict: the message quotes the patched object",
			"unknown field outside status written through /status: warned",
			"watch from resourceVersion 1: too old depends on the server's history"} {
			if res.ListedSeen[name] == 0 {
				t.Errorf("the listed difference %q was not seen", name)
			}
		}
		if len(res.UnviolatedRules) != 0 {
			t.Errorf("CEL rules not violated: %v", res.UnviolatedRules)
		}
	})

	t.Run("a broken translation is reported", func(t *testing.T) {
		res, _ := run(t, func(crd *apiextensionsv1.CustomResourceDefinition) {
			if crd.Spec.Names.Kind != "Boat" {
				return
			}
			for _, v := range crd.Spec.Versions {
				spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
				dock := spec.Properties["dock"]
				dock.MaxLength = nil
				spec.Properties["dock"] = dock
				v.Schema.OpenAPIV3Schema.Properties["spec"] = spec
			}
		})
		for _, op := range []string{"create", "update", "merge-patch", "json-patch", "apply"} {
			id := "Boat | spec.dock MaxLength=63: 64 characters | " + op
			var found *conformance.Difference
			for i, d := range res.Unlisted {
				if d.ID == id {
					found = &res.Unlisted[i]
				}
			}
			if found == nil {
				t.Errorf("no unlisted difference %q with the CRD's MaxLength dropped", id)
				continue
			}
			if !strings.Contains(found.AAGen, "may not be more than 63") || !strings.HasPrefix(found.CRD, "20") {
				t.Errorf("%s:\naagen: %s\ncrd:   %s\nwant aagen's 422 Too long and the CRD's success", id, found.AAGen, found.CRD)
			}
		}
	})
}

func describeDifference(res *conformance.Result, id string) string {
	for _, d := range res.Differences {
		if d.ID == id {
			return d.ID + "\n  aagen: " + d.AAGen + "\n  crd:   " + d.CRD
		}
	}
	return id
}

// conformanceInput is one API TestConformanceInputs runs the command on.
type conformanceInput struct {
	name string
	// project returns the module's directory, ready as a user has it.
	project  func(t *testing.T) string
	patterns []string
	// known names the file of e2e/conformance_known that lists, one case ID a line, the
	// differences found on it that are neither fixed nor listed as intended (as
	// exampleKnownDifferences for testdata/example): the gaps of aagen, or of the corpus,
	// that these published APIs show and that are not fixed yet.
	known string
	// refused are regular expressions of case IDs the generated server must refuse with
	// 422 Invalid (assertRefused): constraints checked by name, not only as "the same as
	// the CRD".
	refused []string
}

// TestConformanceInputs runs `aagen conformance` on testdata/kbexample, on Gateway API's
// apis/v1 and on cert-manager's certmanager/v1, both taken unchanged from their modules
// (as TestPublishedAPI and TestPublishedCorpus serve them), on one etcd and kube-apiserver
// that the runs share (their groups differ): each must send at
// least 200 cases, and find no difference that is neither listed as intended nor one of
// its known differences. The log prints each table's counts and how long each input took.
func TestConformanceInputs(t *testing.T) {
	skipShort(t)
	runsTools(t)
	root := repoRoot(t)
	e, err := etcd.Start(context.Background(), etcd.Config{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	start := time.Now()
	oracle := cluster.StartControlPlane(t, e.ClientURL()).Admin
	t.Logf("etcd and kube-apiserver %s started (shared by the inputs) in %s", conformance.KubeVersion, time.Since(start).Round(time.Second))

	for _, in := range []conformanceInput{
		{name: "testdata/kbexample", patterns: []string{"./api/..."}, known: "kbexample.txt", project: func(t *testing.T) string {
			dir := t.TempDir()
			copyTree(t, filepath.Join(root, "testdata", "kbexample"), dir, nil)
			return dir
		}},
		{name: "Gateway API " + gatewayAPI + " apis/v1", patterns: []string{"./apis/..."}, known: "gatewayapi.txt", project: func(t *testing.T) string {
			dir, _ := gatewayAPIProject(t)
			return dir
		}, refused: []string{
			// metav1.Condition's kubebuilder markers, as controller-gen applies them, on
			// every route's and the Gateway's status conditions.
			`conditions\[\]\.status Enum: NotInTheEnum \| status `,
			`conditions\[\]\.type MaxLength=316: 317 characters \| status `,
		}},
		// An API nobody tuned the corpus for: cert-manager's certmanager/v1 taken unchanged
		// from its module (a +optional spec with required fields, []byte fields, no
		// config/samples: every valid object synthesized).
		{name: "cert-manager certmanager/v1", patterns: []string{"./apis/..."}, known: "certmanager.txt", project: func(t *testing.T) string {
			modDir := downloadModule(t, corpusCertManager)
			dir := t.TempDir()
			run(t, dir, aagen(t), "init", "--domain", "example.com", "--module", "example.com/certmanager")
			copyGoSources(t, filepath.Join(modDir, "pkg", "apis", "certmanager", "v1"), filepath.Join(dir, "apis", "v1"), nil)
			run(t, dir, "go", "mod", "tidy")
			return dir
		}},
	} {
		t.Run(in.name, func(t *testing.T) {
			start := time.Now()
			dir := in.project(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
			defer cancel()
			var out, log bytes.Buffer
			cluster.ControllerGenBinary(t) // as in TestConformanceExample
			res, err := conformance.Run(ctx, conformance.Options{
				Generate: generator.Options{Dir: dir, Patterns: in.patterns, Runtime: generator.RuntimeRef{Replace: root}},
				BinDir:   filepath.Join(root, ".cache", "bin"),
				Out:      &out, Log: &log,
				Oracle: oracle,
			})
			if err != nil {
				t.Fatalf("conformance: %v\n%s", err, log.String())
			}
			t.Logf("%s: %d cases, %d equal, %d different (%d listed, %d not listed), in %s", in.name, res.Cases, res.Equal, len(res.Differences),
				len(res.Differences)-len(res.Unlisted), len(res.Unlisted), time.Since(start).Round(time.Second))
			t.Logf("table:\n%s", out.String()[:strings.Index(out.String(), "\n\n")])
			if res.Cases < 200 {
				t.Errorf("%d cases; want at least 200", res.Cases)
			}
			data, err := os.ReadFile(filepath.Join(root, "e2e", "conformance_known", in.known))
			if err != nil {
				t.Fatal(err)
			}
			var known []string
			for _, line := range strings.Split(string(data), "\n") {
				if line != "" && !strings.HasPrefix(line, "#") {
					known = append(known, line)
				}
			}
			assertKnownDifferences(t, res, known)
			for _, s := range res.InvalidSamples {
				t.Errorf("%s", s)
			}
			for _, p := range in.refused {
				assertRefused(t, res, p, http.StatusUnprocessableEntity)
			}
		})
	}
}

// assertRefused fails unless the generated server answered code to every case whose ID
// matches pattern and was answered (a case whose earlier step failed has code 0: it is
// logged, not counted), and at least one such case was answered.
func assertRefused(t *testing.T, res *conformance.Result, pattern string, code int) {
	t.Helper()
	re := regexp.MustCompile(pattern)
	answered, unanswered := 0, 0
	for id, c := range res.Codes {
		if !re.MatchString(id) {
			continue
		}
		switch c {
		case 0:
			unanswered++
			t.Logf("%s: not answered (an earlier step failed)", id)
		case code:
			answered++
		default:
			answered++
			t.Errorf("%s: the generated server answered %d, want %d", id, c, code)
		}
	}
	if answered == 0 {
		t.Errorf("no answered case matches %q (%d unanswered): the corpus lost them", pattern, unanswered)
		return
	}
	t.Logf("%d answered cases match %q, each refused with %d (%d unanswered)", answered, pattern, code, unanswered)
}

// assertKnownDifferences fails on a difference neither listed as intended nor in known,
// and on a known one that is gone.
func assertKnownDifferences(t *testing.T, res *conformance.Result, known []string) {
	t.Helper()
	var got []string
	for _, d := range res.Unlisted {
		got = append(got, d.ID)
	}
	for _, id := range got {
		if !slices.Contains(known, id) {
			t.Errorf("a difference neither listed nor known:\n%s", describeDifference(res, id))
		} else {
			t.Logf("known difference:\n%s", describeDifference(res, id))
		}
	}
	for _, id := range known {
		if !slices.Contains(got, id) {
			t.Errorf("the known difference %q is gone: take it off the known differences", id)
		}
	}
}

// TestConformanceNewUser does what a new user does: aagen init, aagen create api, a few
// validation markers added to the scaffolded spec, then aagen conformance with no other
// step (no generate, no go mod tidy). The command must run to its table, printing progress on
// the way; it may exit non-zero only for differences it names in the table.
func TestConformanceNewUser(t *testing.T) {
	skipShort(t)
	runsTools(t)
	root := repoRoot(t)
	bin := aagen(t)
	dir := t.TempDir()
	run(t, dir, bin, "init", "--domain", "example.com", "--module", "example.com/shipyard")
	run(t, dir, bin, "create", "api", "--group", "ships", "--version", "v1alpha1", "--kind", "Frigate", "--status")
	types := filepath.Join(dir, "pkg", "apis", "ships", "v1alpha1", "frigate_types.go")
	src, err := os.ReadFile(types)
	if err != nil {
		t.Fatal(err)
	}
	const anchor = "type FrigateSpec struct {\n"
	if !strings.Contains(string(src), anchor) {
		t.Fatalf("%s has no %q:\n%s", types, anchor, src)
	}
	fields := "\t// Captain is the name of the frigate's captain.\n\t// +optional\n\t// +kubebuilder:validation:MinLength=2\n\t// +kubebuilder:validation:MaxLength=20\n" +
		"\t// +kubebuilder:validation:Pattern=`^[A-Z][a-z]+$`\n\tCaptain string `json:\"captain,omitempty\"`\n\n" +
		"\t// Guns is the number of guns aboard.\n\t// +optional\n\t// +kubebuilder:validation:Minimum=0\n\t// +kubebuilder:validation:Maximum=60\n\tGuns int32 `json:\"guns,omitempty\"`\n\n" +
		"\t// Rig is how the frigate is rigged.\n\t// +optional\n\t// +kubebuilder:validation:Enum=ship;barque\n\t// +kubebuilder:default=ship\n\tRig string `json:\"rig,omitempty\"`\n\n" +
		"\t// Ports are the ports the frigate may call at.\n\t// +optional\n\t// +listType=set\n\t// +kubebuilder:validation:MaxItems=3\n\tPorts []string `json:\"ports,omitempty\"`\n\n"
	if err := os.WriteFile(types, []byte(strings.Replace(string(src), anchor, anchor+fields, 1)), 0o644); err != nil {
		t.Fatal(err)
	}

	// `aagen conformance` builds these too when they are missing, in another process: through
	// e2e/cluster, a build under way in the background (cluster.Prebuild) is waited for and
	// raised.
	cluster.KubeBinary(t, "kube-apiserver")
	cluster.ControllerGenBinary(t)
	start := time.Now()
	cmd := exec.Command(bin, "conformance", "--bin-dir", filepath.Join(root, ".cache", "bin"), "./pkg/apis/...")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	t.Logf("aagen conformance in %s; progress:\n%s", time.Since(start).Round(time.Second), stderr.String())
	t.Logf("table:\n%s", stdout.String())
	for _, want := range []string{"aagen conformance: writing CRDs with controller-gen", "aagen conformance: building", "aagen conformance: sending"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("no progress line %q", want)
		}
	}
	if !strings.HasPrefix(stdout.String(), "KIND ") || !strings.Contains(stdout.String(), "\nFrigate ") || !strings.Contains(stdout.String(), "\nTOTAL ") {
		t.Errorf("the command did not print its table with a row for Frigate")
	}
	// The types above hold what a new user writes, and what the command is for: Guns, an
	// int32 with omitempty, cannot hold an explicit 0 (Go drops it on encoding), where the
	// CRD keeps "guns": 0; such differences make the command exit non-zero, naming them.
	if err != nil && !strings.Contains(stderr.String(), "difference(s) between the generated server and the CRD not listed as intended") {
		t.Errorf("aagen conformance: %v", err)
	}
}
