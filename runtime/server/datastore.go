package server

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/aagen-dev/aagen/runtime/datastore"
)

// validateDatastore checks --datastore-endpoint: a known scheme, and not together with
// --etcd-servers.
func (o *Options) validateDatastore() []error {
	if o.DatastoreEndpoint == "" {
		return nil
	}
	var errs []error
	if _, err := datastore.Scheme(o.DatastoreEndpoint); err != nil {
		errs = append(errs, fmt.Errorf("--datastore-endpoint: %w", err))
	}
	if o.Recommended.Etcd == nil {
		errs = append(errs, fmt.Errorf("--datastore-endpoint needs the etcd storage options"))
	} else if len(o.Recommended.Etcd.StorageConfig.Transport.ServerList) > 0 {
		errs = append(errs, fmt.Errorf("--datastore-endpoint and --etcd-servers exclude each other: keep one"))
	}
	return errs
}

// startDatastore starts kine on --datastore-endpoint and points the storage at it. The
// returned func stops kine.
func (o *Options) startDatastore(ctx context.Context) (func(), error) {
	ds, err := datastore.Start(ctx, datastore.Config{Endpoint: o.DatastoreEndpoint})
	if err != nil {
		return nil, fmt.Errorf("--datastore-endpoint: %w", err)
	}
	o.Recommended.Etcd.StorageConfig.Transport.ServerList = []string{ds.ClientURL()}
	scheme, _ := datastore.Scheme(o.DatastoreEndpoint)
	klog.InfoS("kine datastore ready", "driver", scheme, "url", ds.ClientURL())
	return ds.Close, nil
}
