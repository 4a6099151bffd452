package server

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/aagen-dev/aagen/runtime/registry"
)

// Defaults of the flags this package adds to k8s.io/apiserver's.
const (
	DefaultLocalDir        = "apiserver.local.config/local"
	DefaultEmbeddedEtcdDir = "apiserver.local.config/etcd"
	DefaultLocalPort       = 8443
)

// Options are the command-line options of a generated server: k8s.io/apiserver's
// RecommendedOptions plus embedded etcd and local mode.
type Options struct {
	// Recommended are upstream's options (etcd, serving, authn/z, audit, admission, ...).
	Recommended *genericoptions.RecommendedOptions
	// Local runs without kube-apiserver, trusting only a locally generated CA.
	Local bool
	// LocalDir holds the local CA, certificates and kubeconfig.
	LocalDir string
	// EmbeddedEtcdDir is the data directory of the embedded etcd, used when no
	// --etcd-servers are given.
	EmbeddedEtcdDir string
	// DatastoreEndpoint, when set, stores objects in a SQL database through kine run
	// in-process (postgres://, mysql://, sqlite://) instead of etcd.
	DatastoreEndpoint string
	// AlternateDNS are extra names for self-signed serving certificates.
	AlternateDNS []string
	// Stdout receives the "export KUBECONFIG=..." line in local mode.
	Stdout io.Writer
	// StorageMigrationQPS bounds the objects a second the storage-version migration
	// rewrites (see StorageVersionsPath).
	StorageMigrationQPS float64
	// ShutdownDelay is how long the server keeps serving after SIGTERM while /readyz
	// fails, so that the Service stops sending it connections first (kube-apiserver's
	// --shutdown-delay-duration).
	ShutdownDelay time.Duration
	// ShutdownWatchTermination bounds how long the shutdown spends ending the open watches
	// (kube-apiserver's --shutdown-watch-termination-grace-period). Positive by default,
	// unlike upstream's: with 0 a watch of a server shutting down stays open without events
	// until the process exits.
	ShutdownWatchTermination time.Duration
	// SchemaValidation is how objects are checked against their kinds' schemas
	// (registry.SchemaValidationTyped by default; registry.SchemaValidationCRD to compare).
	SchemaValidation registry.SchemaValidation

	// admission is the spec's own admission plugins, registered by NewOptions.
	admission *ownAdmission
	// storage builds the storage codec for --storage-media-type.
	storage storageMedia
}

// NewOptions returns the default options for spec.
func NewOptions(spec *Spec) *Options {
	storage := storageMedia{scheme: spec.Scheme, versions: spec.StorageVersions}
	// The codec here is a placeholder: New sets the one for --storage-media-type
	// (applyStorageMediaType).
	o := genericoptions.NewRecommendedOptions("/registry/"+spec.Name, newInterningCodec(spec.codecs().LegacyCodec(spec.StorageVersions...)))
	o.Etcd.StorageConfig.EncodeVersioner = schema.GroupVersions(spec.StorageVersions)
	o.Etcd.DefaultStorageMediaType = storage.defaultMediaType()
	withoutSecondFlowControl(o)
	opts := &Options{
		Recommended:     o,
		LocalDir:        DefaultLocalDir,
		EmbeddedEtcdDir: DefaultEmbeddedEtcdDir,
		Stdout:          os.Stdout,

		StorageMigrationQPS:      DefaultStorageMigrationQPS,
		ShutdownWatchTermination: DefaultShutdownWatchTermination,
		SchemaValidation:         registry.SchemaValidationTyped,
		storage:                  storage,
	}
	opts.admission = registerAdmission(spec, opts)
	return opts
}

// AddFlags adds every option to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.Recommended.AddFlags(fs)
	addFeatureGateFlag(fs)
	fs.BoolVar(&o.Local, "local", o.Local,
		"Run standalone without kube-apiserver: serve with a certificate from a local CA, accept only client certificates from that CA, "+
			"write a kubeconfig to --local-dir and print 'export KUBECONFIG=...' once ready. Listens on 127.0.0.1:8443 unless "+
			"--bind-address/--secure-port say otherwise.")
	fs.StringVar(&o.LocalDir, "local-dir", o.LocalDir, "Directory for the local CA, certificates and kubeconfig (with --local).")
	fs.StringVar(&o.EmbeddedEtcdDir, "embedded-etcd-dir", o.EmbeddedEtcdDir,
		"Data directory of the etcd started inside this process when --etcd-servers is empty. Data survives restarts.")
	fs.Float64Var(&o.StorageMigrationQPS, "storage-migration-qps", o.StorageMigrationQPS,
		"Objects a second the server rewrites when it finds objects stored in an old version at startup (see /storage-versions).")
	fs.StringVar(&o.DatastoreEndpoint, "datastore-endpoint", o.DatastoreEndpoint,
		"Store objects in SQL through kine run inside this process instead of etcd: postgres://user:pass@host:5432/db, "+
			"mysql://user:pass@tcp(host:3306)/db or sqlite:///path/state.db. Excludes --etcd-servers.")
	fs.StringSliceVar(&o.AlternateDNS, "alternate-dns", o.AlternateDNS, "Extra DNS names for a self-signed serving certificate.")
	fs.DurationVar(&o.ShutdownDelay, "shutdown-delay-duration", o.ShutdownDelay,
		"Time to keep serving after SIGTERM while /readyz reports failure, so that endpoints and load balancers stop sending "+
			"requests first (as kube-apiserver's flag). The deploy manifests set it.")
	fs.DurationVar(&o.ShutdownWatchTermination, "shutdown-watch-termination-grace-period", o.ShutdownWatchTermination,
		"Upper bound of the time the shutdown spends ending open watches, so that their clients watch again at another replica "+
			"(as kube-apiserver's flag, whose default is 0: watches left open without events until the process exits).")
	fs.Var(&o.SchemaValidation, "schema-validation",
		"How objects are checked against their schemas: \"typed\" reads the typed object and hands only objects it cannot vouch for "+
			"to the CRD's validator (k8s.io/apiextensions-apiserver), so every error is the CRD's; \"crd\" hands every object to that validator, "+
			"to compare.")
}

// DefaultShutdownWatchTermination is the default of --shutdown-watch-termination-grace-period.
const DefaultShutdownWatchTermination = 10 * time.Second

// embeddedEtcd reports whether the server starts its own etcd.
func (o *Options) embeddedEtcd() bool {
	return o.Recommended.Etcd != nil && len(o.Recommended.Etcd.StorageConfig.Transport.ServerList) == 0 && o.DatastoreEndpoint == ""
}

// Validate checks the options that do not depend on a running etcd. Upstream's own
// validation runs once the etcd endpoint is known.
func (o *Options) Validate() error {
	var errs []error
	if o.embeddedEtcd() && o.EmbeddedEtcdDir == "" {
		errs = append(errs, fmt.Errorf("--embedded-etcd-dir must not be empty when --etcd-servers is not set"))
	}
	errs = append(errs, o.validateDatastore()...)
	if err := o.validateStorageMediaType(); err != nil {
		errs = append(errs, err)
	}
	if o.Local && o.LocalDir == "" {
		errs = append(errs, fmt.Errorf("--local-dir must not be empty with --local"))
	}
	if err := o.SchemaValidation.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--schema-validation: %w", err))
	}
	return utilerrors.NewAggregate(errs)
}
