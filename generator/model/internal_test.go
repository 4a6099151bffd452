package model_test

import (
	"slices"
	"strings"
	"testing"
)

// TestOwnRegistrationNames keeps what a package declares itself (a type named Kind, its
// own GroupName and Resource) and leaves the rest to the generated registration; TypeMeta
// tagged json:"" is accepted as k8s.io/api v0.37 writes it.
func TestOwnRegistrationNames(t *testing.T) {
	types := strings.ReplaceAll(goodKind, "`json:\",inline\"`", "`json:\"\"`")
	m, _, err := build(t, module(t, map[string]string{
		"apis/shop/v1/doc.go":   docGo,
		"apis/shop/v1/types.go": types,
		"apis/shop/v1/own.go": "package v1\n\nimport \"k8s.io/apimachinery/pkg/runtime/schema\"\n\n" +
			"const GroupName = \"shop.example.com\"\n\n// Kind is the user's own type.\ntype Kind string\n\n" +
			"func Resource(r string) schema.GroupResource { return schema.GroupResource{Group: GroupName, Resource: r} }\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	v := m.Groups[0].Versions[0]
	if !slices.Equal(v.Declared, []string{"GroupName", "Kind", "Resource"}) || v.OwnRegistration() {
		t.Errorf("Declared %v, OwnRegistration %v; want GroupName, Kind, Resource and no own AddToScheme", v.Declared, v.OwnRegistration())
	}
}

// TestInternalPackage makes the group's internal package (named in the versions'
// +k8s:conversion-gen) every kind's hub: the storage type, not served, converted to by
// every version; objects are written to etcd in the most preferred version that defines
// every kind.
func TestInternalPackage(t *testing.T) {
	internal := strings.NewReplacer("package v1", "package shop", "`json:\",inline\"`", "", "`json:\"metadata,omitempty\"`", "",
		"`json:\"spec\"`", "", "`json:\"status\"`", "", "`json:\"items\"`", "", "`json:\"size\"`", "", "`json:\"ready\"`", "").Replace(goodKind)
	doc := "// +k8s:conversion-gen=example.com/marina/apis/shop\n" + docGo
	m, _, err := build(t, module(t, map[string]string{
		"apis/shop/doc.go":           strings.Replace(docGo, "package v1", "package shop", 1),
		"apis/shop/types.go":         internal,
		"apis/shop/v1/doc.go":        doc,
		"apis/shop/v1/types.go":      goodKind,
		"apis/shop/v1beta1/doc.go":   strings.Replace(doc, "package v1", "package v1beta1", 1),
		"apis/shop/v1beta1/types.go": strings.Replace(goodKind, "package v1", "package v1beta1", 1),
	}))
	if err != nil {
		t.Fatal(err)
	}
	g := m.Groups[0]
	if g.Internal == nil || !g.Internal.Internal || len(g.Versions) != 2 {
		t.Fatalf("internal %+v, %d versions; want the internal package apart from v1 and v1beta1", g.Internal, len(g.Versions))
	}
	r := g.Resources[0]
	if r.Hub.Version != g.Internal || !r.Hub.Unserved || len(r.Served()) != 2 {
		t.Errorf("hub %s (unserved %v), served in %d versions; want the internal kind, unserved, and two served versions", r.Hub.Version.Name, r.Hub.Unserved, len(r.Served()))
	}
	for _, v := range g.Versions {
		if v.ConvertTo != g.Internal {
			t.Errorf("%s converts to %v, want the internal package", v.Name, v.ConvertTo)
		}
	}
	if r.StorageVersion() != g.Versions[0] || g.Versions[0].Name != "v1" || g.StorageVersion != g.Versions[0] {
		t.Errorf("stored in %s, want v1 (preferred, defines every kind)", r.StorageVersion().Name)
	}

	// v1 is preferred but lacks Gadget: objects are written in v1beta1, the most preferred
	// version that defines every kind.
	gadget := func(src string) string {
		return src + strings.ReplaceAll(strings.SplitN(src, "\n\n", 3)[2], "Widget", "Gadget")
	}
	m, _, err = build(t, module(t, map[string]string{
		"apis/shop/doc.go":           strings.Replace(docGo, "package v1", "package shop", 1),
		"apis/shop/types.go":         gadget(internal),
		"apis/shop/v1/doc.go":        doc,
		"apis/shop/v1/types.go":      goodKind,
		"apis/shop/v1beta1/doc.go":   strings.Replace(doc, "package v1", "package v1beta1", 1),
		"apis/shop/v1beta1/types.go": gadget(strings.Replace(goodKind, "package v1", "package v1beta1", 1)),
	}))
	if err != nil {
		t.Fatal(err)
	}
	if g := m.Groups[0]; g.StorageVersion == nil || g.StorageVersion.Name != "v1beta1" || g.Versions[0].Name != "v1" {
		t.Errorf("storage version %v; want v1beta1, the most preferred version defining Widget and Gadget", g.StorageVersion)
	}
}

// TestLoadCallsGeneratedFunctions loads a package whose own files call what the generated
// files declare (RegisterDefaults, GroupName, SchemeBuilder's DeepCopyObject-implementing
// kinds), before those files exist and after register-gen and defaulter-gen wrote them.
func TestLoadCallsGeneratedFunctions(t *testing.T) {
	own := map[string]string{
		"apis/shop/v1/doc.go":   docGo,
		"apis/shop/v1/types.go": goodKind,
		"apis/shop/v1/defaults.go": "package v1\n\nimport \"k8s.io/apimachinery/pkg/runtime\"\n\n" +
			"func addDefaultingFuncs(scheme *runtime.Scheme) error { return RegisterDefaults(scheme) }\n\n" +
			"func addKnownTypes(scheme *runtime.Scheme) error {\n\tscheme.AddKnownTypes(SchemeGroupVersion, &Widget{}, &WidgetList{})\n\treturn nil\n}\n\n" +
			"// Group is the package's group.\nvar Group = GroupName\n",
	}
	after := map[string]string{
		"apis/shop/v1/zz_generated.register.go": "//go:build !ignore_autogenerated\n\n// Code generated by register-gen. DO NOT EDIT.\n\npackage v1\n\n" +
			"import \"k8s.io/apimachinery/pkg/runtime/schema\"\n\nconst GroupName = \"shop.example.com\"\n\n" +
			"var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: \"v1\"}\n",
		"apis/shop/v1/zz_generated.defaults.go": "//go:build !ignore_autogenerated\n\n// Code generated by defaulter-gen. DO NOT EDIT.\n\npackage v1\n\n" +
			"import \"k8s.io/apimachinery/pkg/runtime\"\n\nfunc RegisterDefaults(scheme *runtime.Scheme) error { return nil }\n",
	}
	for name, files := range map[string]map[string]string{"before": own, "after": merge(own, after)} {
		t.Run(name, func(t *testing.T) {
			m, _, err := build(t, module(t, files))
			if err != nil {
				t.Fatal(err)
			}
			// The generated files are left out: aagen declares the names again.
			if v := m.Groups[0].Versions[0]; len(v.Declared) != 0 {
				t.Errorf("Declared %v; want none (the generated files do not count)", v.Declared)
			}
		})
	}
}

func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
