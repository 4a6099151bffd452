// Command bench measures aagen against its peers on this machine, in one run, and prints
// one table of ratios:
//
//	go run ./e2e/bench            # from the repository root; -runs=N for more repetitions
//
// Generation: `aagen generate` (cold and no-op) on the example API and on a synthetic
// package of 25 kinds, against the same outputs made the usual script-driven way (each
// code-generator and kube-openapi command run one after another, each loading the packages
// again, plus the models-schema program applyconfiguration-gen needs), and against one
// go/packages load of the same packages (the floor for a no-op run).
// Startup: process start of the generated server to /readyz ok, with embedded etcd and
// with an external etcd.
//
// Serving: the example's Boats served (a) by the generated server directly, (b) by the same
// server through a real kube-apiserver's aggregator and (c) as a CRD with the same schema
// (taken from the generated server's OpenAPI) on that kube-apiserver, all on one etcd:
// create, get, list (1k and 10k, JSON), list with a label selector, watch fan-out and
// updates under contention, with throughput, p50/p99 latency, server CPU per operation, live
// heap per stored object and peak RSS, each as a ratio to the CRD; and etcd's own put rate
// at the same concurrency and value size, the floor for writes.
//
// Generation and startup figures are the median of -runs repetitions; serving figures come
// from one pass over each workload.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/tools/go/packages"

	"github.com/aagen-dev/aagen/generator"
	"github.com/aagen-dev/aagen/internal/gocmd"
	"github.com/aagen-dev/aagen/runtime/etcd"
)

var (
	runs        = flag.Int("runs", 3, "repetitions of each generation and startup measurement (the median is reported)")
	doGenerate  = flag.Bool("generation", true, "measure generation and startup")
	doServing   = flag.Bool("serving", true, "measure serving against a CRD (builds etcd and kube-apiserver into .cache/bin once)")
	objects     = flag.Int("objects", 10000, "stored objects per subject for the serving workloads")
	concurrency = flag.Int("concurrency", 16, "concurrent clients for create, get and update")
	watchers    = flag.Int("watchers", 200, "watchers for the watch fan-out")
	updates     = flag.Int("updates", 100, "writes the watchers observe")
	profileDir  = flag.String("profile", "", "write CPU profiles of the storing server during the create and watch workloads into this directory")
	profileSecs = flag.Int("profile-seconds", 10, "length of each CPU profile")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type row struct {
	workload, subject, peer string
	subjectT, peerT         time.Duration
	target                  string
}

func run() error {
	root, err := filepath.Abs(".")
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "testdata/example/go.mod")); err != nil {
		return fmt.Errorf("run from the repository root: %w", err)
	}
	fmt.Printf("aagen bench: %s/%s, %d CPUs, %s\n\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	if *doGenerate {
		if err := generationAndStartup(root); err != nil {
			return err
		}
	}
	if *profileDir != "" {
		if err := os.MkdirAll(*profileDir, 0o755); err != nil {
			return fmt.Errorf("-profile: %w", err)
		}
	}
	if *doServing {
		table, err := serving(root, servingConfig{objects: *objects, concurrency: *concurrency, watchers: *watchers, updates: *updates, profileDir: *profileDir, profileSeconds: *profileSecs})
		if err != nil {
			return err
		}
		fmt.Println(table)
	}
	return nil
}

