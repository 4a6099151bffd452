package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	clientrest "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/aagen-dev/aagen/runtime/buildinfo"
	"github.com/aagen-dev/aagen/runtime/etcd"
	"github.com/aagen-dev/aagen/runtime/localauth"
	"github.com/aagen-dev/aagen/runtime/registry"
)

// Run serves spec until ctx is cancelled. It starts kine when --datastore-endpoint is
// given, else the embedded etcd when no --etcd-servers are given, and stops it after the
// server has shut down: ctx bounds their startup only, since the graceful shutdown that
// ctx's end begins still serves requests and watches (the shutdown delay, the drain).
func Run(ctx context.Context, spec Spec, o *Options) error {
	if err := spec.validate(); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	if o.DatastoreEndpoint != "" {
		stop, err := o.startDatastore(ctx)
		if err != nil {
			return err
		}
		defer stop()
	}
	embedded := o.embeddedEtcd()
	if embedded {
		e, err := etcd.Start(ctx, etcd.Config{Dir: o.EmbeddedEtcdDir})
		if err != nil {
			return fmt.Errorf("starting embedded etcd in %s: %w", o.EmbeddedEtcdDir, err)
		}
		defer func() {
			if err := e.Close(); err != nil {
				klog.ErrorS(err, "stopping embedded etcd")
			}
		}()
		o.Recommended.Etcd.StorageConfig.Transport.ServerList = []string{e.ClientURL()}
		klog.InfoS("embedded etcd ready", "url", e.ClientURL(), "dir", o.EmbeddedEtcdDir)
	}
	srv, announce, err := New(spec, o)
	if err != nil {
		return err
	}
	if embedded {
		installEtcdSnapshot(srv, o.Recommended.Etcd.StorageConfig.Transport)
	}
	if announce != nil {
		if err := srv.AddPostStartHook("aagen-announce-kubeconfig", announce); err != nil {
			return err
		}
	}
	return srv.PrepareRun().RunWithContext(ctx)
}

// New builds the generic API server for spec with its groups installed, without running
// it. The options must name an etcd (Run fills it in for the embedded one). In local mode
// it also returns a post-start hook that prints the kubeconfig line once ready.
func New(spec Spec, o *Options) (*genericapiserver.GenericAPIServer, genericapiserver.PostStartHookFunc, error) {
	codecs := spec.codecs()
	ro := o.Recommended
	var local *localauth.Files
	if o.Local {
		var err error
		if local, err = o.prepareLocal(spec.Name); err != nil {
			return nil, nil, err
		}
	} else if err := ro.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", o.AlternateDNS, []net.IP{net.ParseIP("127.0.0.1")}); err != nil {
		return nil, nil, fmt.Errorf("creating self-signed serving certificate: %w", err)
	}
	if err := o.applyStorageMediaType(); err != nil {
		return nil, nil, err
	}
	if errs := ro.Validate(); len(errs) > 0 {
		return nil, nil, fmt.Errorf("invalid options: %w", utilerrors.NewAggregate(errs))
	}

	cfg := genericapiserver.NewRecommendedConfig(codecs)
	namer := openapinamer.NewDefinitionNamer(spec.Scheme)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(spec.OpenAPIDefinitions, namer)
	cfg.OpenAPIConfig.Info.Title = spec.Title
	cfg.OpenAPIConfig.Info.Version = spec.Version
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(spec.OpenAPIDefinitions, namer)
	cfg.OpenAPIV3Config.Info.Title = spec.Title
	cfg.OpenAPIV3Config.Info.Version = spec.Version
	cfg.EffectiveVersion = newEffectiveVersion(buildinfo.Read())
	inspectors := bodyInspectors{}
	patchTypes := subresourcePatchTypes{}
	deprecated := spec.deprecations()
	ends := newWatchEnds()
	workers := newHandlerWorkers()
	chain := cfg.BuildHandlerChainFunc
	cfg.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
		h = withHandlerWorkers(h, workers, c.LongRunningFunc)
		h = withWatchEnds(h, ends)
		h = withBodyInspection(h, inspectors, codecs, c.MaxRequestBodyBytes)
		h = withSubresourcePatchTypes(h, patchTypes, codecs)
		if len(deprecated) > 0 {
			h = withDeprecationWarnings(h, deprecated)
		}
		return chain(h, c)
	}
	if err := ro.ApplyTo(cfg); err != nil {
		return nil, nil, fmt.Errorf("applying options: %w", err)
	}
	useProtobufOnLoopback(cfg.LoopbackClientConfig, spec)
	cfg.ShutdownDelayDuration = o.ShutdownDelay
	cfg.ShutdownWatchTerminationGracePeriod = o.ShutdownWatchTermination
	withCachedFrontProxyVerification(&cfg.Authentication)
	if local != nil {
		if err := applyLocalAuthentication(cfg, local); err != nil {
			return nil, nil, err
		}
		if o.admission != nil {
			// Without kube-apiserver, the server's own admission plugins alone.
			chain, err := o.admission.localChain()
			if err != nil {
				return nil, nil, fmt.Errorf("admission plugins: %w", err)
			}
			cfg.AdmissionControl = chain
		}
	}
	if cfg.SecureServing != nil {
		withCachedClientCertificates(&cfg.Authentication, cfg.SecureServing.ClientCA)
	}
	open := newOpenSubresources()
	cfg.LongRunningFunc = open.longRunningFunc(cfg.LongRunningFunc)

	srv, err := cfg.Complete().New(spec.Name, genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, nil, err
	}
	if o.admission != nil {
		if err := srv.AddPostStartHook("aagen-admission-informers", o.admission.startHook()); err != nil {
			return nil, nil, err
		}
	}
	var migrated []migratedResource
	for _, g := range spec.Groups {
		m, err := installGroup(srv, spec, g, codecs, cfg.RESTOptionsGetter, inspectors, patchTypes, open, o.SchemaValidation)
		if err != nil {
			return nil, nil, err
		}
		migrated = append(migrated, m...)
	}
	if err := installStorageMigration(srv, migrated, ro.Etcd.StorageConfig, o.StorageMigrationQPS); err != nil {
		return nil, nil, err
	}
	if err := installImport(srv, spec, codecs, migrated, cfg.Authorization.Authorizer, ro.Etcd.StorageConfig, ends); err != nil {
		return nil, nil, err
	}
	if err := open.installDrain(srv); err != nil {
		return nil, nil, err
	}
	var announce genericapiserver.PostStartHookFunc
	if local != nil {
		announce = o.announce(local)
	}
	return srv, announce, nil
}

