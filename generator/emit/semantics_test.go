package emit

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/generator/load"
	"github.com/aagen-dev/aagen/generator/markers"
	"github.com/aagen-dev/aagen/generator/model"
	"github.com/aagen-dev/aagen/internal/testskip"
)

// gadgetTypes exercises the field paths of selectable fields and /scale: inline embedded
// pointers, pointers to named structs, named types and unsigned integers.
const gadgetTypes = `package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

type Count int32

type Class string

// +genclient
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.sub.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:selectablefield:JSONPath=.spec.class
// +kubebuilder:selectablefield:JSONPath=.spec.sub.enabled
// +kubebuilder:selectablefield:JSONPath=.spec.sub.big
// +kubebuilder:selectablefield:JSONPath=.spec.size
// +kubebuilder:printcolumn:name=Class,type=string,JSONPath=.spec.class
// +kubebuilder:printcolumn:name=Created,type=date,JSONPath=.metadata.creationTimestamp
// +kubebuilder:printcolumn:name=Ready,type=string,JSONPath=".status.conditions[?(@.type==\"Ready\")].status",priority=1
type Gadget struct {
	metav1.TypeMeta   ` + "`json:\",inline\"`" + `
	metav1.ObjectMeta ` + "`json:\"metadata,omitempty\"`" + `
	Spec   GadgetSpec   ` + "`json:\"spec\"`" + `
	Status GadgetStatus ` + "`json:\"status,omitempty\"`" + `
}

type Base struct {
	Class Class ` + "`json:\"class,omitempty\"`" + `
}

type Sub struct {
	Replicas *Count ` + "`json:\"replicas,omitempty\"`" + `
	Enabled  bool   ` + "`json:\"enabled\"`" + `
	Big      uint64 ` + "`json:\"big\"`" + `
}

type GadgetSpec struct {
	*Base ` + "`json:\",inline\"`" + `
	Sub   *Sub  ` + "`json:\"sub,omitempty\"`" + `
	Size  int64 ` + "`json:\"size\"`" + `
}

type GadgetStatus struct {
	Replicas   Count              ` + "`json:\"replicas\"`" + `
	Selector   *string            ` + "`json:\"selector,omitempty\"`" + `
	Conditions []metav1.Condition ` + "`json:\"conditions,omitempty\"`" + `
}

type GadgetList struct {
	metav1.TypeMeta ` + "`json:\",inline\"`" + `
	metav1.ListMeta ` + "`json:\"metadata,omitempty\"`" + `
	Items           []Gadget ` + "`json:\"items\"`" + `
}
`

// TestStorageFieldPaths generates the storage of a kind whose selectable fields and scale
// paths go through pointers, inline embedded structs and named types, checks the accessors
// and compiles them.
func TestStorageFieldPaths(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, data []byte) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(root, "testdata/example", f))
		if err != nil {
			t.Fatal(err)
		}
		write(f, bytes.ReplaceAll(data, []byte("=> ../.."), []byte("=> "+root)))
	}
	write("pkg/apis/shop/v1/doc.go", []byte("// +groupName=shop.example.com\npackage v1\n"))
	write("pkg/apis/shop/v1/types.go", []byte(gadgetTypes))

	res, err := load.Packages(context.Background(), dir, []string{"./pkg/apis/..."})
	if err != nil {
		t.Fatal(err)
	}
	m, warns, err := model.Build(res, markers.Default(), model.Config{})
	if err != nil {
		t.Fatalf("model: %v", err)
	}
	for _, w := range warns {
		// GadgetSpec.Size keeps the package from protobuf, which this test does not need.
		if !strings.Contains(w.Msg, "GadgetSpec.Size has the name of a protobuf method") {
			t.Fatalf("warning %v", w)
		}
	}
	k := m.AllKinds()[0]
	if len(k.PrintColumns) != 3 || len(k.SelectableFields) != 4 || k.Scale == nil || k.Scale.Selector == nil {
		t.Fatalf("kind %+v", k)
	}
	var buf bytes.Buffer
	if err := storage(k.Resource, Options{GeneratedPkg: m.ModulePath + "/pkg/generated"}).Render(&buf); err != nil {
		t.Fatal(err)
	}
	src := buf.String()
	// Indentation is not compared (see squash).
	for _, want := range []string{
		// The embedded *Base may be nil; the class is a named string.
		"if obj.Spec.Base == nil {\n\t\t\t\treturn \"\"\n\t\t\t}\n\t\t\treturn string(obj.Spec.Base.Class)",
		"return strconv.FormatBool(obj.Spec.Sub.Enabled)",
		"return strconv.FormatUint(obj.Spec.Sub.Big, 10)",
		"return strconv.FormatInt(obj.Spec.Size, 10)",
		// Scale: a nil Sub or Replicas is unset; setting allocates Sub and converts to Count.
		"if obj.Spec.Sub.Replicas == nil {\n\t\t\t\treturn 0, false\n\t\t\t}\n\t\t\treturn int32(*obj.Spec.Sub.Replicas), true",
		"if obj.Spec.Sub == nil {\n\t\t\t\tobj.Spec.Sub = &shopv1.Sub{}\n\t\t\t}\n\t\t\tv := shopv1.Count(replicas)\n\t\t\tobj.Spec.Sub.Replicas = &v",
		"return int32(obj.Status.Replicas)",
		"if obj.Status.Selector == nil {\n\t\t\t\treturn \"\"\n\t\t\t}\n\t\t\treturn *obj.Status.Selector",
		`JSONPath: ".status.conditions[?(@.type==\"Ready\")].status"`,
	} {
		if !strings.Contains(squash(src), squash(want)) {
			t.Errorf("storage lacks\n%s\n\nin:\n%s", want, src)
		}
	}
	testskip.Short(t, "compiling the storage package needs k8s.io/apiserver")
	// Compile with stubs for what the rest of the generator would write.
	write("pkg/registry/shop/gadget/zz_generated.storage.go", buf.Bytes())
	write("pkg/registry/shop/gadget/hooks.go", []byte("package gadget\n\ntype Hooks struct{}\n"))
	write("pkg/apis/shop/v1/zz_stub.go", []byte(`package v1

import "k8s.io/apimachinery/pkg/runtime"

func (in *Gadget) DeepCopyObject() runtime.Object     { return in }
func (in *GadgetList) DeepCopyObject() runtime.Object { return in }

func (Gadget) OpenAPIModelName() string     { return "com.example.shop.v1.Gadget" }
func (GadgetList) OpenAPIModelName() string { return "com.example.shop.v1.GadgetList" }
`))
	write("pkg/generated/openapi/zz_stub.go", []byte(`package openapi

import "k8s.io/kube-openapi/pkg/common"

func GetOpenAPIDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition { return nil }

func DocumentedEnums() map[string][]string { return nil }
`))
	cmd := exec.Command("go", "vet", "./pkg/registry/...")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go vet of the generated storage: %v\n%s\n%s", err, out, src)
	}
}

// squash collapses runs of white space, so that expectations need not match indentation.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }
