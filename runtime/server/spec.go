package server

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	openapicommon "k8s.io/kube-openapi/pkg/common"
)

// StorageFunc builds the REST storage of one kind (the resource and its subresources,
// keyed "plural" and "plural/sub") on the storage getter describes.
type StorageFunc func(scheme *runtime.Scheme, getter generic.RESTOptionsGetter) (map[string]rest.Storage, error)

// Spec is everything a generated server knows about its API. Generated code builds it;
// Run serves it.
type Spec struct {
	// Name names the server, e.g. "shop-apiserver": used in logs, the kubeconfig and the
	// default etcd prefix.
	Name string
	// Title is the OpenAPI title.
	Title string
	// Version is the OpenAPI info version (the server's own version).
	Version string
	// Scheme knows every served kind in every version, plus the internal (hub) version.
	Scheme *runtime.Scheme
	// StorageVersions are the versions objects are stored in: for every kind, the version
	// whose Go types are also registered as the kind's internal version. A group whose kinds
	// are stored in different versions lists each of them; the encoder picks, for each
	// object, the one its type is registered in.
	StorageVersions []schema.GroupVersion
	// OpenAPIDefinitions are the generated OpenAPI definitions of every served type.
	OpenAPIDefinitions openapicommon.GetOpenAPIDefinitions
	// Groups are the served API groups.
	Groups []Group
}

// Group is one served API group.
type Group struct {
	// Name is the group name, e.g. "shop.example.com".
	Name string
	// Versions are the served versions, preferred first.
	Versions []Version
}

// Version is one served version of a group and the storage of its resources.
type Version struct {
	Name string
	// Resources build the storage of the kinds served in this version. A StorageFunc listed
	// under several versions (a kind served in several versions) is called once: the same
	// storage, which holds the kind's internal version, serves all of them.
	Resources []StorageFunc
	// Deprecated maps the resources (plural names) that are deprecated in this version to
	// the warning every request to them gets (a Warning header, as for a CRD's deprecated
	// version).
	Deprecated map[string]string
}

func (s *Spec) validate() error {
	switch {
	case s.Name == "":
		return fmt.Errorf("server.Spec: Name is required")
	case s.Scheme == nil:
		return fmt.Errorf("server.Spec %s: Scheme is required", s.Name)
	case s.OpenAPIDefinitions == nil:
		return fmt.Errorf("server.Spec %s: OpenAPIDefinitions are required (k8s.io/apiserver installs no API group without OpenAPI v3)", s.Name)
	case len(s.Groups) == 0:
		return fmt.Errorf("server.Spec %s: no API groups to serve", s.Name)
	}
	for _, g := range s.Groups {
		if len(g.Versions) == 0 {
			return fmt.Errorf("server.Spec %s: group %s has no versions", s.Name, g.Name)
		}
	}
	return nil
}

// codecs returns the codec factory of the spec's scheme.
func (s *Spec) codecs() serializer.CodecFactory {
	return serializer.NewCodecFactory(s.Scheme)
}
