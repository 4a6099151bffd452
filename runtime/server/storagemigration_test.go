package server

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
)

// The storage-version migration reads the version of stored objects in every media type
// the storage codec writes (JSON, protobuf, CBOR), and reports what it cannot read.
func TestStoredVersion(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.CBORServingAndStorage, true)
	spec, gv := protoSpec()
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"x": "1"}}
	for _, mt := range []string{"application/json", "application/vnd.kubernetes.protobuf", "application/cbor"} {
		codec, err := (storageMedia{scheme: spec.Scheme, versions: spec.StorageVersions}).codec(mt)
		if err != nil {
			t.Fatal(err)
		}
		var stored bytes.Buffer
		if err := codec.Encode(obj, &stored); err != nil {
			t.Fatal(err)
		}
		got, err := storedVersion(stored.Bytes())
		if err != nil || got != gv.String() {
			t.Errorf("%s: stored version %q, %v; want %s", mt, got, err, gv)
		}
	}
	for name, data := range map[string][]byte{
		"encrypted":          []byte("k8s:enc:aescbc:v1:key1:\x01\x02"),
		"truncated protobuf": []byte("k8s\x00\x0a\x20ab"),
	} {
		if got, err := storedVersion(data); err == nil {
			t.Errorf("%s: got version %q, want an error", name, got)
		}
	}
}
