package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/aagen-dev/aagen/e2e/cluster"
	"github.com/aagen-dev/aagen/runtime/etcd"
)

// hostileNS is the namespace of the namespaced objects of the hostile cases.
const hostileNS = "harbour"

// hostileCase is one request a hostile client sends, the same to a CRD of testdata/example's
// types (written by controller-gen) and to the example's generated server.
type hostileCase struct {
	name string
	// method and path of the request (path absolute, query included).
	method, path string
	// contentType of body ("" for none).
	contentType string
	body        string
	// currentVersion, for an update (PUT), puts the resourceVersion the object at path has
	// on each server into the body's metadata first (a CRD refuses an update without one).
	currentVersion bool
	// status is what the CRD answers: the oracle is checked against it first, then the
	// generated server must answer the same status and, for an error, the same reason,
	// message and causes.
	status int
}

// hostileTarget is a server the cases are sent to.
type hostileTarget struct {
	name string
	cfg  *rest.Config
}

// hostileAnswer sends c to cfg and renders the answer: the status code, and for an error
// its reason, message and causes (sorted).
func hostileAnswer(ctx context.Context, t *testing.T, cfg *rest.Config, c hostileCase) (int, string) {
	t.Helper()
	rc := discovery.NewDiscoveryClientForConfigOrDie(rest.CopyConfig(cfg)).RESTClient()
	path, query, _ := strings.Cut(c.path, "?")
	req := rc.Verb(c.method).AbsPath(path)
	if query != "" {
		for _, kv := range strings.Split(query, "&") {
			k, v, _ := strings.Cut(kv, "=")
			req = req.Param(k, v)
		}
	}
	if c.contentType != "" {
		req = req.SetHeader("Content-Type", c.contentType)
	}
	body := c.body
	if c.currentVersion {
		raw, err := rc.Get().AbsPath(path).DoRaw(ctx)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		var cur, obj map[string]any
		if err := json.Unmarshal(raw, &cur); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(body), &obj); err != nil {
			t.Fatal(err)
		}
		obj["metadata"].(map[string]any)["resourceVersion"] = cur["metadata"].(map[string]any)["resourceVersion"]
		b, _ := json.Marshal(obj)
		body = string(b)
	}
	if body != "" {
		req = req.Body([]byte(body))
	}
	var code int
	res := req.Do(ctx).StatusCode(&code)
	err := res.Error()
	if err == nil {
		return code, fmt.Sprintf("%d", code)
	}
	st, ok := err.(apierrors.APIStatus)
	if !ok {
		return code, fmt.Sprintf("%d error: %v", code, err)
	}
	s := st.Status()
	var causes []string
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			causes = append(causes, fmt.Sprintf("%s %s: %s", c.Type, c.Field, c.Message))
		}
	}
	slices.Sort(causes)
	return int(s.Code), fmt.Sprintf("%d %s %q causes=%q", s.Code, s.Reason, s.Message, causes)
}

// runHostileCases sends each case, in order, to the CRD and to the generated server: the
// CRD must answer the case's status (the oracle), and the generated server exactly what
// the CRD answered (status, and for an error reason, message and causes). Cases may build
// on the objects earlier cases wrote.
func runHostileCases(ctx context.Context, t *testing.T, crd, aagen *rest.Config, cases []hostileCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			crdCode, crdAnswer := hostileAnswer(ctx, t, crd, c)
			aagenCode, aagenAnswer := hostileAnswer(ctx, t, aagen, c)
			if crdCode != c.status {
				t.Errorf("the oracle: the CRD answered %s; want status %d", crdAnswer, c.status)
			}
			if aagenCode != crdCode || (crdCode >= 300 && aagenAnswer != crdAnswer) {
				t.Errorf("%s %s:\naagen: %s\nCRD:   %s", c.method, c.path, aagenAnswer, crdAnswer)
			}
		})
	}
}

