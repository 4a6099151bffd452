package server

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
)

// protoSpec is a server whose stored kind is k8s.io/api's ConfigMap (which has the
// protobuf methods) served as configs.proto.example.com/v1 Config, registered in its
// version and as its own internal version, as generated servers register their kinds.
func protoSpec() (Spec, schema.GroupVersion) {
	gv := schema.GroupVersion{Group: "proto.example.com", Version: "v1"}
	scheme := runtime.NewScheme()
	for _, v := range []schema.GroupVersion{gv, {Group: gv.Group, Version: runtime.APIVersionInternal}} {
		scheme.AddKnownTypeWithName(v.WithKind("Config"), &corev1.ConfigMap{})
		scheme.AddKnownTypeWithName(v.WithKind("ConfigList"), &corev1.ConfigMapList{})
	}
	metav1.AddToGroupVersion(scheme, gv)
	return Spec{Name: "t", Scheme: scheme, StorageVersions: []schema.GroupVersion{gv}}, gv
}

// jsonSpec is a server whose stored kind lacks the protobuf methods.
func jsonSpec() Spec {
	spec, _, gv := plainSpec()
	spec.StorageVersions = []schema.GroupVersion{gv}
	return spec
}

func parsedOptions(t *testing.T, spec *Spec, args ...string) *Options {
	t.Helper()
	o := NewOptions(spec)
	o.EmbeddedEtcdDir = t.TempDir()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

// --storage-media-type defaults to protobuf when every stored type has the protobuf
// methods and to JSON otherwise; protobuf for a type without them is an error naming it,
// and so is a media type the server cannot store.
func TestStorageMediaType(t *testing.T) {
	for _, c := range []struct {
		name        string
		spec        func() Spec
		args        []string
		wantDefault string
		want        string // "" for valid
	}{
		{"protobuf types, default", func() Spec { s, _ := protoSpec(); return s }, nil, runtime.ContentTypeProtobuf, ""},
		{"protobuf types, JSON asked", func() Spec { s, _ := protoSpec(); return s }, []string{"--storage-media-type=application/json"}, runtime.ContentTypeProtobuf, ""},
		{"plain types, default", jsonSpec, nil, runtime.ContentTypeJSON, ""},
		{"plain types, protobuf asked", jsonSpec, []string{"--storage-media-type=application/vnd.kubernetes.protobuf"}, runtime.ContentTypeJSON,
			"--storage-media-type=application/vnd.kubernetes.protobuf: plain.example.com/v1 plainObject (server.plainObject), plain.example.com/v1 plainObjectList (server.plainObjectList) cannot be stored as protobuf: the type lacks the protobuf methods"},
		{"YAML", jsonSpec, []string{"--storage-media-type=application/yaml"}, runtime.ContentTypeJSON,
			"--storage-media-type=application/yaml: this server stores objects as application/vnd.kubernetes.protobuf or application/json"},
		{"CBOR without its gate", jsonSpec, []string{"--storage-media-type=application/cbor"}, runtime.ContentTypeJSON,
			"--storage-media-type=application/cbor: CBOR storage is alpha in k8s.io/apiserver and needs --feature-gates=CBORServingAndStorage=true"},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := c.spec()
			if got := NewOptions(&spec).Recommended.Etcd.DefaultStorageMediaType; got != c.wantDefault {
				t.Errorf("default --storage-media-type: got %s, want %s", got, c.wantDefault)
			}
			o := parsedOptions(t, &spec, c.args...)
			err := o.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("%v: %v", c.args, err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("%v: got %v, want an error containing %q", c.args, err, c.want)
			}
		})
	}
}

