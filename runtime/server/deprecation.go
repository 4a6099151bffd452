package server

import (
	"net/http"

	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/warning"
)

// deprecations maps each deprecated group, version and resource of the spec to its warning.
func (s *Spec) deprecations() map[schema.GroupVersionResource]string {
	out := map[schema.GroupVersionResource]string{}
	for _, g := range s.Groups {
		for _, r := range g.Resources {
			for _, v := range r.Versions {
				if v.DeprecationWarning != "" {
					out[schema.GroupVersionResource{Group: g.Name, Version: v.Name, Resource: r.Plural}] = v.DeprecationWarning
				}
			}
		}
	}
	return out
}

// withDeprecationWarnings adds the warning of a deprecated version to every request for a
// resource in it (and its subresources), the way kube-apiserver warns about a CRD's
// deprecated version. It runs inside the default handler chain, after the request info
// and the warning recorder are set up.
func withDeprecationWarnings(h http.Handler, deprecated map[schema.GroupVersionResource]string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if info, ok := genericapirequest.RequestInfoFrom(req.Context()); ok && info.IsResourceRequest {
			gvr := schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}
			if msg, ok := deprecated[gvr]; ok {
				warning.AddWarning(req.Context(), "", msg)
			}
		}
		h.ServeHTTP(w, req)
	})
}
