package codegen

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	clientgenutil "k8s.io/code-generator/cmd/client-gen/generators/util"
	"k8s.io/code-generator/pkg/apidefinitions"
	genutil "k8s.io/code-generator/pkg/util"
	"k8s.io/gengo/v2/types"
)

// Comment tags, without the leading "+".
const (
	tagDeepcopy           = "k8s:deepcopy-gen"
	tagDeepcopyInterfaces = "k8s:deepcopy-gen:interfaces"
	tagOpenAPI            = "k8s:openapi-gen"
	tagGroupName          = "groupName"
	tagModelPackage       = "k8s:openapi-model-package"
	tagGroupGoName        = "groupGoName"
	tagGenclient          = "genclient"
	tagNonNamespaced      = "genclient:nonNamespaced"
	tagNoStatus           = "genclient:noStatus"
	tagResourceName       = "resourceName"
	tagConversion         = "k8s:conversion-gen"

	runtimeObject = "k8s.io/apimachinery/pkg/runtime.Object"
	metav1Pkg     = "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// packageOwnedTags are package tags whose value comes from our model: any
// user-written line with one of these names is replaced.
var packageOwnedTags = []string{
	tagDeepcopy, tagOpenAPI, tagGroupName, tagModelPackage, tagGroupGoName,
	// Activation tags of the client generators (default-enabled); a "=false"
	// would silently drop clients our model says are served.
	"k8s:client-gen", "k8s:lister-gen", "k8s:informer-gen", "k8s:applyconfiguration-gen",
	// conversion-gen's peers come from the model's storage versions.
	tagConversion, "k8s:conversion-gen-external-types",
}

// tagName returns the name of the comment tag on a gengo comment line
// ("+genclient:method=Foo,verb=get" -> "genclient:method"), or "" if the line
// is not a tag. gengo stores comment text without the "//".
func tagName(line string) string {
	s := strings.TrimSpace(line)
	if !strings.HasPrefix(s, "+") {
		return ""
	}
	s = s[1:]
	if i := strings.IndexAny(s, "=( \t"); i >= 0 {
		s = s[:i]
	}
	return s
}

// tagValue returns what follows the first "=" of a tag line, trimmed.
func tagValue(line string) string {
	_, v, _ := strings.Cut(strings.TrimSpace(line), "=")
	return strings.TrimSpace(v)
}

// rewriteTags returns lines without the tag lines for which drop reports
// true, followed by add. Applying it twice gives the same result as once,
// so injection is idempotent and never duplicates a tag.
func rewriteTags(lines []string, drop func(name, line string) bool, add ...string) []string {
	out := make([]string, 0, len(lines)+len(add))
	for _, l := range lines {
		if n := tagName(l); n != "" && drop(n, l) {
			continue
		}
		out = append(out, l)
	}
	out = append(out, add...)
	if len(out) == 0 {
		return nil
	}
	// Clip: generators do append(t.SecondClosestCommentLines, t.CommentLines...).
	return slices.Clip(out)
}

func dropNames(names ...string) func(string, string) bool {
	return func(n, _ string) bool { return slices.Contains(names, n) }
}

// injectTags makes the universe look as if the user had written every tag the
// generators need (see doc.go for the list and the fields). It only touches
// the types packages of in.
func injectTags(u types.Universe, in Input) {
	for _, pkg := range in.Packages {
		p := u[pkg.ImportPath]
		if p == nil {
			continue // reported by checkUniverse
		}
		pkgTags := []string{
			"+" + tagDeepcopy + "=package",
			"+" + tagOpenAPI + "=true",
			"+" + tagGroupName + "=" + pkg.Group,
			"+" + tagModelPackage + "=" + restFriendlyName(pkg.ImportPath),
		}
		if pkg.Internal {
			// Never serialized: deep copies only.
			pkgTags = []string{"+" + tagDeepcopy + "=package", "+" + tagGroupName + "=" + pkg.Group}
		}
		if pkg.GroupGoName != "" {
			// client-gen and informer-gen name the group in Go with it (CertManagerV1()).
			pkgTags = append(pkgTags, "+"+tagGroupGoName+"="+pkg.GroupGoName)
		}
		if pkg.ConvertTo != "" {
			pkgTags = append(pkgTags, "+"+tagConversion+"="+pkg.ConvertTo)
		}
		// Package.Comments is what every generator reads (the comments of
		// doc.go). DocComments is its announced successor; keep them in step.
		p.Comments = rewriteTags(p.Comments, dropNames(packageOwnedTags...), pkgTags...)
		p.DocComments = rewriteTags(p.DocComments, dropNames(packageOwnedTags...), pkgTags...)

		kinds := map[string]Kind{}
		for _, k := range pkg.Kinds {
			kinds[k.Name] = k
		}
		objects := map[string]bool{}
		for _, o := range pkg.Objects {
			objects[o] = true
		}
		for name, t := range p.Types {
			k, isKind := kinds[name]
			_, isList := kinds[strings.TrimSuffix(name, "List")]
			isList = isList && strings.HasSuffix(name, "List")

			// genclient: our model decides which types get clients and how.
			// Keep other genclient:* tags (method, skipVerbs, ...) on kinds only.
			drop := func(n, _ string) bool {
				if !isKind {
					return n == tagGenclient || strings.HasPrefix(n, tagGenclient+":")
				}
				return n == tagGenclient || n == tagNonNamespaced || n == tagNoStatus || n == tagResourceName
			}
			var add []string
			if slices.Contains(pkg.SelfConverted, name) {
				drop = orDrop(drop, dropNames(tagConversion))
				add = append(add, "+"+tagConversion+"=false")
			}
			if isKind || isList {
				// Served types must be deep-copied and described in OpenAPI:
				// drop type-level opt-outs (=false) and redundant opt-ins.
				drop = orDrop(drop, dropNames(tagDeepcopy, tagOpenAPI))
			}
			// deepcopy-gen writes DeepCopyObject for runtime.Objects, unless the tag is there
			// already or the type declares the method itself (prometheus-operator's kinds
			// do, by hand): gengo reads no generated file (ignore_autogenerated), so a
			// method it sees is the user's.
			if (isKind || isList || objects[name]) && !hasInterface(t, runtimeObject) && t.Methods["DeepCopyObject"] == nil {
				add = append(add, "+"+tagDeepcopyInterfaces+"="+runtimeObject)
			}
			if isKind && !k.Unserved && !pkg.Internal {
				add = append(add, "+"+tagGenclient)
				for _, m := range k.ClientMethods {
					add = append(add, "+"+tagGenclient+":method="+m)
				}
				if !k.NamespaceScoped {
					add = append(add, "+"+tagNonNamespaced)
				}
				if !k.HasStatus {
					add = append(add, "+"+tagNoStatus)
				}
				if k.ResourceName != "" {
					// client-gen's and informer-gen's "resource" namer reads it: the URL path.
					add = append(add, "+"+tagResourceName+"="+k.ResourceName)
				}
			}
			// Generators read tags from SecondClosestCommentLines (the comment
			// block before the doc comment, separated by a blank line) and
			// CommentLines (the doc comment). openapi-gen reads only
			// CommentLines, and skips "+" lines when it builds descriptions,
			// so additions go at the end of CommentLines.
			t.SecondClosestCommentLines = rewriteTags(t.SecondClosestCommentLines, drop)
			t.CommentLines = rewriteTags(t.CommentLines, drop, add...)
		}
	}
}

func orDrop(a, b func(string, string) bool) func(string, string) bool {
	return func(n, l string) bool { return a(n, l) || b(n, l) }
}

// hasInterface reports whether a +k8s:deepcopy-gen:interfaces tag of t
// already lists iface.
func hasInterface(t *types.Type, iface string) bool {
	for _, l := range slices.Concat(t.SecondClosestCommentLines, t.CommentLines) {
		if tagName(l) != tagDeepcopyInterfaces {
			continue
		}
		if slices.Contains(strings.Split(tagValue(l), ","), iface) {
			return true
		}
	}
	return false
}

// checkUniverse verifies, after injection, everything the generators would
// otherwise answer with klog.Fatal or panic, and that the loaded packages are
// the ones the Input describes.
func checkUniverse(u types.Universe, in Input) error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	specs := []apidefinitions.Spec{
		apidefinitions.Deepcopy, apidefinitions.Client, apidefinitions.Lister,
		apidefinitions.Informer, apidefinitions.ApplyConfiguration,
	}
	for _, pkg := range in.Packages {
		p := u[pkg.ImportPath]
		if p == nil || p.Name == "" {
			fail("package %s was not loaded", pkg.ImportPath)
			continue
		}
		if p.Dir != pkg.Dir {
			fail("package %s: loaded from %s, expected %s", pkg.ImportPath, p.Dir, pkg.Dir)
		}
		for _, s := range specs {
			if _, err := apidefinitions.Identify(p, s); err != nil {
				fail("package %s: %v", pkg.ImportPath, err)
			}
		}
		if _, err := genutil.ExtractCommentTagsWithoutArguments("+", []string{tagGroupGoName}, p.Comments); err != nil {
			fail("package %s: +%s: %v", pkg.ImportPath, tagGroupGoName, err)
		}
		for _, k := range pkg.Kinds {
			if pkg.Internal {
				continue // internal types have no json tags, and no clients
			}
			checkObjectType(p, k.Name, "ObjectMeta", fail)
			checkObjectType(p, k.Name+"List", "ListMeta", fail)
		}
		for _, name := range sortedKeys(p.Types) {
			t := p.Types[name]
			where := pkg.ImportPath + "." + name
			lines := slices.Concat(t.SecondClosestCommentLines, t.CommentLines)
			// client-gen, lister-gen, informer-gen, applyconfiguration-gen
			// panic (MustParseClientGenTags) on these.
			if _, err := clientgenutil.ParseClientGenTags(lines); err != nil {
				fail("%s: %v", where, err)
			}
			// deepcopy-gen calls klog.Fatal on these.
			if err := checkDeepcopyTags(u, lines); err != nil {
				fail("%s: %v", where, err)
			}
		}
	}
	return errors.Join(errs...)
}

