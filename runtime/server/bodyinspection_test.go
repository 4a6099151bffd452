package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/aagen-dev/aagen/runtime/registry"
)

// refusingInspector refuses every body it is asked about and records the formats.
type refusingInspector struct{ formats []registry.BodyFormat }

func (i *refusingInspector) InspectBody(_ string, _ []byte, format registry.BodyFormat, opts registry.InspectOptions) registry.BodyReport {
	i.formats = append(i.formats, format)
	if !opts.Limits {
		return registry.BodyReport{}
	}
	return registry.BodyReport{Name: "a", OverLimits: field.ErrorList{field.TooMany(field.NewPath("spec", "items"), 1400000, 10)}}
}

func (i *refusingInspector) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: "example.com", Kind: "Widget"}
}

// TestBodyInspectionOfEveryFormat checks that a large create in any format the server
// accepts (JSON, YAML, protobuf, CBOR) goes through the size check before the handler
// (which decodes it) runs, and that a refused body never reaches the handler.
func TestBodyInspectionOfEveryFormat(t *testing.T) {
	for _, c := range []struct {
		contentType string
		format      registry.BodyFormat
	}{
		{"application/json", registry.FormatJSON},
		{"application/yaml", registry.FormatYAML},
		{"application/vnd.kubernetes.protobuf", registry.FormatProtobuf},
		{"application/cbor", registry.FormatCBOR},
	} {
		t.Run(c.contentType, func(t *testing.T) {
			inspector := &refusingInspector{}
			handled := 0
			h := withBodyInspection(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { handled++ }),
				bodyInspectors{{Group: "example.com", Resource: "widgets"}: inspector},
				serializer.NewCodecFactory(statusScheme()), 0)
			req := httptest.NewRequest(http.MethodPost, "/apis/example.com/v1/widgets", bytes.NewReader(make([]byte, limitCheckThreshold)))
			req.Header.Set("Content-Type", c.contentType)
			req = req.WithContext(genericapirequest.WithRequestInfo(req.Context(), &genericapirequest.RequestInfo{
				IsResourceRequest: true, Verb: "create", APIGroup: "example.com", APIVersion: "v1", Resource: "widgets"}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if handled != 0 || rec.Code != http.StatusUnprocessableEntity {
				t.Fatalf("handler ran %d times, status %d; want 0 and 422", handled, rec.Code)
			}
			if len(inspector.formats) != 1 || inspector.formats[0] != c.format {
				t.Errorf("inspected as %v, want [%v]", inspector.formats, c.format)
			}
		})
	}
}

func statusScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Group: "example.com", Version: "v1"})
	return s
}
