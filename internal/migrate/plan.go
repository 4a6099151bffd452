package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// storageVersionsPath is where the generated server reports its storage versions
// (runtime/server.StorageVersionsPath; not imported, to keep the command free of the
// server's dependencies).
const storageVersionsPath = "/storage-versions"

// PlanOptions are the inputs of Plan.
type PlanOptions struct {
	// Cluster reaches kube-apiserver, where the CRDs are installed and serve the objects.
	Cluster *rest.Config
	// Server reaches the generated server directly (not through kube-apiserver, whose
	// APIService for the group does not point at it yet).
	Server *rest.Config
	// Group is the API group to move.
	Group string
	// Skip names objects left out of the migration on purpose, as
	// "<resource>.<group>/<namespace>/<name>" (cluster-scoped: "<resource>.<group>/<name>"):
	// their refusal by the server does not fail the plan.
	Skip []string
}

// Plan is what a migration of a group would do and meet.
type Plan struct {
	Group     string
	Resources []ResourcePlan
}

// ResourcePlan is the plan of one resource (one CRD).
type ResourcePlan struct {
	// Resource is "<plural>.<group>".
	Resource string
	Kind     string
	// CRDVersions are the CRD's served versions, CRDStorage its storage version.
	CRDVersions []string
	CRDStorage  string
	// ServerVersions are the versions the generated server serves the resource in,
	// ServerStorage its storage version (from /storage-versions).
	ServerVersions []string
	ServerStorage  string
	// DryRunVersion is the version the objects were read and dry-run in.
	DryRunVersion string
	// Problems stop a migration: the server does not serve the resource, or a version
	// clients use, or in another scope.
	Problems []string
	// Notes differ without stopping it (another storage version, schema differences the
	// dry run did not turn into refusals).
	Notes []string
	// SchemaDifferences compare the CRD's schema with the server's, per version.
	SchemaDifferences []SchemaDifference
	// Objects counts the objects the CRD holds.
	Objects int
	// Refused are the objects the server would refuse.
	Refused []RefusedObject
}

// RefusedObject is an object the generated server would refuse, and why.
type RefusedObject struct {
	// Name is "<namespace>/<name>" or "<name>".
	Name string
	// Skipped is true when PlanOptions.Skip names it.
	Skipped bool
	// Reason is the server's message; Fields its causes (field and message).
	Reason string
	Fields []FieldCause
}

// FieldCause is one cause of a refusal.
type FieldCause struct {
	Field   string
	Message string
}

// Blocking reports whether the plan stops a migration: a problem, or an object the server
// would refuse that is not skipped.
func (p *Plan) Blocking() bool {
	for _, r := range p.Resources {
		if len(r.Problems) > 0 {
			return true
		}
		for _, o := range r.Refused {
			if !o.Skipped {
				return true
			}
		}
	}
	return false
}

// RunPlan plans the migration of o.Group. It changes nothing: the objects are only read
// from the cluster and sent to the generated server as dry-run creates.
func RunPlan(ctx context.Context, o PlanOptions) (*Plan, error) {
	if o.Group == "" {
		return nil, fmt.Errorf("the API group to migrate is required (--group)")
	}
	group, err := groupCRDs(ctx, o.Cluster, o.Group)
	if err != nil {
		return nil, err
	}
	server, err := readServer(ctx, o.Server, o.Group)
	if err != nil {
		return nil, err
	}
	clusterObjects, err := dynamic.NewForConfig(o.Cluster)
	if err != nil {
		return nil, err
	}
	serverObjects, err := dynamic.NewForConfig(o.Server)
	if err != nil {
		return nil, err
	}
	importer, err := NewImporter(o.Server)
	if err != nil {
		return nil, err
	}
	skip := map[string]bool{}
	for _, s := range o.Skip {
		skip[s] = true
	}
	plan := &Plan{Group: o.Group}
	for _, crd := range group {
		rp := compareResource(crd, server)
		if rp.DryRunVersion != "" {
			if err := dryRun(ctx, &rp, crd, clusterObjects, serverObjects, importer, skip); err != nil {
				return nil, err
			}
		}
		plan.Resources = append(plan.Resources, rp)
	}
	sort.Slice(plan.Resources, func(a, b int) bool { return plan.Resources[a].Resource < plan.Resources[b].Resource })
	return plan, nil
}

