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
	// DocumentedEnums names, by definition, the properties whose enum is published but not
	// checked (the generated DocumentedEnums; see registry.Schema): the bodies of
	// subresources are validated without them, as the kinds' objects are.
	DocumentedEnums map[string][]string
	// Groups are the served API groups.
	Groups []Group
	// Admission, when set, adds the server's own in-process admission plugins.
	Admission *Admission
}

// Group is one served API group.
type Group struct {
	// Name is the group name, e.g. "shop.example.com". The order of its versions is the
	// scheme's version priority.
	Name string
	// Resources are the group's resources, each with the versions it is served in.
	Resources []Resource
}

// Resource is one kind of a group across every version it is served in: one storage,
// holding the kind's internal (storage) version, serves all of them.
type Resource struct {
	// Plural is the resource name, e.g. "widgets".
	Plural string
	// Versions are the versions the resource is served in, preferred first.
	Versions []ResourceVersion
	// NewStorage builds the storage of the resource and its subresources, once.
	NewStorage StorageFunc
}

// ResourceVersion is one served version of a resource.
type ResourceVersion struct {
	// Name is the version, e.g. "v1".
	Name string
	// DeprecationWarning, when set, marks the resource deprecated in this version: every
	// request to it gets the warning (a Warning header, as for a CRD's deprecated version).
	DeprecationWarning string
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
		if len(g.Resources) == 0 {
			return fmt.Errorf("server.Spec %s: group %s has no resources", s.Name, g.Name)
		}
		for _, r := range g.Resources {
			switch {
			case r.Plural == "" || r.NewStorage == nil:
				return fmt.Errorf("server.Spec %s: a resource of group %s lacks its Plural or NewStorage", s.Name, g.Name)
			case len(r.Versions) == 0:
				return fmt.Errorf("server.Spec %s: resource %s.%s is served in no version", s.Name, r.Plural, g.Name)
			}
		}
	}
	return nil
}

// codecs returns the codec factory of the spec's scheme.
func (s *Spec) codecs() serializer.CodecFactory {
	return serializer.NewCodecFactory(s.Scheme)
}