// checkObjectType checks that name is a struct embedding metav1.TypeMeta and
// metav1.<meta> with a json tag: lister-gen and informer-gen klog.Fatal
// without ObjectMeta, and without json tags every generator treats the
// package as an internal (unversioned) one.
func checkObjectType(p *types.Package, name, meta string, fail func(string, ...any)) {
	t := p.Types[name]
	if t == nil {
		fail("package %s: type %s not found", p.Path, name)
		return
	}
	if t.Kind != types.Struct {
		fail("package %s: type %s is a %s, not a struct", p.Path, name, t.Kind)
		return
	}
	for _, want := range []string{"TypeMeta", meta} {
		i := slices.IndexFunc(t.Members, func(m types.Member) bool {
			return m.Embedded && m.Type.Name == types.Name{Package: metav1Pkg, Name: want}
		})
		switch {
		case i < 0:
			fail("package %s: type %s does not embed %s.%s", p.Path, name, metav1Pkg, want)
		case !strings.Contains(t.Members[i].Tags, `json:"`):
			fail("package %s: type %s: embedded %s has no json tag", p.Path, name, want)
		}
	}
	if meta == "ListMeta" && !slices.ContainsFunc(t.Members, func(m types.Member) bool { return m.Name == "Items" }) {
		fail("package %s: type %s has no Items field", p.Path, name)
	}
}

