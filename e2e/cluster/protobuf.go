package cluster

import (
	"bytes"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// ProtobufMagic starts every object k8s.io/apimachinery's protobuf serializer writes, in
// answers and in etcd.
const ProtobufMagic = "k8s\x00"

// UnwrapProtobuf reads the envelope of a protobuf object: the magic, then runtime.Unknown
// (apiVersion, kind and the object's own message in Raw).
func UnwrapProtobuf(data []byte) (*runtime.Unknown, error) {
	rest, ok := bytes.CutPrefix(data, []byte(ProtobufMagic))
	if !ok {
		return nil, fmt.Errorf("not a protobuf object: %q", data[:min(len(data), 16)])
	}
	var unk runtime.Unknown
	if err := unk.Unmarshal(rest); err != nil {
		return nil, err
	}
	return &unk, nil
}
