package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"sort"
	"strings"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/klog/v2"

	"github.com/aagen-dev/aagen/runtime/registry"
)

// DefaultStorageMigrationQPS is how many objects a second the storage-version migration
// rewrites unless --storage-migration-qps says otherwise.
const DefaultStorageMigrationQPS = 50

// StorageVersionsPath serves, as JSON (a StorageVersionReport), which version every
// resource's objects are stored in and how far the storage-version migration has got.
const StorageVersionsPath = "/storage-versions"

// StorageVersionReport is what StorageVersionsPath serves.
type StorageVersionReport struct {
	// Resources are the served resources, by group and name.
	Resources []ResourceStorageVersions `json:"resources"`
	// Migrating is true while the migration runs.
	Migrating bool `json:"migrating"`
	// Migrated counts the objects rewritten in their storage version since the server started.
	Migrated int `json:"migrated"`
	// Error is the last migration error, if any.
	Error string `json:"error,omitempty"`
}

// ResourceStorageVersions is the storage of one resource.
type ResourceStorageVersions struct {
	Group    string `json:"group"`
	Resource string `json:"resource"`
	// StorageVersion is the version objects are written in now.
	StorageVersion string `json:"storageVersion"`
	// Objects counts the stored objects by the apiVersion they are stored in ("unknown"
	// when a value is neither JSON, protobuf nor CBOR, e.g. encrypted at rest).
	Objects map[string]int `json:"objects"`
	// Stale counts the objects stored in another version than StorageVersion.
	Stale int `json:"stale"`
}

// storedVersion returns the apiVersion of an object as the storage codec wrote it: JSON
// (what a generated server stored before protobuf), protobuf (the "k8s\x00" magic, then a
// runtime.Unknown whose TypeMeta names the version) or CBOR (its self-described tag).
func storedVersion(data []byte) (string, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
	}
	switch {
	case bytes.HasPrefix(data, []byte(protobufPrefix)):
		var unk runtime.Unknown
		if err := unk.Unmarshal(data[len(protobufPrefix):]); err != nil {
			return "", fmt.Errorf("reading the protobuf envelope: %w", err)
		}
		return unk.APIVersion, nil
	case bytes.HasPrefix(data, []byte(cborSelfDescribed)):
		// The CBOR decoder refuses unknown fields, so the whole object is read.
		var obj map[string]any
		if err := cbordirect.Unmarshal(data, &obj); err != nil {
			return "", err
		}
		v, _ := obj["apiVersion"].(string)
		return v, nil
	default:
		if err := json.Unmarshal(data, &head); err != nil {
			return "", err
		}
		return head.APIVersion, nil
	}
}

// protobufPrefix starts every object k8s.io/apimachinery's protobuf serializer writes.
const protobufPrefix = "k8s\x00"

// cborSelfDescribed is CBOR's self-described tag (55799), which starts every object
// k8s.io/apimachinery's CBOR serializer writes.
const cborSelfDescribed = "\xd9\xd9\xf7"

// migratedResource is a resource the migration knows: its store and etcd key root.
type migratedResource struct {
	gr      schema.GroupResource
	version string
	store   *genericregistry.Store
}

// storageMigrator rewrites objects stored in an old version in their storage version, the
// way kube-storage-version-migrator does (a no-op update of each, which the storage layer
// encodes in the current storage version), throttled to qps writes per second. It finds
// the objects to rewrite by reading etcd, so an interrupted migration resumes with what is
// left at the next start. It reports through StorageVersionsPath and the log.
type storageMigrator struct {
	resources []migratedResource
	transport storagebackend.TransportConfig
	prefix    string
	// limiter paces the rewrites: one Wait before each (a token bucket of qps a second
	// and a burst of 1, newStorageMigrator).
	limiter interface{ Wait(context.Context) error }

	mu     sync.Mutex
	report StorageVersionReport
}

// migratedResources are the main storages (not subresources) among one kind's storage,
// keyed "plural" and "plural/sub".
func migratedResources(scheme *runtime.Scheme, storageVersions []schema.GroupVersion, group string, built map[string]rest.Storage) []migratedResource {
	var out []migratedResource
	for name, s := range built {
		r, ok := s.(*registry.REST)
		if !ok || strings.Contains(name, "/") {
			continue
		}
		gvks, _, err := scheme.ObjectKinds(r.New())
		if err != nil || len(gvks) == 0 {
			continue
		}
		// The version the encoder writes (the storage codec's versioner): the storage type's
		// own, or for an internal type, the group's storage version.
		version := gvks[0].Version
		if gvk, ok := schema.GroupVersions(storageVersions).KindForGroupVersionKinds(gvks); ok {
			version = gvk.Version
		}
		out = append(out, migratedResource{gr: schema.GroupResource{Group: group, Resource: name}, version: version, store: r.Store})
	}
	return out
}

