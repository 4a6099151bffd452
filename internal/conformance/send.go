package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"k8s.io/client-go/rest"
)

// Case is one request of the corpus (with the requests it needs first), sent to both servers.
type Case struct {
	// Kind, Name and Op identify the case: "Boat", "spec.dock MaxLength=63: 64 characters",
	// "merge-patch".
	Kind, Name, Op string
	// Steps are sent in order; the answers to the last one are compared, the ones before
	// must succeed (else the failing step's answer is compared).
	Steps []Step
	// Skip, when set, says why the case is not sent.
	Skip string
}

// ID is the case's name in the table and in the list of intended differences.
func (c *Case) ID() string { return c.Kind + " | " + c.Name + " | " + c.Op }

// Step is one HTTP request.
type Step struct {
	Method, Path, Query, ContentType string
	Body                             []byte
	// FromPrevious, when set, makes the body from the previous step's answer (an update of
	// the object just read).
	FromPrevious func(prev map[string]any) any
	// ContinueFromPrevious adds the previous answer's continue token to the query.
	ContinueFromPrevious bool
}

// server is one side of the comparison.
type server struct {
	name   string
	host   string
	client *http.Client
}

func newServer(name string, cfg *rest.Config) (*server, error) {
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &server{name: name, host: cfg.Host, client: c}, nil
}

// response is a raw answer.
type response struct {
	code     int
	body     map[string]any
	raw      string
	warnings []string
}

func (s *server) do(ctx context.Context, st Step, prev *response) (*response, error) {
	body := st.Body
	if st.FromPrevious != nil {
		if prev == nil || prev.body == nil {
			return nil, fmt.Errorf("no previous answer to build the body from")
		}
		body = jsonBody(st.FromPrevious(prev.body))
	}
	q := st.Query
	if st.ContinueFromPrevious && prev != nil {
		if md, ok := prev.body["metadata"].(map[string]any); ok {
			if c, ok := md["continue"].(string); ok && c != "" {
				if q != "" {
					q += "&"
				}
				q += "continue=" + url.QueryEscape(c)
			}
		}
	}
	u := s.host + st.Path
	if q != "" {
		u += "?" + q
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, st.Method, u, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "aagen-conformance")
	if st.ContentType != "" {
		req.Header.Set("Content-Type", st.ContentType)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	r := &response{code: resp.StatusCode, raw: string(data)}
	_ = json.Unmarshal(data, &r.body)
	for _, w := range resp.Header.Values("Warning") {
		r.warnings = append(r.warnings, w)
	}
	sort.Strings(r.warnings)
	return r, nil
}

// answer is what a server answered to a case: the last step's response, or the failure of
// a step before it.
type answer struct {
	failed string
	r      *response
}

// run sends a case's steps.
func (s *server) run(ctx context.Context, c *Case) answer {
	var prev *response
	for i, st := range c.Steps {
		r, err := s.do(ctx, st, prev)
		if err != nil {
			return answer{failed: fmt.Sprintf("step %d (%s %s): error: %v", i+1, st.Method, st.Path, err)}
		}
		if i < len(c.Steps)-1 && (r.code < 200 || r.code > 299) {
			return answer{failed: fmt.Sprintf("step %d (%s %s) failed: %s", i+1, st.Method, st.Path, describe(r))}
		}
		prev = r
	}
	return answer{r: prev}
}

func (a answer) String() string {
	if a.r == nil {
		return a.failed
	}
	return describe(a.r)
}

// rewritten is the answer with its body changed by f (on a copy).
func (a answer) rewritten(f func(map[string]any)) answer {
	if a.r == nil || a.r.body == nil {
		return a
	}
	r := *a.r
	r.body = deepCopy(a.r.body).(map[string]any)
	f(r.body)
	return answer{r: &r}
}

// describe renders an answer as compared: status code; for a Status, its reason, message,
// details and causes (sorted); for an object, the object normalized; warnings.
func describe(r *response) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", r.code)
	if r.body == nil {
		fmt.Fprintf(&b, " %q", strings.TrimSpace(r.raw))
	} else if r.body["kind"] == "Status" && r.body["apiVersion"] == "v1" {
		fmt.Fprintf(&b, " %v: %v", r.body["reason"], r.body["message"])
		if d, ok := r.body["details"].(map[string]any); ok {
			var causes []string
			if cs, ok := d["causes"].([]any); ok {
				for _, c := range cs {
					cm, _ := c.(map[string]any)
					causes = append(causes, fmt.Sprintf("%v %v: %v", cm["field"], cm["reason"], cm["message"]))
				}
			}
			sort.Strings(causes)
			fmt.Fprintf(&b, " (details name=%v group=%v kind=%v", d["name"], d["group"], d["kind"])
			for _, c := range causes {
				fmt.Fprintf(&b, "; cause %s", c)
			}
			b.WriteString(")")
		}
	} else {
		b.WriteString(" ")
		b.Write(jsonBody(normalize(r.body)))
	}
	for _, w := range r.warnings {
		fmt.Fprintf(&b, " [warning %s]", w)
	}
	return b.String()
}

// normalize replaces what differs between two servers for the same request by placeholders:
// uid, timestamps, resourceVersions, continue tokens, generated names, the times of
// managedFields.
func normalize(v any) any {
	o, ok := deepCopy(v).(map[string]any)
	if !ok {
		return v
	}
	normalizeMeta(o)
	if items, ok := o["items"].([]any); ok {
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				normalizeMeta(m)
			}
		}
	}
	return o
}

func normalizeMeta(o map[string]any) {
	md, ok := o["metadata"].(map[string]any)
	if !ok {
		return
	}
	for _, k := range []string{"uid", "creationTimestamp", "deletionTimestamp", "resourceVersion"} {
		if _, set := md[k]; set {
			md[k] = "<" + k + ">"
		}
	}
	if c, ok := md["continue"].(string); ok && c != "" {
		md["continue"] = "<continue>"
	}
	if g, ok := md["generateName"].(string); ok {
		if n, ok := md["name"].(string); ok && strings.HasPrefix(n, g) {
			md["name"] = g + "<generated>"
		}
	}
	if mfs, ok := md["managedFields"].([]any); ok {
		for _, mf := range mfs {
			if m, ok := mf.(map[string]any); ok {
				if _, set := m["time"]; set {
					m["time"] = "<time>"
				}
			}
		}
	}
}
