package generator_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestClientMethodOfAnotherServedPackage gives the example's Boat client methods whose body
// is a type of another package of the module (as k8s.io/api's apps/v1 names autoscaling/v1's
// Scale in +genclient:method): served in the same run, that package gets the apply
// configuration the ApplyScale method takes, its Scale is registered and deep-copied as an
// object of its version, and the generated clientset builds; so does a method whose answer
// is a type of the kind's own package named without its package (BoatSummary). Served
// without it, the method is refused at its marker (testdata/badinput
// client-method-input-not-served).
func TestClientMethodOfAnotherServedPackage(t *testing.T) {
	dir := typesOnly(t)
	const scaling = "example.com/marina/pkg/apis/scaling/v1"
	files := map[string]string{
		"pkg/apis/scaling/v1/doc.go": "// +groupName=scaling.example.com\npackage v1\n",
		"pkg/apis/scaling/v1/types.go": `package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +genclient
type Autoscaler struct {
	metav1.TypeMeta   ` + "`json:\",inline\"`" + `
	metav1.ObjectMeta ` + "`json:\"metadata,omitempty\"`" + `

	Spec ScaleSpec ` + "`json:\"spec\"`" + `
}

type AutoscalerList struct {
	metav1.TypeMeta ` + "`json:\",inline\"`" + `
	metav1.ListMeta ` + "`json:\"metadata,omitempty\"`" + `
	Items           []Autoscaler ` + "`json:\"items\"`" + `
}

// Scale is the body of the scale methods of the marina's Boat: not a kind.
type Scale struct {
	metav1.TypeMeta   ` + "`json:\",inline\"`" + `
	metav1.ObjectMeta ` + "`json:\"metadata,omitempty\"`" + `

	Spec ScaleSpec ` + "`json:\"spec,omitempty\"`" + `
}

type ScaleSpec struct {
	Replicas int32 ` + "`json:\"replicas,omitempty\"`" + `
}
`,
	}
	for name, src := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	types := filepath.Join(dir, "pkg/apis/marina/v1alpha1/types.go")
	src, err := os.ReadFile(types)
	if err != nil {
		t.Fatal(err)
	}
	const boat = "// +genclient\n// +kubebuilder:resource:shortName=bt"
	if !strings.Contains(string(src), boat) {
		t.Fatalf("the example's Boat no longer starts with %q", boat)
	}
	methods := "// +genclient:method=GetScale,verb=get,subresource=scale,result=" + scaling + ".Scale\n" +
		"// +genclient:method=ApplyScale,verb=apply,subresource=scale,input=" + scaling + ".Scale,result=" + scaling + ".Scale\n" +
		"// +genclient:method=GetSummary,verb=get,subresource=summary,result=BoatSummary\n"
	// BoatSummary, named without its package, is of Boat's: not a runtime.Object as written.
	summary := "\n// BoatSummary is the answer of the Boat client's GetSummary.\ntype BoatSummary struct {\n\tmetav1.TypeMeta `json:\",inline\"`\n\tBerths int32 `json:\"berths\"`\n}\n"
	if err := os.WriteFile(types, []byte(strings.Replace(string(src), boat, methods+boat, 1)+summary), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := generate(t, dir, false); err != nil {
		t.Fatal(err)
	}
	client, err := os.ReadFile(filepath.Join(dir, "pkg/generated/clientset/versioned/typed/marina/v1alpha1/boat.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"GetScale(ctx context.Context", "ApplyScale(ctx context.Context", "*applyconfigurationscalingv1.ScaleApplyConfiguration", "GetSummary(ctx context.Context"} {
		if !strings.Contains(string(client), want) {
			t.Errorf("the Boat client has no %s:\n%s", want, client)
		}
	}
	// Scale is an object of scaling/v1: registered with its kinds, and deep-copied as a
	// runtime.Object (the build below needs DeepCopyObject: the client decodes into it).
	register, err := os.ReadFile(filepath.Join(dir, "pkg/apis/scaling/v1/zz_generated.register.go"))
	if err != nil || !strings.Contains(string(register), "&Scale{}") {
		t.Errorf("scaling/v1's registration does not register Scale: %v\n%s", err, register)
	}
	cmd := exec.Command("go", "build", "./pkg/generated/...")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the generated clients do not build: %v\n%s", err, out)
	}
}