// served is what the generated server serves of the group.
type served struct {
	// resources by plural: versions (preferred first), namespaced, kind.
	resources map[string]*servedResource
	// storage versions by plural.
	storage map[string]string
	// schemas by version: the /openapi/v3 document of the group version.
	schemas map[string]map[string]any
}

type servedResource struct {
	kind       string
	namespaced bool
	versions   []string
}

func readServer(ctx context.Context, cfg *rest.Config, group string) (*served, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	groups, err := dc.ServerGroups()
	if err != nil {
		return nil, fmt.Errorf("discovery of the generated server at %s: %w", cfg.Host, err)
	}
	out := &served{resources: map[string]*servedResource{}, storage: map[string]string{}, schemas: map[string]map[string]any{}}
	for _, g := range groups.Groups {
		if g.Name != group {
			continue
		}
		for _, v := range g.Versions {
			list, err := dc.ServerResourcesForGroupVersion(v.GroupVersion)
			if err != nil {
				return nil, fmt.Errorf("discovery of %s on the generated server: %w", v.GroupVersion, err)
			}
			for _, r := range list.APIResources {
				if strings.Contains(r.Name, "/") {
					continue
				}
				sr := out.resources[r.Name]
				if sr == nil {
					sr = &servedResource{kind: r.Kind, namespaced: r.Namespaced}
					out.resources[r.Name] = sr
				}
				sr.versions = append(sr.versions, v.Version)
			}
			raw, err := dc.RESTClient().Get().AbsPath("/openapi/v3/apis", group, v.Version).Do(ctx).Raw()
			if err != nil {
				return nil, fmt.Errorf("reading /openapi/v3/apis/%s/%s from the generated server: %w", group, v.Version, err)
			}
			var doc map[string]any
			if err := json.Unmarshal(raw, &doc); err != nil {
				return nil, fmt.Errorf("/openapi/v3/apis/%s/%s of the generated server is not JSON: %w", group, v.Version, err)
			}
			out.schemas[v.Version] = doc
		}
	}
	if len(out.resources) == 0 {
		return nil, fmt.Errorf("the generated server at %s serves no resource of group %s: is it the server of these types?", cfg.Host, group)
	}
	raw, err := dc.RESTClient().Get().AbsPath(storageVersionsPath).Do(ctx).Raw()
	if err != nil {
		return nil, fmt.Errorf("reading %s from the generated server: %w", storageVersionsPath, err)
	}
	var report struct {
		Resources []struct {
			Group, Resource, StorageVersion string
		} `json:"resources"`
	}
	if err := json.Unmarshal(raw, &report); err != nil {
		return nil, fmt.Errorf("%s of the generated server: %w", storageVersionsPath, err)
	}
	for _, r := range report.Resources {
		if r.Group == group {
			out.storage[r.Resource] = r.StorageVersion
		}
	}
	return out, nil
}