// With protobuf storage, objects are written with the protobuf envelope; objects stored
// as JSON (by a server that stored JSON) are still read, and written back as protobuf.
func TestStorageCodecProtobufReadsJSON(t *testing.T) {
	spec, gv := protoSpec()
	o := parsedOptions(t, &spec)
	if err := o.applyStorageMediaType(); err != nil {
		t.Fatal(err)
	}
	codec := o.Recommended.Etcd.StorageConfig.Codec
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", Labels: map[string]string{"k": "v"}}, Data: map[string]string{"x": "1"}}

	var stored bytes.Buffer
	if err := codec.Encode(obj, &stored); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(stored.Bytes(), []byte(protobufPrefix)) {
		t.Fatalf("stored bytes start with %q, want %q", stored.Bytes()[:min(8, stored.Len())], []byte(protobufPrefix))
	}
	back, _, err := codec.Decode(stored.Bytes(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.(*corev1.ConfigMap); got.Name != "a" || got.Data["x"] != "1" || got.Labels["k"] != "v" {
		t.Errorf("protobuf round trip: got %+v", got)
	}

	// The bytes a JSON-storing server writes.
	jsonOpts := parsedOptions(t, &spec, "--storage-media-type=application/json")
	if err := jsonOpts.applyStorageMediaType(); err != nil {
		t.Fatal(err)
	}
	var old bytes.Buffer
	if err := jsonOpts.Recommended.Etcd.StorageConfig.Codec.Encode(obj, &old); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(old.Bytes(), []byte(`{"kind":"Config","apiVersion":"proto.example.com/v1"`)) {
		t.Fatalf("JSON storage wrote %q", old.String())
	}
	read, _, err := codec.Decode(old.Bytes(), nil, &corev1.ConfigMap{})
	if err != nil {
		t.Fatalf("protobuf storage reading JSON: %v", err)
	}
	cm := read.(*corev1.ConfigMap)
	if cm.Name != "a" || cm.Data["x"] != "1" {
		t.Errorf("JSON read back: got %+v", cm)
	}
	cm.Data["x"] = "2" // an update
	var rewritten bytes.Buffer
	if err := codec.Encode(cm, &rewritten); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(rewritten.Bytes(), []byte(protobufPrefix)) {
		t.Fatalf("update of a JSON-stored object wrote %q, want protobuf", rewritten.Bytes()[:min(8, rewritten.Len())])
	}
	head, err := storedVersion(rewritten.Bytes())
	if err != nil || head != gv.String() {
		t.Errorf("stored version of the rewritten object: got %q, %v; want %s", head, err, gv)
	}
}

// With the CBOR gate on, CBOR storage is accepted, writes CBOR and reads protobuf.
func TestStorageCodecCBORWithGate(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.CBORServingAndStorage, true)
	spec, _ := protoSpec()
	o := parsedOptions(t, &spec, "--storage-media-type=application/cbor", "--etcd-servers=http://127.0.0.1:2379")
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.applyStorageMediaType(); err != nil {
		t.Fatal(err)
	}
	if errs := o.Recommended.Etcd.Validate(); len(errs) > 0 {
		t.Fatalf("upstream etcd options after CBOR was applied: %v", errs)
	}
	if err := o.applyStorageMediaType(); err != nil { // again, as a second New would
		t.Fatal(err)
	}
	codec := o.Recommended.Etcd.StorageConfig.Codec
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"x": "1"}}
	var stored bytes.Buffer
	if err := codec.Encode(obj, &stored); err != nil {
		t.Fatal(err)
	}
	// CBOR's self-described tag 55799 (0xd9d9f7) starts every object.
	if !bytes.HasPrefix(stored.Bytes(), []byte(cborSelfDescribed)) {
		t.Fatalf("CBOR storage wrote %q", stored.Bytes()[:min(8, stored.Len())])
	}
	proto := parsedOptions(t, &spec)
	if err := proto.applyStorageMediaType(); err != nil {
		t.Fatal(err)
	}
	var pb bytes.Buffer
	if err := proto.Recommended.Etcd.StorageConfig.Codec.Encode(obj, &pb); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"CBOR": stored.Bytes(), "protobuf": pb.Bytes()} {
		back, _, err := codec.Decode(data, nil, &corev1.ConfigMap{})
		if err != nil {
			t.Fatalf("CBOR storage reading %s: %v", name, err)
		}
		if got := back.(*corev1.ConfigMap); got.Name != "a" || got.Data["x"] != "1" {
			t.Errorf("%s read back: got %+v", name, got)
		}
	}
}
