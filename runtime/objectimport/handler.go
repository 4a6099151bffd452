package objectimport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// Paths and the verb of the import.
const (
	// ImportPath takes one object per POST (JSON, with apiVersion and kind of a served
	// version) and answers with the stored object in that version. With ?dryRun=All it
	// checks the object as the import would and writes nothing.
	ImportPath = "/migration/import"
	// StatePath serves the migration state (GET) and sets it (PUT a State; only
	// inProgress, source and handedBack are read).
	StatePath = "/migration/state"
	// ImportVerb is the verb each imported object needs on its resource.
	ImportVerb = "import"
	// maxBody bounds a request body, as the server's default request limit (3 MiB) does.
	maxBody = 3 << 20
)

// Handler serves ImportPath and StatePath.
type Handler struct {
	// Targets are the resources objects can be imported into, by kind.
	Targets map[schema.GroupKind]Target
	// Scheme defaults and converts the objects.
	Scheme *runtime.Scheme
	// Codecs decode the bodies and encode the answers.
	Codecs serializer.CodecFactory
	// Authorizer is the server's authorizer (deployed: delegated to kube-apiserver).
	Authorizer authorizer.Authorizer
	// States returns the migration state's store once the server's storage is reachable.
	States func() (StateStore, error)
}

// statusVersion is the version metav1.Status answers are encoded in.
var statusVersion = schema.GroupVersion{Version: "v1"}

func (h *Handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	switch {
	case req.URL.Path == ImportPath && req.Method == http.MethodPost:
		h.serveImport(w, req)
	case req.URL.Path == StatePath && (req.Method == http.MethodGet || req.Method == http.MethodPut):
		h.serveState(w, req)
	default:
		h.fail(w, req, statusVersion, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: req.URL.Path}, req.Method))
	}
}

func (h *Handler) fail(w http.ResponseWriter, req *http.Request, gv schema.GroupVersion, err error) {
	responsewriters.ErrorNegotiated(err, h.Codecs, gv, w, req)
}

