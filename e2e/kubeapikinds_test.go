package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// kubeAPIModule is the k8s.io/api release whose packages TestKubeAPIKinds serves as a
// user's types: the release aagen pins.
const kubeAPIModule = "k8s.io/api@v0.37.2"

// kubeAPIGroupVersion is a package of k8s.io/api (its module-relative directory, such as
// "coordination/v1") that TestKubeAPIKinds copies under another group name: served, every
// kind's round-trip fixture created and read back equal, or refused with Refused.
type kubeAPIGroupVersion struct {
	Dir string
	// Refused is the message aagen must give for a package it refuses, Item why.
	Refused, Item string
	// Enum, when set, is a field of a +enum type the server must publish with the type's
	// constants as its enum, though it takes the fixture's other value there (+enum is
	// documentation: kube-apiserver publishes its built-in enums and checks them by hand-written
	// code, a CRD of the same types takes any string since controller-gen ignores +enum).
	Enum *kubeAPIEnum
	// With are the packages served with this one whenever it is selected: those its kinds'
	// +genclient:method tags name in input= or result= (apps/v1's GetScale, UpdateScale and
	// ApplyScale name autoscaling/v1's Scale), whose apply configurations the generated
	// clientset needs, so aagen refuses the package served without them.
	With []string
	// Alone is the refusal aagen must give the package generated without its With.
	Alone string
	// Bodies are the fixtures of a served package that are not kinds (no +genclient, no
	// list type: a subresource's body such as autoscaling/v1's Scale), each with why; they
	// must not be served as a resource.
	Bodies map[string]string
}

// kubeAPIEnum is a property of a definition whose published enum (or its items', for a
// list) is Values.
type kubeAPIEnum struct {
	// Type is the Go type whose definition holds Property.
	Type, Property string
	Values         []string
}

// bodies is kubeAPIGroupVersion.Bodies for the types named, each for why.
func bodies(why string, names ...string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		out[n] = why
	}
	return out
}

