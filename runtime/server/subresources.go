package server

import (
	"net/http"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

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
