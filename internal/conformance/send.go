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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// ResourceVersionFrom, when set, adds resourceVersion=<the metadata.resourceVersion of
	// the answer to step ResourceVersionFrom-1> to the query (a list or watch from the
	// resourceVersion an earlier write answered with).
	ResourceVersionFrom int
	// Watch, when set, makes the request a watch: its events are read (see WatchRead).
	Watch *WatchRead
}

// WatchRead says how much of a watch stream to read and what it must hold. Reading stops
// at an ERROR event, when the server ends the stream, after Events events (ADDED, MODIFIED,
// DELETED), or, with InitialEventsEnd, at the bookmark that ends the initial events; else
// after the server's watch timeout.
type WatchRead struct {
	// Events is how many ADDED, MODIFIED or DELETED events to read; 0 reads until the
	// initial-events-end bookmark (with InitialEventsEnd) or the timeout.
	Events int
	// InitialEventsEnd demands, as a WatchList (sendInitialEvents=true) does, a BOOKMARK
	// event annotated k8s.io/initial-events-end: "true" after the initial events: an
	// informer that lists by watching waits for it before it reports itself synced, so a
	// server that never sends it hangs every such client. Its absence is a protocol
	// violation, reported as a difference even when the other server lacks it too.
	InitialEventsEnd bool
}

// initialEventsEndAnnotation is the annotation of the bookmark that ends a WatchList's
// initial events (metav1.InitialEventsAnnotationKey).
const initialEventsEndAnnotation = metav1.InitialEventsAnnotationKey

// server is one side of the comparison.
type server struct {
	name   string
	host   string
	client *http.Client
	// watchTimeout bounds the reading of a watch (defaultWatchTimeout when 0).
	watchTimeout time.Duration
}

// defaultWatchTimeout is how long a watch is read at most: a WatchList of a few objects
// ends its initial events within milliseconds on both servers.
const defaultWatchTimeout = 15 * time.Second

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
	// watch is set for the answer to a watch (Step.Watch) that the server accepted; events
	// are the events read, in order.
	watch  bool
	events []watchEvent
	// violation, when set, is the protocol rule the answer breaks (a WatchList without its
	// initial-events-end bookmark).
	violation string
}

// watchEvent is one event of a watch stream.
type watchEvent struct {
	Type   string         `json:"type"`
	Object map[string]any `json:"object"`
}

