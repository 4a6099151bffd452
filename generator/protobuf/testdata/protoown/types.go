// Package protoown declares the protobuf methods itself, as a package with go-to-protobuf's
// generated.pb.go does.
package protoown

type Own struct {
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
}

func (m *Own) Reset()                                     { *m = Own{} }
func (*Own) ProtoMessage()                                {}
func (m *Own) String() string                             { return m.Name }
func (m *Own) Marshal() ([]byte, error)                   { return nil, nil }
func (m *Own) MarshalTo(dAtA []byte) (int, error)         { return 0, nil }
func (m *Own) MarshalToSizedBuffer(d []byte) (int, error) { return 0, nil }
func (m *Own) Size() int                                  { return 0 }
func (m *Own) Unmarshal(dAtA []byte) error                { return nil }
