package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/aagen-dev/aagen/runtime/localauth"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// badRequests checks how the server answers requests a client gets wrong.
func badRequests(t *testing.T, cfg *rest.Config, localDir string) {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := cfg.Host + "/apis/marina.example.com/v1alpha1/namespaces/harbour/boats"
	do := func(c *http.Client, method, url, contentType string, body []byte) (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequestWithContext(context.Background(), method, url, bytes.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data), resp.Header
	}
	valid := `{"apiVersion":"marina.example.com/v1alpha1","kind":"Boat","metadata":{"name":"%s"},"spec":{"dock":"north","lengthMeters":3}}`
	cases := []struct {
		name, method, url, contentType, body string
		code                                 int
		want                                 string
	}{
		{"malformed JSON", "POST", base, "application/json", `{"apiVersion":`, 400, ""},
		{"malformed YAML", "POST", base, "application/yaml", "apiVersion: [unclosed\n  kind: : Boat", 400, ""},
		{"wrong kind", "POST", base, "application/json", strings.Replace(valid, `"Boat"`, `"Dock"`, 1), 400, ""},
		{"wrong apiVersion", "POST", base, "application/json", strings.Replace(valid, "marina.example.com/v1alpha1", "marina.example.com/v9", 1), 400, ""},
		{"invalid object", "POST", base, "application/json", strings.Replace(valid, `"%s"`, `"Bad Name"`, 1), 422, "Invalid"},
		{"unknown field, strict", "POST", base + "?fieldValidation=Strict", "application/json",
			strings.Replace(strings.Replace(valid, "%s", "strict", 1), `"lengthMeters":3`, `"lengthMeters":3,"colour":"red"`, 1), 400, `unknown field \"spec.colour\"`},
		{"oversized body", "POST", base, "application/json", strings.Replace(strings.Replace(valid, "%s", "huge", 1), `"north"`, `"`+strings.Repeat("x", 4<<20)+`"`, 1), 413, ""},
		{"unsupported media type", "POST", base, "text/plain", "hello", 415, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body, _ := do(client, c.method, c.url, c.contentType, []byte(c.body))
			if code != c.code || !strings.Contains(body, c.want) {
				t.Errorf("got %d %s, want %d containing %q", code, cluster.Tail(body, 300), c.code, c.want)
			}
		})
	}
	t.Run("unknown field, warn", func(t *testing.T) {
		body := strings.Replace(strings.Replace(valid, "%s", "warned", 1), `"lengthMeters":3`, `"lengthMeters":3,"colour":"red"`, 1)
		code, resp, hdr := do(client, "POST", base+"?fieldValidation=Warn", "application/json", []byte(body))
		if code != 201 || !strings.Contains(hdr.Get("Warning"), "unknown field") {
			t.Errorf("got %d (warning %q) %s", code, hdr.Get("Warning"), cluster.Tail(resp, 200))
		}
	})
	t.Run("user without permission", func(t *testing.T) {
		files, err := localauth.FilesIn(localDir)
		if err != nil {
			t.Fatal(err)
		}
		certPEM, keyPEM, err := localauth.NewClientCert(files, "mallory", nil)
		if err != nil {
			t.Fatal(err)
		}
		mc := rest.AnonymousClientConfig(cfg)
		mc.CertData, mc.KeyData = certPEM, keyPEM
		c, err := rest.HTTPClientFor(mc)
		if err != nil {
			t.Fatal(err)
		}
		if code, body, _ := do(c, "GET", base, "", nil); code != 403 {
			t.Errorf("authenticated user outside system:masters: got %d %s, want 403", code, cluster.Tail(body, 200))
		}
	})
}
