package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

const (
	protobufMediaType = "application/vnd.kubernetes.protobuf"
	// Field numbers of aagen's (and go-to-protobuf's) messages the bench reads: a kind's
	// ObjectMeta, a list's Items.
	fieldObjectMeta = 1
	fieldListItems  = 2
)

// createBodies returns, for mediaType, a function that makes the body of a create of a
// Boat named name, labelled fleet=bench-create (so the lists and watches of fleet=bench
// and shard=N do not see it): in JSON as the other creates of the bench, in protobuf from
// the server's own protobuf answer for boat-00000 with its metadata replaced.
func createBodies(s *subject, mediaType string) (func(name string) ([]byte, error), error) {
	if mediaType != protobufMediaType {
		return func(name string) ([]byte, error) {
			return []byte(fmt.Sprintf(`{"apiVersion":%q,"kind":"Boat","metadata":{"name":%q,"labels":{"fleet":"bench-create"}},`+
				`"spec":{"dock":"dock-1","lengthMeters":12,"crew":["ann","bo","cy"],"sails":2,"hull":"Wood","contact":"owner@example.com"}}`, s.api, name)), nil
		}, nil
	}
	data, err := doAccept(s.client, s.base+"/boat-00000", protobufMediaType)
	if err != nil {
		return nil, err
	}
	unk, err := cluster.UnwrapProtobuf(data)
	if err != nil {
		return nil, err
	}
	return func(name string) ([]byte, error) {
		meta := metav1.ObjectMeta{Name: name, Labels: map[string]string{"fleet": "bench-create"}}
		msg, err := withField(unk.Raw, fieldObjectMeta, &meta)
		if err != nil {
			return nil, fmt.Errorf("a protobuf Boat named %s: %w", name, err)
		}
		env := runtime.Unknown{TypeMeta: unk.TypeMeta, Raw: msg}
		out, err := env.Marshal()
		if err != nil {
			return nil, fmt.Errorf("a protobuf Boat named %s: %w", name, err)
		}
		return append([]byte(cluster.ProtobufMagic), out...), nil
	}, nil
}

// postAs POSTs body in mediaType, accepting the same, and wants 201 in that media type.
func postAs(c *http.Client, url, mediaType string, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Accept", mediaType)
	req.Header.Set("Content-Type", mediaType)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated || !strings.HasPrefix(resp.Header.Get("Content-Type"), mediaType) {
		return &statusError{code: resp.StatusCode, body: resp.Header.Get("Content-Type") + " " + string(data), req: "POST " + url + " as " + mediaType}
	}
	return nil
}

// countProtobufItems returns the number of items of a list answered in protobuf, or -1.
func countProtobufItems(data []byte) int {
	unk, err := cluster.UnwrapProtobuf(data)
	if err != nil {
		return -1
	}
	n := 0
	err = eachField(unk.Raw, func(num protowire.Number, _ []byte) error {
		if num == fieldListItems {
			n++
		}
		return nil
	})
	if err != nil {
		return -1
	}
	return n
}

// eachField calls f with the number and the value of every length-delimited field of msg,
// in order; it fails on a field of another wire type.
func eachField(msg []byte, f func(num protowire.Number, value []byte) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return protowire.ParseError(n)
		}
		msg = msg[n:]
		if typ != protowire.BytesType {
			m := protowire.ConsumeFieldValue(num, typ, msg)
			if m < 0 {
				return protowire.ParseError(m)
			}
			msg = msg[m:]
			continue
		}
		v, m := protowire.ConsumeBytes(msg)
		if m < 0 {
			return protowire.ParseError(m)
		}
		if err := f(num, v); err != nil {
			return err
		}
		msg = msg[m:]
	}
	return nil
}

// withField returns msg with field num (a message) replaced by value.
func withField(msg []byte, num protowire.Number, value interface{ Marshal() ([]byte, error) }) ([]byte, error) {
	enc, err := value.Marshal()
	if err != nil {
		return nil, err
	}
	out := protowire.AppendTag(nil, num, protowire.BytesType)
	out = protowire.AppendBytes(out, enc)
	for len(msg) > 0 {
		n, typ, tn := protowire.ConsumeTag(msg)
		if tn < 0 {
			return nil, protowire.ParseError(tn)
		}
		vn := protowire.ConsumeFieldValue(n, typ, msg[tn:])
		if vn < 0 {
			return nil, protowire.ParseError(vn)
		}
		if n != num {
			out = append(out, msg[:tn+vn]...)
		}
		msg = msg[tn+vn:]
	}
	return out, nil
}

// protobufWatchEvent reads the next event of a watch answered in protobuf (each frame a
// 4-byte big-endian length, then a metav1.WatchEvent whose object is a protobuf object)
// and returns its type and the object's resourceVersion.
func protobufWatchEvent(r *bufio.Reader) (string, string, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return "", "", err
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(r, frame); err != nil {
		return "", "", err
	}
	var ev metav1.WatchEvent
	if err := ev.Unmarshal(frame); err != nil {
		return "", "", err
	}
	// An event's object may come with or without the envelope's magic.
	var unk runtime.Unknown
	if err := unk.Unmarshal(bytes.TrimPrefix(ev.Object.Raw, []byte(cluster.ProtobufMagic))); err != nil {
		return "", "", err
	}
	var meta metav1.ObjectMeta
	err := eachField(unk.Raw, func(num protowire.Number, v []byte) error {
		if num == fieldObjectMeta {
			return meta.Unmarshal(v)
		}
		return nil
	})
	return ev.Type, meta.ResourceVersion, err
}
