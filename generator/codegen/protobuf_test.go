package codegen

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/gentype"
	"k8s.io/client-go/rest"
)

// With PrefersProtobuf, every typed client of the clientset is built with
// gentype.PrefersProtobuf; without it, none is.
func TestRunPrefersProtobuf(t *testing.T) {
	isolateTemp(t)
	dir := copyFixture(t)
	for _, prefers := range []bool{false, true} {
		in := fixtureInput(dir)
		in.SkipApplySchema = true
		in.PrefersProtobuf = prefers
		files, err := Run(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for _, f := range files {
			var want string
			switch f.Path {
			case "pkg/generated/clientset/versioned/typed/shop/v1/widget.go":
				want = "gentype.PrefersProtobuf[*shopv1.Widget]()"
			case "pkg/generated/clientset/versioned/typed/shop/v1/gadget.go":
				want = "gentype.PrefersProtobuf[*shopv1.Gadget]()"
			default:
				continue
			}
			checked++
			if got := bytes.Contains(f.Content, []byte(want)); got != prefers {
				t.Errorf("PrefersProtobuf=%v: %s contains %s: %v", prefers, f.Path, want, got)
			}
		}
		if checked != 2 {
			t.Errorf("PrefersProtobuf=%v: checked %d typed clients, want widget.go and gadget.go", prefers, checked)
		}
	}
}

// What a client built with gentype.PrefersProtobuf (as the generated clientset's are) sends:
// protobuf bodies and an Accept header with the JSON fallback, on a rest.Config without a
// ContentType; a config that names one wins. This pins client-go's behaviour, which the
// clientset relies on (TestRunPrefersProtobuf checks that aagen's clients use it).
func TestPrefersProtobufRequests(t *testing.T) {
	type seen struct{ accept, contentType string }
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, seen{r.Header.Get("Accept"), r.Header.Get("Content-Type")})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"}}`))
	}))
	defer srv.Close()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(scheme)
	for _, c := range []struct {
		contentType string
		want        seen
	}{
		{"", seen{"application/vnd.kubernetes.protobuf,application/json", "application/vnd.kubernetes.protobuf"}},
		{"application/json", seen{"application/json, */*", "application/json"}},
	} {
		got = nil
		cfg := &rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{
			GroupVersion: &schema.GroupVersion{Version: "v1"}, NegotiatedSerializer: codecs.WithoutConversion(), ContentType: c.contentType}}
		cfg.APIPath = "/api"
		rc, err := rest.RESTClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		client := gentype.NewClient[*corev1.ConfigMap]("configmaps", rc, metav1.ParameterCodec, "ns",
			func() *corev1.ConfigMap { return &corev1.ConfigMap{} }, gentype.PrefersProtobuf[*corev1.ConfigMap]())
		if _, err := client.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := client.Get(context.Background(), "a", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0] != c.want || got[1].accept != c.want.accept {
			t.Errorf("config ContentType %q: requests sent (Accept, Content-Type) %q, want %q (and the same Accept on the get)", c.contentType, got, c.want)
		}
	}
}