func (h *Handler) serveState(w http.ResponseWriter, req *http.Request) {
	states, err := h.States()
	if err != nil {
		h.fail(w, req, statusVersion, apierrors.NewServiceUnavailable(err.Error()))
		return
	}
	if req.Method == http.MethodPut {
		var st State
		body, err := io.ReadAll(io.LimitReader(req.Body, maxBody))
		if err == nil {
			err = json.Unmarshal(body, &st)
		}
		if err != nil {
			h.fail(w, req, statusVersion, apierrors.NewBadRequest(fmt.Sprintf("the body of PUT %s must be a JSON migration state, {\"inProgress\": true, \"source\": \"...\"}: %v", StatePath, err)))
			return
		}
		st.Since = time.Now().UTC().Truncate(time.Second)
		if u, ok := genericapirequest.UserFrom(req.Context()); ok {
			st.By = u.GetName()
		}
		if err := states.Write(req.Context(), st); err != nil {
			h.fail(w, req, statusVersion, apierrors.NewInternalError(err))
			return
		}
	}
	st, err := states.Read(req.Context())
	if err != nil {
		h.fail(w, req, statusVersion, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(st)
}

func (h *Handler) serveImport(w http.ResponseWriter, req *http.Request) {
	ctx := req.Context()
	body, err := io.ReadAll(io.LimitReader(req.Body, maxBody+1))
	if err != nil {
		h.fail(w, req, statusVersion, apierrors.NewBadRequest(err.Error()))
		return
	}
	if len(body) > maxBody {
		h.fail(w, req, statusVersion, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("an imported object may have at most %d bytes", maxBody)))
		return
	}
	// Strict: a field the server's type does not have would be lost on the way, so it is
	// refused rather than dropped.
	strict := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, h.Scheme, h.Scheme, kjson.SerializerOptions{Strict: true})
	obj, gvk, err := strict.Decode(body, nil, nil)
	if runtime.IsStrictDecodingError(err) {
		h.fail(w, req, statusVersion, apierrors.NewBadRequest(fmt.Sprintf("the object has fields the server's type does not, which an import would lose: %v", err)))
		return
	}
	if err != nil {
		h.fail(w, req, statusVersion, apierrors.NewBadRequest(fmt.Sprintf("the body of POST %s must be one object with apiVersion and kind: %v", ImportPath, err)))
		return
	}
	gv := gvk.GroupVersion()
	target, ok := h.Targets[gvk.GroupKind()]
	if !ok {
		h.fail(w, req, statusVersion, apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind},
			fmt.Sprintf("%s is not a kind this server stores (importable: %s)", gvk.GroupKind(), h.kinds())))
		return
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		h.fail(w, req, gv, apierrors.NewBadRequest(err.Error()))
		return
	}
	gr := target.Store.DefaultQualifiedResource
	info := &genericapirequest.RequestInfo{IsResourceRequest: true, Verb: ImportVerb, APIPrefix: "apis", APIGroup: gv.Group, APIVersion: gv.Version,
		Resource: gr.Resource, Namespace: m.GetNamespace(), Name: m.GetName(), Path: req.URL.Path}
	if err := h.authorize(ctx, info); err != nil {
		h.fail(w, req, gv, err)
		return
	}
	dryRun, err := dryRunParam(req)
	if err != nil {
		h.fail(w, req, gv, err)
		return
	}
	// A dry run writes nothing, so it needs no migration in progress: aagen migrate plan
	// checks every object with it before the migration starts.
	if !dryRun {
		if err := h.inProgress(ctx); err != nil {
			h.fail(w, req, gv, err)
			return
		}
	}
	h.Scheme.Default(obj)
	stored := target.Store.NewFunc()
	if reflect.TypeOf(stored) == reflect.TypeOf(obj) {
		stored = obj
	} else if err := h.Scheme.Convert(obj, stored, nil); err != nil {
		h.fail(w, req, gv, apierrors.NewBadRequest(fmt.Sprintf("converting %s to the storage type %T: %v", gvk, stored, err)))
		return
	}
	write := target.Import
	if dryRun {
		write = target.DryRun
	}
	out, err := write(genericapirequest.WithRequestInfo(ctx, info), stored)
	if err != nil {
		h.fail(w, req, gv, err)
		return
	}
	data, err := runtime.Encode(h.Codecs.LegacyCodec(gv), out)
	if err != nil {
		h.fail(w, req, gv, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// authorize asks the server's authorizer whether the request's user may import into the
// resource info names: first whether it may import any object of the resource in the
// namespace, then, when not, this one by name (RBAC's resourceNames). The first question
// is the same for every object of a migration, so the delegated authorizer's cache
// answers it: asked by name first, each object cost a SubjectAccessReview, and the
// server's client for those (200 a second, k8s.io/apiserver's default) bounded the copy
// at 200 objects a second.
func (h *Handler) authorize(ctx context.Context, info *genericapirequest.RequestInfo) error {
	gr := schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return apierrors.NewUnauthorized("no user in the request")
	}
	attrs := authorizer.AttributesRecord{
		User: u, Verb: ImportVerb, APIGroup: info.APIGroup, APIVersion: info.APIVersion, Resource: info.Resource,
		Namespace: info.Namespace, ResourceRequest: true, Path: info.Path,
	}
	if decision, _, err := h.Authorizer.Authorize(ctx, attrs); decision == authorizer.DecisionAllow && err == nil {
		return nil
	}
	attrs.Name = info.Name
	decision, reason, err := h.Authorizer.Authorize(ctx, attrs)
	if decision == authorizer.DecisionAllow {
		return nil
	}
	why := reason
	if err != nil {
		why = strings.TrimSpace(why + " " + err.Error())
	}
	if why != "" {
		why = ": " + why
	}
	return apierrors.NewForbidden(gr, info.Name, fmt.Errorf("user %q may not import %s: it needs the verb %q on it (RBAC: apiGroups [%q], resources [%q], verbs [%q])%s",
		u.GetName(), gr, ImportVerb, gr.Group, gr.Resource, ImportVerb, why))
}

// inProgress refuses an import outside a migration.
func (h *Handler) inProgress(ctx context.Context) error {
	states, err := h.States()
	if err != nil {
		return apierrors.NewServiceUnavailable(err.Error())
	}
	st, err := states.Read(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if !st.InProgress {
		return apierrors.NewConflict(schema.GroupResource{Resource: "migration"}, "state",
			fmt.Errorf("no migration is in progress, and objects are imported only during one: PUT %s {\"inProgress\": true} first (aagen migrate does)", StatePath))
	}
	return nil
}

func (h *Handler) kinds() string {
	var out []string
	for gk := range h.Targets {
		out = append(out, gk.String())
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// dryRunParam reads the dryRun query parameter: absent, or All.
func dryRunParam(req *http.Request) (bool, error) {
	values := req.URL.Query()["dryRun"]
	switch {
	case len(values) == 0:
		return false, nil
	case len(values) == 1 && values[0] == "All":
		return true, nil
	default:
		return false, apierrors.NewBadRequest(fmt.Sprintf("dryRun %q: the only value is All", values))
	}
}
