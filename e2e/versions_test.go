package e2e

import (
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

const webapp = "webapp.example.com"

func guestbooks(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: webapp, Version: version, Resource: "guestbooks"}
}

func visitors(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: webapp, Version: version, Resource: "visitors"}
}

// warnings records the Warning headers the server sends.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(code int, agent, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

// TestVersions serves testdata/kbexample, a kubebuilder-style API whose Guestbook kind is
// served in v1 (stored) and v1beta1 (deprecated, with spec.motd renamed spec.message in v1
// and converted by hand in api/v1beta1/conversion.go) and whose Visitor kind has the same
// fields in both versions but not the same markers on two of them (each version validates
// and defaults with its own). Objects written in one version must read back in the other.
func TestVersions(t *testing.T) {
	skipShort(t)
	runsTools(t)
	dir := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata/kbexample"), dir, nil)
	// The oracle of the "like a CRD" subtests: controller-gen's CRDs of the same types,
	// written before aagen touches the module.
	crdDir := t.TempDir()
	run(t, dir, cluster.ControllerGenBinary(t), "crd", "paths=./api/...", "output:crd:dir="+crdDir)
	up := startUpPattern(t, dir, "./api/...", 20*time.Minute)
	cfg := up.restConfig(t)
	warn := &warnings{}
	cfg.WarningHandler = warn
	dyn := dynamic.NewForConfigOrDie(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := "guests"

	t.Run("discovery", func(t *testing.T) {
		dc := discovery.NewDiscoveryClientForConfigOrDie(rest.CopyConfig(cfg))
		groups, err := dc.ServerGroups()
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == webapp })
		if i < 0 {
			t.Fatalf("group %s not discovered: %+v", webapp, groups.Groups)
		}
		g := groups.Groups[i]
		var versions []string
		for _, v := range g.Versions {
			versions = append(versions, v.Version)
		}
		if !slices.Equal(versions, []string{"v1", "v1beta1"}) || g.PreferredVersion.Version != "v1" {
			t.Errorf("versions %v, preferred %s; want [v1 v1beta1], preferred v1", versions, g.PreferredVersion.Version)
		}
		for _, v := range []string{"v1", "v1beta1"} {
			list, err := dc.ServerResourcesForGroupVersion(webapp + "/" + v)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, r := range list.APIResources {
				names = append(names, r.Name)
			}
			slices.Sort(names)
			want := []string{"guestbooks", "guestbooks/scale", "guestbooks/status", "visitors", "visitors/status"}
			if v == "v1" {
				want = append(want, "workers", "workers/status") // Worker is defined in v1 only
				want = append([]string{"gifts"}, want...)        // so is Gift
			}
			if !slices.Equal(names, want) {
				t.Errorf("%s resources %v, want %v", v, names, want)
			}
		}
	})

	// Written in v1beta1, the deprecated version: the renamed field must reach v1.
	t.Run("create in v1beta1, read in v1 and back", func(t *testing.T) {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": webapp + "/v1beta1", "kind": "Guestbook",
			"metadata": map[string]any{"name": "lobby"},
			"spec":     map[string]any{"replicas": int64(2), "motd": "hello"},
		}}
		warn.take()
		if _, err := dyn.Resource(guestbooks("v1beta1")).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if w := warn.take(); !slices.ContainsFunc(w, func(s string) bool { return strings.Contains(s, "v1beta1 Guestbook is deprecated") }) {
			t.Errorf("no deprecation warning for v1beta1; got %q", w)
		}
		v1, err := dyn.Resource(guestbooks("v1")).Namespace(ns).Get(ctx, "lobby", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if msg, _, _ := unstructured.NestedString(v1.Object, "spec", "message"); msg != "hello" || v1.GetAPIVersion() != webapp+"/v1" {
			t.Errorf("v1 read: apiVersion %s, spec %v; want spec.message hello", v1.GetAPIVersion(), v1.Object["spec"])
		}
		if _, found, _ := unstructured.NestedString(v1.Object, "spec", "motd"); found {
			t.Errorf("v1 object has the v1beta1 field motd: %v", v1.Object["spec"])
		}
		if w := warn.take(); len(w) != 0 {
			t.Errorf("v1 is not deprecated, yet warnings %q", w)
		}
		// Written in v1, read in v1beta1.
		unstructured.SetNestedField(v1.Object, "welcome", "spec", "message")
		if _, err := dyn.Resource(guestbooks("v1")).Namespace(ns).Update(ctx, v1, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		beta, err := dyn.Resource(guestbooks("v1beta1")).Namespace(ns).Get(ctx, "lobby", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if motd, _, _ := unstructured.NestedString(beta.Object, "spec", "motd"); motd != "welcome" || beta.GetAPIVersion() != webapp+"/v1beta1" {
			t.Errorf("v1beta1 read: apiVersion %s, spec %v; want spec.motd welcome", beta.GetAPIVersion(), beta.Object["spec"])
		}
		// Updated through the non-storage version.
		unstructured.SetNestedField(beta.Object, "bye", "spec", "motd")
		unstructured.SetNestedField(beta.Object, int64(3), "spec", "replicas")
		if _, err := dyn.Resource(guestbooks("v1beta1")).Namespace(ns).Update(ctx, beta, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		v1, err = dyn.Resource(guestbooks("v1")).Namespace(ns).Get(ctx, "lobby", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		msg, _, _ := unstructured.NestedString(v1.Object, "spec", "message")
		replicas, _, _ := unstructured.NestedInt64(v1.Object, "spec", "replicas")
		if msg != "bye" || replicas != 3 {
			t.Errorf("after a v1beta1 update, v1 spec %v; want message bye, replicas 3", v1.Object["spec"])
		}
	})

	t.Run("scale in both versions", func(t *testing.T) {
		for _, v := range []string{"v1", "v1beta1"} {
			sc, err := dyn.Resource(guestbooks(v)).Namespace(ns).Get(ctx, "lobby", metav1.GetOptions{}, "scale")
			if err != nil {
				t.Fatalf("%s: %v", v, err)
			}
			if r, _, _ := unstructured.NestedInt64(sc.Object, "spec", "replicas"); r != 3 || sc.GetKind() != "Scale" {
				t.Errorf("%s scale: %v", v, sc.Object)
			}
		}
	})

	t.Run("list and watch in both versions", func(t *testing.T) {
		type seen struct {
			version string
			ev      watch.Event
		}
		events := make(chan seen, 16)
		for _, v := range []string{"v1", "v1beta1"} {
			list, err := dyn.Resource(guestbooks(v)).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != 1 || list.Items[0].GetAPIVersion() != webapp+"/"+v {
				t.Fatalf("%s list: %d items, first %v", v, len(list.Items), list.Items)
			}
			w, err := dyn.Resource(guestbooks(v)).Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			go func(v string) {
				for ev := range w.ResultChan() {
					events <- seen{v, ev}
				}
			}(v)
		}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": webapp + "/v1", "kind": "Guestbook",
			"metadata": map[string]any{"name": "garden"},
			"spec":     map[string]any{"message": "roses"},
		}}
		if _, err := dyn.Resource(guestbooks("v1")).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		field := map[string]string{"v1": "message", "v1beta1": "motd"}
		got := map[string]bool{}
		for len(got) < 2 {
			select {
			case s := <-events:
				u, ok := s.ev.Object.(*unstructured.Unstructured)
				if !ok || s.ev.Type != watch.Added {
					t.Fatalf("%s watch: %s %T", s.version, s.ev.Type, s.ev.Object)
				}
				val, _, _ := unstructured.NestedString(u.Object, "spec", field[s.version])
				if u.GetName() != "garden" || u.GetAPIVersion() != webapp+"/"+s.version || val != "roses" {
					t.Errorf("%s watch event: %v", s.version, u.Object)
				}
				got[s.version] = true
			case <-time.After(30 * time.Second):
				t.Fatalf("watch events seen: %v", got)
			}
		}
	})

	t.Run("matching kind and field selectors in both versions", func(t *testing.T) {
		for i, v := range []string{"v1", "v1beta1"} {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": webapp + "/" + v, "kind": "Visitor",
				"metadata": map[string]any{"name": "ann-" + v},
				"spec":     map[string]any{"guestbook": []string{"lobby", "garden"}[i], "comment": "nice"},
			}}
			if _, err := dyn.Resource(visitors(v)).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, v := range []string{"v1", "v1beta1"} {
			list, err := dyn.Resource(visitors(v)).Namespace(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.guestbook=garden"})
			if err != nil {
				t.Fatalf("%s: %v", v, err)
			}
			if len(list.Items) != 1 || list.Items[0].GetName() != "ann-v1beta1" {
				t.Fatalf("%s field selector: %v", v, list.Items)
			}
			if c, _, _ := unstructured.NestedString(list.Items[0].Object, "spec", "comment"); c != "nice" {
				t.Errorf("%s: comment %q", v, c)
			}
		}
	})

	// The Visitor kind carries kubebuilder's validation, default, column and resource
	// markers, the same in both versions; each shows through client-go and kubectl.
	visitor := func(v, name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": webapp + "/" + v, "kind": "Visitor", "metadata": map[string]any{"name": name}, "spec": spec,
		}}
	}
	t.Run("validation markers", func(t *testing.T) {
		for _, v := range []string{"v1", "v1beta1"} {
			cases := []struct {
				name string
				spec map[string]any
				want []string
			}{
				// As for a CRD, a string too short is not also checked against the pattern.
				{"empty-guestbook", map[string]any{"guestbook": ""}, []string{
					`spec.guestbook: Invalid value: "": spec.guestbook in body should be at least 1 chars long`,
				}},
				{"everything-wrong", map[string]any{
					"guestbook": "Lobby", "comment": strings.Repeat("x", 281), "rating": int64(6), "partySize": int64(3), "role": "Admin",
					"email": "nope", "tags": []any{"a", "b", "c", "d"}, "languages": map[string]any{"en": "native", "fr": "good", "de": "some"},
				}, []string{
					`spec.guestbook: Invalid value: "Lobby": spec.guestbook in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'`,
					`spec.comment: Too long: may not be more than 280 bytes`,
					`spec.rating: Invalid value: 6: spec.rating in body should be less than 6`,
					`spec.partySize: Invalid value: 3: spec.partySize in body should be a multiple of 2`,
					`spec.role: Unsupported value: "Admin": supported values: "Guest", "Host"`,
					`spec.email: Invalid value: "nope": spec.email in body must be of type email: "nope"`,
					`spec.tags: Too many: 4: must have at most 3 items`,
					`spec.languages: Too many: 3: must have at most 2 items`,
					`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
				}},
				{"rating-zero-is-unset", map[string]any{"guestbook": "lobby", "rating": int64(-1)}, []string{
					`spec.rating: Invalid value: -1: spec.rating in body should be greater than or equal to 1`,
				}},
				{"duplicate-tags", map[string]any{"guestbook": "lobby", "tags": []any{"art", "art"}}, []string{
					`spec.tags[1]: Duplicate value: "art"`,
				}},
				{"cel", map[string]any{"guestbook": "spam"}, []string{
					`spec.guestbook: Invalid value: spam is not a guestbook`,
				}},
			}
			for _, c := range cases {
				_, err := dyn.Resource(visitors(v)).Namespace(ns).Create(ctx, visitor(v, c.name, c.spec), metav1.CreateOptions{})
				checkInvalid(t, err, "Visitor", c.name, c.want)
			}
		}
		// kubectl shows the same errors.
		out, err := kubectl(t, up.kubeconfig, `{"apiVersion":"webapp.example.com/v1","kind":"Visitor","metadata":{"name":"bad","namespace":"guests"},"spec":{"guestbook":"lobby","rating":9,"role":"Admin"}}`,
			"create", "-f", "-")
		if err == nil || !strings.Contains(out, `The Visitor "bad" is invalid`) || !strings.Contains(out, "spec.rating: Invalid value: 9: spec.rating in body should be less than 6") ||
			!strings.Contains(out, `spec.role: Unsupported value: "Admin"`) {
			t.Errorf("kubectl create of an invalid Visitor: %v\n%s", err, out)
		}
	})

	t.Run("defaults and transition rule", func(t *testing.T) {
		for _, v := range []string{"v1", "v1beta1"} {
			got, err := dyn.Resource(visitors(v)).Namespace(ns).Create(ctx, visitor(v, "bo-"+v, map[string]any{"guestbook": "lobby", "email": "bo@example.com"}), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rating, _, _ := unstructured.NestedInt64(got.Object, "spec", "rating")
			role, _, _ := unstructured.NestedString(got.Object, "spec", "role")
			if rating != 3 || role != "Guest" {
				t.Errorf("%s defaults: spec %v; want rating 3, role Guest", v, got.Object["spec"])
			}
			_ = unstructured.SetNestedField(got.Object, "bo@example.org", "spec", "email")
			_, err = dyn.Resource(visitors(v)).Namespace(ns).Update(ctx, got, metav1.UpdateOptions{})
			checkInvalid(t, err, "Visitor", "bo-"+v, []string{`spec: Invalid value: email is immutable`})
		}
		out, err := kubectl(t, up.kubeconfig, "", "get", "visitor", "bo-v1", "-n", ns, "-o", "jsonpath={.spec.rating} {.spec.role}")
		if err != nil || out != "3 Guest" {
			t.Errorf("kubectl get -o jsonpath of the defaults: %v %q", err, out)
		}
	})

	t.Run("columns, categories and names through kubectl", func(t *testing.T) {
		out, err := kubectl(t, up.kubeconfig, "", "get", "vis", "-n", ns)
		if err != nil || !regexp.MustCompile(`(?m)^NAME\s+GUESTBOOK\s+RATING$`).MatchString(out) || !regexp.MustCompile(`(?m)^bo-v1\s+lobby\s+3\s+`).MatchString(out) {
			t.Errorf("kubectl get vis: %v\n%s", err, out)
		}
		out, err = kubectl(t, up.kubeconfig, "", "get", "visitors", "-n", ns, "-o", "wide")
		if err != nil || !regexp.MustCompile(`(?m)^NAME\s+GUESTBOOK\s+RATING\s+EMAIL$`).MatchString(out) || !strings.Contains(out, "bo@example.com") {
			t.Errorf("kubectl get visitors -o wide (priority 1 column): %v\n%s", err, out)
		}
		// categories=all: kubectl get all includes visitors; the webapp category too.
		for _, cat := range []string{"all", "webapp"} {
			out, err = kubectl(t, up.kubeconfig, "", "get", cat, "-n", ns, "-o", "name")
			if err != nil || !strings.Contains(out, "visitor.webapp.example.com/bo-v1") {
				t.Errorf("kubectl get %s: %v\n%s", cat, err, out)
			}
		}
		out, err = kubectl(t, up.kubeconfig, "", "get", "visitors", "-n", ns, "--field-selector", "spec.guestbook=garden", "-o", "name")
		if err != nil || strings.TrimSpace(out) != "visitor.webapp.example.com/ann-v1beta1" {
			t.Errorf("kubectl get --field-selector: %v\n%s", err, out)
		}
		out, err = kubectl(t, up.kubeconfig, "", "get", "visitors", "-n", ns, "--field-selector", "spec.comment=nice")
		if err == nil || !strings.Contains(out, `field label not supported: spec.comment`) {
			t.Errorf("kubectl get --field-selector on a field that is not selectable: %v\n%s", err, out)
		}
		out, err = kubectl(t, up.kubeconfig, "", "explain", "visitor.spec.rating")
		if err != nil || !strings.Contains(out, "Rating is how many stars the visitor gave") {
			t.Errorf("kubectl explain visitor.spec.rating: %v\n%s", err, out)
		}
	})

	t.Run("kubectl scale", func(t *testing.T) {
		out, err := kubectl(t, up.kubeconfig, "", "scale", "guestbook", "lobby", "-n", ns, "--replicas=5")
		if err != nil || !strings.Contains(out, "scaled") {
			t.Fatalf("kubectl scale: %v\n%s", err, out)
		}
		for _, v := range []string{"v1", "v1beta1"} {
			gb, err := dyn.Resource(guestbooks(v)).Namespace(ns).Get(ctx, "lobby", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r, _, _ := unstructured.NestedInt64(gb.Object, "spec", "replicas"); r != 5 {
				t.Errorf("%s: spec.replicas %d after kubectl scale --replicas=5", v, r)
			}
		}
	})

	// controller-gen's CRDs of Visitor and Gift on one real kube-apiserver, shared by the
	// two subtests that compare with them.
	oracle := startCRDOracle(t, crdDir, "visitors", "gifts")

	t.Run("each version validates and defaults with its own schema, like a CRD", func(t *testing.T) {
		testVersionSchemasLikeCRD(t, ctx, cfg, oracle)
	})

	t.Run("fields of k8s.io/api and apimachinery types", func(t *testing.T) {
		testCoreTypes(t, ctx, cfg, dir, up.kubeconfig)
	})

	t.Run("free-form fields like a CRD", func(t *testing.T) {
		testFreeFormLikeCRD(t, ctx, cfg, oracle)
	})

	t.Run("kubectl", func(t *testing.T) {
		out, err := kubectl(t, up.kubeconfig, "", "get", "guestbooks.v1beta1."+webapp, "-n", ns)
		if err != nil || !strings.Contains(out, "lobby") || !strings.Contains(out, "REPLICAS") || !strings.Contains(out, "deprecated") {
			t.Errorf("kubectl get guestbooks.v1beta1: %v\n%s", err, out)
		}
		out, err = kubectl(t, up.kubeconfig, "", "get", "guestbooks.v1beta1."+webapp, "lobby", "-n", ns, "-o", "jsonpath={.spec.motd}")
		if err != nil || !strings.Contains(out, "bye") {
			t.Errorf("kubectl get -o jsonpath={.spec.motd}: %v\n%s", err, out)
		}
		out, err = kubectl(t, up.kubeconfig, "", "get", "gb", "lobby", "-n", ns, "-o", "jsonpath={.apiVersion} {.spec.message}")
		if err != nil || !strings.Contains(out, webapp+"/v1 bye") {
			t.Errorf("kubectl get gb (preferred v1): %v\n%s", err, out)
		}
	})
}