// generationAndStartup measures generation and startup and prints their table.
func generationAndStartup(root string) error {
	tools, err := buildTools(root)
	if err != nil {
		return err
	}
	var rows []row
	for _, api := range []struct {
		name  string
		kinds int
	}{{"example (2 kinds)", 0}, {"synthetic (25 kinds)", 25}} {
		fmt.Fprintf(os.Stderr, "bench: generation, %s\n", api.name)
		cold, err := median(func() (time.Duration, error) {
			dir, err := typesModule(root, api.kinds, false)
			if err != nil {
				return 0, err
			}
			defer os.RemoveAll(dir)
			return timed(func() error { return generate(dir) })
		})
		if err != nil {
			return err
		}
		script, err := median(func() (time.Duration, error) {
			dir, err := typesModule(root, api.kinds, true)
			if err != nil {
				return 0, err
			}
			defer os.RemoveAll(dir)
			return timed(func() error { return scriptDriven(tools, dir) })
		})
		if err != nil {
			return err
		}
		dir, err := typesModule(root, api.kinds, false)
		if err != nil {
			return err
		}
		if err := generate(dir); err != nil {
			return err
		}
		noop, err := median(func() (time.Duration, error) { return timed(func() error { return generate(dir) }) })
		if err != nil {
			return err
		}
		load, err := median(func() (time.Duration, error) { return timed(func() error { return loadOnce(dir) }) })
		if err != nil {
			return err
		}
		os.RemoveAll(dir)
		rows = append(rows,
			row{"generate " + api.name + ", cold", "aagen generate", "script-driven generators", cold, script, "<= 0.2"},
			row{"generate " + api.name + ", no-op", "aagen generate", "one package load", noop, load, "<= 1.2"},
		)
	}

	fmt.Fprintf(os.Stderr, "bench: startup\n")
	bin, _, cleanup, err := buildServer(root)
	if err != nil {
		return err
	}
	defer cleanup()
	embedded, err := median(func() (time.Duration, error) { return startup(bin, "") })
	if err != nil {
		return err
	}
	e, err := etcd.Start(context.Background(), etcd.Config{Dir: mustTemp()})
	if err != nil {
		return err
	}
	external, err := median(func() (time.Duration, error) { return startup(bin, e.ClientURL()) })
	e.Close()
	if err != nil {
		return err
	}
	rows = append(rows,
		row{"startup to /readyz, embedded etcd", "generated server", "3 s target", embedded, 3 * time.Second, "<= 1.0"},
		row{"startup to /readyz, external etcd", "generated server", "3 s target", external, 3 * time.Second, "<= 1.0"},
	)

	fmt.Printf("Generation and startup: median of %d runs.\n\n", *runs)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "workload\tsubject\ttime\tpeer\tpeer time\tratio\ttarget\tmet")
	for _, r := range rows {
		ratio := float64(r.subjectT) / float64(r.peerT)
		met := "yes"
		var limit float64
		fmt.Sscanf(strings.TrimPrefix(r.target, "<= "), "%g", &limit)
		if ratio > limit {
			met = "NO"
		}
		fmt.Fprintf(w, "%s\t%s\t%.2fs\t%s\t%.2fs\t%.2f\t%s\t%s\n", r.workload, r.subject, r.subjectT.Seconds(), r.peer, r.peerT.Seconds(), ratio, r.target, met)
	}
	return w.Flush()
}

