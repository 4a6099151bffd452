package server

import (
	"bytes"
	"io"
	"mime"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/aagen-dev/aagen/runtime/registry"
)

// limitCheckThreshold is the body size from which writes are checked against the
// schema's size limits before anything else reads them. Smaller bodies cannot be costly,
// and go through validation alone, which reports every error of the object at once.
const limitCheckThreshold = 32 << 10

// bodyInspectors are the resources whose write bodies are inspected before they are
// decoded, by group and resource; installGroup fills them before the server serves.
type bodyInspectors map[schema.GroupResource]registry.BodyInspector

// withBodyInspection reads the body of a create, update, merge patch or apply of a kind
// with a schema before the handler decodes it (registry.BodyInspector):
//
//   - a large body (JSON, YAML, protobuf or CBOR: each is read without decoding it into
//     the Go type) that breaks a size limit of the schema (maxProperties, maxItems,
//     maxLength) or of labels and annotations gets its 422 Invalid at once, before its
//     managed fields are computed: those steps cost time in proportion to the size the
//     limit exists to refuse (a map of 150,000 keys cost seconds before its 422), and
//     parsing the body costs milliseconds;
//   - the required fields and optional objects a whole object (create or update) leaves
//     out go into the request's context (registry.WithAbsentFields,
//     registry.WithAbsentObjects), and so does the body of a patch (registry.WithPatch),
//     so that validation reports missing required fields as a CRD does although the
//     decoded Go object holds zero values there, and demands nothing of an absent
//     optional struct;
//   - the body of a JSON or YAML create goes into the context too (registry.WithCreateBody),
//     for a create the field manager records nothing of: its manager then owns the
//     top-level members the body sent, as a CRD's create does.
//
// An update or patch through /status is read for what it leaves out of the status alone
// (registry.InspectOptions.Status), as a CRD's status strategy validates it. Its size
// limits are not read here (the rest of the body is not written): validation checks the
// status's own limits after decoding.
//
// It runs after authentication and authorization.
func withBodyInspection(h http.Handler, inspectors bodyInspectors, codecs runtime.NegotiatedSerializer, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		info, ok := genericapirequest.RequestInfoFrom(req.Context())
		if !ok || !info.IsResourceRequest || req.Body == nil ||
			(info.Verb != "create" && info.Verb != "update" && info.Verb != "patch") {
			h.ServeHTTP(w, req)
			return
		}
		throughStatus := info.Subresource == "status" && info.Verb != "create"
		if info.Subresource != "" && !throughStatus {
			h.ServeHTTP(w, req)
			return
		}
		inspector := inspectors[schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}]
		if inspector == nil {
			h.ServeHTTP(w, req)
			return
		}
		format, wholeObject, limits := registry.FormatJSON, info.Verb == "create" || info.Verb == "update", !throughStatus
		mediaType, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
		switch mediaType {
		case "application/json":
		case "application/yaml":
			format = registry.FormatYAML
		case runtime.ContentTypeProtobuf:
			format = registry.FormatProtobuf
		case runtime.ContentTypeCBOR:
			format = registry.FormatCBOR
		case string(types.MergePatchType):
			wholeObject = false
		case string(types.ApplyYAMLPatchType):
			format, wholeObject = registry.FormatYAML, false
		case string(types.JSONPatchType), string(types.StrategicMergePatchType):
			// Not an object: no limits to read in it, but validation reads the patch.
			wholeObject, limits = false, false
		default: // other encodings: the handler refuses them (415)
			h.ServeHTTP(w, req)
			return
		}
		if maxBody <= 0 {
			maxBody = 3 << 20
		}
		body, err := io.ReadAll(io.LimitReader(req.Body, maxBody+1))
		_ = req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil || int64(len(body)) > maxBody {
			h.ServeHTTP(w, req) // unreadable or too large: the handler answers as usual
			return
		}
		ctx := req.Context()
		if info.Verb == "create" && (format == registry.FormatJSON || format == registry.FormatYAML) {
			// What the create sent, for a field manager that records nothing of it
			// (registry.WithCreateBody).
			ctx = registry.WithCreateBody(ctx, body, format == registry.FormatYAML, req.URL.Query().Get("fieldManager"), req.UserAgent())
		}
		if info.Verb == "patch" {
			// Validation finds what is absent from the patched object on the patch itself.
			ctx = registry.WithPatch(ctx, mediaType, body)
		}
		opts := registry.InspectOptions{Limits: limits && len(body) >= limitCheckThreshold,
			Absent: wholeObject && (format == registry.FormatJSON || format == registry.FormatYAML), Status: throughStatus}
		if !opts.Limits && !opts.Absent {
			h.ServeHTTP(w, req.WithContext(ctx))
			return
		}
		report := inspector.InspectBody(info.APIVersion, body, format, opts)
		if len(report.OverLimits) > 0 {
			name := report.Name
			if info.Name != "" {
				name = info.Name
			}
			gv := schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
			responsewriters.ErrorNegotiated(apierrors.NewInvalid(inspector.GroupKind(), name, report.OverLimits), codecs, gv, w, req)
			return
		}
		ctx = registry.WithAbsentObjects(registry.WithAbsentFields(ctx, report.Absent), report.AbsentObjects)
		if report.Read {
			ctx = registry.WithBodyRead(ctx)
		}
		h.ServeHTTP(w, req.WithContext(ctx))
	})
}