// kubeAPIGroupVersions are the packages of k8s.io/api TestKubeAPIKinds covers.
func kubeAPIGroupVersions() []kubeAPIGroupVersion {
	return []kubeAPIGroupVersion{
		{Dir: "coordination/v1"},
		{Dir: "rbac/v1"},
		{Dir: "storagemigration/v1"},
		{Dir: "flowcontrol/v1"},
		{Dir: "events/v1"},
		{Dir: "certificates/v1"},
		{Dir: "networking/v1", Enum: &kubeAPIEnum{Type: "HTTPIngressPath", Property: "pathType", Values: []string{"Exact", "ImplementationSpecific", "Prefix"}}},
		{Dir: "scheduling/v1"},
		{Dir: "node/v1"},
		{Dir: "discovery/v1", Enum: &kubeAPIEnum{Type: "EndpointSlice", Property: "addressType", Values: []string{"FQDN", "IPv4", "IPv6"}}},
		{Dir: "storage/v1"},
		{Dir: "batch/v1", Enum: &kubeAPIEnum{Type: "CronJobSpec", Property: "concurrencyPolicy", Values: []string{"Allow", "Forbid", "Replace"}}},
		{Dir: "admissionregistration/v1"},
		{Dir: "resource/v1"},
		{Dir: "apps/v1", With: []string{"autoscaling/v1"}, Alone: "verb=apply takes the apply configuration of the input type"},
		{Dir: "core/v1", Bodies: bodies("not a kind of the package (no +genclient): an option or body of a request or subresource, or a type kube-apiserver keeps to itself",
			"APIGroup", "APIVersions", "Binding", "CreateOptions", "DeleteOptions", "GetOptions", "ListOptions", "NodeProxyOptions", "PatchOptions",
			"PodAttachOptions", "PodExecOptions", "PodLogOptions", "PodPortForwardOptions", "PodProxyOptions", "RangeAllocation", "SerializedReference",
			"ServiceProxyOptions", "Status", "UpdateOptions", "WatchEvent")},
		{Dir: "autoscaling/v1", Bodies: map[string]string{"Scale": "the body of the /scale subresource apps/v1's clients name in +genclient:method, not a kind"}},
		{Dir: "policy/v1", Refused: refusedNoListType,
			Item: "Eviction is a create-only subresource kind of pods, with no list type: a storage-backed server cannot serve it"},
		// The alpha and beta versions, each served as a group of its own (kubeAPIGroup).
		{Dir: "admissionregistration/v1alpha1"},
		{Dir: "admissionregistration/v1beta1"},
		{Dir: "apiserverinternal/v1alpha1"},
		{Dir: "apps/v1beta1", Bodies: bodies("not a kind (no +genclient): the body of a subresource", "DeploymentRollback", "Scale")},
		{Dir: "apps/v1beta2", Bodies: bodies("not a kind (no +genclient): the body of the /scale subresource", "Scale")},
		{Dir: "autoscaling/v2"},
		{Dir: "batch/v1beta1"},
		{Dir: "certificates/v1alpha1"},
		{Dir: "certificates/v1beta1"},
		{Dir: "coordination/v1alpha2"},
		{Dir: "coordination/v1beta1"},
		{Dir: "discovery/v1beta1"},
		{Dir: "events/v1beta1"},
		{Dir: "extensions/v1beta1", Bodies: bodies("not a kind (no +genclient): the body of a subresource", "DeploymentRollback", "Scale")},
		{Dir: "flowcontrol/v1beta1"},
		{Dir: "flowcontrol/v1beta2"},
		{Dir: "flowcontrol/v1beta3"},
		{Dir: "lifecycle/v1alpha1"},
		{Dir: "networking/v1beta1"},
		{Dir: "node/v1alpha1"},
		{Dir: "node/v1beta1"},
		{Dir: "rbac/v1alpha1"},
		{Dir: "rbac/v1beta1"},
		{Dir: "resource/v1alpha3"},
		{Dir: "resource/v1beta1"},
		{Dir: "resource/v1beta2"},
		{Dir: "scheduling/v1alpha3"},
		{Dir: "scheduling/v1beta1"},
		{Dir: "storage/v1alpha1"},
		{Dir: "storage/v1beta1"},
		{Dir: "storagemigration/v1beta1"},
		// The packages without kinds a server stores: review and webhook bodies kube-apiserver
		// answers without storage (no list type), and documents it writes (no +genclient).
		{Dir: "admission/v1", Refused: refusedNoKinds, Item: "AdmissionReview is the body admission webhooks exchange (no +genclient), not a stored kind"},
		{Dir: "admission/v1beta1", Refused: refusedNoKinds, Item: "AdmissionReview is the body admission webhooks exchange (no +genclient), not a stored kind"},
		{Dir: "apidiscovery/v2", Refused: refusedNoKinds, Item: "APIGroupDiscovery is the discovery document kube-apiserver writes (no +genclient), not a stored kind"},
		{Dir: "apidiscovery/v2beta1", Refused: refusedNoKinds, Item: "APIGroupDiscovery is the discovery document kube-apiserver writes (no +genclient), not a stored kind"},
		{Dir: "authentication/v1", Refused: refusedNoListType, Item: "TokenReview and SelfSubjectReview are create-only reviews kube-apiserver answers, with no list type"},
		{Dir: "authentication/v1alpha1", Refused: refusedNoListType, Item: "SelfSubjectReview is a create-only review kube-apiserver answers, with no list type"},
		{Dir: "authentication/v1beta1", Refused: refusedNoListType, Item: "TokenReview and SelfSubjectReview are create-only reviews kube-apiserver answers, with no list type"},
		{Dir: "authorization/v1", Refused: refusedNoListType, Item: "the access reviews are create-only reviews kube-apiserver answers, with no list type"},
		{Dir: "authorization/v1beta1", Refused: refusedNoListType, Item: "the access reviews are create-only reviews kube-apiserver answers, with no list type"},
		{Dir: "imagepolicy/v1alpha1", Refused: refusedNoListType, Item: "ImageReview is a create-only webhook body, with no list type"},
		{Dir: "policy/v1beta1", Refused: refusedNoListType,
			Item: "Eviction is a create-only subresource kind of pods, with no list type (PodDisruptionBudget is served from policy/v1)"},
	}
}

// kubeAPIServedPerRun is how many served packages of kubeAPIGroupVersions a run of
// TestKubeAPIKinds with AAGEN_KUBE_API_SEED=<seed> serves, drawn with the seed (a quicker run
// than CI's). By default, as in CI, every package is served (all 48 took under 4 minutes on
// 2 cores with a warm build cache); AAGEN_KUBE_API_KINDS=<dir>,<dir> serves the ones named.
// A package is served with those of its With. The refused packages are checked every run.
const kubeAPIServedPerRun = 5

