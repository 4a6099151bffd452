package model_test

import (
	"strings"
	"testing"
)

// scalableKind is a kind with +genclient:method markers calling the /scale, /status and
// /eviction subresources (as k8s.io/api's apps/v1 and core/v1 kinds do); served is the
// markers that serve /scale and /eviction, extra declarations after the kind's.
func scalableKind(served, extra string) string {
	return `package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateStatusOnly,verb=update,subresource=status
// +genclient:method=Evict,verb=create,subresource=eviction,input=k8s.io/api/policy/v1.Eviction,result=k8s.io/apimachinery/pkg/apis/meta/v1.Status
` + served + `
type Widget struct {
	metav1.TypeMeta   ` + "`json:\",inline\"`" + `
	metav1.ObjectMeta ` + "`json:\"metadata,omitempty\"`" + `
	Spec   WidgetSpec   ` + "`json:\"spec\"`" + `
	Status WidgetStatus ` + "`json:\"status\"`" + `
}

type WidgetSpec struct{ Replicas *int32 ` + "`json:\"replicas,omitempty\"`" + ` }
type WidgetStatus struct{ Replicas int32 ` + "`json:\"replicas\"`" + ` }

type WidgetList struct {
	metav1.TypeMeta ` + "`json:\",inline\"`" + `
	metav1.ListMeta ` + "`json:\"metadata,omitempty\"`" + `
	Items []Widget  ` + "`json:\"items\"`" + `
}
` + extra
}

// TestClientMethodOfUnservedSubresourceWarned: a +genclient:method whose generated client
// calls a subresource the server does not serve (k8s.io/api's apps/v1 GetScale without a
// scale marker, core/v1's Evict without an eviction action) is a warning at the marker
// saying the call gets 404, with the marker that serves it; once the kind serves the
// subresource, there is none.
func TestClientMethodOfUnservedSubresourceWarned(t *testing.T) {
	_, warns, err := build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": scalableKind("", "")}))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct{ line, sub, fix string }{
		{"types.go:6:1", "scale", "+kubebuilder:subresource:scale:specpath="},
		{"types.go:8:1", "eviction", "+aagen:subresource:action"},
	} {
		got := warningsContaining(warns, want.line+": warning: +genclient:method=")
		if len(got) != 1 || !strings.Contains(got[0], "calls the /"+want.sub+" subresource, which the server does not serve for widgets: the call gets 404 Not Found") ||
			!strings.Contains(got[0], want.fix) {
			t.Errorf("/%s: want one warning at %s saying the call gets 404, with the fix %q; got %q (all: %v)", want.sub, want.line, want.fix, got, warns)
		}
	}
	// A kind with a status field serves /status without a marker.
	if got := warningsContaining(warns, "/status"); len(got) > 0 {
		t.Errorf("Widget serves /status (it has a status field), yet: %v", got)
	}
	m, warns, err := build(t, module(t, map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": scalableKind(
		"// +kubebuilder:subresource:status\n// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas\n"+
			"// +aagen:subresource:action:name=eviction,input=WidgetEviction,output=Status", `
type WidgetEviction struct {
	metav1.TypeMeta `+"`json:\",inline\"`"+`
}
`)}))
	if err != nil {
		t.Fatal(err)
	}
	if ks := m.Groups[0].Versions[0].Kinds; len(ks) != 1 || ks[0].Name != "Widget" || ks[0].Scale == nil || len(ks[0].Subresources) != 1 {
		t.Fatalf("want the kind Widget serving /scale and one action, got %+v", ks)
	}
	if got := warningsContaining(warns, "does not serve"); len(got) > 0 {
		t.Errorf("the kind serves /scale, /status and /eviction, yet: %v", got)
	}
}