// scan reads every stored object of every resource from etcd and counts them by version.
func (m *storageMigrator) scan(ctx context.Context, client *clientv3.Client) ([]ResourceStorageVersions, map[int][]string, error) {
	var out []ResourceStorageVersions
	stale := map[int][]string{} // keys (relative to the storage prefix) by resource index
	for i, r := range m.resources {
		root := m.prefix + r.store.KeyRootFunc(context.Background())
		rv := ResourceStorageVersions{Group: r.gr.Group, Resource: r.gr.Resource, StorageVersion: r.version, Objects: map[string]int{}}
		want := schema.GroupVersion{Group: r.gr.Group, Version: r.version}.String()
		key, end := root+"/", clientv3.GetPrefixRangeEnd(root+"/")
		for {
			resp, err := client.Get(ctx, key, clientv3.WithRange(end), clientv3.WithLimit(500))
			if err != nil {
				return nil, nil, fmt.Errorf("reading %s from etcd: %w", r.gr, err)
			}
			for _, kv := range resp.Kvs {
				v := "unknown"
				if stored, err := storedVersion(kv.Value); err == nil && stored != "" {
					v = stored
				}
				rv.Objects[v]++
				if v != want && v != "unknown" {
					rv.Stale++
					stale[i] = append(stale[i], strings.TrimPrefix(string(kv.Key), m.prefix))
				}
			}
			if !resp.More || len(resp.Kvs) == 0 {
				break
			}
			key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		}
		out = append(out, rv)
	}
	sort.Slice(out, func(a, b int) bool {
		return out[a].Group+"/"+out[a].Resource < out[b].Group+"/"+out[b].Resource
	})
	return out, stale, nil
}

// run scans, logs which resources hold objects in an old storage version, rewrites them,
// and scans again.
func (m *storageMigrator) run(ctx context.Context) {
	m.set(func(r *StorageVersionReport) { r.Migrating = true })
	defer m.set(func(r *StorageVersionReport) { r.Migrating = false })
	client, err := newEtcdClient(m.transport)
	if err != nil {
		m.fail(err)
		return
	}
	defer client.Close()
	resources, stale, err := m.scan(ctx, client)
	if err != nil {
		m.fail(err)
		return
	}
	m.set(func(r *StorageVersionReport) { r.Resources = resources })
	total := 0
	for _, r := range resources {
		if r.Stale > 0 {
			klog.InfoS("objects stored in an old version; migrating them", "group", r.Group, "resource", r.Resource, "storageVersion", r.StorageVersion, "objects", r.Objects)
			total += r.Stale
		}
	}
	if total == 0 {
		return
	}
	done := m.rewrite(ctx, stale, total)
	if ctx.Err() != nil {
		return
	}
	if resources, _, err = m.scan(ctx, client); err != nil {
		m.fail(err)
		return
	}
	m.set(func(r *StorageVersionReport) { r.Resources = resources })
	klog.InfoS("storage-version migration done", "migrated", done, "of", total)
}

// rewrite rewrites the stale keys (by resource index) in their storage version, each after
// the limiter's Wait, until ctx is done; it returns how many it rewrote.
func (m *storageMigrator) rewrite(ctx context.Context, stale map[int][]string, total int) int {
	done := 0
	for i, keys := range stale {
		r := m.resources[i]
		for _, key := range keys {
			if err := m.limiter.Wait(ctx); err != nil {
				return done // ctx is done
			}
			err := r.store.Storage.GuaranteedUpdate(ctx, key, r.store.NewFunc(), true, nil,
				func(existing runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
					return existing, nil, nil // written back in the storage version
				}, false, nil)
			if err != nil {
				m.fail(fmt.Errorf("migrating %s %s: %w", r.gr, key, err))
				continue
			}
			done++
			m.set(func(rep *StorageVersionReport) { rep.Migrated++ })
			if done%100 == 0 {
				klog.InfoS("storage-version migration", "migrated", done, "of", total)
			}
		}
	}
	return done
}

func (m *storageMigrator) set(f func(*StorageVersionReport)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(&m.report)
}

func (m *storageMigrator) fail(err error) {
	klog.ErrorS(err, "storage-version migration")
	m.set(func(r *StorageVersionReport) { r.Error = err.Error() })
}

// ServeHTTP serves the report.
func (m *storageMigrator) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	m.mu.Lock()
	data, err := json.MarshalIndent(m.report, "", "  ")
	m.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(data, '\n'))
}

// installStorageMigration adds the migration of resources as a post-start hook and serves
// its report.
func installStorageMigration(srv *genericapiserver.GenericAPIServer, resources []migratedResource, cfg storagebackend.Config, qps float64) error {
	m := newStorageMigrator(resources, cfg, qps)
	srv.Handler.NonGoRestfulMux.Handle(StorageVersionsPath, m)
	return srv.AddPostStartHook("aagen-storage-version-migration", func(hookCtx genericapiserver.PostStartHookContext) error {
		go m.run(hookCtx)
		return nil
	})
}

// newStorageMigrator returns the migrator of resources, rewriting at most qps objects a
// second (DefaultStorageMigrationQPS when qps is not positive).
func newStorageMigrator(resources []migratedResource, cfg storagebackend.Config, qps float64) *storageMigrator {
	if qps <= 0 {
		qps = DefaultStorageMigrationQPS
	}
	return &storageMigrator{resources: resources, transport: cfg.Transport, prefix: path.Join("/", cfg.Prefix),
		limiter: rate.NewLimiter(rate.Limit(qps), 1)}
}
