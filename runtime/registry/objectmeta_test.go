package registry

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// shadowingKind declares its own GetObjectMeta, as cert-manager's Issuer does, hiding the
// embedded ObjectMeta's: it is no metav1.ObjectMetaAccessor.
type shadowingKind struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
}

func (k *shadowingKind) GetObjectMeta() *metav1.ObjectMeta { return &k.ObjectMeta }

func (k *shadowingKind) DeepCopyObject() runtime.Object {
	out := *k
	k.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// TestObjectMetaShadowedAccessor: objectMeta finds the embedded ObjectMeta of a kind whose
// own GetObjectMeta method hides ObjectMeta's (a panic on create before).
func TestObjectMetaShadowedAccessor(t *testing.T) {
	k := &shadowingKind{ObjectMeta: metav1.ObjectMeta{Name: "selfsigned-issuer"}}
	if _, ok := runtime.Object(k).(metav1.ObjectMetaAccessor); ok {
		t.Fatal("the test kind should not be a metav1.ObjectMetaAccessor")
	}
	m := objectMeta(k)
	if m != &k.ObjectMeta || m.Name != "selfsigned-issuer" {
		t.Fatalf("objectMeta = %p (%q), want the embedded ObjectMeta %p", m, m.Name, &k.ObjectMeta)
	}
}
