package server

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientrest "k8s.io/client-go/rest"
)

// loopbackProtobufAccept is what the server's client of itself accepts when a group of
// the server offers protobuf.
const loopbackProtobufAccept = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON

// useProtobufOnLoopback has the server's client of itself (the loopback configuration that
// backends' Start and admission plugins' initializers are given) read in protobuf, as
// kube-apiserver's does ("Use protobufs for self-communication"), with two differences for
// groups that cannot: it accepts protobuf or JSON, so that a group whose types are not all
// encodable in protobuf answers in JSON (see groupSerializer), and it leaves request bodies
// in JSON, which every group reads. Nothing changes when no group offers protobuf.
// Compression is off, as on kube-apiserver's, for a client on the same host.
func useProtobufOnLoopback(c *clientrest.Config, spec Spec) {
	if c == nil {
		return
	}
	c.DisableCompression = true
	for _, g := range spec.Groups {
		if allProtobuf(spec.Scheme, g.groupVersions()) {
			c.AcceptContentTypes = loopbackProtobufAccept
			return
		}
	}
}
