package server

import (
	"bytes"
	"io"
	"mime"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/aagen-dev/aagen/runtime/registry"
)

// limitCheckThreshold is the body size from which writes are checked against the
// schema's size limits before anything else reads them. Smaller bodies cannot be costly,
// and go through validation alone, which reports every error of the object at once.
const limitCheckThreshold = 32 << 10

// limitCheckers are the resources whose write bodies are checked against their schemas'
// size limits, by group and resource; installGroup fills them before the server serves.
type limitCheckers map[schema.GroupResource]registry.LimitChecker

// withLimitChecks refuses a large create, update, merge patch or apply whose body breaks
// a size limit of the schema (maxProperties, maxItems, maxLength) or of labels and
// annotations with a 422 Invalid, before the handler decodes it and computes its managed
// fields. Those steps cost time in proportion to the size the limit exists to refuse (a
// map of 150,000 keys cost seconds before its 422); parsing the body costs milliseconds.
// It runs after authentication and authorization.
func withLimitChecks(h http.Handler, checkers limitCheckers, codecs runtime.NegotiatedSerializer, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		info, ok := genericapirequest.RequestInfoFrom(req.Context())
		if !ok || !info.IsResourceRequest || info.Subresource != "" || req.Body == nil ||
			(info.Verb != "create" && info.Verb != "update" && info.Verb != "patch") {
			h.ServeHTTP(w, req)
			return
		}
		checker := checkers[schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}]
		if checker == nil {
			h.ServeHTTP(w, req)
			return
		}
		yamlBody := false
		mediaType, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
		switch mediaType {
		case "application/json", "application/merge-patch+json":
		case "application/yaml", "application/apply-patch+yaml":
			yamlBody = true
		default: // JSON patches, strategic merge patches, other encodings: left to validation
			h.ServeHTTP(w, req)
			return
		}
		if maxBody <= 0 {
			maxBody = 3 << 20
		}
		body, err := io.ReadAll(io.LimitReader(req.Body, maxBody+1))
		_ = req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil || len(body) < limitCheckThreshold || int64(len(body)) > maxBody {
			h.ServeHTTP(w, req) // small, unreadable or too large: the handler answers as usual
			return
		}
		name, errs := checker.CheckLimits(info.APIVersion, body, yamlBody)
		if len(errs) == 0 {
			h.ServeHTTP(w, req)
			return
		}
		if info.Name != "" {
			name = info.Name
		}
		gv := schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
		responsewriters.ErrorNegotiated(apierrors.NewInvalid(checker.GroupKind(), name, errs), codecs, gv, w, req)
	})
}