// installGroup builds the storage of each resource of g once and installs it under every
// version the resource is served in.
// It returns the resources whose stored objects the storage-version migration looks at.
// validation is how the storage checks objects against their schemas (--schema-validation).
func installGroup(srv *genericapiserver.GenericAPIServer, spec Spec, g Group, codecs serializer.CodecFactory, getter generic.RESTOptionsGetter,
	inspectors bodyInspectors, patchTypes subresourcePatchTypes, open *openSubresources, validation registry.SchemaValidation) ([]migratedResource, error) {
	info := newGroupInfo(spec, g, codecs)
	var migrated []migratedResource
	for _, r := range g.Resources {
		storage, err := r.NewStorage(spec.Scheme, getter)
		if err != nil {
			return nil, fmt.Errorf("building storage for %s.%s: %w", r.Plural, g.Name, err)
		}
		registry.UseSchemaValidation(storage, validation)
		migrated = append(migrated, migratedResources(spec.Scheme, spec.StorageVersions, g.Name, storage)...)
		if err := addStorageHooks(srv, storage); err != nil {
			return nil, fmt.Errorf("%s.%s: %w", r.Plural, g.Name, err)
		}
		for path, s := range storage {
			if err := validateSubresource(&spec, s, validation); err != nil {
				return nil, fmt.Errorf("%s.%s: %w", path, g.Name, err)
			}
			patchTypes.add(g.Name, path, s)
		}
		for _, v := range r.Versions {
			gv := schema.GroupVersion{Group: g.Name, Version: v.Name}
			if info.VersionedResourcesStorageMap[v.Name] == nil {
				info.VersionedResourcesStorageMap[v.Name] = map[string]rest.Storage{}
			}
			for path, s := range storage {
				info.VersionedResourcesStorageMap[v.Name][path] = s
				open.add(g.Name, path, s)
				if bi, ok := s.(registry.BodyInspector); ok {
					inspectors[schema.GroupResource{Group: g.Name, Resource: path}] = bi
				}
				if err := registerFieldLabels(spec.Scheme, gv, s); err != nil {
					return nil, fmt.Errorf("%s %s: %w", gv, path, err)
				}
			}
		}
	}
	// Only the versions that serve something are installed (and so discoverable).
	var served []schema.GroupVersion
	for _, gv := range info.PrioritizedVersions {
		if _, ok := info.VersionedResourcesStorageMap[gv.Version]; ok {
			served = append(served, gv)
		}
	}
	info.PrioritizedVersions = served
	if err := srv.InstallAPIGroup(&info); err != nil {
		return nil, fmt.Errorf("installing API group %s: %w", g.Name, err)
	}
	return migrated, nil
}

