package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/aagen-dev/aagen/e2e/cluster"
	"github.com/aagen-dev/aagen/runtime/etcd"
)

// depot is the API group of testdata/crosspkg.
const depot = "depot.example.com"

var crates = schema.GroupVersionResource{Group: depot, Version: "v1", Resource: "crates"}

// crosspkgField is a field of testdata/crosspkg's CrateSpec, under spec, with what
// controller-gen must write into the CRD for it from the markers of its Go type (the
// oracle's own check: a marker controller-gen did not read would make the comparison with
// aagen vacuous).
type crosspkgField struct {
	// path under spec, e.g. "label.text".
	path string
	// want is the field's publishedConstraints in the CRD controller-gen wrote.
	want string
	// enum is the ENUM block kubectl explain prints for the field ("" when it has none).
	enum string
	// typeDoc, for a field of struct type, is the Go doc of the type (the field has its own).
	typeDoc string
	// documentedEnum, for a field of struct type, names its member of a +enum type: kubectl
	// explain of the generated server shows that member's enum and kube-openapi's "Possible
	// enum values" (documentation; the server takes other values), the CRD's neither.
	documentedEnum string
}

// crosspkgFields are the constrained fields of the two structs from outside the API
// package: common.Label (pkg/common, the same module) and extlib.Limits (the module
// example.com/extlib, through a replace).
var crosspkgFields = []crosspkgField{
	{path: "label", typeDoc: "Label is printed on a crate.", documentedEnum: "finish", want: `{"type":"object","required":["text"],"x-kubernetes-validations":[{"rule":"!has(self.code) || self.text != self.code","message":"text must differ from code"}]}`},
	{path: "label.text", want: `{"type":"string","maxLength":12}`},
	{path: "label.code", want: `{"type":"string","pattern":"^[a-z]+-[0-9]+$"}`},
	{path: "label.color", want: `{"type":"string","enum":["red","green","blue"],"default":"green"}`, enum: "ENUM:\n    red\n    green\n    blue\n"},
	{path: "label.fontSize", want: `{"type":"integer","format":"int32","minimum":6}`},
	{path: "limits", typeDoc: "Limits bound what a container may hold.", want: `{"type":"object","required":["maxWeight"],"x-kubernetes-validations":[{"rule":"!has(self.minWeight) || self.minWeight \u003c= self.maxWeight","message":"minWeight must not exceed maxWeight"}]}`},
	{path: "limits.maxWeight", want: `{"type":"integer","format":"int64","minimum":1}`},
	{path: "limits.minWeight", want: `{"type":"integer","format":"int64"}`},
	{path: "limits.unit", want: `{"type":"string","enum":["kg","lb"],"default":"kg"}`, enum: "ENUM:\n    kg\n    lb\n"},
	{path: "limits.carrier", want: `{"type":"string","maxLength":4,"pattern":"^[A-Z]+$"}`},
}

// publishedConstraints renders what a schema says a value must be (type and format, size
// and number limits, pattern, enum, default, required members, CEL rules), without its description,
// which is compared on its own.
func publishedConstraints(s apiextensionsv1.JSONSchemaProps) string {
	out, err := json.Marshal(struct {
		Type      string                          `json:"type,omitempty"`
		Format    string                          `json:"format,omitempty"`
		MaxLength *int64                          `json:"maxLength,omitempty"`
		Minimum   *float64                        `json:"minimum,omitempty"`
		Pattern   string                          `json:"pattern,omitempty"`
		Enum      []apiextensionsv1.JSON          `json:"enum,omitempty"`
		Default   *apiextensionsv1.JSON           `json:"default,omitempty"`
		Required  []string                        `json:"required,omitempty"`
		Rules     apiextensionsv1.ValidationRules `json:"x-kubernetes-validations,omitempty"`
	}{s.Type, s.Format, s.MaxLength, s.Minimum, s.Pattern, s.Enum, s.Default, s.Required, s.XValidations})
	if err != nil {
		return "error: " + err.Error()
	}
	return string(out)
}

// specField walks a kind's schema to spec.<path>.
func specField(root *apiextensionsv1.JSONSchemaProps, path string) (apiextensionsv1.JSONSchemaProps, bool) {
	s, ok := root.Properties["spec"]
	for _, name := range strings.Split(path, ".") {
		if !ok {
			break
		}
		s, ok = s.Properties[name]
	}
	return s, ok
}

