package servertest

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	openapiutil "k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// PermissiveDefinitions gives every Go type the scheme knows, and the meta types routes
// name, an object schema that keeps unknown fields: enough for the apiserver to install the
// routes; the tests here are about verbs and storage, not schemas.
func PermissiveDefinitions(scheme *runtime.Scheme) openapicommon.GetOpenAPIDefinitions {
	names := map[string]bool{}
	for _, typ := range scheme.AllKnownTypes() {
		names[openapiutil.GetCanonicalTypeName(reflect.New(typ).Interface())] = true
	}
	for _, v := range []any{metav1.ObjectMeta{}, metav1.ListMeta{}, metav1.Status{}, metav1.DeleteOptions{}, metav1.WatchEvent{},
		metav1.Patch{}, metav1.Time{}, metav1.APIResourceList{}, metav1.StatusDetails{}, metav1.StatusCause{}, metav1.ManagedFieldsEntry{},
		metav1.OwnerReference{}, metav1.Preconditions{}, metav1.FieldsV1{}, version.Info{}, metav1.APIGroup{}, metav1.APIGroupList{},
		metav1.APIVersions{}, metav1.APIResource{}, metav1.GroupVersionForDiscovery{}, metav1.ServerAddressByClientCIDR{}} {
		names[openapiutil.GetCanonicalTypeName(reflect.New(reflect.TypeOf(v)).Interface())] = true
	}
	return func(openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
		defs := map[string]openapicommon.OpenAPIDefinition{}
		for n := range names {
			defs[n] = openapicommon.OpenAPIDefinition{Schema: spec.Schema{
				SchemaProps:      spec.SchemaProps{Type: []string{"object"}},
				VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-preserve-unknown-fields": true}},
			}}
		}
		return defs
	}
}
