package server

import (
	"errors"
	"path"
	"sync/atomic"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/klog/v2"

	"github.com/aagen-dev/aagen/runtime/objectimport"
)

// installImport serves the import of objects with their identity (objectimport.ImportPath)
// and the migration state (objectimport.StatePath) for the stored resources. Their etcd
// client is made once the server starts and closed when it stops; it also watches the
// state, and ends the watches the server serves (ends) when the group is handed back.
func installImport(srv *genericapiserver.GenericAPIServer, spec Spec, codecs serializer.CodecFactory, resources []migratedResource, authz authorizer.Authorizer, cfg storagebackend.Config, ends *watchEnds) error {
	targets := map[schema.GroupKind]objectimport.Target{}
	for _, r := range resources {
		gvks, _, err := spec.Scheme.ObjectKinds(r.store.NewFunc())
		if err != nil || len(gvks) == 0 {
			continue
		}
		gk := gvks[0].GroupKind()
		targets[gk] = objectimport.Target{Kind: gk, Store: r.store}
	}
	var client atomic.Pointer[clientv3.Client]
	prefix := path.Join("/", cfg.Prefix)
	h := &objectimport.Handler{
		Targets: targets, Scheme: spec.Scheme, Codecs: codecs, Authorizer: authz,
		States: func() (objectimport.StateStore, error) {
			c := client.Load()
			if c == nil {
				return objectimport.StateStore{}, errors.New("the server's storage client is not connected yet; retry")
			}
			return objectimport.StateStore{KV: c, Prefix: prefix}, nil
		},
	}
	srv.Handler.NonGoRestfulMux.Handle(objectimport.ImportPath, h)
	srv.Handler.NonGoRestfulMux.Handle(objectimport.StatePath, h)
	return srv.AddPostStartHook("aagen-migration-import", func(hookCtx genericapiserver.PostStartHookContext) error {
		c, err := newEtcdClient(cfg.Transport)
		if err != nil {
			return err
		}
		client.Store(c)
		states := objectimport.StateStore{KV: c, Prefix: prefix}
		go states.OnHandBack(hookCtx, c, c, func() {
			klog.InfoS("The group was handed back to its CRDs (aagen migrate rollback): ending the watches served here, so that their clients watch the CRDs")
			ends.endAll()
		})
		go func() {
			<-hookCtx.Done()
			client.Store(nil)
			if err := c.Close(); err != nil {
				klog.ErrorS(err, "closing the migration state's etcd client")
			}
		}()
		return nil
	})
}
