package generator_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/generator"
	"github.com/aagen-dev/aagen/generator/emit"
	"github.com/aagen-dev/aagen/generator/load"
	"github.com/aagen-dev/aagen/generator/markers"
	"github.com/aagen-dev/aagen/generator/model"
)

// kbexample is the second example: an API written the way a kubebuilder project writes it
// (api/<version>, groupversion_info.go with controller-runtime's SchemeBuilder), with a kind
// served in two versions whose fields differ and one whose fields match.
const kbexample = "../testdata/kbexample"

// kbHandWritten are kbexample's files that are not generated; api/v1beta1/conversion.go is
// the user-owned conversion file, written by hand from the stubs aagen created.
var kbHandWritten = map[string]bool{
	"go.mod": true, "go.sum": true, "test/protobuf_test.go": true,
	"api/v1/groupversion_info.go": true, "api/v1/guestbook_types.go": true, "api/v1/visitor_types.go": true, "api/v1/worker_types.go": true, "api/v1/gift_types.go": true,
	"api/v1beta1/groupversion_info.go": true, "api/v1beta1/guestbook_types.go": true, "api/v1beta1/visitor_types.go": true,
	"api/v1beta1/conversion.go":               true,
	"config/samples/webapp_v1_guestbook.yaml": true, "config/samples/webapp_v1beta1_guestbook.yaml": true,
	"config/samples/webapp_v1_visitor.yaml": true, "config/samples/webapp_v1beta1_visitor.yaml": true,
	"config/samples/webapp_v1_worker.yaml": true, "config/samples/webapp_v1_gift.yaml": true,
	"config/deploy/certs/ca.crt": true, "config/deploy/certs/ca.key": true,
	"config/deploy/certs/tls.crt": true, "config/deploy/certs/tls.key": true,
	"config/deploy/certs/etcd-ca.crt": true, "config/deploy/certs/etcd-ca.key": true,
	"config/deploy/certs/etcd-member.crt": true, "config/deploy/certs/etcd-member.key": true,
	"config/deploy/certs/etcd-client.crt": true, "config/deploy/certs/etcd-client.key": true,
}

// kbTypesOnly copies kbexample's hand-written files, except those in skip, to a temp module.
func kbTypesOnly(t *testing.T, skip ...string) string {
	t.Helper()
	return copyFiles(t, kbexample, kbHandWritten, skip...)
}

func generateKB(t *testing.T, dir string, verify bool) (*generator.Result, error) {
	t.Helper()
	return generator.Generate(context.Background(), generator.Options{
		Dir: dir, Patterns: []string{"./api/..."}, Runtime: generator.RuntimeRef{Skip: true}, Verify: verify, Force: true,
	})
}