func median(f func() (time.Duration, error)) (time.Duration, error) {
	var ds []time.Duration
	for i := 0; i < *runs; i++ {
		d, err := f()
		if err != nil {
			return 0, err
		}
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return ds[len(ds)/2], nil
}

func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

func mustTemp() string {
	d, err := os.MkdirTemp("", "aagen-bench-")
	if err != nil {
		panic(err)
	}
	return d
}

func generate(dir string) error {
	_, err := generator.Generate(context.Background(), generator.Options{
		Dir: dir, Patterns: []string{"./pkg/apis/..."}, Runtime: generator.RuntimeRef{Skip: true},
	})
	return err
}

func loadOnce(dir string) error {
	_, err := packages.Load(&packages.Config{Dir: dir,
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedImports,
	}, "./pkg/apis/...")
	return err
}

// typesModule writes a module with the example's go.mod and either the example's types or
// a synthetic package of n kinds; tagged adds the tags code-generator's commands need in
// the source (what a script-driven project keeps by hand) and a hand-written register.go.
func typesModule(root string, n int, tagged bool) (string, error) {
	dir := mustTemp()
	ex := filepath.Join(root, "testdata/example")
	gomod, err := os.ReadFile(filepath.Join(ex, "go.mod"))
	if err != nil {
		return "", err
	}
	gomod = []byte(strings.ReplaceAll(string(gomod), "=> ../..", "=> "+root))
	gosum, err := os.ReadFile(filepath.Join(ex, "go.sum"))
	if err != nil {
		return "", err
	}
	pkg := filepath.Join(dir, "pkg/apis/marina/v1alpha1")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		return "", err
	}
	types, err := os.ReadFile(filepath.Join(ex, "pkg/apis/marina/v1alpha1/types.go"))
	if err != nil {
		return "", err
	}
	kinds := []string{"Boat", "Dock"}
	if n > 0 {
		types, kinds = synthetic(n)
	}
	doc := "// +groupName=marina.example.com\npackage v1alpha1\n"
	if tagged {
		doc = "// +k8s:deepcopy-gen=package\n// +k8s:openapi-gen=true\n// +k8s:openapi-model-package=com.example.marina.pkg.apis.marina.v1alpha1\n" + doc
		s := string(types)
		for _, k := range kinds {
			for _, t := range []string{k, k + "List"} {
				s = strings.Replace(s, "\ntype "+t+" struct", "\n// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object\ntype "+t+" struct", 1)
			}
		}
		types = []byte(s)
		var objs []string
		for _, k := range kinds {
			objs = append(objs, "&"+k+"{}", "&"+k+"List{}")
		}
		register := fmt.Sprintf(`package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const GroupName = "marina.example.com"

var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

func Resource(resource string) schema.GroupResource { return SchemeGroupVersion.WithResource(resource).GroupResource() }

func AddToScheme(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, %s)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
`, strings.Join(objs, ", "))
		if err := os.WriteFile(filepath.Join(pkg, "register.go"), []byte(register), 0o644); err != nil {
			return "", err
		}
	}
	for name, data := range map[string][]byte{
		filepath.Join(dir, "go.mod"): gomod, filepath.Join(dir, "go.sum"): gosum,
		filepath.Join(pkg, "doc.go"): []byte(doc), filepath.Join(pkg, "types.go"): types,
		filepath.Join(dir, "hack/boilerplate.go.txt"): nil,
	} {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(name, data, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// synthetic returns a types file with n namespaced kinds with spec and status.
func synthetic(n int) ([]byte, []string) {
	var b strings.Builder
	b.WriteString("package v1alpha1\n\nimport metav1 \"k8s.io/apimachinery/pkg/apis/meta/v1\"\n")
	var kinds []string
	for i := 1; i <= n; i++ {
		k := fmt.Sprintf("Thing%02d", i)
		kinds = append(kinds, k)
		fmt.Fprintf(&b, `
// %[1]s is synthetic kind number %[2]d.
// +genclient
type %[1]s struct {
	metav1.TypeMeta   `+"`json:\",inline\"`"+`
	metav1.ObjectMeta `+"`json:\"metadata,omitempty\"`"+`
	Spec   %[1]sSpec   `+"`json:\"spec,omitempty\"`"+`
	Status %[1]sStatus `+"`json:\"status,omitempty\"`"+`
}

// %[1]sSpec is the desired state.
type %[1]sSpec struct {
	Name     string            `+"`json:\"name\"`"+`
	Size     int32             `+"`json:\"size\"`"+`
	Tags     []string          `+"`json:\"tags,omitempty\"`"+`
	Settings map[string]string `+"`json:\"settings,omitempty\"`"+`
}

// %[1]sStatus is the observed state.
type %[1]sStatus struct {
	Phase      string             `+"`json:\"phase,omitempty\"`"+`
	Conditions []metav1.Condition `+"`json:\"conditions,omitempty\"`"+`
}

// %[1]sList is a list of %[1]s.
type %[1]sList struct {
	metav1.TypeMeta `+"`json:\",inline\"`"+`
	metav1.ListMeta `+"`json:\"metadata,omitempty\"`"+`
	Items           []%[1]s `+"`json:\"items\"`"+`
}
`, k, i)
	}
	return []byte(b.String()), kinds
}

// buildTools builds the code-generator and kube-openapi commands (the versions aagen links)
// into .cache/bin once.
func buildTools(root string) (map[string]string, error) {
	out := map[string]string{}
	for name, pkg := range map[string]string{
		"deepcopy-gen": "k8s.io/code-generator/cmd/deepcopy-gen", "openapi-gen": "k8s.io/kube-openapi/cmd/openapi-gen",
		"applyconfiguration-gen": "k8s.io/code-generator/cmd/applyconfiguration-gen", "client-gen": "k8s.io/code-generator/cmd/client-gen",
		"lister-gen": "k8s.io/code-generator/cmd/lister-gen", "informer-gen": "k8s.io/code-generator/cmd/informer-gen",
	} {
		bin := filepath.Join(root, ".cache/bin/codegen", name)
		if _, err := os.Stat(bin); err != nil {
			fmt.Fprintf(os.Stderr, "bench: building %s\n", name)
			if _, err := (gocmd.Cmd{Args: []string{"build", "-o", bin, pkg}, Dir: root}).Run(context.Background()); err != nil {
				return nil, fmt.Errorf("building %s: %w", name, err)
			}
		}
		out[name] = bin
	}
	return out, nil
}

// scriptDriven produces the same outputs the way kube_codegen.sh does: one command per
// generator, each loading the packages again.
func scriptDriven(tools map[string]string, dir string) error {
	const mod = "example.com/marina"
	types := "./pkg/apis/marina/v1alpha1"
	hdr := "hack/boilerplate.go.txt"
	gen := mod + "/pkg/generated"
	steps := [][]string{
		{tools["deepcopy-gen"], "--go-header-file", hdr, "--output-file", "zz_generated.deepcopy.go", types},
		{tools["openapi-gen"], "--go-header-file", hdr, "--output-file", "zz_generated.openapi.go", "--output-dir", "pkg/generated/openapi",
			"--output-pkg", gen + "/openapi", "--output-model-name-file", "zz_generated.model_name.go", "--report-filename", "/dev/null",
			"k8s.io/apimachinery/pkg/apis/meta/v1", "k8s.io/apimachinery/pkg/runtime", "k8s.io/apimachinery/pkg/version",
			"k8s.io/apimachinery/pkg/api/resource", "k8s.io/apimachinery/pkg/util/intstr", types},
		{"models-schema"},
		{tools["applyconfiguration-gen"], "--go-header-file", hdr, "--output-dir", "pkg/generated/applyconfiguration",
			"--output-pkg", gen + "/applyconfiguration", "--openapi-schema", "schema.json", types},
		{tools["client-gen"], "--go-header-file", hdr, "--clientset-name", "versioned", "--input-base", "", "--input", mod + "/pkg/apis/marina/v1alpha1",
			"--output-dir", "pkg/generated/clientset", "--output-pkg", gen + "/clientset", "--apply-configuration-package", gen + "/applyconfiguration"},
		{tools["lister-gen"], "--go-header-file", hdr, "--output-dir", "pkg/generated/listers", "--output-pkg", gen + "/listers", types},
		{tools["informer-gen"], "--go-header-file", hdr, "--output-dir", "pkg/generated/informers", "--output-pkg", gen + "/informers",
			"--versioned-clientset-package", gen + "/clientset/versioned", "--listers-package", gen + "/listers", types},
	}
	for _, s := range steps {
		var cmd *exec.Cmd
		if s[0] == "models-schema" {
			prog := filepath.Join(dir, "pkg/generated/openapi/cmd/models-schema")
			if err := os.MkdirAll(prog, 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(prog, "main.go"), []byte(modelsSchema), 0o644); err != nil {
				return err
			}
			out, err := (gocmd.Cmd{Args: []string{"run", "./pkg/generated/openapi/cmd/models-schema"}, Dir: dir}).Run(context.Background())
			if err != nil {
				return fmt.Errorf("models-schema: %w", err)
			}
			if err := os.WriteFile(filepath.Join(dir, "schema.json"), out, 0o644); err != nil {
				return err
			}
			continue
		}
		cmd = exec.Command(s[0], s[1:]...)
		cmd.Dir = dir
		if o, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v\n%s", filepath.Base(s[0]), err, o)
		}
	}
	n := 0
	_ = filepath.WalkDir(filepath.Join(dir, "pkg/generated"), func(_ string, d fs.DirEntry, _ error) error {
		if d != nil && !d.IsDir() {
			n++
		}
		return nil
	})
	if n < 10 {
		return fmt.Errorf("script-driven run produced only %d files", n)
	}
	return nil
}

const modelsSchema = `package main

import (
	"encoding/json"
	"fmt"
	"os"

	openapi "example.com/marina/pkg/generated/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

func main() {
	ref := func(name string) spec.Ref { return spec.MustCreateRef("#/definitions/" + name) }
	defs := openapi.GetOpenAPIDefinitions(ref)
	out := map[string]spec.Schema{}
	for k, v := range defs {
		out[k] = v.Schema
	}
	data, err := json.Marshal(&spec.Swagger{SwaggerProps: spec.SwaggerProps{Definitions: out, Swagger: "2.0",
		Info: &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: "unversioned"}}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(data)
}
`

// buildServer builds the example server in a temporary copy of the example (its
// generated tree is checked in and current) and returns the binary and the copy.
func buildServer(root string) (string, string, func(), error) {
	dir := mustTemp()
	cleanup := func() { os.RemoveAll(dir) }
	cp := exec.Command("cp", "-a", filepath.Join(root, "testdata/example")+"/.", dir)
	if o, err := cp.CombinedOutput(); err != nil {
		return "", "", cleanup, fmt.Errorf("%v: %s", err, o)
	}
	gomod := filepath.Join(dir, "go.mod")
	data, _ := os.ReadFile(gomod)
	_ = os.WriteFile(gomod, []byte(strings.ReplaceAll(string(data), "=> ../..", "=> "+root)), 0o644)
	bin := filepath.Join(dir, "server")
	if _, err := (gocmd.Cmd{Args: []string{"build", "-o", bin, "./cmd/marina-apiserver"}, Dir: dir}).Run(context.Background()); err != nil {
		return "", "", cleanup, fmt.Errorf("building the example server: %w", err)
	}
	return bin, dir, cleanup, nil
}

// startup runs the server in local mode on fresh state and returns the time from process
// start to the moment /readyz is ok (the server prints its KUBECONFIG line then).
func startup(bin, etcdURL string) (time.Duration, error) {
	state := mustTemp()
	defer os.RemoveAll(state)
	args := []string{"--local", "--secure-port=0", "--local-dir=" + filepath.Join(state, "local"), "--embedded-etcd-dir=" + filepath.Join(state, "etcd")}
	if etcdURL != "" {
		args = append(args, "--etcd-servers="+etcdURL, "--etcd-prefix=/bench/"+filepath.Base(state))
	}
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "export KUBECONFIG=") {
			return time.Since(start), nil
		}
	}
	return 0, fmt.Errorf("server exited before it was ready")
}
