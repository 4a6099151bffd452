package backend

import (
	"context"
	"fmt"

	genericapiserver "k8s.io/apiserver/pkg/server"
	clientrest "k8s.io/client-go/rest"
)

// Starter is implemented by backends that need the running server, such as a kind computed
// from other kinds of the same server (read through informers on the loopback client, as
// metrics-server reads nodes and pods). Start is called once, in a post-start hook, after
// the server listens and before it reports ready (/readyz waits for it): block until the
// backend can answer (caches synced), and stop what it started when ctx ends.
type Starter interface {
	// Start starts the backend. loopback is a client configuration with full rights on the
	// server itself. Where a group of the server offers protobuf, it accepts protobuf, then
	// JSON, as kube-apiserver's loopback client reads protobuf: a client built on it whose
	// serializer cannot decode protobuf sets its own AcceptContentTypes (client-go's
	// dynamic client does).
	Start(ctx context.Context, loopback *clientrest.Config) error
}

// PostStartHook returns the post-start hook that starts the backend when it implements
// Starter (genericapiserver.PostStartHookProvider; package server adds it), and a nil hook
// otherwise.
func (r *reader[T]) PostStartHook() (string, genericapiserver.PostStartHookFunc, error) {
	s, ok := r.cfg.Backend.(Starter)
	if !ok {
		return "", nil, nil
	}
	name := "aagen-backend-" + r.cfg.Resource.String()
	return name, func(hookCtx genericapiserver.PostStartHookContext) error {
		if err := s.Start(hookCtx, hookCtx.LoopbackClientConfig); err != nil {
			return fmt.Errorf("starting the backend of %s: %w", r.cfg.Resource, err)
		}
		return nil
	}, nil
}
