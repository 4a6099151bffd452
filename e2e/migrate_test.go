package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/aagen-dev/aagen/e2e/cluster"
	"github.com/aagen-dev/aagen/internal/migrate"
)

// TestMigratePlanAndImport graduates testdata/crosspkg's Crate from controller-gen
// v0.23.0's CRD on kube-apiserver v1.37.2 towards the generated server, as far as aagen
// migrate goes so far. The CRD installed has drifted from the types (spec.label.text has
// lost its maxLength, as a CRD installed from an older release would), so one crate the
// CRD accepted is invalid for the server. Crates are written with labels, annotations,
// finalizers, an owner reference, status through /status, a server-side-apply manager, and
// one is being deleted (held by its finalizer). Then:
//   - `aagen migrate plan` exits non-zero naming that crate and spec.label.text, reports no
//     problem with versions or scope, and exits 0 once --skip names the crate;
//   - the import (runtime/objectimport, through migrate.Importer) is refused before the
//     migration state is set; once set, migrate.Copy copies every other crate and reports
//     the refused one (and succeeds with it skipped, twice; with Prune it removes from the
//     server a crate deleted on the CRD since an earlier copy; migrate.Verify then finds
//     both sides equal by count and content hash, and finds a crate changed on the server
//     alone); each crate is read back from
//     the generated server equal to the CRD's object but for resourceVersion (uid,
//     creationTimestamp, generation, metadata, managedFields, status, deletionTimestamp);
//     the invalid crate is refused with 422 at spec.label.text; importing again changes
//     nothing;
//   - the write freeze (migrate.Freeze, a ValidatingAdmissionPolicy on the group) refuses an
//     update, a status write, a create and a delete on the CRD with its message once it
//     takes hold, and after migrate.Lift the same write succeeds; a freeze that never takes
//     hold removes its policy and binding.
func TestMigratePlanAndImport(t *testing.T) {
	skipShort(t)
	runsTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	dir := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata", "crosspkg"), dir, nil)
	crdDir := t.TempDir()
	run(t, dir, cluster.ControllerGenBinary(t), "crd", "paths=./pkg/apis/...", "output:crd:dir="+crdDir)
	crd, err := cluster.ReadCRD(filepath.Join(crdDir, depot+"_crates.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The drift: spec.label.text without its maxLength of 12.
	alterSchema(crd, func(text *apiextensionsv1.JSONSchemaProps) {
		if text.MaxLength == nil || *text.MaxLength != 12 {
			t.Fatalf("controller-gen's spec.label.text has maxLength %v, want 12", text.MaxLength)
		}
		text.MaxLength = nil
	}, "spec", "label", "text")

	cp, _ := startControlPlane(t)
	const ns = "depot"
	core := kubernetes.NewForConfigOrDie(cp.Admin).CoreV1()
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cluster.InstallCRD(t, ctx, cp.Admin, crd)
	owner, err := core.ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The crates, on the CRD.
	crdCrates := dynamic.NewForConfigOrDie(cp.Admin).Resource(crates).Namespace(ns)
	crate := func(name, text string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": depot + "/v1", "kind": "Crate",
			"metadata": map[string]any{"name": name, "namespace": ns,
				"labels":      map[string]any{"team": "blue", "crate": name},
				"annotations": map[string]any{"depot.example.com/note": "moved " + name},
			},
			"spec": map[string]any{"label": map[string]any{"text": text, "color": "red"}, "limits": map[string]any{"maxWeight": int64(10)}},
		}}
	}
	create := func(c *unstructured.Unstructured) *unstructured.Unstructured {
		t.Helper()
		got, err := crdCrates.Create(ctx, c, metav1.CreateOptions{FieldManager: "depot-cli"})
		if err != nil {
			t.Fatalf("creating %s on the CRD: %v", c.GetName(), err)
		}
		return got
	}
	setStatus := func(c *unstructured.Unstructured) {
		t.Helper()
		c.Object["status"] = map[string]any{"packed": true}
		if _, err := crdCrates.UpdateStatus(ctx, c, metav1.UpdateOptions{FieldManager: "packer"}); err != nil {
			t.Fatalf("status of %s: %v", c.GetName(), err)
		}
	}
	plain := crate("plain", "apples")
	plain.SetFinalizers([]string{"depot.example.com/keep"})
	setStatus(create(plain))
	owned := crate("owned", "pears")
	owned.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptrTo(true), Controller: ptrTo(true)}})
	setStatus(create(owned))
	applied := crate("applied", "plums")
	if _, err := crdCrates.Apply(ctx, "applied", applied, metav1.ApplyOptions{FieldManager: "shipper"}); err != nil {
		t.Fatalf("server-side apply of applied: %v", err)
	}
	deleting := crate("deleting", "figs")
	deleting.SetFinalizers([]string{"depot.example.com/keep"})
	create(deleting)
	if err := crdCrates.Delete(ctx, "deleting", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	create(crate("long", "thirteen-char")) // valid for the drifted CRD only

	// The generated server of the same types, reached directly.
	up := startUp(t, dir, 25*time.Minute)
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	t.Run("plan", func(t *testing.T) {
		plan := func(args ...string) (string, error) {
			cmd := exec.CommandContext(ctx, aagen(t), append([]string{"migrate", "plan", "--kubeconfig", cp.Kubeconfig,
				"--server-kubeconfig", up.kubeconfig, "--group", depot}, args...)...)
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		out, err := plan()
		t.Logf("aagen migrate plan:\n%s", out)
		if err == nil {
			t.Errorf("aagen migrate plan exited 0 with a crate the server refuses")
		}
		for _, want := range []string{
			"crates.depot.example.com (kind Crate)",
			"CRD:              served v1, storage v1",
			"generated server: served v1, storage v1",
			"5 object(s) dry-run in v1: 1 refused",
			"REFUSED depot/long: spec.label.text: Too long: may not be more than 12 bytes",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("the plan does not say %q", want)
			}
		}
		for _, unwanted := range []string{"PROBLEM", "schema v1:"} {
			if strings.Contains(out, unwanted) {
				t.Errorf("the plan says %q: the server and controller-gen's CRD of the same types should agree but for the constraint", unwanted)
			}
		}
		out, err = plan("--skip", "crates.depot.example.com/depot/long")
		if err != nil {
			t.Errorf("aagen migrate plan --skip the refused crate: %v\n%s", err, out)
		}
		if !strings.Contains(out, "refused (skipped) depot/long: spec.label.text") || !strings.Contains(out, "can start") {
			t.Errorf("the plan with --skip:\n%s", out)
		}
	})

	t.Run("import", func(t *testing.T) {
		im, err := migrate.NewImporter(up.restConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		list, err := crdCrates.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 5 {
			t.Fatalf("the CRD holds %d crates, want 5", len(list.Items))
		}
		if _, err := im.Import(ctx, &list.Items[0]); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "no migration is in progress") {
			t.Errorf("an import before the migration started: %v, want 409 Conflict saying no migration is in progress", err)
		}
		if st, err := im.SetState(ctx, migrate.MigrationState{InProgress: true, Source: "crd " + crd.Name}); err != nil || !st.InProgress {
			t.Fatalf("starting the migration: %+v, %v", st, err)
		}
		// The copy: it stops at nothing, copies the 4 valid crates and reports the other;
		// with --skip naming it, it succeeds; run again, it finishes the same.
		var progress strings.Builder
		res, err := migrate.Copy(ctx, migrate.CopyOptions{Cluster: cp.Admin, Importer: im, Group: depot, Progress: &progress})
		if err == nil || !strings.Contains(err.Error(), "refused 1 object(s)") || !strings.Contains(err.Error(), "crates.depot.example.com depot/long") ||
			res.Copied["crates.depot.example.com"] != 4 {
			t.Errorf("the copy with a crate the server refuses: %+v, %v", res, err)
		}
		for range 2 {
			progress.Reset()
			res, err = migrate.Copy(ctx, migrate.CopyOptions{Cluster: cp.Admin, Importer: im, Group: depot, Progress: &progress,
				Skip: []string{"crates.depot.example.com/depot/long"}})
			if err != nil || res.Copied["crates.depot.example.com"] != 4 || res.Skipped["crates.depot.example.com"] != 1 {
				t.Errorf("the copy skipping the refused crate: %+v, %v", res, err)
			}
			if p := progress.String(); !strings.Contains(p, "crates.depot.example.com: 4 copied (") || !strings.Contains(p, "0 unchanged, 1 skipped, 0 removed in ") {
				t.Errorf("the copy's progress: %q", progress.String())
			}
		}
		serverCrates := dynamic.NewForConfigOrDie(up.restConfig(t)).Resource(crates).Namespace(ns)
		seen := map[string]bool{}
		for i := range list.Items {
			src := &list.Items[i]
			name := src.GetName()
			_, err := im.Import(ctx, src)
			if name == "long" {
				status, ok := err.(apierrors.APIStatus)
				if !ok || !apierrors.IsInvalid(err) || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 ||
					status.Status().Details.Causes[0].Field != "spec.label.text" {
					t.Errorf("importing the crate the server refuses: %v, want 422 at spec.label.text", err)
				}
				continue
			}
			if err != nil {
				t.Errorf("importing %s: %v", name, err)
				continue
			}
			got, err := serverCrates.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Errorf("%s on the generated server: %v", name, err)
				continue
			}
			if got.GetResourceVersion() == "" {
				t.Errorf("%s: no resourceVersion on the generated server", name)
			}
			gotContent := withoutRV(got)
			if _, ok := src.Object["status"]; !ok && reflect.DeepEqual(gotContent["status"], map[string]any{}) {
				// A Go-typed server answers an absent status as {} (README: the stored
				// object of an absent optional struct holds its zero values).
				delete(gotContent, "status")
			}
			if want := withoutRV(src); !reflect.DeepEqual(gotContent, want) {
				t.Errorf("%s on the generated server:\n%s\nwant the CRD's but for resourceVersion:\n%s", name, mustJSON(t, gotContent), mustJSON(t, want))
			}
			if _, err := im.Import(ctx, src); err != nil {
				t.Errorf("importing %s again: %v", name, err)
			}
			again, err := serverCrates.Get(ctx, name, metav1.GetOptions{})
			if err != nil || !reflect.DeepEqual(again.Object, got.Object) {
				t.Errorf("%s after a second import: %v, %v; want it unchanged", name, again, err)
			}
			seen[name] = true
		}
		// What the crates hold is what the migration must keep.
		byName := map[string]*unstructured.Unstructured{}
		for i := range list.Items {
			byName[list.Items[i].GetName()] = &list.Items[i]
		}
		if s, _, _ := unstructured.NestedBool(byName["plain"].Object, "status", "packed"); !s || len(byName["plain"].GetFinalizers()) != 1 {
			t.Errorf("plain on the CRD has no status or finalizer: %v", byName["plain"].Object)
		}
		if byName["deleting"].GetDeletionTimestamp() == nil {
			t.Errorf("deleting on the CRD is not being deleted")
		}
		if len(byName["owned"].GetOwnerReferences()) != 1 {
			t.Errorf("owned on the CRD has no owner")
		}
		managers := map[string]bool{}
		for _, m := range byName["applied"].GetManagedFields() {
			managers[m.Manager+"/"+string(m.Operation)] = true
		}
		if !managers["shipper/Apply"] {
			t.Errorf("applied on the CRD has managers %v, want shipper's Apply", managers)
		}
		if len(seen) != 4 {
			t.Errorf("imported %v, want the 4 valid crates", seen)
		}
		// A crate copied, then deleted on the CRD: a copy with Prune removes it from the
		// server, finalizer and all, and leaves the others.
		gone := crate("gone", "limes")
		gone.SetFinalizers([]string{"depot.example.com/keep"})
		create(gone)
		copyOpts := migrate.CopyOptions{Cluster: cp.Admin, Server: up.restConfig(t), Importer: im, Group: depot, Prune: true,
			Skip: []string{"crates.depot.example.com/depot/long"}}
		if res, err := migrate.Copy(ctx, copyOpts); err != nil || res.Copied["crates.depot.example.com"] != 5 || res.Removed["crates.depot.example.com"] != 0 {
			t.Errorf("the copy with gone: %+v, %v", res, err)
		}
		if _, err := serverCrates.Get(ctx, "gone", metav1.GetOptions{}); err != nil {
			t.Errorf("gone on the server after the copy: %v", err)
		}
		if _, err := crdCrates.Patch(ctx, "gone", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := crdCrates.Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if res, err := migrate.Copy(ctx, copyOpts); err != nil || res.Copied["crates.depot.example.com"] != 4 || res.Removed["crates.depot.example.com"] != 1 {
			t.Errorf("the copy after gone was deleted on the CRD: %+v, %v", res, err)
		}
		if _, err := serverCrates.Get(ctx, "gone", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("gone on the server after the pruning copy: %v, want NotFound", err)
		}
		if after, err := serverCrates.List(ctx, metav1.ListOptions{}); err != nil || len(after.Items) != 4 {
			t.Errorf("the server after the pruning copy: %v crates, %v; want the 4", len(after.Items), err)
		}
		// The verification: counts and content hashes equal on both sides; a crate changed on
		// the server alone is found.
		verifyOpts := migrate.VerifyOptions{Cluster: cp.Admin, Server: up.restConfig(t), Group: depot, Skip: []string{"crates.depot.example.com/depot/long"}}
		if v, err := migrate.Verify(ctx, verifyOpts); err != nil || !v.Equal() || v.Objects["crates.depot.example.com"] != 4 {
			t.Errorf("the verification after the copy: %+v, %v; want 4 crates equal on both sides", v, err)
		}
		changed, err := serverCrates.Get(ctx, "applied", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		changed.SetLabels(map[string]string{"team": "red"})
		if _, err := serverCrates.Update(ctx, changed, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if v, err := migrate.Verify(ctx, verifyOpts); err != nil || v.Equal() || len(v.Differ) != 1 || v.Differ[0] != "crates.depot.example.com depot/applied" {
			t.Errorf("the verification after applied changed on the server: %+v, %v; want it to differ", v, err)
		}
		if st, err := im.SetState(ctx, migrate.MigrationState{}); err != nil || st.InProgress {
			t.Fatalf("ending the migration: %+v, %v", st, err)
		}
		if _, err := im.Import(ctx, byName["plain"]); !apierrors.IsConflict(err) {
			t.Errorf("an import after the migration ended: %v, want 409 Conflict", err)
		}
	})

	t.Run("freeze", func(t *testing.T) {
		policies := kubernetes.NewForConfigOrDie(cp.Admin).AdmissionregistrationV1()
		freezeGone := func(when string) {
			t.Helper()
			name := "aagen-migration-freeze." + depot
			if _, err := policies.ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("%s: the freeze's policy: %v, want NotFound", when, err)
			}
			if _, err := policies.ValidatingAdmissionPolicyBindings().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("%s: the freeze's binding: %v, want NotFound", when, err)
			}
		}
		// A freeze that never takes hold (its probe is never refused) removes itself.
		err := migrate.Freeze(ctx, cp.Admin, depot, func(context.Context) error { return nil }, 2*time.Second)
		if err == nil || !strings.Contains(err.Error(), "did not take hold") {
			t.Errorf("a freeze whose probe is never refused: %v", err)
		}
		freezeGone("after a failed freeze")

		probe := func(ctx context.Context) error {
			obj, err := crdCrates.Get(ctx, "plain", metav1.GetOptions{})
			if err != nil {
				return err
			}
			_, err = crdCrates.Update(ctx, obj, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}
		if err := migrate.Freeze(ctx, cp.Admin, depot, probe, time.Minute); err != nil {
			t.Fatal(err)
		}
		lifted := false
		defer func() {
			if !lifted {
				_ = migrate.Lift(context.Background(), cp.Admin, depot)
			}
		}()
		relabel := func(ctx context.Context) error {
			obj, err := crdCrates.Get(ctx, "applied", metav1.GetOptions{})
			if err != nil {
				return err
			}
			obj.SetLabels(map[string]string{"team": "green"})
			_, err = crdCrates.Update(ctx, obj, metav1.UpdateOptions{})
			return err
		}
		writes := map[string]func(context.Context) error{
			"update": relabel,
			"status": func(ctx context.Context) error {
				obj, err := crdCrates.Get(ctx, "owned", metav1.GetOptions{})
				if err != nil {
					return err
				}
				obj.Object["status"] = map[string]any{"packed": false}
				_, err = crdCrates.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
				return err
			},
			"create": func(ctx context.Context) error {
				_, err := crdCrates.Create(ctx, crate("new", "kiwis"), metav1.CreateOptions{})
				return err
			},
			"delete": func(ctx context.Context) error { return crdCrates.Delete(ctx, "plain", metav1.DeleteOptions{}) },
		}
		for name, write := range writes {
			if err := write(ctx); err == nil || !strings.Contains(err.Error(), migrate.FreezeMessage) {
				t.Errorf("%s during the freeze: %v, want it refused saying %q", name, err, migrate.FreezeMessage)
			}
		}
		if err := migrate.Lift(ctx, cp.Admin, depot); err != nil {
			t.Fatal(err)
		}
		lifted = true
		freezeGone("after the lift")
		// kube-apiserver unloads the policy asynchronously: the write succeeds within a minute.
		var last error
		deadline := time.Now().Add(time.Minute)
		for last = relabel(ctx); last != nil && time.Now().Before(deadline); last = relabel(ctx) {
			time.Sleep(200 * time.Millisecond)
		}
		if last != nil {
			t.Errorf("a write after the freeze was lifted: %v", last)
		}
	})
}

// withoutRV is obj's content without metadata.resourceVersion.
func withoutRV(obj *unstructured.Unstructured) map[string]any {
	out := obj.DeepCopy()
	unstructured.RemoveNestedField(out.Object, "metadata", "resourceVersion")
	return out.Object
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestMigrateApply moves testdata/crosspkg's crates from controller-gen v0.23.0's CRD on
// kube-apiserver v1.37.2 to the generated server, deployed behind kube-apiserver from its
// config/deploy manifests but without its APIService (the CRD serves the group):
// migrate.Apply plans, copies, freezes, copies again, points the APIService at the
// server and verifies; `aagen migrate apply` runs it with, on the server, a ServiceAccount
// bound to the ClusterRole docs/migration.md gives (its token checked and its requests
// authorized by kube-apiserver for the server). Afterwards kube-apiserver serves every crate from the generated
// server (its resourceVersions), equal to the CRD's but for resourceVersion; the
// APIService is marked not automanaged and points at the server's Service; the freeze is
// gone and a write through kube-apiserver lands in the generated server. Then, after
// writes on the server, `aagen migrate rollback` fails past its hand-back on a CRD made
// stricter, and run again goes on from there and brings the CRD up to the server's
// crates; and apply runs once more.
func TestMigrateApply(t *testing.T) {
	skipShort(t)
	runsTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	f := newMigrationFixture(t, ctx, func(crd *apiextensionsv1.CustomResourceDefinition) {
		// The drift of TestMigratePlanAndImport: spec.label.text without its maxLength.
		alterSchema(crd, func(text *apiextensionsv1.JSONSchemaProps) { text.MaxLength = nil }, "spec", "label", "text")
	})
	cp, backend, service, serverKubeconfig, caFile := f.cp, f.backend, f.service, f.serverKubeconfig, f.caFile
	const ns = crateNamespace
	core := kubernetes.NewForConfigOrDie(cp.Admin).CoreV1()
	owner, err := core.ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	crdCrates := dynamic.NewForConfigOrDie(cp.Admin).Resource(crates).Namespace(ns)
	crate := crateObject
	held := crate("held")
	held.SetFinalizers([]string{"depot.example.com/keep"})
	got, err := crdCrates.Create(ctx, held, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Object["status"] = map[string]any{"packed": true}
	if _, err := crdCrates.UpdateStatus(ctx, got, metav1.UpdateOptions{FieldManager: "packer"}); err != nil {
		t.Fatal(err)
	}
	owned := crate("owned")
	owned.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}})
	if _, err := crdCrates.Create(ctx, owned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := crdCrates.Apply(ctx, "applied", crate("applied"), metav1.ApplyOptions{FieldManager: "shipper"}); err != nil {
		t.Fatal(err)
	}
	long := crate("long")
	_ = unstructured.SetNestedField(long.Object, "thirteen-char", "spec", "label", "text")
	if _, err := crdCrates.Create(ctx, long, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before, err := crdCrates.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// A watch opened on the CRD before the switch (what informers hold): apply ends it.
	oldWatch, err := crdCrates.Watch(ctx, metav1.ListOptions{ResourceVersion: before.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer oldWatch.Stop()
	apply := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, aagen(t), append([]string{"migrate", "apply", "--kubeconfig", cp.Kubeconfig, "--server-kubeconfig", serverKubeconfig,
			"--group", depot, "--service", service["namespace"].(string) + "/" + service["name"].(string),
			"--service-port", strconv.Itoa(backend.Port), "--ca-bundle", caFile}, args...)...)
		out, err := cmd.CombinedOutput()
		t.Logf("aagen migrate apply %v:\n%s", args, out)
		return string(out), err
	}
	apiservices := dynamic.NewForConfigOrDie(cp.Admin).Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
	direct := dynamic.NewForConfigOrDie(cp.PKI.FrontProxy(backend, "migration-admin", "system:masters")).Resource(crates).Namespace(ns)
	// With the crate the server refuses neither fixed nor skipped, apply refuses to start
	// and changes nothing.
	out, err := apply()
	if err == nil || !strings.Contains(out, "REFUSED depot/long: spec.label.text: Too long") || !strings.Contains(out, "blocks the migration") {
		t.Errorf("aagen migrate apply with a refused crate: %v", err)
	}
	if as, err := apiservices.Get(ctx, "v1."+depot, metav1.GetOptions{}); err != nil || as.GetLabels()["kube-aggregator.kubernetes.io/automanaged"] == "false" {
		t.Errorf("the APIService after a refused apply: %v, %v; want it left to kube-apiserver", as, err)
	}
	if list, err := direct.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Errorf("the generated server after a refused apply: %v, %v; want no crates", list, err)
	}
	out, err = apply("--skip", "crates.depot.example.com/depot/long")
	if err != nil {
		t.Fatalf("aagen migrate apply --skip the refused crate: %v", err)
	}
	if !strings.Contains(string(out), "depot.example.com is served by the generated server: map[crates.depot.example.com:3] objects verified") {
		t.Errorf("aagen migrate apply does not report the 3 crates verified")
	}

	// Through kube-apiserver, from the generated server now; the skipped crate stays
	// behind, in the CRD's storage.
	for i := range before.Items {
		src := &before.Items[i]
		name := src.GetName()
		if name == "long" {
			if _, err := crdCrates.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the skipped crate through kube-apiserver after the switch: %v, want NotFound", err)
			}
			continue
		}
		via, err := crdCrates.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s through kube-apiserver: %v", name, err)
			continue
		}
		own, err := direct.Get(ctx, name, metav1.GetOptions{})
		if err != nil || own.GetResourceVersion() != via.GetResourceVersion() {
			t.Errorf("%s: kube-apiserver answers resourceVersion %s, the generated server %v (%v): not served by it", name, via.GetResourceVersion(), own, err)
		}
		gotContent := withoutRV(via)
		if _, ok := src.Object["status"]; !ok && reflect.DeepEqual(gotContent["status"], map[string]any{}) {
			delete(gotContent, "status") // as in TestMigratePlanAndImport
		}
		if want := withoutRV(src); !reflect.DeepEqual(gotContent, want) {
			t.Errorf("%s through kube-apiserver after the switch:\n%s\nwant the CRD's but for resourceVersion:\n%s", name, mustJSON(t, gotContent), mustJSON(t, want))
		}
	}
	as, err := apiservices.Get(ctx, "v1."+depot, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if as.GetLabels()["kube-aggregator.kubernetes.io/automanaged"] != "false" {
		t.Errorf("the APIService's labels after the switch: %v", as.GetLabels())
	}
	if name, _, _ := unstructured.NestedString(as.Object, "spec", "service", "name"); name != service["name"] {
		t.Errorf("the APIService points at %q, want %v", name, service["name"])
	}
	policies := kubernetes.NewForConfigOrDie(cp.Admin).AdmissionregistrationV1().ValidatingAdmissionPolicies()
	if _, err := policies.Get(ctx, "aagen-migration-freeze."+depot, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the freeze after apply: %v, want NotFound", err)
	}
	// A write through kube-apiserver lands in the generated server (the freeze is
	// unloaded asynchronously: within a minute).
	var last error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if _, last = crdCrates.Create(ctx, crate("after"), metav1.CreateOptions{}); last == nil {
			break
		}
	}
	if last != nil {
		t.Fatalf("a create through kube-apiserver after the switch: %v", last)
	}
	if _, err := direct.Get(ctx, "after", metav1.GetOptions{}); err != nil {
		t.Errorf("the crate created after the switch, on the generated server: %v", err)
	}
	var seen []string
	timeout := time.After(5 * time.Second)