// TestGoldenKB generates kbexample from its types (and its hand-written conversion.go) and
// compares the tree with the checked-in one. To update it after an intended change:
//
//	go run ./cmd/aagen generate -C testdata/kbexample ./api/...
func TestGoldenKB(t *testing.T) {
	dir := kbTypesOnly(t)
	res, err := generateKB(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range res.Warnings {
		if strings.Contains(w.Msg, "conversion-gen cannot write") {
			t.Errorf("the hand-written conversions are not found: %s", w)
		}
	}
	compareGolden(t, dir, kbexample, func(p string) bool { return kbHandWritten[p] },
		"go run ./cmd/aagen generate -C testdata/kbexample ./api/...")
	if _, err := generateKB(t, dir, true); err != nil {
		t.Errorf("verify after generate: %v", err)
	}
}

// TestConversionStubs removes kbexample's hand-written conversions: aagen must name the
// functions conversion-gen could not write, with the fields, and create conversion.go with
// stubs that stop the build until they are written; a second run keeps the user's file.
func TestConversionStubs(t *testing.T) {
	dir := kbTypesOnly(t, "api/v1beta1/conversion.go")
	res, err := generateKB(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	for _, w := range res.Warnings {
		if strings.Contains(w.Msg, "conversion-gen cannot write") {
			warned = append(warned, w.String())
		}
	}
	joined := strings.Join(warned, "\n")
	for _, want := range []string{
		"Convert_v1beta1_GuestbookSpec_To_v1_GuestbookSpec (WARNING: in.Motd requires manual conversion",
		"Convert_v1_GuestbookSpec_To_v1beta1_GuestbookSpec (WARNING: in.Message requires manual conversion",
		"created api/v1beta1/conversion.go",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings do not mention %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "Visitor") {
		t.Errorf("Visitor's fields match in both versions, yet:\n%s", joined)
	}
	stub, err := os.ReadFile(filepath.Join(dir, "api/v1beta1/conversion.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"func Convert_v1beta1_GuestbookSpec_To_v1_GuestbookSpec(in *GuestbookSpec, out *v1.GuestbookSpec, s conversion.Scope) error {",
		"autoConvert_v1beta1_GuestbookSpec_To_v1_GuestbookSpec(in, out, s)",
		"// WARNING: in.Motd requires manual conversion",
		"\t" + emit.ConversionTODO + "\n",
	} {
		if !bytes.Contains(stub, []byte(want)) {
			t.Errorf("conversion.go lacks %q:\n%s", want, stub)
		}
	}
	// The stubs are the user's now: a second run keeps them (conversion-gen now sees them
	// as hand-written conversions and registers them as such), points at each unfinished
	// stub's TODO line, and a third changes nothing.
	if res, err = generateKB(t, dir, false); err != nil {
		t.Fatal(err)
	}
	var stubs []string
	for _, w := range res.Warnings {
		if strings.Contains(w.Msg, "is still the stub aagen created") {
			stubs = append(stubs, w.String())
		}
	}
	if len(stubs) != 2 || !strings.Contains(strings.Join(stubs, "\n"), "conversion.go:") || !strings.Contains(stubs[0], "delete the "+emit.ConversionTODO+" line") {
		t.Errorf("second run: want both unfinished stubs reported at their line in conversion.go, got:\n%s", strings.Join(stubs, "\n"))
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "api/v1beta1/conversion.go")); !bytes.Equal(again, stub) {
		t.Errorf("conversion.go was rewritten")
	}
	if res, err = generateKB(t, dir, false); err != nil {
		t.Fatal(err)
	} else if len(res.Plan.Write) != 0 {
		t.Errorf("third run wrote %d files", len(res.Plan.Write))
	}
}

// TestSelfConversions gives kbexample's Guestbook the conversions a kubebuilder project
// writes for controller-runtime's conversion webhook instead of conversion.go: ConvertTo
// and ConvertFrom on v1beta1's Guestbook, and the Hub method on v1's, its storage version.
// aagen must ask for no hand-written conversion (conversion-gen leaves Guestbook and the
// types only it reaches alone, and still converts Visitor), and the generated server's
// scheme must convert a Guestbook and a GuestbookList both ways with those methods: a
// program built in the generated module checks that, through apiserver.NewScheme.
func TestSelfConversions(t *testing.T) {
	dir := kbTypesOnly(t, "api/v1beta1/conversion.go")
	writeNew(t, filepath.Join(dir, "api/v1/guestbook_conversion.go"), guestbookHub("v1"))
	writeNew(t, filepath.Join(dir, "api/v1beta1/guestbook_conversion.go"), guestbookConvertible)
	res, err := generateKB(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range res.Warnings {
		if strings.Contains(w.Msg, "conversion") {
			t.Errorf("unexpected warning: %s", w)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "api/v1beta1/conversion.go")); !os.IsNotExist(err) {
		t.Errorf("conversion.go was created (%v)", err)
	}
	generated, err := os.ReadFile(filepath.Join(dir, "api/v1beta1/zz_generated.conversion.go"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(generated, []byte("Guestbook")) || !bytes.Contains(generated, []byte("func Convert_v1beta1_VisitorSpec_To_v1_VisitorSpec(")) {
		t.Errorf("zz_generated.conversion.go wants Visitor's conversions and none of Guestbook's:\n%s", generated)
	}

	program := `package main

import (
	"fmt"

	v1 "example.com/kbexample/api/v1"
	"example.com/kbexample/api/v1beta1"
	"example.com/kbexample/pkg/apiserver"
)

func main() {
	scheme, err := apiserver.NewScheme()
	if err != nil {
		panic(err)
	}
	old := &v1beta1.GuestbookList{Items: []v1beta1.Guestbook{{Spec: v1beta1.GuestbookSpec{Motd: "hello"}}}}
	old.Items[0].Name = "lobby"
	hub := &v1.GuestbookList{}
	if err := scheme.Convert(old, hub, nil); err != nil {
		panic(err)
	}
	back := &v1beta1.GuestbookList{}
	if err := scheme.Convert(hub, back, nil); err != nil {
		panic(err)
	}
	one := &v1.Guestbook{}
	if err := scheme.Convert(&back.Items[0], one, nil); err != nil {
		panic(err)
	}
	oneBack := &v1beta1.Guestbook{}
	if err := scheme.Convert(one, oneBack, nil); err != nil {
		panic(err)
	}
	fmt.Println(hub.Items[0].Name, hub.Items[0].Spec.Message, "|", back.Items[0].Name, back.Items[0].Spec.Motd, "|", one.Spec.Message, "|", oneBack.Spec.Motd)
}
`
	writeNew(t, filepath.Join(dir, "cmd/convcheck/main.go"), program)
	cmd := exec.Command("go", "run", "./cmd/convcheck")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "lobby motd: hello | lobby from v1: motd: hello | motd: from v1: motd: hello | from v1: motd: from v1: motd: hello"; got != want {
		t.Errorf("converted through the generated scheme: %q, want %q", got, want)
	}
}

// guestbookHub is a file of kbexample's version package pkg marking its Guestbook as
// controller-runtime's conversion hub.
func guestbookHub(pkg string) string {
	return "package " + pkg + "\n\n// Hub marks this version as the one Guestbook's other versions convert to and from.\nfunc (*Guestbook) Hub() {}\n"
}

// guestbookConvertible is a file of kbexample's v1beta1 converting its Guestbook to and
// from v1's, as a kubebuilder project does for controller-runtime's conversion webhook.
const guestbookConvertible = `package v1beta1

import (
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	v1 "example.com/kbexample/api/v1"
)

// ConvertTo converts this Guestbook to the hub version, v1.
func (src *Guestbook) ConvertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*v1.Guestbook)
	dst.ObjectMeta = src.ObjectMeta
	dst.Spec.Replicas = src.Spec.Replicas
	dst.Spec.Message = "motd: " + src.Spec.Motd
	dst.Status.Ready = src.Status.Ready
	return nil
}

// ConvertFrom converts from the hub version, v1, to this version.
func (dst *Guestbook) ConvertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*v1.Guestbook)
	dst.ObjectMeta = src.ObjectMeta
	dst.Spec.Replicas = src.Spec.Replicas
	dst.Spec.Motd = "from v1: " + src.Spec.Message
	dst.Status.Ready = src.Status.Ready
	return nil
}
`

// TestSelfConversionsModel checks which kinds the model has convert themselves: v1beta1's
// Guestbook, with ConvertTo and ConvertFrom, when v1's (the storage version) has the Hub
// method, with conversion-gen told to leave the Guestbook types alone; and a warning, the
// kind left to conversion-gen, when the Hub method is missing or on another version.
func TestSelfConversionsModel(t *testing.T) {
	buildKB := func(t *testing.T, files map[string]string) (*model.Model, []string) {
		t.Helper()
		dir := kbTypesOnly(t, "api/v1beta1/conversion.go")
		for f, content := range files {
			writeNew(t, filepath.Join(dir, f), content)
		}
		res, err := load.Packages(context.Background(), dir, []string{"./api/..."})
		if err != nil {
			t.Fatal(err)
		}
		m, warns, err := model.Build(res, markers.Default(), model.Config{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, w := range warns {
			out = append(out, w.String())
		}
		return m, out
	}
	guestbook := func(m *model.Model, version string) *model.Kind {
		for _, k := range m.AllKinds() {
			if k.Name == "Guestbook" && k.Version.Name == version {
				return k
			}
		}
		t.Fatalf("no Guestbook in %s", version)
		return nil
	}

	t.Run("hub on the storage version", func(t *testing.T) {
		m, warns := buildKB(t, map[string]string{"api/v1/guestbook_conversion.go": guestbookHub("v1"), "api/v1beta1/guestbook_conversion.go": guestbookConvertible})
		k := guestbook(m, "v1beta1")
		if !k.ConvertsThroughHub {
			t.Errorf("v1beta1's Guestbook does not convert through its hub; warnings %q", warns)
		}
		if got, want := m.SelfConverted(k.Version), []string{"Guestbook", "GuestbookList", "GuestbookSpec", "GuestbookStatus"}; !slices.Equal(got, want) {
			t.Errorf("self-converted types of v1beta1 %q, want %q", got, want)
		}
	})
	// What conversion-gen must still convert stays its own: the types a ConvertTo converts
	// with conversion-gen's functions (Cluster API's kinds do), and those a type of the same
	// name in both versions reaches that no kind does.
	for _, c := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"ConvertTo calls conversion-gen's function", map[string]string{"api/v1beta1/guestbook_conversion.go": strings.Replace(guestbookConvertible,
			"\tdst.Spec.Message = \"motd: \" + src.Spec.Motd\n", "\t_ = Convert_v1beta1_GuestbookStatus_To_v1_GuestbookStatus(&src.Status, &dst.Status, nil)\n", 1)},
			[]string{"Guestbook", "GuestbookList", "GuestbookSpec"}},
		{"a type of both versions reaches the spec", map[string]string{"api/v1beta1/guestbook_conversion.go": guestbookConvertible,
			"api/v1/template.go":      "package v1\n\n// GuestbookTemplate is in both versions.\ntype GuestbookTemplate struct {\n\tSpec GuestbookSpec `json:\"spec\"`\n}\n",
			"api/v1beta1/template.go": "package v1beta1\n\n// GuestbookTemplate is in both versions.\ntype GuestbookTemplate struct {\n\tSpec GuestbookSpec `json:\"spec\"`\n}\n"},
			[]string{"Guestbook", "GuestbookList", "GuestbookStatus"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.files["api/v1/guestbook_conversion.go"] = guestbookHub("v1")
			m, warns := buildKB(t, c.files)
			k := guestbook(m, "v1beta1")
			if got := m.SelfConverted(k.Version); !k.ConvertsThroughHub || !slices.Equal(got, c.want) {
				t.Errorf("converts through its hub: %v; self-converted types %q, want %q (warnings %q)", k.ConvertsThroughHub, got, c.want, warns)
			}
		})
	}
	for _, c := range []struct{ name, hub, want string }{
		{"no hub method", "", "has ConvertTo and ConvertFrom (controller-runtime's conversion.Convertible), but Guestbook of webapp.example.com/v1 has no Hub method"},
		{"the hub method on another version", "v1beta1", "has controller-runtime's Hub method, but Guestbook is stored in v1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{"api/v1beta1/guestbook_conversion.go": guestbookConvertible}
			if c.hub != "" {
				files["api/"+c.hub+"/guestbook_hub.go"] = guestbookHub(c.hub)
			}
			m, warns := buildKB(t, files)
			if k := guestbook(m, "v1beta1"); k.ConvertsThroughHub || m.SelfConverted(k.Version) != nil {
				t.Errorf("v1beta1's Guestbook converts through its hub")
			}
			if !slices.ContainsFunc(warns, func(w string) bool { return strings.Contains(w, c.want) }) {
				t.Errorf("no warning %q in %q", c.want, warns)
			}
		})
	}
}
