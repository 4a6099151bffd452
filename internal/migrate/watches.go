package migrate

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// servedWatches counts the watches of group kube-apiserver serves itself, from the CRDs:
// the sum of its gauge apiserver_longrunning_requests for verb WATCH and the group
// (component apiserver; the aggregator's proxied watches are not in it).
// The generated server has the same gauge (k8s.io/apiserver's) for the watches it serves.
func servedWatches(ctx context.Context, cfg *rest.Config, group string) (int, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading %s/metrics: %w", cfg.Host, err)
	}
	return countWatches(bytes.NewReader(raw), group)
}

// countWatches sums the samples of apiserver_longrunning_requests for verb WATCH, group
// and component apiserver in a Prometheus text exposition.
func countWatches(r io.Reader, group string) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	total := 0.0
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_longrunning_requests{") {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		if end < 0 {
			continue
		}
		labels := line[len("apiserver_longrunning_requests{"):end]
		if !strings.Contains(labels, `verb="WATCH"`) || !strings.Contains(labels, `group="`+group+`"`) || !strings.Contains(labels, `component="apiserver"`) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			return 0, fmt.Errorf("the sample %q: %w", line, err)
		}
		total += v
	}
	return int(total), sc.Err()
}

// awaitWatchesSettled waits, while writes are still frozen, until the clients whose
// watches the generated server ended have watched again on the CRDs: until the number of
// the group's watches kube-apiserver serves has stopped changing for a second (a client
// that relists registers its watch after its list, so its cache is up to date then), or
// stayed 0 for three (no client), at most timeout. Lifting the freeze earlier let a
// controller act on its cache before it caught up: it recreated a ConfigMap of an owner
// deleted right after the rollback, again each time the garbage collector removed it. It
// The wait is best effort (an error or the timeout is reported on progress, not returned),
// and it counts what one kube-apiserver serves: with several, each poll may reach another.
func awaitWatchesSettled(ctx context.Context, cfg *rest.Config, group string, timeout time.Duration, progress io.Writer) {
	deadline := time.Now().Add(timeout)
	last, since := -1, time.Now()
	for {
		n, err := servedWatches(ctx, cfg, group)
		if err != nil {
			fmt.Fprintf(progress, "not waiting for the watches of %s to move to the CRDs: %v\n", group, err)
			return
		}
		if n != last {
			last, since = n, time.Now()
		}
		stable := time.Since(since)
		if (n > 0 && stable >= time.Second) || (n == 0 && stable >= 3*time.Second) {
			fmt.Fprintf(progress, "%d watches of %s served from the CRDs\n", n, group)
			return
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(progress, "the watches of %s served from the CRDs did not settle within %v (%d now)\n", group, timeout, n)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// awaitWatchesEnded waits, while writes are still frozen, until kube-apiserver serves no
// watch of group from the CRDs any more (retireCRDs makes it end them once it has torn
// down their storage, a second after the change at least), at most timeout; their
// clients then watch the generated server. Best effort, as awaitWatchesSettled; it does
// not wait for those clients to watch the server (the server's watches are not in
// kube-apiserver's metrics). kube-apiserver may take up to twice its request timeout to
// tear the storage down when requests to it are in flight; after timeout the wait ends
// with a line on progress.
func awaitWatchesEnded(ctx context.Context, cfg *rest.Config, group string, timeout time.Duration, progress io.Writer) bool {
	deadline := time.Now().Add(timeout)
	for {
		n, err := servedWatches(ctx, cfg, group)
		if err != nil {
			fmt.Fprintf(progress, "not waiting for the watches of %s on the CRDs to end: %v\n", group, err)
			return false
		}
		if n == 0 {
			return true
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(progress, "%d watches of %s served from the CRDs did not end within %v\n", n, group, timeout)
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// awaitWatchesOnServer waits, while writes are still frozen, until the generated server
// (the replica cfg reaches) serves want watches of group, as many as kube-apiserver served
// from the CRDs before they ended, or the number it serves has not changed for two
// seconds (with several replicas, the clients spread over them; three when it is 0), at
// most timeout. As in
// awaitWatchesSettled, a client that relists registers its watch after its list. It
// reads the server's /metrics, which the migration's user may only when a rule grants
// the non-resource URL; without, the wait is skipped with a line on progress.
func awaitWatchesOnServer(ctx context.Context, cfg *rest.Config, group string, want int, timeout time.Duration, progress io.Writer) {
	deadline := time.Now().Add(timeout)
	last, since := -1, time.Now()
	for {
		n, err := servedWatches(ctx, cfg, group)
		if err != nil {
			fmt.Fprintf(progress, "not waiting for the watches of %s to move to the generated server: %v\n", group, err)
			return
		}
		if n != last {
			last, since = n, time.Now()
		}
		// A client whose watch ended may not come back (a plain watch, not an informer):
		// 0 for three seconds ends the wait too.
		if stable := time.Since(since); n >= want || (n > 0 && stable >= 2*time.Second) || (n == 0 && stable >= 3*time.Second) {
			fmt.Fprintf(progress, "%d watches of %s served by the generated server (%d were served from the CRDs)\n", n, group, want)
			return
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(progress, "the watches of %s did not move to the generated server within %v (%d of %d)\n", group, timeout, n, want)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}