collect:
	for {
		select {
		case ev, ok := <-oldWatch.ResultChan():
			if !ok {
				seen = append(seen, "(closed)")
				break collect
			}
			if u, ok := ev.Object.(*unstructured.Unstructured); ok {
				seen = append(seen, string(ev.Type)+" "+u.GetName())
			} else {
				seen = append(seen, string(ev.Type))
			}
		case <-timeout:
			break collect
		}
	}
	// apply ends it (it retires the CRD, and waits until kube-apiserver serves no watch
	// from it), so its client watches again, on the server.
	if len(seen) == 0 || seen[len(seen)-1] != "(closed)" {
		t.Errorf("the watch opened on the CRD before the switch delivered %v and stayed open; want it ended by apply", seen)
	}

	// Rollback. Writes through kube-apiserver land in the generated server: a relabel and a
	// status change of "held", a spec change by a second server-side-apply manager of
	// "applied", "owned" deleted, and "after" (above) created there, unknown to the CRD.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := crdCrates.Get(ctx, "held", metav1.GetOptions{})
		if err != nil {
			return err
		}
		obj.SetLabels(map[string]string{"crate": "held", "team": "green"})
		if obj, err = crdCrates.Update(ctx, obj, metav1.UpdateOptions{FieldManager: "labeller"}); err != nil {
			return err
		}
		obj.Object["status"] = map[string]any{"packed": false}
		_, err = crdCrates.UpdateStatus(ctx, obj, metav1.UpdateOptions{FieldManager: "packer"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	heavier := &unstructured.Unstructured{Object: map[string]any{"apiVersion": depot + "/v1", "kind": "Crate",
		"metadata": map[string]any{"name": "applied", "namespace": ns}, "spec": map[string]any{"limits": map[string]any{"maxWeight": int64(20)}}}}
	if _, err := crdCrates.Apply(ctx, "applied", heavier, metav1.ApplyOptions{FieldManager: "weigher", Force: true}); err != nil {
		t.Fatal(err)
	}
	if err := crdCrates.Delete(ctx, "owned", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	onServer, err := direct.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rollback := func() (string, error) {
		out, err := exec.CommandContext(ctx, aagen(t), "migrate", "rollback", "--kubeconfig", cp.Kubeconfig, "--server-kubeconfig", serverKubeconfig, "--group", depot).CombinedOutput()
		t.Logf("aagen migrate rollback:\n%s", out)
		return string(out), err
	}
	// First a rollback that fails after its hand-back: the CRD, made stricter meanwhile
	// (spec.limits.maxWeight at most 15), refuses "applied" (20). It keeps the freeze and
	// the mark, and, once the CRD takes the object again, a rollback run again goes on
	// from the hand-back.
	crdClient := apiextensionsclient.NewForConfigOrDie(cp.Admin).ApiextensionsV1().CustomResourceDefinitions()
	setMaximum := func(max *float64) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd, err := crdClient.Get(ctx, "crates."+depot, metav1.GetOptions{})
			if err != nil {
				return err
			}
			alterSchema(crd, func(weight *apiextensionsv1.JSONSchemaProps) { weight.Maximum = max }, "spec", "limits", "maxWeight")
			_, err = crdClient.Update(ctx, crd, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	fifteen := 15.0
	setMaximum(&fifteen)
	failed, err := rollback()
	if err == nil || !strings.Contains(failed, "depot/applied") || !strings.Contains(failed, "stay frozen: run aagen migrate rollback again") {
		t.Fatalf("aagen migrate rollback with a CRD that refuses a crate: %v; want it to fail naming depot/applied, with the freeze kept", err)
	}
	if as, err := apiservices.Get(ctx, "v1."+depot, metav1.GetOptions{}); err != nil || as.GetAnnotations()["migrate.aagen.dev/rolling-back"] == "" {
		t.Errorf("the APIService after a rollback failed past its hand-back: %v, %v; want it marked rolling back", as, err)
	}
	if _, err := policies.Get(ctx, "aagen-migration-freeze."+depot, metav1.GetOptions{}); err != nil {
		t.Errorf("the freeze after a rollback failed past its hand-back: %v, want it kept", err)
	}
	setMaximum(nil)
	out2, err := rollback()
	if err != nil {
		t.Fatalf("aagen migrate rollback, run again: %v", err)
	}
	for _, want := range []string{
		"depot.example.com is served by its CRDs again: map[crates.depot.example.com:3] objects verified",
		"created anew, with a new uid (objects that refer to it by uid must be updated): crates.depot.example.com depot/after",
	} {
		if !strings.Contains(failed+out2, want) {
			t.Errorf("aagen migrate rollback, failed and run again, does not say %q", want)
		}
	}
	if strings.Contains(out2, "handing the APIServices") {
		t.Errorf("aagen migrate rollback, run again, handed the APIServices back again; want it to go on from the hand-back")
	}
	as, err = apiservices.Get(ctx, "v1."+depot, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc, found, _ := unstructured.NestedMap(as.Object, "spec", "service"); found || as.GetLabels()["kube-aggregator.kubernetes.io/automanaged"] != "true" {
		t.Errorf("the APIService after the rollback: service %v, labels %v; want none and kube-apiserver's automanaged label", svc, as.GetLabels())
	}
	for k := range as.GetAnnotations() {
		if strings.HasPrefix(k, "migrate.aagen.dev/") {
			t.Errorf("the APIService keeps the migration's annotation %s after the rollback", k)
		}
	}
	if _, err := policies.Get(ctx, "aagen-migration-freeze."+depot, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the freeze after the rollback: %v, want NotFound", err)
	}
	// Through kube-apiserver, from the CRD again: every crate the server held equal to the
	// server's but for resourceVersion ("after", created on the server, but for its uid and
	// creationTimestamp too), "owned" gone, "long" (skipped by apply) as it was.
	back, err := crdCrates.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	backByName := map[string]*unstructured.Unstructured{}
	for i := range back.Items {
		backByName[back.Items[i].GetName()] = &back.Items[i]
	}
	for i := range onServer.Items {
		src := &onServer.Items[i]
		name := src.GetName()
		got, ok := backByName[name]
		if !ok {
			t.Errorf("%s is not in the CRD after the rollback", name)
			continue
		}
		if got.GetResourceVersion() == src.GetResourceVersion() {
			t.Errorf("%s through kube-apiserver after the rollback has the generated server's resourceVersion %s: not served by the CRD", name, got.GetResourceVersion())
		}
		gotContent, want := withoutRV(got), withoutRV(src)
		for _, c := range []map[string]any{gotContent, want} {
			if reflect.DeepEqual(c["status"], map[string]any{}) {
				delete(c, "status")
			}
			if name == "after" {
				m := c["metadata"].(map[string]any)
				delete(m, "uid")
				delete(m, "creationTimestamp")
			}
		}
		if !reflect.DeepEqual(gotContent, want) {
			t.Errorf("%s through kube-apiserver after the rollback:\n%s\nwant the generated server's but for resourceVersion:\n%s", name, mustJSON(t, gotContent), mustJSON(t, want))
		}
		if name == "after" && got.GetUID() == src.GetUID() {
			t.Errorf("after: the CRD's object has the server's uid %s, which the public API cannot set", got.GetUID())
		}
	}
	if _, ok := backByName["owned"]; ok {
		t.Errorf("owned, deleted on the generated server, is still in the CRD after the rollback")
	}
	for i := range before.Items {
		if src := &before.Items[i]; src.GetName() == "long" {
			if got, ok := backByName["long"]; !ok || !reflect.DeepEqual(got.Object, src.Object) {
				t.Errorf("long, skipped by apply, after the rollback: %v; want it untouched: %v", got, src)
			}
		}
	}
	// A write through kube-apiserver lands in the CRD, not in the server.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if _, last = crdCrates.Create(ctx, crate("rolled-back"), metav1.CreateOptions{}); last == nil {
			break
		}
	}
	if last != nil {
		t.Fatalf("a create through kube-apiserver after the rollback: %v", last)
	}
	if _, err := direct.Get(ctx, "rolled-back", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the crate created after the rollback, on the generated server: %v, want NotFound", err)
	}
	// And forward again: the server holds the crates of the first apply already (the
	// plan leaves their names to the import, which keeps them), and the crates since.
	if out, err := apply("--skip", "crates.depot.example.com/depot/long"); err != nil {
		t.Fatalf("aagen migrate apply after the rollback: %v", err)
	} else if !strings.Contains(out, "depot.example.com is served by the generated server: map[crates.depot.example.com:4] objects verified") {
		t.Errorf("aagen migrate apply after the rollback does not report the 4 crates verified")
	}
	if _, err := direct.Get(ctx, "rolled-back", metav1.GetOptions{}); err != nil {
		t.Errorf("the crate created after the rollback, on the generated server after apply again: %v", err)
	}
}

// alterSchema changes, with alter, the schema of the field at path in the first version of
// crd (properties hold schemas by value, so each level is written back).
func alterSchema(crd *apiextensionsv1.CustomResourceDefinition, alter func(*apiextensionsv1.JSONSchemaProps), path ...string) {
	var walk func(s apiextensionsv1.JSONSchemaProps, path []string) apiextensionsv1.JSONSchemaProps
	walk = func(s apiextensionsv1.JSONSchemaProps, path []string) apiextensionsv1.JSONSchemaProps {
		if len(path) == 0 {
			alter(&s)
			return s
		}
		s.Properties[path[0]] = walk(s.Properties[path[0]], path[1:])
		return s
	}
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	*root = walk(*root, path)
}
