package conformance

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// watchServer answers a watch as a server of the collection /apis/g/v1/things does: two
// ADDED events, then, when bookmark is set, the BOOKMARK annotated
// k8s.io/initial-events-end, then nothing until the client goes away. A server without
// the bookmark is the broken one: a WatchList against it never ends its initial events.
func watchServer(t *testing.T, bookmark bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "true" || r.URL.Query().Get("sendInitialEvents") != "true" {
			http.Error(w, "want a WatchList", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		for _, name := range []string{"a", "b"} {
			_ = enc.Encode(map[string]any{"type": "ADDED", "object": map[string]any{"apiVersion": "g/v1", "kind": "Thing",
				"metadata": map[string]any{"name": name, "resourceVersion": "7"}}})
		}
		// A periodic bookmark, without the annotation: not the end of the initial events.
		_ = enc.Encode(map[string]any{"type": "BOOKMARK", "object": map[string]any{"apiVersion": "g/v1", "kind": "Thing",
			"metadata": map[string]any{"resourceVersion": "7"}}})
		if bookmark {
			_ = enc.Encode(map[string]any{"type": "BOOKMARK", "object": map[string]any{"apiVersion": "g/v1", "kind": "Thing",
				"metadata": map[string]any{"resourceVersion": "8", "annotations": map[string]any{initialEventsEndAnnotation: "true"}}}})
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestWatchListWithoutInitialEventsEnd drives the corpus's WatchList case (watchListStep,
// read and checked by the same code as in a run) against a server that answers it without
// the initial-events-end bookmark: the answer is a protocol violation, and the comparison
// records it as a difference that is not listed, against a CRD that sends the bookmark and
// also when the other side lacks it too. A server that sends it passes.
func TestWatchListWithoutInitialEventsEnd(t *testing.T) {
	ctx := context.Background()
	c := &Case{Kind: "Thing", Name: "WatchList", Op: "watch", Steps: []Step{watchListStep("/apis/g/v1/things", "labelSelector=x%3Dyes")}}
	side := func(srv *httptest.Server) *server {
		return &server{name: "test", host: srv.URL, client: srv.Client(), watchTimeout: 2 * time.Second}
	}
	good := side(watchServer(t, true)).run(ctx, c)
	broken := side(watchServer(t, false)).run(ctx, c)

	if v := good.violation(); v != "" {
		t.Fatalf("a WatchList with its initial-events-end bookmark: violation %q", v)
	}
	if got := good.String(); !strings.HasSuffix(got, "BOOKMARK "+initialEventsEndAnnotation) || strings.Count(got, "ADDED") != 2 {
		t.Errorf("a WatchList with its bookmark reads as %q; want two ADDED events, then the bookmark", got)
	}
	if v := broken.violation(); !strings.Contains(v, "no BOOKMARK annotated k8s.io/initial-events-end after the initial events") {
		t.Fatalf("a WatchList without the initial-events-end bookmark: violation %q; want the missing bookmark reported", v)
	}

	res := &Result{ListedSeen: map[string]int{}}
	res.compare(c.ID(), broken, good, Intended)
	res.compare(c.ID(), broken, broken, Intended)
	res.compare(c.ID(), good, good, Intended)
	res.compare(c.ID(), broken, broken, []IntendedDifference{{Name: "everything", Case: ".*"}})
	if res.Cases != 4 || res.Equal != 1 || len(res.Unlisted) != 3 {
		t.Errorf("%d cases, %d equal, %d unlisted; want 4, 1 (both with the bookmark) and 3: a missing bookmark is never equal nor listed", res.Cases, res.Equal, len(res.Unlisted))
	}
	for _, d := range res.Unlisted {
		if !strings.Contains(d.AAGen, "PROTOCOL VIOLATION") {
			t.Errorf("the difference shows the generated server's answer as %q; want the violation named", d.AAGen)
		}
	}
}
