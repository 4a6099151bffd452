package server

import (
	"fmt"

	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// addStorageHooks adds the post-start hooks of the storages that provide one
// (genericapiserver.PostStartHookProvider, e.g. a kind served from a backend that reads
// other kinds through the loopback client). A provider may return a nil hook: it needs none.
func addStorageHooks(srv *genericapiserver.GenericAPIServer, storage map[string]rest.Storage) error {
	for path, s := range storage {
		p, ok := s.(genericapiserver.PostStartHookProvider)
		if !ok {
			continue
		}
		name, hook, err := p.PostStartHook()
		if err != nil {
			return fmt.Errorf("post-start hook of %s: %w", path, err)
		}
		if hook == nil {
			continue
		}
		if err := srv.AddPostStartHook(name, hook); err != nil {
			return fmt.Errorf("post-start hook of %s: %w", path, err)
		}
	}
	return nil
}