// checkDeepcopyTags mirrors deepcopy-gen's parsing of its type tags, which
// ends in klog.Fatal on anything unexpected.
func checkDeepcopyTags(u types.Universe, lines []string) error {
	tags, err := genutil.ExtractCommentTagsWithoutArguments("+", []string{tagDeepcopy, tagDeepcopyInterfaces}, lines)
	if err != nil {
		return err
	}
	if v := tags[tagDeepcopy]; len(v) > 0 {
		if len(v) > 1 {
			return fmt.Errorf("+%s given %d times", tagDeepcopy, len(v))
		}
		parts := strings.Split(v[0], ",")
		if parts[0] != "true" && parts[0] != "false" {
			return fmt.Errorf("+%s=%s: want true or false on a type", tagDeepcopy, v[0])
		}
		for _, p := range parts[1:] {
			if k, _, _ := strings.Cut(p, "="); k != "register" {
				return fmt.Errorf("+%s: unsupported parameter %q", tagDeepcopy, p)
			}
		}
	}
	for _, v := range tags[tagDeepcopyInterfaces] {
		for _, iface := range strings.Split(v, ",") {
			if iface == "" {
				continue
			}
			n := types.ParseFullyQualifiedName(iface)
			// deepcopy-gen loads the interface's package relative to the
			// process working directory if it is not loaded yet; only accept
			// packages that are part of the load.
			if q := u[n.Package]; q == nil || q.Dir == "" {
				return fmt.Errorf("+%s=%s: package %q is not imported by the types package", tagDeepcopyInterfaces, v, n.Package)
			}
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// restFriendlyName is the OpenAPI model package of a Go package, the name
// k8s.io/apimachinery's scheme would give it: the first path element's domain
// reversed, then every element joined by dots (example.com/shop/v1 becomes
// com.example.shop.v1).
func restFriendlyName(importPath string) string {
	parts := strings.Split(importPath, "/")
	if strings.Contains(parts[0], ".") {
		labels := strings.Split(parts[0], ".")
		slices.Reverse(labels)
		parts[0] = strings.Join(labels, ".")
	}
	return strings.Join(parts, ".")
}
