package codegen

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestInternalPackageInput accepts a group's internal package (no version, the group's
// directory) as a conversion target that gets deepcopy only: no OpenAPI, no clients.
func TestInternalPackageInput(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/w\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pkg := func(rel, version string, internal bool) Package {
		p := Package{ImportPath: "example.com/w/" + rel, Dir: filepath.Join(dir, rel), Group: "wardle.example.com", GroupPackageName: "wardle",
			Version: version, Internal: internal, Kinds: []Kind{{Name: "Flunder", NamespaceScoped: true, Unserved: internal}}}
		if !internal {
			p.ConvertTo = "example.com/w/pkg/apis/wardle"
		}
		return p
	}
	in := Input{ModuleDir: dir, ModulePath: "example.com/w", Packages: []Package{
		pkg("pkg/apis/wardle", "", true), pkg("pkg/apis/wardle/v1alpha1", "v1alpha1", false), pkg("pkg/apis/wardle/v1beta1", "v1beta1", false),
	}}
	c, err := in.complete()
	if err != nil {
		t.Fatal(err)
	}
	if got := c.externalPackages(); slices.Contains(got, "example.com/w/pkg/apis/wardle") || len(got) != 2 {
		t.Errorf("openapi-gen inputs %v; want the two versions only", got)
	}
	if got := c.servedPackages(); len(got) != 2 {
		t.Errorf("client inputs %v; want the two versions only", got)
	}
	if got := c.kindModelNames(); len(got) != 2 || strings.Contains(strings.Join(got, " "), "wardle.Flunder") {
		t.Errorf("model names %v; want the versions' Flunder only", got)
	}
	if !slices.Contains(c.typesPackages(), "example.com/w/pkg/apis/wardle") {
		t.Errorf("deepcopy inputs %v lack the internal package", c.typesPackages())
	}

	bad := in
	bad.Packages = slices.Clone(in.Packages)
	bad.Packages[0].Version = "v1"
	if _, err := bad.complete(); err == nil || !strings.Contains(err.Error(), "an internal package has no version") {
		t.Errorf("an internal package with a version: err = %v", err)
	}
}
