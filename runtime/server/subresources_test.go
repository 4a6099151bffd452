package server

import (
	"context"
	"io"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