// compareResource compares a CRD with what the server serves of its resource, and picks
// the version to dry-run the objects in: the CRD's storage version when the server
// serves it, else the first version both serve.
func compareResource(crd apiextensionsv1.CustomResourceDefinition, server *served) ResourcePlan {
	plural := crd.Spec.Names.Plural
	rp := ResourcePlan{Resource: plural + "." + crd.Spec.Group, Kind: crd.Spec.Names.Kind}
	for _, v := range crd.Spec.Versions {
		if v.Served {
			rp.CRDVersions = append(rp.CRDVersions, v.Name)
		}
		if v.Storage {
			rp.CRDStorage = v.Name
		}
	}
	sr := server.resources[plural]
	if sr == nil {
		rp.Problems = append(rp.Problems, fmt.Sprintf("the generated server does not serve %s: its objects would have nowhere to go", rp.Resource))
		return rp
	}
	rp.ServerVersions, rp.ServerStorage = sr.versions, server.storage[plural]
	if sr.kind != rp.Kind {
		rp.Problems = append(rp.Problems, fmt.Sprintf("the CRD's kind is %s, the generated server's %s", rp.Kind, sr.kind))
	}
	if crdNamespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped; crdNamespaced != sr.namespaced {
		rp.Problems = append(rp.Problems, fmt.Sprintf("the CRD is %s, the generated server's resource %s", scope(crdNamespaced), scope(sr.namespaced)))
	}
	for _, v := range rp.CRDVersions {
		if !slices.Contains(sr.versions, v) {
			rp.Problems = append(rp.Problems, fmt.Sprintf("the CRD serves %s, the generated server does not: its clients would get 404 after the switch", v))
		}
	}
	for _, v := range sr.versions {
		if !slices.Contains(rp.CRDVersions, v) {
			rp.Notes = append(rp.Notes, fmt.Sprintf("the generated server also serves %s, which the CRD does not", v))
		}
	}
	if rp.ServerStorage != "" && rp.CRDStorage != rp.ServerStorage {
		rp.Notes = append(rp.Notes, fmt.Sprintf("the CRD stores %s, the generated server %s: objects are converted on import", rp.CRDStorage, rp.ServerStorage))
	}
	for _, v := range crd.Spec.Versions {
		if !v.Served || !slices.Contains(sr.versions, v.Name) || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		diffs, err := compareSchemas(v.Name, v.Schema.OpenAPIV3Schema, server.schemas[v.Name], schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: rp.Kind})
		if err != nil {
			rp.Notes = append(rp.Notes, fmt.Sprintf("%s: schemas not compared: %v", v.Name, err))
			continue
		}
		rp.SchemaDifferences = append(rp.SchemaDifferences, diffs...)
	}
	if slices.Contains(sr.versions, rp.CRDStorage) {
		rp.DryRunVersion = rp.CRDStorage
	} else {
		for _, v := range rp.CRDVersions {
			if slices.Contains(sr.versions, v) {
				rp.DryRunVersion = v
				break
			}
		}
	}
	if rp.DryRunVersion == "" {
		rp.Problems = append(rp.Problems, "the CRD and the generated server serve no version in common: the objects cannot be read in a version the server takes")
	}
	return rp
}

func scope(namespaced bool) string {
	if namespaced {
		return "namespaced"
	}
	return "cluster-scoped"
}

