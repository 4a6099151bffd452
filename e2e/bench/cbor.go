package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	cbor "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
)

// cborServerArgs turn on CBOR (KEP-4222, alpha in k8s.io/apiserver v0.37) in the generated
// server the bench deploys, for cborRows.
var cborServerArgs = []string{"--feature-gates=CBORServingAndStorage=true"}

// cborRows measures gets and lists of the generated server answered in CBOR next to the
// same requests answered in JSON, for the subjects given (the CRD is left out: the
// bench's kube-apiserver runs without the alpha gate). Each pair runs back to back on the
// objects the JSON workloads stored.
func cborRows(subjects []*subject, cfg servingConfig) (string, error) {
	small := cfg.objects / 10
	type workload struct {
		name string
		n, c int
		op   func(s *subject, accept string) error
	}
	get := func(s *subject, accept string) error {
		_, err := doAccept(s.client, fmt.Sprintf("%s/boat-%05d", s.base, rand.IntN(small)), accept)
		return err
	}
	listAll := func(s *subject, accept string) error {
		data, err := doAccept(s.client, s.base, accept)
		if err != nil {
			return err
		}
		if n := countItems(data, accept); n != cfg.objects {
			return fmt.Errorf("list %s as %s: %d items, want %d", s.base, accept, n, cfg.objects)
		}
		return nil
	}
	workloads := []workload{
		{fmt.Sprintf("get, %d clients", cfg.concurrency), 4 * small, cfg.concurrency, get},
		{"get, 1 client", small / 2, 1, get},
		{fmt.Sprintf("list %d", cfg.objects), 5, 1, listAll},
	}
	var b strings.Builder
	fmt.Fprintln(&b, "| workload | subject | JSON ops/s | CBOR ops/s | JSON p50 | CBOR p50 | JSON server CPU per op | CBOR server CPU per op | CBOR/JSON rate | CBOR/JSON CPU |")
	fmt.Fprintln(&b, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, w := range workloads {
		for _, s := range subjects {
			var by [2]measurement
			for i, accept := range []string{"application/json", "application/cbor"} {
				m, err := runOps(w.n, w.c, s.procs, func(int) error { return w.op(s, accept) })
				if err != nil {
					return "", err
				}
				by[i] = m
			}
			j, c := by[0], by[1]
			fmt.Fprintf(&b, "| %s | %s | %.0f | %.0f | %s | %s | %s | %s | %.2f | %.2f |\n", w.name, s.name, j.rate(), c.rate(),
				ms(j.pct(0.5)), ms(c.pct(0.5)), ms(j.cpu/time.Duration(max(j.ops, 1))), ms(c.cpu/time.Duration(max(c.ops, 1))),
				c.rate()/j.rate(), ratio(c.cpu, j.cpu))
		}
	}
	return b.String(), nil
}

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
