package server

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// validateStorageMediaType refuses a --storage-media-type other than JSON. k8s.io/apiserver's
// flag is accepted by every server built on RecommendedOptions, but only kube-apiserver's
// storage factory reads it; a generated server stores with the codec NewOptions sets (JSON),
// and its storage-version migration reads the apiVersion of stored JSON. Without this
// check the flag would be silently ignored. Protobuf storage is designed in
// docs/protobuf.md.
func (o *Options) validateStorageMediaType() error {
	if o.Recommended.Etcd == nil {
		return nil
	}
	switch mt := o.Recommended.Etcd.DefaultStorageMediaType; mt {
	case "", runtime.ContentTypeJSON:
		return nil
	default:
		return fmt.Errorf("--storage-media-type=%s: this server stores objects as %s only (protobuf storage is not built yet, see docs/protobuf.md); remove the flag", mt, runtime.ContentTypeJSON)
	}
}