// TestCrossPackageMarkersLikeControllerGenCRD checks issue #23's acceptance item: a kind
// (testdata/crosspkg's Crate) whose spec is made of a struct from another package of the
// same module (common.Label) and a struct from a second module of the user's
// (extlib.Limits, `replace example.com/extlib => ./extlib`), each with MaxLength, Minimum,
// Enum, Pattern, a CEL rule and a default. The oracle does not come from aagen: controller-gen
// v0.23.0 (built from Go modules, cluster.ControllerGenBinary) writes the CRD of the same
// types, which is installed on a real kube-apiserver (cluster.KubeVersion). The generated
// server (aagen up) and the CRD then get the same writes:
//
//   - each constraint violated alone, on create, on an update (PUT) and a merge patch of a
//     valid object, and on a server-side apply: the same status, reason, message and causes
//     (field path and message of each);
//   - a valid create leaving the defaulted fields out: the same defaults in the answer and
//     when read back;
//   - kubectl explain of every constrained field prints the same (type, ENUM, description);
//     kubectl explain prints no maxLength, minimum, pattern, CEL rule or default, so those
//     are compared in the OpenAPI v3 document kubectl explain reads (/openapi/v3), field by
//     field.
//
// The CRD and the generated server serve the same group, one on kube-apiserver and one
// directly (aagen up), so nothing is renamed and the answers are compared unchanged.
func TestCrossPackageMarkersLikeControllerGenCRD(t *testing.T) {
	skipShort(t)
	runsTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	dir := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata", "crosspkg"), dir, nil)

	// The oracle: controller-gen's CRD of the user's types, before aagen touches the module.
	crd := controllerGenCRDs(t, dir, "./pkg/apis/...", depot+"_crates.yaml")[0]
	t.Run("controller-gen's CRD has every marker of both structs", func(t *testing.T) {
		for _, f := range crosspkgFields {
			s, ok := specField(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, f.path)
			if !ok {
				t.Errorf("spec.%s: not in the CRD", f.path)
				continue
			}
			if got := publishedConstraints(s); got != f.want {
				t.Errorf("spec.%s in the CRD:\n got %s\nwant %s", f.path, got, f.want)
			}
			if s.Description == "" {
				t.Errorf("spec.%s in the CRD has no description", f.path)
			}
		}
	})

	// The CRD on a real kube-apiserver.
	e, err := etcd.Start(ctx, etcd.Config{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	cp := cluster.StartControlPlane(t, e.ClientURL())
	const ns = "depot"
	if _, err := kubernetes.NewForConfigOrDie(cp.Admin).CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cluster.InstallCRD(t, ctx, cp.Admin, crd)

	// The generated server of the same types, built and run as a user would.
	up := startUp(t, dir, 25*time.Minute)
	cfg := up.restConfig(t)
	// Building the control plane and the server may have taken minutes (a cold cache); the
	// requests get their own time.
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	servers := []struct {
		name       string
		cfg        *rest.Config
		kubeconfig string
	}{{"aagen", cfg, up.kubeconfig}, {"crd", cp.Admin, cp.Kubeconfig}}
	crate := func(name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": depot + "/v1", "kind": "Crate",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     runtime.DeepCopyJSONValue(spec),
		}}
	}
	// valid is a spec with only the required fields; each case changes one thing.
	valid := func(label, limits map[string]any) map[string]any {
		l := map[string]any{"text": "apples"}
		for k, v := range label {
			l[k] = v
		}
		m := map[string]any{"maxWeight": int64(10)}
		for k, v := range limits {
			m[k] = v
		}
		return map[string]any{"label": l, "limits": m}
	}

	t.Run("writes", func(t *testing.T) {
		cases := []struct {
			name string
			spec map[string]any
			// field and message, for an invalid create: a cause the CRD's 422 must have
			// (its message containing message), so that the oracle is seen to enforce the
			// constraint; aagen's answer must then equal the CRD's, every cause included.
			field, message string
			// wantSpec, for a valid create: the spec the CRD answers with.
			wantSpec string
		}{
			{name: "common.Label/MaxLength", spec: valid(map[string]any{"text": "thirteen-char"}, nil),
				field: "spec.label.text", message: "may not be more than 12 bytes"},
			{name: "common.Label/Pattern", spec: valid(map[string]any{"code": "Apples-1"}, nil),
				field: "spec.label.code", message: "should match '^[a-z]+-[0-9]+$'"},
			{name: "common.Label/Enum", spec: valid(map[string]any{"color": "purple"}, nil),
				field: "spec.label.color", message: `Unsupported value: "purple": supported values: "red", "green", "blue"`},
			{name: "common.Label/Minimum", spec: valid(map[string]any{"fontSize": int64(5)}, nil),
				field: "spec.label.fontSize", message: "should be greater than or equal to 6"},
			{name: "common.Label/CEL", spec: valid(map[string]any{"text": "pears-2", "code": "pears-2"}, nil),
				field: "spec.label", message: "text must differ from code"},
			{name: "extlib.Limits/MaxLength", spec: valid(nil, map[string]any{"carrier": "ACMEX"}),
				field: "spec.limits.carrier", message: "may not be more than 4 bytes"},
			{name: "extlib.Limits/Pattern", spec: valid(nil, map[string]any{"carrier": "acme"}),
				field: "spec.limits.carrier", message: "should match '^[A-Z]+$'"},
			{name: "extlib.Limits/Enum", spec: valid(nil, map[string]any{"unit": "st"}),
				field: "spec.limits.unit", message: `Unsupported value: "st": supported values: "kg", "lb"`},
			{name: "extlib.Limits/Minimum", spec: valid(nil, map[string]any{"maxWeight": int64(0)}),
				field: "spec.limits.maxWeight", message: "should be greater than or equal to 1"},
			{name: "extlib.Limits/CEL", spec: valid(nil, map[string]any{"minWeight": int64(11)}),
				field: "spec.limits", message: "minWeight must not exceed maxWeight"},
			{name: "defaults", spec: valid(nil, nil),
				wantSpec: `{"label":{"color":"green","text":"apples"},"limits":{"maxWeight":10,"unit":"kg"}}`},
			// common.Finish is +enum alone: documentation, so a value outside its constants is
			// taken, as by the CRD (controller-gen ignores +enum).
			{name: "common.Label/+enum is documentation", spec: valid(map[string]any{"finish": "Satin"}, nil),
				wantSpec: `{"label":{"color":"green","finish":"Satin","text":"apples"},"limits":{"maxWeight":10,"unit":"kg"}}`},
			{name: "every field set", spec: valid(map[string]any{"code": "apples-1", "color": "red", "fontSize": int64(6)},
				map[string]any{"minWeight": int64(10), "unit": "lb", "carrier": "ACME"}),
				wantSpec: `{"label":{"code":"apples-1","color":"red","fontSize":6,"text":"apples"},"limits":{"carrier":"ACME","maxWeight":10,"minWeight":10,"unit":"lb"}}`},
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				name := fmt.Sprintf("crate-%d", i)
				answers, reads := map[string]string{}, map[string]string{}
				var crdErr error
				for _, s := range servers {
					client := dynamic.NewForConfigOrDie(s.cfg).Resource(crates).Namespace(ns)
					got, err := client.Create(ctx, crate(name, c.spec), metav1.CreateOptions{})
					answers[s.name] = describeAnswer(got, err)
					if s.name == "crd" {
						crdErr = err
					}
					if err == nil {
						got, err = client.Get(ctx, name, metav1.GetOptions{})
						reads[s.name] = describeAnswer(got, err)
					}
				}
				crdAnswer := answers["crd"]
				if c.wantSpec == "" {
					if !hasCause(crdErr, c.field, c.message) {
						t.Fatalf("the oracle: the CRD answered\n  %s\nwant a 422 Invalid with a cause at %s saying %q", crdAnswer, c.field, c.message)
					}
				} else {
					if want := "ok " + depot + "/v1 spec=" + c.wantSpec; crdAnswer != want || reads["crd"] != want {
						t.Fatalf("the oracle: the CRD answered\n  %s\nand read back\n  %s\nwant %s", crdAnswer, reads["crd"], want)
					}
					if reads["aagen"] != reads["crd"] {
						t.Errorf("read back:\naagen: %s\nCRD:   %s", reads["aagen"], reads["crd"])
					}
				}
				if answers["aagen"] != crdAnswer {
					t.Errorf("create:\naagen: %s\nCRD:   %s", answers["aagen"], crdAnswer)
				}
				if c.wantSpec != "" {
					return
				}
				// The same violation through the other write paths: an update (PUT) and a
				// merge patch of a valid object, and a server-side apply creating one.
				for _, path := range []string{"update", "merge patch", "apply"} {
					answers := map[string]string{}
					for _, s := range servers {
						client := dynamic.NewForConfigOrDie(s.cfg).Resource(crates).Namespace(ns)
						var got *unstructured.Unstructured
						var err error
						switch path {
						case "update", "merge patch":
							base := fmt.Sprintf("crate-%d-%s", i, strings.ReplaceAll(path, " ", "-"))
							if _, err := client.Create(ctx, crate(base, valid(nil, nil)), metav1.CreateOptions{}); err != nil {
								t.Fatalf("%s: creating the valid %s: %v", s.name, base, err)
							}
							if path == "update" {
								cur, err := client.Get(ctx, base, metav1.GetOptions{})
								if err != nil {
									t.Fatal(err)
								}
								cur.Object["spec"] = runtime.DeepCopyJSONValue(c.spec)
								got, err = client.Update(ctx, cur, metav1.UpdateOptions{})
								answers[s.name] = describeAnswer(got, err)
								continue
							}
							body, _ := json.Marshal(map[string]any{"spec": c.spec})
							got, err = client.Patch(ctx, base, types.MergePatchType, body, metav1.PatchOptions{})
						case "apply":
							body, _ := json.Marshal(crate(fmt.Sprintf("crate-%d-apply", i), c.spec).Object)
							got, err = client.Patch(ctx, fmt.Sprintf("crate-%d-apply", i), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "e2e"})
						}
						answers[s.name] = describeAnswer(got, err)
					}
					if !strings.HasPrefix(answers["crd"], "422 ") || !strings.Contains(answers["crd"], strings.Trim(strconv.Quote(c.message), `"`)) {
						t.Errorf("the oracle: the CRD answered the %s\n  %s\nwant a 422 saying %q", path, answers["crd"], c.message)
					}
					if answers["aagen"] != answers["crd"] {
						t.Errorf("%s:\naagen: %s\nCRD:   %s", path, answers["aagen"], answers["crd"])
					}
				}
			})
		}
	})

	t.Run("openapi v3, which kubectl explain reads", func(t *testing.T) {
		schemas := map[string]*apiextensionsv1.JSONSchemaProps{}
		for _, s := range servers {
			rc := discovery.NewDiscoveryClientForConfigOrDie(rest.CopyConfig(s.cfg)).RESTClient()
			doc, err := rc.Get().AbsPath("/openapi/v3/apis/" + depot + "/v1").DoRaw(ctx)
			if err != nil {
				t.Fatalf("%s: OpenAPI v3 of %s/v1: %v", s.name, depot, err)
			}
			if schemas[s.name], err = cluster.CRDSchema(doc, ".v1.Crate"); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
		}
		for _, f := range crosspkgFields {
			t.Run("spec."+f.path, func(t *testing.T) {
				crdField, ok := specField(schemas["crd"], f.path)
				if !ok {
					t.Fatalf("the oracle: kube-apiserver publishes no spec.%s for the CRD", f.path)
				}
				if got := publishedConstraints(crdField); got != f.want {
					t.Fatalf("the oracle: kube-apiserver publishes spec.%s of the CRD as\n  %s\nwant %s", f.path, got, f.want)
				}
				aagenField, ok := specField(schemas["aagen"], f.path)
				if !ok {
					t.Fatalf("the generated server publishes no spec.%s", f.path)
				}
				if got := publishedConstraints(aagenField); got != f.want {
					t.Errorf("spec.%s:\naagen: %s\nCRD:   %s", f.path, got, f.want)
				}
				if aagenField.Description != crdField.Description {
					t.Errorf("spec.%s description:\naagen: %q\nCRD:   %q", f.path, aagenField.Description, crdField.Description)
				}
			})
		}
	})

	// The one intended difference of spec.label.finish: the generated server publishes the
	// +enum constants as its enum (as kube-apiserver publishes its built-in enums), the CRD
	// none (controller-gen ignores +enum); both take other values ("writes" above).
	t.Run("openapi v3: a +enum field's constants published by aagen only", func(t *testing.T) {
		want := map[string]string{"aagen": `{"type":"string","enum":["Gloss","Matte"]}`, "crd": `{"type":"string"}`}
		for _, s := range servers {
			rc := discovery.NewDiscoveryClientForConfigOrDie(rest.CopyConfig(s.cfg)).RESTClient()
			doc, err := rc.Get().AbsPath("/openapi/v3/apis/" + depot + "/v1").DoRaw(ctx)
			if err != nil {
				t.Fatalf("%s: OpenAPI v3 of %s/v1: %v", s.name, depot, err)
			}
			root, err := cluster.CRDSchema(doc, ".v1.Crate")
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			f, ok := specField(root, "label.finish")
			if !ok {
				t.Errorf("%s publishes no spec.label.finish", s.name)
				continue
			}
			if got := publishedConstraints(f); got != want[s.name] {
				t.Errorf("%s publishes spec.label.finish as %s; want %s", s.name, got, want[s.name])
			}
		}
	})

	t.Run("kubectl explain", func(t *testing.T) {
		for _, f := range crosspkgFields {
			t.Run("spec."+f.path, func(t *testing.T) {
				out := map[string]string{}
				for _, s := range servers {
					o, err := kubectl(t, s.kubeconfig, "", "explain", "crates.spec."+f.path, "--api-version="+depot+"/v1")
					if err != nil {
						t.Fatalf("%s: kubectl explain crates.spec.%s: %v\n%s", s.name, f.path, err, o)
					}
					out[s.name] = o
				}
				crdOut := out["crd"]
				last := f.path[strings.LastIndex(f.path, ".")+1:]
				if !regexp.MustCompile(`(?m)^GROUP:\s+`+regexp.QuoteMeta(depot)+`$`).MatchString(crdOut) ||
					!regexp.MustCompile(`(?m)^FIELD: `+regexp.QuoteMeta(last)+` <`).MatchString(crdOut) ||
					!strings.Contains(crdOut, "DESCRIPTION:") || strings.Contains(crdOut, "<empty>") {
					t.Fatalf("the oracle: kubectl explain of the CRD's spec.%s:\n%s", f.path, crdOut)
				}
				if f.enum != "" && !strings.Contains(crdOut, f.enum) {
					t.Fatalf("the oracle: kubectl explain of the CRD's spec.%s lacks\n%s\n in\n%s", f.path, f.enum, crdOut)
				}
				aagenOut := out["aagen"]
				if f.typeDoc != "" {
					// A field of struct type: the generated server's OpenAPI gives the field
					// allOf: [$ref: <the struct's schema>], as Kubernetes' own types do, so
					// kubectl prints the struct's name for its type (<Label>) and, after the
					// field's description, the struct's own doc; a CRD's schema is inline
					// (<Object>, the field's description only). That is the one intended
					// difference: asserted here, then taken out.
					typeName := strings.ToUpper(last[:1]) + last[1:]
					fieldLine := regexp.MustCompile(`(?m)^FIELD: ` + regexp.QuoteMeta(last) + ` <` + typeName + `>$`)
					typeDocLine := "\n    " + f.typeDoc + "\n"
					if !fieldLine.MatchString(aagenOut) || !strings.Contains(aagenOut, typeDocLine) {
						t.Errorf("kubectl explain crates.spec.%s of the generated server: want FIELD: %s <%s> and the line %q:\n%s",
							f.path, last, typeName, f.typeDoc, aagenOut)
					}
					aagenOut = fieldLine.ReplaceAllString(aagenOut, "FIELD: "+last+" <Object>")
					aagenOut = strings.Replace(aagenOut, typeDocLine, "\n", 1)
				}
				if f.documentedEnum != "" {
					// The member of a +enum type: the generated server publishes the constants
					// (its enum line, and kube-openapi's list after the member's description),
					// the CRD does not. The second intended difference: asserted, then taken out.
					enumLine := regexp.MustCompile(`(?m)^(  ` + regexp.QuoteMeta(f.documentedEnum) + `\t<string>\n)  enum: .*\n`)
					possible := regexp.MustCompile(`\n[ \t]*\n[ \t]*Possible enum values:\n(?:[ \t]+- [^\n]*\n)+`)
					if !enumLine.MatchString(aagenOut) || !possible.MatchString(aagenOut) {
						t.Errorf("kubectl explain crates.spec.%s of the generated server: want %s's enum line and its \"Possible enum values\":\n%s", f.path, f.documentedEnum, aagenOut)
					}
					aagenOut = possible.ReplaceAllString(enumLine.ReplaceAllString(aagenOut, "$1"), "\n")
				}
				if aagenOut != crdOut {
					t.Errorf("kubectl explain crates.spec.%s:\naagen:\n%s\nCRD:\n%s", f.path, out["aagen"], crdOut)
				}
			})
		}
	})
}

// hasCause reports whether err is a 422 Invalid with a cause at field whose message
// contains message.
func hasCause(err error, field, message string) bool {
	st, ok := err.(apierrors.APIStatus)
	if !ok || st.Status().Code != 422 || st.Status().Reason != metav1.StatusReasonInvalid || st.Status().Details == nil {
		return false
	}
	for _, c := range st.Status().Details.Causes {
		if c.Field == field && strings.Contains(c.Message, message) {
			return true
		}
	}
	return false
}
