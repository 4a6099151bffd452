package server

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clientrest "k8s.io/client-go/rest"
)

// TestUseProtobufOnLoopback: the loopback client accepts protobuf (then JSON) when a group
// of the server offers protobuf, and nothing but its default when none does; its request
// bodies stay in its default content type either way, and compression is off. (That the
// server then answers the loopback client in protobuf is runtime/backend's TestServed.)
func TestUseProtobufOnLoopback(t *testing.T) {
	scheme := plainAndProtoScheme()
	group := func(gv schema.GroupVersion) Group {
		return Group{Name: gv.Group, Resources: []Resource{{Plural: "things", Versions: []ResourceVersion{{Name: gv.Version}}}}}
	}
	for _, c := range []struct {
		name   string
		groups []Group
		accept string
	}{
		{"no group offers protobuf", []Group{group(plainGV)}, ""},
		{"one group offers protobuf", []Group{group(plainGV), group(protoGV)}, "application/vnd.kubernetes.protobuf,application/json"},
	} {
		cfg := &clientrest.Config{Host: "https://127.0.0.1:1"}
		useProtobufOnLoopback(cfg, Spec{Scheme: scheme, Groups: c.groups})
		if cfg.AcceptContentTypes != c.accept || cfg.ContentType != "" || !cfg.DisableCompression {
			t.Errorf("%s: accept %q, content type %q, compression off %v; want accept %q, the default content type, compression off",
				c.name, cfg.AcceptContentTypes, cfg.ContentType, cfg.DisableCompression, c.accept)
		}
	}
	useProtobufOnLoopback(nil, Spec{Scheme: scheme}) // no secure serving: no loopback client
}