// do sends one step; prev is the answer to the step before it, earlier all the answers so
// far (for ResourceVersionFrom).
func (s *server) do(ctx context.Context, st Step, prev *response, earlier ...*response) (*response, error) {
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
	if st.ResourceVersionFrom > 0 {
		if st.ResourceVersionFrom > len(earlier) || earlier[st.ResourceVersionFrom-1].body == nil {
			return nil, fmt.Errorf("no answer of step %d to take the resourceVersion from", st.ResourceVersionFrom)
		}
		md, _ := earlier[st.ResourceVersionFrom-1].body["metadata"].(map[string]any)
		rv, _ := md["resourceVersion"].(string)
		if q != "" {
			q += "&"
		}
		q += "resourceVersion=" + url.QueryEscape(rv)
	}
	if st.Watch != nil {
		timeout := s.watchTimeout
		if timeout == 0 {
			timeout = defaultWatchTimeout
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
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
	if st.Watch != nil && resp.StatusCode == http.StatusOK {
		return readWatch(ctx, resp, *st.Watch), nil
	}
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

// readWatch reads the events of a watch's stream as w says, and checks the protocol: a
// WatchList's initial events end with the initial-events-end bookmark.
func readWatch(ctx context.Context, resp *http.Response, w WatchRead) *response {
	r := &response{code: resp.StatusCode, watch: true}
	for _, h := range resp.Header.Values("Warning") {
		r.warnings = append(r.warnings, h)
	}
	sort.Strings(r.warnings)
	dec := json.NewDecoder(resp.Body)
	counted := 0
	for {
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			end := "the server ended the stream"
			if ctx.Err() != nil {
				end = "no more events within the watch timeout"
			} else if err != io.EOF {
				end = "the stream broke: " + err.Error()
			}
			if w.InitialEventsEnd {
				r.violation = fmt.Sprintf("no BOOKMARK annotated %s after the initial events (%s): a client that lists by watching never syncs", initialEventsEndAnnotation, end)
			} else if w.Events > 0 {
				r.violation = fmt.Sprintf("%d of %d events (%s)", counted, w.Events, end)
			}
			return r
		}
		switch ev.Type {
		case "BOOKMARK":
			md, _ := ev.Object["metadata"].(map[string]any)
			ann, _ := md["annotations"].(map[string]any)
			if ann[initialEventsEndAnnotation] != "true" {
				continue // periodic bookmarks come when the server likes: not compared
			}
			r.events = append(r.events, ev)
			if w.InitialEventsEnd {
				return r
			}
		case "ERROR":
			r.events = append(r.events, ev)
			return r
		default:
			r.events = append(r.events, ev)
			counted++
			if w.Events > 0 && counted == w.Events && !w.InitialEventsEnd {
				return r
			}
		}
	}
}

// run sends a case's steps.
func (s *server) run(ctx context.Context, c *Case) answer {
	var prev *response
	var earlier []*response
	for i, st := range c.Steps {
		r, err := s.do(ctx, st, prev, earlier...)
		if err != nil {
			return answer{failed: fmt.Sprintf("step %d (%s %s): error: %v", i+1, st.Method, st.Path, err)}
		}
		if i < len(c.Steps)-1 && (r.code < 200 || r.code > 299) {
			return answer{failed: fmt.Sprintf("step %d (%s %s) failed: %s", i+1, st.Method, st.Path, describe(r))}
		}
		prev = r
		earlier = append(earlier, r)
	}
	return answer{r: prev}
}

func (a answer) String() string {
	if a.r == nil {
		return a.failed
	}
	return describe(a.r)
}

// violation is the protocol rule the answer breaks, or "".
func (a answer) violation() string {
	if a.r == nil {
		return ""
	}
	return a.r.violation
}

// rewritten is the answer with its body changed by f (on a copy).
// A watch's answer has each event's object changed.
func (a answer) rewritten(f func(map[string]any)) answer {
	if a.r == nil {
		return a
	}
	r := *a.r
	if r.watch {
		r.events = nil
		for _, ev := range a.r.events {
			if ev.Type != "BOOKMARK" && ev.Type != "ERROR" && ev.Object != nil {
				ev.Object = deepCopy(ev.Object).(map[string]any)
				f(ev.Object)
			}
			r.events = append(r.events, ev)
		}
		return answer{r: &r}
	}
	if a.r.body == nil {
		return a
	}
	r.body = deepCopy(a.r.body).(map[string]any)
	f(r.body)
	return answer{r: &r}
}

// describe renders an answer as compared: status code; for a Status, its reason, message,
// details and causes (sorted); for an object, the object normalized; warnings.
func describe(r *response) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", r.code)
	if r.watch {
		describeEvents(&b, r)
	} else if r.body == nil {
		fmt.Fprintf(&b, " %q", strings.TrimSpace(r.raw))
	} else if r.body["kind"] == "Status" && r.body["apiVersion"] == "v1" {
		msg, _ := r.body["message"].(string)
		if d, ok := r.body["details"].(map[string]any); ok && d["causes"] != nil {
			// An Invalid's message lists its errors in the order validation found them,
			// which follows Go map order on both servers; the causes below say the same,
			// sorted.
			if head, _, ok := strings.Cut(msg, " is invalid: ["); ok && strings.HasSuffix(msg, "]") {
				msg = head + " is invalid: [the causes below]"
			}
		}
		var name any
		if d, ok := r.body["details"].(map[string]any); ok {
			name = d["name"]
			// A refused generateName create names the name it generated, a random one on
			// each server: <generated>, as normalizeMeta writes it in an object.
			if n, ok := name.(string); ok && strings.HasPrefix(n, generatedPrefix) && len(n) == len(generatedPrefix)+5 {
				name = generatedPrefix + "<generated>"
				msg = strings.ReplaceAll(msg, n, generatedPrefix+"<generated>")
			}
		}
		fmt.Fprintf(&b, " %v: %v", r.body["reason"], msg)
		if d, ok := r.body["details"].(map[string]any); ok {
			var causes []string
			if cs, ok := d["causes"].([]any); ok {
				for _, c := range cs {
					cm, _ := c.(map[string]any)
					causes = append(causes, fmt.Sprintf("%v %v: %v", cm["field"], cm["reason"], cm["message"]))
				}
			}
			sort.Strings(causes)
			fmt.Fprintf(&b, " (details name=%v group=%v kind=%v", name, d["group"], d["kind"])
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

// describeEvents renders the events a watch read: ADDED, MODIFIED and DELETED with their
// object normalized, an ERROR by its code and reason (its message names resourceVersions,
// which differ between the servers), the bookmark that ends the initial events by its
// annotation; then the protocol violation.
func describeEvents(b *strings.Builder, r *response) {
	for _, ev := range r.events {
		switch ev.Type {
		case "BOOKMARK":
			fmt.Fprintf(b, " BOOKMARK %s", initialEventsEndAnnotation)
		case "ERROR":
			fmt.Fprintf(b, " ERROR %v %v", ev.Object["code"], ev.Object["reason"])
		default:
			fmt.Fprintf(b, " %s ", ev.Type)
			b.Write(jsonBody(normalize(ev.Object)))
		}
	}
	if r.violation != "" {
		fmt.Fprintf(b, " PROTOCOL VIOLATION: %s", r.violation)
	}
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
