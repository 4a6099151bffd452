package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/aagen-dev/aagen/runtime/subresource"
)

type nopGetter struct{}

func (nopGetter) Get(context.Context, string, *metav1.GetOptions) (runtime.Object, error) {
	return &metav1.PartialObjectMetadata{}, nil
}

func TestOpenSubresourcesAreLongRunning(t *testing.T) {
	open := newOpenSubresources()
	newObj := func() *metav1.PartialObjectMetadata { return &metav1.PartialObjectMetadata{} }
	stream := subresource.NewStream[*metav1.PartialObjectMetadata](nopGetter{}, newObj,
		func(context.Context, *metav1.PartialObjectMetadata, subresource.StreamOptions, io.Writer) error {
			return nil
		})
	open.add("marina.example.com", "boats/log", stream)
	open.add("marina.example.com", "boats/status", &plainStorage{})
	base := func(_ *http.Request, info *request.RequestInfo) bool { return info.Verb == "watch" }
	lr := open.longRunningFunc(base)
	for _, c := range []struct {
		info request.RequestInfo
		want bool
	}{
		{request.RequestInfo{IsResourceRequest: true, APIGroup: "marina.example.com", Resource: "boats", Subresource: "log", Verb: "get"}, true},
		{request.RequestInfo{IsResourceRequest: true, APIGroup: "marina.example.com", Resource: "boats", Subresource: "status", Verb: "get"}, false},
		{request.RequestInfo{IsResourceRequest: true, APIGroup: "other.example.com", Resource: "boats", Subresource: "log", Verb: "get"}, false},
		{request.RequestInfo{IsResourceRequest: true, APIGroup: "marina.example.com", Resource: "boats", Verb: "watch"}, true},
	} {
		if got := lr(&http.Request{}, &c.info); got != c.want {
			t.Errorf("%+v: long-running %v, want %v", c.info, got, c.want)
		}
	}
	if len(open.drainers) != 1 {
		t.Errorf("%d drainers, want the stream only", len(open.drainers))
	}
}

// plainStorage is a storage that is neither long-running nor drained.
type plainStorage struct{}

func (*plainStorage) New() runtime.Object { return &metav1.Status{} }
func (*plainStorage) Destroy()            {}

// A writable view takes JSON and merge patches; the other patch types get 415, as a
// custom resource's strategic merge patches do; other subresources are left alone.
func TestViewPatchTypes(t *testing.T) {
	type obj = metav1.PartialObjectMetadata
	view := subresource.NewView[*obj, *obj](nil, subresource.ViewFuncs[*obj, *obj]{
		New: func() *obj { return &obj{} },
		Get: func(_ context.Context, o *obj) (*obj, error) { return o, nil },
		Set: func(context.Context, *obj, *obj) error { return nil },
	})
	accepted := subresourcePatchTypes{}
	accepted.add("marina.example.com", "boats/berth", view)
	accepted.add("marina.example.com", "boats/status", &plainStorage{})
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	codecs := serializer.NewCodecFactory(scheme)
	h := withSubresourcePatchTypes(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }), accepted, codecs)
	for _, c := range []struct {
		sub, contentType string
		want             int
	}{
		{"berth", "application/merge-patch+json", http.StatusOK},
		{"berth", "application/json-patch+json", http.StatusOK},
		{"berth", "application/strategic-merge-patch+json", http.StatusUnsupportedMediaType},
		{"berth", "application/apply-patch+yaml", http.StatusUnsupportedMediaType},
		{"status", "application/strategic-merge-patch+json", http.StatusOK},
	} {
		req := httptest.NewRequest(http.MethodPatch, "/apis/marina.example.com/v1alpha1/namespaces/ns/boats/a/"+c.sub, strings.NewReader("{}"))
		req.Header.Set("Content-Type", c.contentType)
		req = req.WithContext(request.WithRequestInfo(req.Context(), &request.RequestInfo{IsResourceRequest: true, Verb: "patch",
			APIGroup: "marina.example.com", APIVersion: "v1alpha1", Resource: "boats", Subresource: c.sub, Name: "a"}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want || c.want != http.StatusOK && !strings.Contains(rec.Body.String(), `"reason":"UnsupportedMediaType"`) {
			t.Errorf("%s of boats/%s: %d %s, want %d", c.contentType, c.sub, rec.Code, rec.Body, c.want)
		}
	}
}