// dryRun lists the CRD's objects in the plan's version and sends each to the generated
// server as a dry-run create (the public API's path: admission, validation of what a
// create takes) and as a dry-run import (the whole object as the copy will send it:
// status, uid, deletionTimestamp, and the object of the same name the server may hold),
// recording those it refuses with the causes of both.
func dryRun(ctx context.Context, rp *ResourcePlan, crd apiextensionsv1.CustomResourceDefinition, cluster, server dynamic.Interface, importer *Importer, skip map[string]bool) error {
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: rp.DryRunVersion, Resource: crd.Spec.Names.Plural}
	namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
	opts := metav1.ListOptions{Limit: 500}
	alteredFields := map[string]int{}
	for {
		list, err := cluster.Resource(gvr).List(ctx, opts)
		if err != nil {
			return fmt.Errorf("listing %s in the cluster: %w", rp.Resource, err)
		}
		// The page's objects are sent copyWorkers at a time; their refusals are recorded in
		// the page's order.
		answers := make([][]error, len(list.Items))
		notes := make([]string, len(list.Items))
		altered := make([][]string, len(list.Items))
		next := make(chan int)
		var workers sync.WaitGroup
		for range copyWorkers {
			workers.Add(1)
			go func() {
				defer workers.Done()
				for i := range next {
					obj := &list.Items[i]
					// An object of that name on the server already (an apply interrupted, or
					// rolled back, before) is the import's to judge: its dry run below refuses
					// one with another uid.
					if err := unfrozen(ctx, func() error { return createDryRun(ctx, server, gvr, namespaced, obj) }); err != nil && !apierrors.IsAlreadyExists(err) {
						answers[i] = append(answers[i], err)
					}
					if stored, err := importer.DryRun(ctx, obj); err == nil {
						altered[i] = changedFields(obj, stored)
					} else if isOtherUID(err) {
						// Left on the server by an earlier apply and since rolled back, or made on
						// the server directly: the CRD's object is the one to keep.
						notes[i] = "the generated server holds another object of this name; apply replaces it with the CRD's"
					} else if err != nil {
						answers[i] = append(answers[i], err)
					}
				}
			}()
		}
		for i := range list.Items {
			next <- i
		}
		close(next)
		workers.Wait()
		for i := range list.Items {
			for _, f := range altered[i] {
				alteredFields[f]++
			}
			rp.Objects++
			obj := &list.Items[i]
			name := obj.GetName()
			if namespaced {
				name = obj.GetNamespace() + "/" + name
			}
			if notes[i] != "" {
				rp.Notes = append(rp.Notes, name+": "+notes[i])
			}
			errs := answers[i]
			if len(errs) == 0 {
				continue
			}
			refused := RefusedObject{Name: name, Skipped: skip[rp.Resource+"/"+name], Reason: errs[0].Error()}
			seen := map[FieldCause]bool{}
			for _, err := range errs {
				status, ok := err.(apierrors.APIStatus)
				if !ok || status.Status().Details == nil {
					continue
				}
				for _, c := range status.Status().Details.Causes {
					if fc := (FieldCause{Field: c.Field, Message: c.Message}); !seen[fc] {
						seen[fc] = true
						refused.Fields = append(refused.Fields, fc)
					}
				}
			}
			if len(refused.Fields) == 0 && len(errs) > 1 {
				refused.Reason = errors.Join(errs...).Error()
			}
			rp.Refused = append(rp.Refused, refused)
		}
		if list.GetContinue() == "" {
			break
		}
		opts.Continue = list.GetContinue()
	}
	if len(alteredFields) > 0 {
		var fields []string
		for _, f := range slices.Sorted(maps.Keys(alteredFields)) {
			fields = append(fields, fmt.Sprintf("%s (%d)", f, alteredFields[f]))
		}
		rp.Notes = append(rp.Notes, "the generated server's types store some objects otherwise than the CRD holds them (a zero value its Go field omits, for one), and clients will read them so; by field, with the number of objects: "+strings.Join(fields, ", "))
	}
	return nil
}

// changedFields names the fields (dotted paths, down to the first that is not an object on
// both sides, an absent object counted as empty) in which stored, the server's object,
// differs from obj, the CRD's: but resourceVersion, with nulls and an empty status counted
// as absent (as ContentHash counts them).
func changedFields(obj, stored *unstructured.Unstructured) []string {
	a, b := WithoutNulls(obj.Object), WithoutNulls(stored.Object)
	for _, o := range []map[string]any{a, b} {
		unstructured.RemoveNestedField(o, "metadata", "resourceVersion")
		if st, ok := o["status"].(map[string]any); ok && len(st) == 0 {
			delete(o, "status")
		}
	}
	var out []string
	var walk func(prefix string, a, b map[string]any)
	walk = func(prefix string, a, b map[string]any) {
		for _, k := range unionKeys(a, b) {
			ma, aok := a[k].(map[string]any)
			mb, bok := b[k].(map[string]any)
			if _, there := a[k]; !there && bok {
				ma, aok = map[string]any{}, true
			}
			if _, there := b[k]; !there && aok {
				mb, bok = map[string]any{}, true
			}
			switch {
			case aok && bok:
				walk(prefix+k+".", ma, mb)
			case !reflect.DeepEqual(a[k], b[k]):
				out = append(out, prefix+k)
			}
		}
	}
	walk("", a, b)
	return out
}