// prepareLocal defaults serving to loopback, creates the local credentials and turns off
// what needs a kube-apiserver (delegated authn/z lookups, admission informers, P&F).
func (o *Options) prepareLocal(name string) (*localauth.Files, error) {
	ro := o.Recommended
	if ro.SecureServing.BindPort == 0 && ro.SecureServing.Listener == nil {
		ln, err := net.Listen("tcp", net.JoinHostPort(ro.SecureServing.BindAddress.String(), "0"))
		if err != nil {
			return nil, fmt.Errorf("listening on a free port: %w", err)
		}
		ro.SecureServing.Listener = ln
		ro.SecureServing.BindPort = ln.Addr().(*net.TCPAddr).Port
	}
	host := ro.SecureServing.BindAddress.String()
	if ro.SecureServing.BindAddress.IsUnspecified() {
		host = "127.0.0.1"
	}
	files, err := localauth.Ensure(localauth.Options{
		Dir:         o.LocalDir,
		Hosts:       append([]string{host}, o.AlternateDNS...),
		ServerURL:   "https://" + net.JoinHostPort(host, strconv.Itoa(ro.SecureServing.BindPort)),
		ClusterName: name,
	})
	if err != nil {
		return nil, fmt.Errorf("creating local credentials in %s: %w", o.LocalDir, err)
	}
	ro.SecureServing.ServerCert.CertKey.CertFile = files.ServingCert
	ro.SecureServing.ServerCert.CertKey.KeyFile = files.ServingKey
	ro.Authentication = nil
	ro.Authorization.RemoteKubeConfigFileOptional = true
	ro.CoreAPI = nil
	ro.Admission = nil
	ro.Features.EnablePriorityAndFairness = false
	return files, nil
}

// applyLocalAuthentication accepts client certificates of the local CA and, on the public
// health and version paths only, anonymous requests (see PublicInfoPaths); unlike the
// delegating defaults, anonymous requests anywhere else are rejected with 401.
func applyLocalAuthentication(cfg *genericapiserver.RecommendedConfig, files *localauth.Files) error {
	ca, err := dynamiccertificates.NewDynamicCAContentFromFile("local-client-ca", files.CACert)
	if err != nil {
		return fmt.Errorf("loading local CA %s: %w", files.CACert, err)
	}
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                          anonymousPublicInfo(),
		ClientCertificateCAContentProvider: ca,
	}.New()
	if err != nil {
		return err
	}
	cfg.Authentication.Authenticator = authn
	if err := allowPublicInfo(cfg); err != nil {
		return err
	}
	return cfg.Authentication.ApplyClientCert(ca, cfg.SecureServing)
}

// announce returns a post-start hook that prints the kubeconfig line once /readyz is ok.
// The hook itself returns at once: /readyz waits for every post-start hook.
func (o *Options) announce(files *localauth.Files) genericapiserver.PostStartHookFunc {
	return func(hookCtx genericapiserver.PostStartHookContext) error {
		restCfg, err := clientcmd.BuildConfigFromFlags("", files.Kubeconfig)
		if err != nil {
			return fmt.Errorf("loading %s: %w", files.Kubeconfig, err)
		}
		client, err := clientrest.HTTPClientFor(restCfg)
		if err != nil {
			return err
		}
		go func() {
			abs, err := filepath.Abs(files.Kubeconfig)
			if err != nil {
				abs = files.Kubeconfig
			}
			for {
				req, _ := http.NewRequestWithContext(hookCtx, http.MethodGet, restCfg.Host+"/readyz", nil)
				if resp, err := client.Do(req); err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						fmt.Fprintf(o.Stdout, "export KUBECONFIG=%s\n", abs)
						return
					}
				}
				select {
				case <-hookCtx.Done():
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
		return nil
	}
}
