package backend

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// TestInitialEvents checks the start of watches: with sendInitialEvents (informers under
// client-go's WatchList) the objects that match come as ADDED, then the bookmark that ends
// them, then changes; without a resourceVersion the objects come as ADDED first, as on etcd
// storage; from a resourceVersion only changes come.
func TestInitialEvents(t *testing.T) {
	m := newMemory()
	s, err := New(config(m))
	if err != nil {
		t.Fatal(err)
	}
	ctx := genericapirequest.WithNamespace(context.Background(), "harbour")
	creater, watcher := s.(rest.Creater), s.(rest.Watcher)
	watched := labels.SelectorFromSet(labels.Set{"watched": "yes"})
	for _, c := range []*corev1.ConfigMap{cm("a", "red", map[string]string{"watched": "yes"}), cm("b", "blue", nil)} {
		if _, err := creater.Create(ctx, c, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	yes := true
	cases := []struct {
		name string
		opts metainternalversion.ListOptions
		want []string
	}{
		{"sendInitialEvents", metainternalversion.ListOptions{LabelSelector: watched, SendInitialEvents: &yes, AllowWatchBookmarks: true,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, []string{"ADDED a", "BOOKMARK 1 end", "ADDED c"}},
		{"no resourceVersion", metainternalversion.ListOptions{LabelSelector: watched}, []string{"ADDED a", "ADDED c"}},
		{"from a resourceVersion", metainternalversion.ListOptions{LabelSelector: watched, ResourceVersion: "2"}, []string{"ADDED c"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := watcher.Watch(ctx, &c.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			obj := cm("c", "green", map[string]string{"watched": "yes"})
			if _, err := creater.Create(ctx, obj, nil, nil); err != nil {
				t.Fatal(err)
			}
			defer func() { _, _, _ = s.(rest.GracefulDeleter).Delete(ctx, "c", nil, nil) }()
			var got []string
			for len(got) < len(c.want) {
				select {
				case ev := <-w.ResultChan():
					o := ev.Object.(*corev1.ConfigMap)
					if ev.Type == watch.Bookmark {
						end := ""
						if o.Annotations[metav1.InitialEventsAnnotationKey] == "true" {
							end = " end"
						}
						got = append(got, "BOOKMARK "+o.ResourceVersion+end)
					} else {
						got = append(got, string(ev.Type)+" "+o.Name)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("events %v, then nothing; want %v", got, c.want)
				}
			}
			for i := range c.want {
				if got[i] != c.want[i] {
					t.Fatalf("events %v, want %v", got, c.want)
				}
			}
		})
	}
}
