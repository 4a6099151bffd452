package generator_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/generator"
	"github.com/aagen-dev/aagen/generator/emit"
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