// createDryRun sends obj to the server as a dry-run create: with the fields a create may
// carry (the server assigns uid, creationTimestamp, generation and resourceVersion; the
// import keeps the source's).
func createDryRun(ctx context.Context, server dynamic.Interface, gvr schema.GroupVersionResource, namespaced bool, obj *unstructured.Unstructured) error {
	body := obj.DeepCopy()
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
		unstructured.RemoveNestedField(body.Object, "metadata", f)
	}
	client := server.Resource(gvr)
	var err error
	if namespaced {
		_, err = client.Namespace(obj.GetNamespace()).Create(ctx, body, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
	} else {
		_, err = client.Create(ctx, body, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
	}
	return err
}

// Print writes the plan for a person: per resource its versions, problems, notes, schema
// differences and refused objects, and a last line saying whether it blocks.
func (p *Plan) Print(w io.Writer) {
	for _, r := range p.Resources {
		fmt.Fprintf(w, "%s (kind %s)\n", r.Resource, r.Kind)
		fmt.Fprintf(w, "  CRD:              served %s, storage %s\n", strings.Join(r.CRDVersions, ", "), r.CRDStorage)
		fmt.Fprintf(w, "  generated server: served %s, storage %s\n", strings.Join(r.ServerVersions, ", "), orNone(r.ServerStorage))
		for _, s := range r.Problems {
			fmt.Fprintf(w, "  PROBLEM: %s\n", s)
		}
		for _, s := range r.Notes {
			fmt.Fprintf(w, "  note: %s\n", s)
		}
		for _, d := range r.SchemaDifferences {
			fmt.Fprintf(w, "  schema %s: %s\n", d.Version, d)
		}
		if r.DryRunVersion != "" {
			fmt.Fprintf(w, "  %d object(s) dry-run in %s: %d refused\n", r.Objects, r.DryRunVersion, len(r.Refused))
		}
		for _, o := range r.Refused {
			mark := "REFUSED"
			if o.Skipped {
				mark = "refused (skipped)"
			}
			if len(o.Fields) == 0 {
				fmt.Fprintf(w, "  %s %s: %s\n", mark, o.Name, o.Reason)
			}
			for _, f := range o.Fields {
				fmt.Fprintf(w, "  %s %s: %s: %s\n", mark, o.Name, f.Field, f.Message)
			}
		}
	}
	if p.Blocking() {
		fmt.Fprintf(w, "the migration of %s cannot start: fix the problems and refused objects above, or leave objects out with --skip <resource>.<group>/<namespace>/<name>\n", p.Group)
	} else {
		fmt.Fprintf(w, "the migration of %s can start\n", p.Group)
	}
}

func orNone(s string) string {
	if s == "" {
		return "(not reported)"
	}
	return s
}

// unfrozenWait bounds how long unfrozen waits for a freeze lifted moments ago.
const unfrozenWait = time.Minute

// unfrozen calls write, a dry-run write on the generated server, again while its answer is
// the refusal of a freeze (FreezeMessage), for at most unfrozenWait: a server unloads a
// lifted freeze's policy asynchronously, so a plan right after an apply or a rollback can
// meet it for a moment.
func unfrozen(ctx context.Context, write func() error) error {
	deadline := time.Now().Add(unfrozenWait)
	for {
		err := write()
		if err == nil || !strings.Contains(err.Error(), FreezeMessage) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// isOtherUID reports whether err is the import's refusal of an object whose name the server
// holds with another uid.
func isOtherUID(err error) bool {
	return apierrors.IsConflict(err) && strings.Contains(err.Error(), "holds another object of this name")
}