// kubeAPISelection is the packages this run covers and what the log says of the choice.
func kubeAPISelection(t *testing.T) ([]kubeAPIGroupVersion, string) {
	t.Helper()
	all := kubeAPIGroupVersions()
	byDir := map[string]kubeAPIGroupVersion{}
	for _, gv := range all {
		byDir[gv.Dir] = gv
	}
	// withNeeded adds the packages the chosen ones are served With, once each, in order.
	withNeeded := func(chosen []kubeAPIGroupVersion) []kubeAPIGroupVersion {
		seen := map[string]bool{}
		var out []kubeAPIGroupVersion
		var add func(gv kubeAPIGroupVersion)
		add = func(gv kubeAPIGroupVersion) {
			if seen[gv.Dir] {
				return
			}
			seen[gv.Dir] = true
			out = append(out, gv)
			for _, w := range gv.With {
				add(byDir[w])
			}
		}
		for _, gv := range chosen {
			add(gv)
		}
		return out
	}
	sel, seedEnv := os.Getenv("AAGEN_KUBE_API_KINDS"), os.Getenv("AAGEN_KUBE_API_SEED")
	switch {
	case sel == "all" || sel == "" && seedEnv == "":
		return all, "every package (AAGEN_KUBE_API_SEED=<seed> serves a subset drawn with the seed)"
	case sel != "":
		var chosen []kubeAPIGroupVersion
		for _, dir := range strings.Split(sel, ",") {
			gv, ok := byDir[strings.TrimSpace(dir)]
			if !ok {
				t.Fatalf("AAGEN_KUBE_API_KINDS=%q: %q is not a package of kubeAPIGroupVersions", sel, dir)
			}
			chosen = append(chosen, gv)
		}
		return withNeeded(chosen), "the packages AAGEN_KUBE_API_KINDS=" + sel + " names (and those they are served with)"
	}
	seed, err := strconv.ParseInt(seedEnv, 10, 64)
	if err != nil {
		t.Fatalf("AAGEN_KUBE_API_SEED=%q: %v", seedEnv, err)
	}
	var served, out []kubeAPIGroupVersion
	for _, gv := range all {
		if gv.Refused == "" {
			served = append(served, gv)
		} else {
			out = append(out, gv)
		}
	}
	var drawn []kubeAPIGroupVersion
	for _, i := range rand.New(rand.NewSource(seed)).Perm(len(served))[:kubeAPIServedPerRun] {
		drawn = append(drawn, served[i])
	}
	return append(out, withNeeded(drawn)...), fmt.Sprintf("%d of %d served packages with seed %d (AAGEN_KUBE_API_SEED; without it, every one)",
		kubeAPIServedPerRun, len(served), seed)
}

// kubeAPIGroup is the group a k8s.io/api package of the group and version is served under
// in the copy: the first label of its group ("core" for the core group's ""), followed by the
// version unless it is v1, under kinds.example.com, so that apps/v1 becomes
// apps.kinds.example.com, apps/v1beta1 appsv1beta1.kinds.example.com and
// rbac.authorization.k8s.io/v1 rbac.kinds.example.com: a Go identifier (client-gen names the
// group's clientset by it), and distinct (so are the first labels of k8s.io/api's groups).
// Each version is a group of its own: k8s.io/api's versions have no hub to convert through,
// and serving them as versions of one group would need the conversions kube-apiserver
// writes by hand.
func kubeAPIGroup(group, version string) string {
	if group == "" {
		group = "core"
	}
	first, _, _ := strings.Cut(group, ".")
	if version != "v1" {
		first += version
	}
	return first + ".kinds.example.com"
}

// kubeAPIPlace is where the copy of the k8s.io/api package at rel goes in the project: a
// v1 package where it is (apps/v1), another under a directory named for its copy's group
// (apps/v1beta1 under appsv1beta1/v1beta1). A group's directory names its Go packages,
// which must differ between the groups of one server.
func kubeAPIPlace(rel string) string {
	group, version := path.Split(rel)
	if version == "v1" {
		return rel
	}
	return path.Join(path.Base(group)+version, version)
}

var (
	groupNameConst  = regexp.MustCompile(`(?m)^const GroupName = "([^"]*)"`)
	groupNameMarker = regexp.MustCompile(`(?m)^// \+groupName=.*$`)
)

// kubeAPIGroupOf is the group of the k8s.io/api package at dir: its const GroupName.
func kubeAPIGroupOf(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "register.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := groupNameConst.FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s/register.go declares no const GroupName", dir)
	}
	return string(m[1])
}

