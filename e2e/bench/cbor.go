package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"

	cbor "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
)

// cborServerArgs turn on CBOR (KEP-4222, alpha in k8s.io/apiserver v0.37) in the generated
// server the bench deploys, for the format comparisons.
var cborServerArgs = []string{"--feature-gates=CBORServingAndStorage=true"}

// doAccept GETs url accepting only mediaType and returns the body; the answer must be 200
// in that media type.
func doAccept(c *http.Client, url, mediaType string) ([]byte, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", mediaType)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), mediaType) {
		return nil, &statusError{code: resp.StatusCode, body: resp.Header.Get("Content-Type") + " " + string(data), req: "GET " + url + " as " + mediaType}
	}
	return data, nil
}

// countItems returns the length of a list's items in JSON, CBOR or protobuf.
func countItems(data []byte, mediaType string) int {
	if mediaType == protobufMediaType {
		return countProtobufItems(data)
	}
	if mediaType == "application/cbor" {
		var m map[string]any
		if err := cbor.Unmarshal(data, &m); err != nil {
			return -1
		}
		items, _ := m["items"].([]any)
		return len(items)
	}
	var raw struct {
		Items []struct{} `json:"items"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return -1
	}
	return len(raw.Items)
}