// startHostileTargets starts the oracle, controller-gen's CRDs of testdata/example's Boat
// and Dock on a real kube-apiserver, and the example's generated server (aagen up), each
// with the namespace hostileNS.
func startHostileTargets(t *testing.T) (crd, aagen *rest.Config) {
	t.Helper()
	dir := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata", "example"), dir, nil)

	crdDir := t.TempDir()
	run(t, dir, cluster.ControllerGenBinary(t), "crd", "paths=./pkg/apis/...", "output:crd:dir="+crdDir)
	e, err := etcd.Start(context.Background(), etcd.Config{Dir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	cp := cluster.StartControlPlane(t, e.ClientURL())
	// The deadline starts once the control plane is up: on a cold cache, building
	// controller-gen, kube-apiserver and kube-controller-manager takes many minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := kubernetes.NewForConfigOrDie(cp.Admin).CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hostileNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, resource := range []string{"boats", "docks"} {
		c, err := cluster.ReadCRD(filepath.Join(crdDir, "marina.example.com_"+resource+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if resource == "docks" {
			// The example says Dock is cluster-scoped with +genclient:nonNamespaced, which
			// aagen reads and controller-gen does not (it reads
			// +kubebuilder:resource:scope=Cluster): the CRD gets the scope by hand.
			c.Spec.Scope = apiextensionsv1.ClusterScoped
		}
		cluster.InstallCRD(t, ctx, cp.Admin, c)
	}
	up := startUp(t, dir, 25*time.Minute)
	return cp.Admin, up.restConfig(t)
}

// boatJSON is a Boat named name in hostileNS with the given spec (none when spec is "").
func boatJSON(name, spec string) string {
	s := `{"apiVersion":"marina.example.com/v1alpha1","kind":"Boat","metadata":{"name":"` + name + `","namespace":"` + hostileNS + `"}`
	if spec != "" {
		s += `,"spec":` + spec
	}
	return s + "}"
}

const (
	boatsPath      = "/apis/marina.example.com/v1alpha1/namespaces/" + hostileNS + "/boats"
	docksPath      = "/apis/marina.example.com/v1alpha1/docks"
	applyType      = "application/apply-patch+yaml"
	mergeType      = "application/merge-patch+json"
	jsonPatchType  = "application/json-patch+json"
	applyByHostile = "?fieldManager=hostile"
)

// requiredFieldCases are issue #29's: required fields enforced on every write path (create,
// update, merge and JSON patch, apply creating and apply updating), and an absent optional
// struct (Boat's spec) without required fields, as a CRD does.
var requiredFieldCases = []hostileCase{
	// Create.
	{name: "POST without spec.lengthMeters", method: http.MethodPost, path: boatsPath, contentType: "application/json",
		body: boatJSON("post-no-length", `{"dock":"north"}`), status: 422},
	{name: "POST with lengthMeters 0", method: http.MethodPost, path: boatsPath, contentType: "application/json",
		body: boatJSON("post-zero", `{"dock":"north","lengthMeters":0}`), status: 201},
	{name: "POST without spec", method: http.MethodPost, path: boatsPath, contentType: "application/json",
		body: boatJSON("post-no-spec", ""), status: 201},
	{name: "POST with an empty spec", method: http.MethodPost, path: boatsPath, contentType: "application/json",
		body: boatJSON("post-empty-spec", `{}`), status: 422},
	// Apply creating.
	{name: "apply create without spec.lengthMeters", method: http.MethodPatch, path: boatsPath + "/apply-no-length" + applyByHostile,
		contentType: applyType, body: boatJSON("apply-no-length", `{"dock":"north"}`), status: 422},
	{name: "apply create with lengthMeters 0", method: http.MethodPatch, path: boatsPath + "/apply-zero" + applyByHostile,
		contentType: applyType, body: boatJSON("apply-zero", `{"dock":"north","lengthMeters":0}`), status: 201},
	{name: "apply create without spec", method: http.MethodPatch, path: boatsPath + "/apply-no-spec" + applyByHostile,
		contentType: applyType, body: boatJSON("apply-no-spec", ""), status: 201},
	{name: "apply create of a Dock without berths", method: http.MethodPatch, path: docksPath + "/dock-no-berths" + applyByHostile,
		contentType: applyType, body: `{"apiVersion":"marina.example.com/v1alpha1","kind":"Dock","metadata":{"name":"dock-no-berths"},"spec":{"depth":"3m"}}`, status: 422},
	// Apply updating: the field manager that set lengthMeters leaves it out, which removes it.
	{name: "apply create with lengthMeters 5", method: http.MethodPatch, path: boatsPath + "/applied" + applyByHostile,
		contentType: applyType, body: boatJSON("applied", `{"dock":"north","lengthMeters":5}`), status: 201},
	{name: "apply update leaving lengthMeters out", method: http.MethodPatch, path: boatsPath + "/applied" + applyByHostile,
		contentType: applyType, body: boatJSON("applied", `{"dock":"north"}`), status: 422},
	{name: "apply update keeping lengthMeters", method: http.MethodPatch, path: boatsPath + "/applied" + applyByHostile,
		contentType: applyType, body: boatJSON("applied", `{"dock":"south","lengthMeters":5}`), status: 200},
	// Patches of an existing Boat.
	{name: "POST of the Boat to patch", method: http.MethodPost, path: boatsPath, contentType: "application/json",
		body: boatJSON("patched", `{"dock":"north","lengthMeters":4}`), status: 201},
	{name: "merge patch removing lengthMeters", method: http.MethodPatch, path: boatsPath + "/patched",
		contentType: mergeType, body: `{"spec":{"lengthMeters":null}}`, status: 422},
	{name: "JSON patch removing lengthMeters", method: http.MethodPatch, path: boatsPath + "/patched",
		contentType: jsonPatchType, body: `[{"op":"remove","path":"/spec/lengthMeters"}]`, status: 422},
	{name: "merge patch setting lengthMeters 0", method: http.MethodPatch, path: boatsPath + "/patched",
		contentType: mergeType, body: `{"spec":{"lengthMeters":0}}`, status: 200},
	{name: "merge patch of another field keeps lengthMeters 0", method: http.MethodPatch, path: boatsPath + "/patched",
		contentType: mergeType, body: `{"spec":{"dock":"south"}}`, status: 200},
	{name: "JSON patch removing spec", method: http.MethodPatch, path: boatsPath + "/patched",
		contentType: jsonPatchType, body: `[{"op":"remove","path":"/spec"}]`, status: 200},
	{name: "merge patch giving the absent spec a dock only", method: http.MethodPatch, path: boatsPath + "/patched",
		contentType: mergeType, body: `{"spec":{"dock":"east"}}`, status: 422},
	// Update.
	{name: "PUT without lengthMeters", method: http.MethodPut, path: boatsPath + "/post-zero", contentType: "application/json",
		body: boatJSON("post-zero", `{"dock":"north"}`), currentVersion: true, status: 422},
}

// TestHostileClientLikeCRD sends the requests of a hostile client (issue #29) to a CRD of
// testdata/example's Boat and Dock, written by controller-gen, and to the example's
// generated server, and wants the same answers (runHostileCases).
func TestHostileClientLikeCRD(t *testing.T) {
	skipShort(t)
	runsToolsAlone(t)
	crd, aagen := startHostileTargets(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	runHostileCases(ctx, t, crd, aagen, requiredFieldCases)
}