// TestKubeAPIKinds serves k8s.io/api's packages as a user's types: each package of
// kubeAPIGroupVersions is copied from the module (copyPackages: unchanged except the import
// path) into one project, its group renamed (kubeAPIGroup: its const GroupName and its
// +groupName, added to doc.go where the package has none); a refused package is generated
// alone and must fail with its message; the others are generated, built and served by one
// `aagen up`, and each kind's round-trip fixture of k8s.io/api's testdata/HEAD is created
// and read back equal, in JSON (<kind>.json) and in protobuf (<kind>.pb). One log line per
// kind says which.
//
// What is compared: every field of the fixture must come back equal (the server may add
// defaults). metadata is replaced by a name of the test's and the fixture's labels and
// annotations: the fixture's metadata is a round trip's (uid, resourceVersion,
// creationTimestamp, generation, selfLink, managedFields, deletionTimestamp and
// deletionGracePeriodSeconds are the server's to set; name "nameValue" and namespace
// "namespaceValue" are not valid names; generateName, ownerReferences and finalizers are
// dropped with them). A kind with a status subresource has its status written with an
// update of /status after the create (a create resets status), then the whole object is
// read back.
func TestKubeAPIKinds(t *testing.T) {
	skipShort(t)
	start := time.Now()
	modDir := downloadModule(t, kubeAPIModule)
	dir := t.TempDir()
	run(t, dir, aagen(t), "init", "--domain", "example.com", "--module", "example.com/corpus")
	const sub = "k8s-io-api"
	rename := func(rel, name string, b []byte) []byte {
		switch name {
		case "register.go":
			return groupNameConst.ReplaceAllFunc(b, func(m []byte) []byte {
				return []byte(`const GroupName = "` + kubeAPIGroup(string(groupNameConst.FindSubmatch(m)[1]), path.Base(rel)) + `"`)
			})
		case "doc.go":
			group := kubeAPIGroup(kubeAPIGroupOf(t, filepath.Join(modDir, filepath.FromSlash(rel))), path.Base(rel))
			if groupNameMarker.Match(b) {
				return groupNameMarker.ReplaceAll(b, []byte("// +groupName="+group))
			}
			return regexp.MustCompile(`(?m)^package `).ReplaceAll(b, []byte("// +groupName="+group+"\n\npackage "))
		}
		return b
	}
	selected, choice := kubeAPISelection(t)
	t.Logf("k8s.io/api: %s", choice)
	copied := map[string]bool{}
	for _, gv := range selected {
		copyPackages(t, modDir, modulePath(kubeAPIModule), dir, sub, []string{gv.Dir}, copied, rename, kubeAPIPlace)
	}
	run(t, dir, "go", "mod", "tidy")

	var served []kubeAPIGroupVersion
	var patterns []string
	for _, gv := range selected {
		if gv.Refused == "" {
			served = append(served, gv)
			patterns = append(patterns, "./"+path.Join(sub, kubeAPIPlace(gv.Dir)))
			continue
		}
		cmd := exec.Command(aagen(t), "generate", "./"+path.Join(sub, kubeAPIPlace(gv.Dir)))
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		switch {
		case err == nil:
			t.Errorf("k8s.io/api %s: generated, but expected refused (%s): update kubeAPIGroupVersions", gv.Dir, gv.Item)
		case !strings.Contains(string(out), gv.Refused):
			t.Errorf("k8s.io/api %s: refused, but not with %q:\n%s", gv.Dir, gv.Refused, out)
		default:
			t.Logf("k8s.io/api %-28s refused as expected (%s): %s", gv.Dir, gv.Item, gv.Refused)
		}
	}
	for _, gv := range served {
		if gv.Alone == "" {
			continue
		}
		cmd := exec.Command(aagen(t), "generate", "./"+path.Join(sub, kubeAPIPlace(gv.Dir)))
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		switch {
		case err == nil:
			t.Errorf("k8s.io/api %s: generated without %s, but expected refused with %q", gv.Dir, strings.Join(gv.With, ", "), gv.Alone)
		case !strings.Contains(string(out), gv.Alone):
			t.Errorf("k8s.io/api %s without %s: refused, but not with %q:\n%s", gv.Dir, strings.Join(gv.With, ", "), gv.Alone, out)
		default:
			t.Logf("k8s.io/api %-28s without %s refused as expected: %s", gv.Dir, strings.Join(gv.With, ", "), gv.Alone)
		}
	}
	cmd := exec.Command(aagen(t), append([]string{"generate"}, patterns...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("k8s.io/api: generating %s: %v\n%s", strings.Join(patterns, " "), err, out)
	}
	t.Logf("k8s.io/api: %d packages copied and generated in %s", len(served), time.Since(start).Round(time.Second))
	up := startUpPatterns(t, dir, patterns, 25*time.Minute)
	t.Logf("k8s.io/api: served after %s", time.Since(start).Round(time.Second))
	cfg := up.restConfig(t)
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	kinds := 0
	for _, gv := range served {
		group := kubeAPIGroupOf(t, filepath.Join(modDir, filepath.FromSlash(gv.Dir)))
		version := path.Base(gv.Dir)
		copyGV := schema.GroupVersion{Group: kubeAPIGroup(group, version), Version: version}
		resources := kubeAPIResources(t, cfg, client, copyGV)
		prefix := group
		if prefix == "" {
			prefix = "core"
		}
		fixtures, err := filepath.Glob(filepath.Join(modDir, "testdata", "HEAD", prefix+"."+version+".*.json"))
		if err != nil || len(fixtures) == 0 {
			t.Fatalf("k8s.io/api %s: no round-trip fixtures %s.%s.*.json: %v", gv.Dir, prefix, version, err)
		}
		sort.Strings(fixtures)
		fixtureKinds := map[string]bool{}
		for _, f := range fixtures {
			fixtureKinds[strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), prefix+"."+version+"."), ".json")] = true
		}
		if gv.Enum != nil {
			kubeAPIPublishedEnum(t, cfg, gv, copyGV)
		}
		for kind := range gv.Bodies {
			if !fixtureKinds[kind] {
				t.Errorf("k8s.io/api %s: %s is listed as a body, which has no fixture: update kubeAPIGroupVersions", gv.Dir, kind)
			}
		}
		for _, f := range fixtures {
			kind := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), prefix+"."+version+"."), ".json")
			r, ok := resources[kind]
			if why, body := gv.Bodies[kind]; body {
				if ok {
					t.Errorf("k8s.io/api %s %s: served as resource %s, but listed as a body (%s): update kubeAPIGroupVersions", gv.Dir, kind, r.Name, why)
				} else {
					t.Logf("k8s.io/api %-28s %-36s not a kind, not served, as expected (%s)", gv.Dir, kind, why)
				}
				continue
			}
			kinds++
			if !ok {
				t.Errorf("k8s.io/api %s %s: not served (the group-version's discovery has no resource of the kind)", gv.Dir, kind)
				continue
			}
			k := kubeAPIKind{client: client, host: cfg.Host, gvk: schema.GroupVersionKind{Group: group, Version: version, Kind: kind}, copyGV: copyGV, resource: r}
			var failed []string
			if why := k.roundTripJSON(t, f); why != "" {
				failed = append(failed, "JSON: "+why)
			}
			if why := k.roundTripProtobuf(t, strings.TrimSuffix(f, ".json")+".pb"); why != "" {
				failed = append(failed, "protobuf: "+why)
			}
			if len(failed) > 0 {
				t.Errorf("k8s.io/api %s %s (as %s, %s):\n\t%s", gv.Dir, kind, copyGV, r.Name, strings.Join(failed, "\n\t"))
				continue
			}
			t.Logf("k8s.io/api %-28s %-36s round-trip equal in JSON and protobuf (as %s)", gv.Dir, kind, copyGV)
		}
	}
	t.Logf("k8s.io/api: %d kinds of %d packages in %s", kinds, len(served), time.Since(start).Round(time.Second))
}

