package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// protobufOf encodes obj as the server does (magic and runtime.Unknown envelope).
func protobufOf(t *testing.T, obj runtime.Object, gvk schema.GroupVersionKind) []byte {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme, scheme).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The bench's protobuf helpers read and rewrite what k8s.io/api's generated code writes
// (the same wire format as aagen's): the list's items, a kind's metadata, watch frames.
func TestProtobufHelpers(t *testing.T) {
	cm := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "42", UID: "u"}, Data: map[string]string{"k": "v"}}
	list := &corev1.ConfigMapList{Items: []corev1.ConfigMap{cm, cm, cm}}
	if got := countProtobufItems(protobufOf(t, list, corev1.SchemeGroupVersion.WithKind("ConfigMapList"))); got != 3 {
		t.Errorf("countProtobufItems: %d, want 3", got)
	}

	unk, err := cluster.UnwrapProtobuf(protobufOf(t, cm.DeepCopy(), corev1.SchemeGroupVersion.WithKind("ConfigMap")))
	if err != nil {
		t.Fatal(err)
	}
	msg, err := withField(unk.Raw, fieldObjectMeta, &metav1.ObjectMeta{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	var back corev1.ConfigMap
	if err := back.Unmarshal(msg); err != nil {
		t.Fatal(err)
	}
	if back.Name != "b" || back.ResourceVersion != "" || back.UID != "" || back.Data["k"] != "v" {
		t.Errorf("withField: got %+v", back)
	}

	var stream bytes.Buffer
	for _, rv := range []string{"7", "8"} {
		obj := cm.DeepCopy()
		obj.ResourceVersion = rv
		ev := metav1.WatchEvent{Type: "MODIFIED", Object: runtime.RawExtension{Raw: protobufOf(t, obj, corev1.SchemeGroupVersion.WithKind("ConfigMap"))}}
		frame, err := ev.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		stream.Write(binary.BigEndian.AppendUint32(nil, uint32(len(frame))))
		stream.Write(frame)
	}
	r := bufio.NewReader(&stream)
	for _, want := range []string{"7", "8"} {
		typ, rv, err := protobufWatchEvent(r)
		if err != nil || typ != "MODIFIED" || rv != want {
			t.Errorf("protobufWatchEvent: %q %q %v, want MODIFIED %s", typ, rv, err, want)
		}
	}
	if _, _, err := protobufWatchEvent(r); err == nil {
		t.Error("protobufWatchEvent at the end of the stream: no error")
	}
}
