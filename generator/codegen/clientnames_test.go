package codegen

import (
	"strings"
	"testing"

	clientgen "k8s.io/code-generator/cmd/client-gen/generators"
	genutil "k8s.io/code-generator/pkg/util"
	"k8s.io/gengo/v2/types"
)

// TestClientNamesReachClientGen: the model's Go name of a group (+groupGoName, for
// cert-manager.io) and resource name of a kind (+resourceName, for k8s.io/metrics'
// PodMetrics) reach client-gen and informer-gen as the tags they read, read the way they read
// them: the clientset's CertManagerV1(), requests to .../pods, and Go names that keep the
// kind's plural (PodMetricses()). A user's own +groupGoName or +resourceName line is replaced
// by the model's, so the two never disagree.
func TestClientNamesReachClientGen(t *testing.T) {
	const pkgPath = "example.com/m/pkg/apis/certmanager/v1"
	u := types.Universe{}
	p := u.Package(pkgPath)
	p.Comments = []string{"+groupName=cert-manager.io", "+groupGoName=Stale"}
	pm := u.Type(types.Name{Package: pkgPath, Name: "PodMetrics"})
	pm.CommentLines = []string{"+genclient", "+resourceName=stale"}
	in := Input{Packages: []Package{{ImportPath: pkgPath, Group: "cert-manager.io", GroupGoName: "CertManager",
		Kinds: []Kind{{Name: "PodMetrics", Plural: "podmetricses", ResourceName: "pods", NamespaceScoped: true}}}}}
	injectTags(u, in)

	// client-gen's own reading of the package comments (client_generator.go).
	tags, err := genutil.ExtractCommentTagsWithoutArguments("+", []string{tagGroupGoName}, p.Comments)
	if err != nil || len(tags[tagGroupGoName]) != 1 || tags[tagGroupGoName][0] != "CertManager" {
		t.Errorf("+groupGoName as client-gen reads it: %v %v; want exactly CertManager", tags, err)
	}
	names := clientgen.NameSystems(genutil.PluralExceptionListToMapOrDie(in.pluralExceptions()))
	if got := names["resource"].Name(pm); got != "pods" {
		t.Errorf("client-gen's resource name %q, want pods", got)
	}
	if got := names["publicPlural"].Name(pm); got != "PodMetricses" {
		t.Errorf("client-gen's Go plural %q, want PodMetricses", got)
	}

	// The group is accepted with its Go name, and refused without one.
	dir := copyFixture(t)
	base := fixtureInput(dir)
	for _, c := range []struct {
		name, group, goName, want string
	}{
		{"hyphenated group with a Go name", "my-shop.example.com", "MyShop", ""},
		{"Go name not exported", "my-shop.example.com", "myShop", "not an exported Go identifier"},
		{"hyphenated group without a Go name", "my-shop.example.com", "", "first label is a Go identifier"},
	} {
		in := base
		in.Packages = []Package{base.Packages[0]}
		in.Packages[0].Group, in.Packages[0].GroupGoName = c.group, c.goName
		_, err := in.complete()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
}