// kubeAPIPublishedEnum checks that the server's OpenAPI v3 document of copyGV publishes
// gv.Enum's property with the +enum type's constants as its enum.
func kubeAPIPublishedEnum(t *testing.T, cfg *rest.Config, gv kubeAPIGroupVersion, copyGV schema.GroupVersion) {
	t.Helper()
	e := gv.Enum
	code, body := httpGet(t, cfg, "/openapi/v3/apis/"+copyGV.String())
	if code != http.StatusOK {
		t.Fatalf("GET /openapi/v3/apis/%s: %d\n%s", copyGV, code, body)
	}
	type enumSchema struct {
		Enum  []string `json:"enum"`
		Items *struct {
			Enum []string `json:"enum"`
		} `json:"items"`
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]enumSchema `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("OpenAPI v3 of %s: %v", copyGV, err)
	}
	for name, def := range doc.Components.Schemas {
		if !strings.HasSuffix(name, "."+e.Type) {
			continue
		}
		p, ok := def.Properties[e.Property]
		if !ok {
			t.Errorf("k8s.io/api %s: the published %s has no property %s", gv.Dir, name, e.Property)
			return
		}
		got := p.Enum
		if p.Items != nil {
			got = p.Items.Enum
		}
		if strings.Join(got, ",") != strings.Join(e.Values, ",") {
			t.Errorf("k8s.io/api %s: %s.%s is published with the enum %q; want the +enum constants %q", gv.Dir, name, e.Property, got, e.Values)
			return
		}
		t.Logf("k8s.io/api %-28s publishes %s.%s with the +enum constants %q as its enum (documentation: not checked)", gv.Dir, e.Type, e.Property, got)
		return
	}
	t.Errorf("k8s.io/api %s: the OpenAPI v3 document of %s has no definition of %s", gv.Dir, copyGV, e.Type)
}

// kubeAPIResource is a resource of a served group-version, from its discovery.
type kubeAPIResource struct {
	Name       string
	Namespaced bool
	// Status says the resource has a status subresource.
	Status bool
}

// kubeAPIResources maps each kind of gv to its resource, from the server's discovery.
func kubeAPIResources(t *testing.T, cfg *rest.Config, client *http.Client, gv schema.GroupVersion) map[string]kubeAPIResource {
	t.Helper()
	code, body := httpGet(t, cfg, "/apis/"+gv.String())
	if code != http.StatusOK {
		t.Fatalf("GET /apis/%s: %d\n%s", gv, code, body)
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]kubeAPIResource{}
	status := map[string]bool{}
	for _, r := range list.APIResources {
		if res, sub, ok := strings.Cut(r.Name, "/"); ok {
			status[res] = status[res] || sub == "status"
			continue
		}
		out[r.Kind] = kubeAPIResource{Name: r.Name, Namespaced: r.Namespaced}
	}
	for k, r := range out {
		r.Status = status[r.Name]
		out[k] = r
	}
	return out
}

// kubeAPIKind is one kind of k8s.io/api served from the copy.
type kubeAPIKind struct {
	client *http.Client
	host   string
	// gvk is the kind in k8s.io/api, copyGV the group-version it is served as.
	gvk      schema.GroupVersionKind
	copyGV   schema.GroupVersion
	resource kubeAPIResource
}

// objectPath is the path of the resource's collection, or of the object name in it.
func (k kubeAPIKind) objectPath(name string) string {
	p := "/apis/" + k.copyGV.String()
	if k.resource.Namespaced {
		p += "/namespaces/default"
	}
	p += "/" + k.resource.Name
	if name != "" {
		p += "/" + name
	}
	return p
}

// do sends a request with body in contentType and returns the status code and the
// response body, asked for in contentType.
func (k kubeAPIKind) do(method, p, contentType string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, k.host+p, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", contentType)
	resp, err := k.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// name is the object's name for an encoding.
func (k kubeAPIKind) name(encoding string) string {
	return "kinds-" + strings.ToLower(k.gvk.Kind) + "-" + encoding
}

// kubeAPIMeta is the metadata a fixture is created with: a name of the test's, the
// namespace "default" for a namespaced kind, and the fixture's labels and annotations.
func (k kubeAPIKind) meta(name string, fixture metav1.Object) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Labels: fixture.GetLabels(), Annotations: fixture.GetAnnotations()}
	if k.resource.Namespaced {
		m.Namespace = "default"
	}
	return m
}

// roundTripJSON creates the kind's JSON fixture, writes its status, reads it back and
// returns what differs, or "".
func (k kubeAPIKind) roundTripJSON(t *testing.T, file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var fixtureMeta metav1.ObjectMeta
	mb, _ := json.Marshal(obj["metadata"])
	if err := json.Unmarshal(mb, &fixtureMeta); err != nil {
		t.Fatalf("%s: metadata: %v", file, err)
	}
	m := k.meta(k.name("json"), &fixtureMeta)
	var meta map[string]any
	mb, _ = json.Marshal(m)
	_ = json.Unmarshal(mb, &meta)
	delete(meta, "creationTimestamp")
	obj["metadata"] = meta
	obj["apiVersion"] = k.copyGV.String()
	validConditions(obj)
	body, _ := json.Marshal(obj)
	const ct = "application/json"
	code, out, err := k.do(http.MethodPost, k.objectPath(""), ct, body)
	if err != nil || code != http.StatusCreated {
		return fmt.Sprintf("POST %s: %d %v\n%s", k.objectPath(""), code, err, out)
	}
	if k.resource.Status {
		var created map[string]any
		if err := json.Unmarshal(out, &created); err != nil {
			return fmt.Sprintf("POST: %v", err)
		}
		meta["resourceVersion"] = created["metadata"].(map[string]any)["resourceVersion"]
		body, _ := json.Marshal(obj)
		delete(meta, "resourceVersion")
		if code, out, err := k.do(http.MethodPut, k.objectPath(m.Name)+"/status", ct, body); err != nil || code != http.StatusOK {
			return fmt.Sprintf("PUT %s/status: %d %v\n%s", k.objectPath(m.Name), code, err, out)
		}
	}
	code, out, err = k.do(http.MethodGet, k.objectPath(m.Name), ct, nil)
	if err != nil || code != http.StatusOK {
		return fmt.Sprintf("GET %s: %d %v\n%s", k.objectPath(m.Name), code, err, out)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		return fmt.Sprintf("GET: %v", err)
	}
	if diffs := jsonSubsetDiff("", obj, got); len(diffs) > 0 {
		return "read back differs from what was sent:\n\t\t" + strings.Join(diffs, "\n\t\t")
	}
	return ""
}

// validConditions sets the status of every metav1.Condition in v (an object with type,
// status, reason, message and lastTransitionTime) to "True", and reports whether there was
// one. The round-trip fixtures hold "statusValue" there, which Condition's
// +kubebuilder:validation:Enum refuses on the generated server as on a CRD of the same types
// (and as kube-apiserver's own validation of conditions does).
func validConditions(v any) bool {
	found := false
	switch x := v.(type) {
	case map[string]any:
		_, hasType := x["type"]
		_, hasStatus := x["status"].(string)
		_, hasReason := x["reason"]
		_, hasTime := x["lastTransitionTime"]
		if hasType && hasStatus && hasReason && hasTime {
			x["status"] = "True"
			found = true
		}
		for _, e := range x {
			found = validConditions(e) || found
		}
	case []any:
		for _, e := range x {
			found = validConditions(e) || found
		}
	}
	return found
}

// protobufMagic starts every Kubernetes protobuf message (k8s.io/apimachinery's
// runtime/serializer/protobuf).
var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// protobufMessage is a k8s.io/api type's gogo protobuf methods.
type protobufMessage interface {
	runtime.Object
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// roundTripProtobuf creates the kind's protobuf fixture (its runtime.Unknown envelope's
// apiVersion rewritten to the copy's group), writes its status, reads it back in protobuf
// and returns what differs, or "": both are decoded into the k8s.io/api Go type (the
// copy's generated.pb.go has the same field numbers) and compared as JSON.
func (k kubeAPIKind) roundTripProtobuf(t *testing.T, file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sent := k.decodeProtobuf(t, file, b)
	accessor, err := meta.Accessor(sent)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	m := k.meta(k.name("pb"), accessor)
	setMeta := func(o runtime.Object, m metav1.ObjectMeta) {
		a, _ := meta.Accessor(o)
		a.SetName(m.Name)
		a.SetNamespace(m.Namespace)
		a.SetLabels(m.Labels)
		a.SetAnnotations(m.Annotations)
		a.SetResourceVersion(m.ResourceVersion)
		for _, clear := range []func(){
			func() { a.SetGenerateName("") }, func() { a.SetUID("") }, func() { a.SetSelfLink("") },
			func() { a.SetGeneration(0) }, func() { a.SetCreationTimestamp(metav1.Time{}) },
			func() { a.SetDeletionTimestamp(nil) }, func() { a.SetDeletionGracePeriodSeconds(nil) },
			func() { a.SetOwnerReferences(nil) }, func() { a.SetFinalizers(nil) }, func() { a.SetManagedFields(nil) },
		} {
			clear()
		}
	}
	setMeta(sent, m)
	// The conditions' status, as in the JSON fixture (validConditions).
	var sentJSON map[string]any
	sb, _ := json.Marshal(sent)
	_ = json.Unmarshal(sb, &sentJSON)
	if validConditions(sentJSON) {
		sb, _ = json.Marshal(sentJSON)
		if err := json.Unmarshal(sb, sent); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	const ct = "application/vnd.kubernetes.protobuf"
	code, out, err := k.do(http.MethodPost, k.objectPath(""), ct, k.encodeProtobuf(t, sent))
	if err != nil || code != http.StatusCreated {
		return fmt.Sprintf("POST %s: %d %v\n%s", k.objectPath(""), code, err, out)
	}
	if k.resource.Status {
		created := k.decodeProtobuf(t, "the POST's response", out)
		ca, _ := meta.Accessor(created)
		withRV := m
		withRV.ResourceVersion = ca.GetResourceVersion()
		setMeta(sent, withRV)
		body := k.encodeProtobuf(t, sent)
		setMeta(sent, m)
		if code, out, err := k.do(http.MethodPut, k.objectPath(m.Name)+"/status", ct, body); err != nil || code != http.StatusOK {
			return fmt.Sprintf("PUT %s/status: %d %v\n%s", k.objectPath(m.Name), code, err, out)
		}
	}
	code, out, err = k.do(http.MethodGet, k.objectPath(m.Name), ct, nil)
	if err != nil || code != http.StatusOK {
		return fmt.Sprintf("GET %s: %d %v\n%s", k.objectPath(m.Name), code, err, out)
	}
	got := k.decodeProtobuf(t, "the GET's response", out)
	var want, have map[string]any
	wb, _ := json.Marshal(sent)
	hb, _ := json.Marshal(got)
	_ = json.Unmarshal(wb, &want)
	_ = json.Unmarshal(hb, &have)
	// The Go type's JSON has metadata.creationTimestamp null when unset.
	delete(want["metadata"].(map[string]any), "creationTimestamp")
	if diffs := jsonSubsetDiff("", want, have); len(diffs) > 0 {
		return "read back differs from what was sent:\n\t\t" + strings.Join(diffs, "\n\t\t")
	}
	return ""
}

// decodeProtobuf decodes a Kubernetes protobuf message (the magic, then a runtime.Unknown)
// holding the kind into its k8s.io/api Go type.
func (k kubeAPIKind) decodeProtobuf(t *testing.T, what string, b []byte) protobufMessage {
	t.Helper()
	raw, ok := bytes.CutPrefix(b, protobufMagic)
	if !ok {
		t.Fatalf("%s: not a Kubernetes protobuf message (no magic prefix): %q", what, b[:min(len(b), 200)])
	}
	var u runtime.Unknown
	if err := u.Unmarshal(raw); err != nil {
		t.Fatalf("%s: the runtime.Unknown envelope: %v", what, err)
	}
	if u.Kind != k.gvk.Kind {
		t.Fatalf("%s: holds kind %q (%s), want %s", what, u.Kind, u.APIVersion, k.gvk.Kind)
	}
	o, err := scheme.Scheme.New(k.gvk)
	if err != nil {
		t.Fatal(err)
	}
	msg, ok := o.(protobufMessage)
	if !ok {
		t.Fatalf("%s has no protobuf methods", k.gvk)
	}
	if err := msg.Unmarshal(u.Raw); err != nil {
		t.Fatalf("%s: decoding %s: %v", what, k.gvk, err)
	}
	return msg
}

// encodeProtobuf encodes o as a Kubernetes protobuf message of the copy's group-version.
func (k kubeAPIKind) encodeProtobuf(t *testing.T, o protobufMessage) []byte {
	t.Helper()
	raw, err := o.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: k.copyGV.String(), Kind: k.gvk.Kind}, Raw: raw}
	env, err := u.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(append([]byte(nil), protobufMagic...), env...)
}

// TestKubeAPIKindsDoc: docs/corpus.md has, in its k8s.io/api section, a row for each
// package of kubeAPIGroupVersions saying its kinds are equal in JSON and protobuf (and the
// published enum TestKubeAPIKinds checks), or its refusal, and says how many packages a run
// serves.
func TestKubeAPIKindsDoc(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "corpus.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## Every k8s.io/api kind")
	if !ok {
		t.Fatal(`docs/corpus.md has no "## Every k8s.io/api kind" section`)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		if cells := strings.Split(line, " | "); len(cells) > 2 && strings.HasPrefix(line, "| ") {
			rows[strings.TrimPrefix(cells[0], "| ")] = line
		}
	}
	for _, gv := range kubeAPIGroupVersions() {
		row, ok := rows[gv.Dir]
		if !ok {
			t.Errorf("docs/corpus.md's k8s.io/api table has no row for %s", gv.Dir)
			continue
		}
		if gv.Refused != "" && !strings.Contains(row, "refused: "+gv.Refused) {
			t.Errorf("docs/corpus.md: the row of %s does not say it is refused with %q: %s", gv.Dir, gv.Refused, row)
		}
		if gv.Refused == "" && (!strings.Contains(row, "| equal in JSON and protobuf: ") || strings.Contains(row, "refused")) {
			t.Errorf("docs/corpus.md: the row of %s does not say its kinds are equal in JSON and protobuf (and none refused): %s", gv.Dir, row)
		}
		if e := gv.Enum; e != nil && !strings.Contains(row, "`"+e.Type+"."+e.Property+"`") {
			t.Errorf("docs/corpus.md: the row of %s does not name the published enum `%s.%s`: %s", gv.Dir, e.Type, e.Property, row)
		}
		for kind := range gv.Bodies {
			if !strings.Contains(row, kind) || !strings.Contains(row, "not a kind") && !strings.Contains(row, "not kinds") {
				t.Errorf("docs/corpus.md: the row of %s does not say %s is not a kind: %s", gv.Dir, kind, row)
			}
		}
	}
	if want := "each CI run serves every one of them"; !strings.Contains(section, want) {
		t.Errorf("docs/corpus.md's k8s.io/api section does not say %s", want)
	}
}
