package server

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints"
	"k8s.io/apiserver/pkg/registry/rest"
)

// FieldLabelsProvider is implemented by storage whose field selectors accept labels beyond
// the metadata.name and metadata.namespace every kind has (registry.REST does, from the
// kind's selectable fields).
type FieldLabelsProvider interface {
	// FieldLabels are every label field selectors may use, metadata.name and
	// metadata.namespace included.
	FieldLabels() []string
}

// registerFieldLabels makes the scheme accept, in field selectors on the kind that storage
// serves in gv, the labels the storage names. Without a conversion the scheme accepts
// metadata.name and metadata.namespace only.
func registerFieldLabels(scheme *runtime.Scheme, gv schema.GroupVersion, storage rest.Storage) error {
	p, ok := storage.(FieldLabelsProvider)
	if !ok {
		return nil
	}
	gvk, err := endpoints.GetResourceKind(gv, storage, scheme)
	if err != nil {
		return err
	}
	return scheme.AddFieldLabelConversionFunc(gvk, fieldLabelConversion(p.FieldLabels()))
}

// fieldLabelConversion accepts the labels given; any other is an error naming them, which
// the API server returns as 400 Bad Request.
func fieldLabelConversion(labels []string) runtime.FieldLabelConversionFunc {
	return func(label, value string) (string, string, error) {
		for _, l := range labels {
			if l == label {
				return label, value, nil
			}
		}
		return "", "", fmt.Errorf("field label not supported: %s (supported: %s)", label, strings.Join(labels, ", "))
	}
}
