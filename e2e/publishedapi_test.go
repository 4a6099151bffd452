package e2e

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"
)

// gatewayAPI is the published API the test serves: Kubernetes Gateway API's standard
// channel, a kubebuilder layout (apis/v1 with controller-gen's and register-gen's
// zz_generated files), whose HTTPRoute status has a required parents list. v1.6.3 is the
// newest release whose go.mod this toolchain (Go 1.26) accepts; its types need only
// k8s.io/apimachinery, which the generated project pins to v0.37.2.
const gatewayAPI = "sigs.k8s.io/gateway-api@v1.6.3"

// TestPublishedAPI takes Gateway API's apis/v1 from its Go module at test time (the module
// cache, filled through the module proxy), copies it unchanged into a new project as a
// user would (aagen init, the package with its own zz_generated files, go mod tidy),
// generates, builds and serves it with aagen up, and applies the project's own example
// (examples/standard/basic-http.yaml, used by its HTTPRoute reference): a GatewayClass, a
// Gateway and an HTTPRoute are created and read back with the defaults of their markers.
func TestPublishedAPI(t *testing.T) {
	skipShort(t)
	runsTools(t)
	dir, modDir := gatewayAPIProject(t)
	// generate first, on its own: what it still refuses is reported with its own message.
	run(t, dir, aagen(t), "generate", "./apis/...")
	up := startUpPattern(t, dir, "./apis/...", 20*time.Minute)

	example := filepath.Join(modDir, "examples", "standard", "basic-http.yaml")
	out, err := kubectl(t, up.kubeconfig, "", "apply", "-f", example)
	if err != nil {
		t.Fatalf("kubectl apply -f %s: %v\n%s", example, err, out)
	}
	out, err = kubectl(t, up.kubeconfig, "", "get", "httproutes.gateway.networking.k8s.io", "http-app-1", "-o", "json")
	if err != nil {
		t.Fatalf("kubectl get httproute: %v\n%s", err, out)
	}
	var route struct {
		Spec struct {
			Hostnames  []string `json:"hostnames"`
			ParentRefs []struct {
				Group, Kind, Name string
			} `json:"parentRefs"`
			Rules []struct {
				BackendRefs []struct {
					Kind, Name   string
					Port, Weight int
				} `json:"backendRefs"`
				Matches []struct {
					Headers []struct{ Type, Name, Value string } `json:"headers"`
					Method  string                               `json:"method"`
				} `json:"matches"`
			} `json:"rules"`
		} `json:"spec"`
	}
	if err := json.Unmarshal([]byte(out), &route); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	s := route.Spec
	switch {
	case len(s.Hostnames) != 1 || s.Hostnames[0] != "foo.com",
		len(s.Rules) != 2 || len(s.Rules[1].Matches) != 1 || s.Rules[1].Matches[0].Method != "GET",
		len(s.Rules[1].Matches[0].Headers) != 1 || s.Rules[1].Matches[0].Headers[0].Name != "magic":
		t.Errorf("the HTTPRoute read back differs from the example:\n%s", out)
	// Defaults of Gateway API's markers: parentRefs[].group and kind, backendRefs[].kind and weight.
	case len(s.ParentRefs) != 1 || s.ParentRefs[0].Kind != "Gateway" || s.ParentRefs[0].Group != "gateway.networking.k8s.io",
		len(s.Rules[0].BackendRefs) != 1 || s.Rules[0].BackendRefs[0].Kind != "Service" || s.Rules[0].BackendRefs[0].Weight != 1:
		t.Errorf("the HTTPRoute lacks the defaults of its markers:\n%s", out)
	}
	out, err = kubectl(t, up.kubeconfig, "", "get", "gateways.gateway.networking.k8s.io", "my-gateway", "-o", "jsonpath={.spec.listeners[0].protocol}")
	if err != nil || out != "HTTP" {
		t.Errorf("kubectl get gateway: %v\n%s", err, out)
	}
}

// downloadModule puts module@version into the module cache through the go command (and
// so the module proxy) and returns its directory there.
func downloadModule(t *testing.T, modVersion string) string {
	t.Helper()
	out := run(t, t.TempDir(), "go", "mod", "download", "-json", modVersion)
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal([]byte(out), &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download %s: %v %s\n%s", modVersion, err, mod.Error, out)
	}
	return mod.Dir
}

// gatewayAPIProject makes the project TestPublishedAPI and TestConformanceInputs serve: a
// new project (aagen init) holding Gateway API's apis/v1, its Go files copied unchanged
// from its module (the module cache, filled through the module proxy), and go mod tidy.
// It returns the project's directory and the module's.
func gatewayAPIProject(t *testing.T) (dir, modDir string) {
	t.Helper()
	modDir = downloadModule(t, gatewayAPI)
	dir = t.TempDir()
	run(t, dir, aagen(t), "init", "--domain", "example.com", "--module", "example.com/gatewayapi")
	copyGoSources(t, filepath.Join(modDir, "apis", "v1"), filepath.Join(dir, "apis", "v1"), nil)
	run(t, dir, "go", "mod", "tidy")
	return dir, modDir
}
