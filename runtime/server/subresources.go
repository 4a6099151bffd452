package server

import (
	"fmt"
	"mime"
	"net/http"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	openapiutil "k8s.io/kube-openapi/pkg/util"

	"github.com/aagen-dev/aagen/runtime/registry"
	"github.com/aagen-dev/aagen/runtime/subresource"
)

// openSubresources are the installed subresources whose requests stay open: streams and
// connections (package subresource). The request timeout does not apply to them, and the
// server drains them when its graceful shutdown begins. It is filled while the groups are
// installed, before the server serves, and only read afterwards.
type openSubresources struct {
	// longRunning holds "<plural>/<sub>" per group.
	longRunning map[schema.GroupResource]bool
	drainers    []subresource.Drainer
}

func newOpenSubresources() *openSubresources {
	return &openSubresources{longRunning: map[schema.GroupResource]bool{}}
}

// add records s, installed at path ("<plural>/<sub>") in group, when it stays open.
func (o *openSubresources) add(group, path string, s rest.Storage) {
	if lr, ok := s.(subresource.LongRunning); ok && lr.LongRunning() {
		o.longRunning[schema.GroupResource{Group: group, Resource: path}] = true
	}
	if d, ok := s.(subresource.Drainer); ok {
		o.drainers = append(o.drainers, d)
	}
}

// longRunningFunc extends base (watches, and the subresources Kubernetes itself treats as
// long-running) with the open subresources.
func (o *openSubresources) longRunningFunc(base func(*http.Request, *request.RequestInfo) bool) func(*http.Request, *request.RequestInfo) bool {
	return func(r *http.Request, info *request.RequestInfo) bool {
		if base != nil && base(r, info) {
			return true
		}
		return info != nil && info.IsResourceRequest && info.Subresource != "" &&
			o.longRunning[schema.GroupResource{Group: info.APIGroup, Resource: info.Resource + "/" + info.Subresource}]
	}
}

// installDrain ends every open stream and connection when the graceful shutdown begins
// (a pre-shutdown hook), so that they do not hold the shutdown up to its timeout.
func (o *openSubresources) installDrain(srv *genericapiserver.GenericAPIServer) error {
	if len(o.drainers) == 0 {
		return nil
	}
	return srv.AddPreShutdownHook("aagen-drain-streams", func() error {
		for _, d := range o.drainers {
			d.Drain()
		}
		return nil
	})
}

// validateSubresource gives s, when its bodies are validated (actions, writable views), the
// validator of its body type's OpenAPI definition: the schema /openapi/v3 publishes for it,
// its documented enums (spec.DocumentedEnums) not checked; validation is --schema-validation.
func validateSubresource(spec *Spec, s rest.Storage, validation registry.SchemaValidation) error {
	vs, ok := s.(subresource.Validated)
	if !ok {
		return nil
	}
	name := openapiutil.GetCanonicalTypeName(vs.New())
	v, err := registry.NewBodyValidator(&registry.Schema{Definitions: spec.OpenAPIDefinitions, DocumentedEnums: spec.DocumentedEnums, Name: name,
		Validation: validation})
	if err != nil {
		return fmt.Errorf("the schema of the body: %w", err)
	}
	vs.SetValidator(v)
	return nil
}

// subresourcePatchTypes are the patch types of the subresources that accept fewer than
// k8s.io/apiserver offers (subresource.PatchTypes), by group and "<plural>/<sub>";
// installGroup fills them before the server serves.
type subresourcePatchTypes map[schema.GroupResource][]string

func (p subresourcePatchTypes) add(group, path string, s rest.Storage) {
	pt, ok := s.(subresource.PatchTypes)
	if !ok {
		return
	}
	var types []string
	for _, t := range pt.PatchTypes() {
		types = append(types, string(t))
	}
	p[schema.GroupResource{Group: group, Resource: path}] = types
}

// withSubresourcePatchTypes answers a PATCH of such a subresource in another patch type
// with 415 Unsupported Media Type, listing the accepted ones, as k8s.io/apiserver's patch
// handler answers a strategic merge patch of a custom resource. It runs after
// authentication and authorization.
func withSubresourcePatchTypes(h http.Handler, accepted subresourcePatchTypes, codecs runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		info, ok := request.RequestInfoFrom(req.Context())
		if !ok || !info.IsResourceRequest || info.Subresource == "" || info.Verb != "patch" {
			h.ServeHTTP(w, req)
			return
		}
		types, ok := accepted[schema.GroupResource{Group: info.APIGroup, Resource: info.Resource + "/" + info.Subresource}]
		if !ok {
			h.ServeHTTP(w, req)
			return
		}
		mediaType, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
		if slices.Contains(types, mediaType) {
			h.ServeHTTP(w, req)
			return
		}
		gv := schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
		responsewriters.ErrorNegotiated(negotiation.NewUnsupportedMediaTypeError(types), codecs, gv, w, req)
	})
}
