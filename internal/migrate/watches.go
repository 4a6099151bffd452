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

// pollWatches polls the number of group's watches cfg's server serves (servedWatches)
// every 200 ms until done, given that number and how long it has not changed, says so;
// at most timeout. It reports on progress what done answers, or why it stopped waiting
// (a failed read, the timeout), and whether done was met. The waits below are best
// effort: their callers go on either way.
func pollWatches(ctx context.Context, cfg *rest.Config, group, what string, timeout time.Duration, progress io.Writer, done func(n int, stable time.Duration) (bool, string)) bool {
	deadline := time.Now().Add(timeout)
	last, since := -1, time.Now()
	for {
		n, err := servedWatches(ctx, cfg, group)
		if err != nil {
			fmt.Fprintf(progress, "not waiting for the watches of %s %s: %v\n", group, what, err)
			return false
		}
		if n != last {
			last, since = n, time.Now()
		}
		if ok, say := done(n, time.Since(since)); ok {
			if say != "" {
				fmt.Fprintln(progress, say)
			}
			return true
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(progress, "the watches of %s did not %s within %v (%d now)\n", group, what, timeout, n)
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// awaitWatchesSettled waits, while writes are still frozen, until the clients whose
// watches the generated server ended have watched again on the CRDs: until the number of
// the group's watches kube-apiserver serves has stopped changing for a second (a client
// that relists registers its watch after its list, so its cache is up to date then), or
// stayed 0 for three (no client), at most timeout. Lifting the freeze earlier let a
// controller act on its cache before it caught up: it recreated a ConfigMap of an owner
// deleted right after the rollback, again each time the garbage collector removed it.
// It counts what one kube-apiserver serves: with several, each poll may reach another.
func awaitWatchesSettled(ctx context.Context, cfg *rest.Config, group string, timeout time.Duration, progress io.Writer) {
	pollWatches(ctx, cfg, group, "settle on the CRDs", timeout, progress, func(n int, stable time.Duration) (bool, string) {
		return (n > 0 && stable >= time.Second) || (n == 0 && stable >= 3*time.Second),
			fmt.Sprintf("%d watches of %s served from the CRDs", n, group)
	})
}

// awaitWatchesEnded waits, while writes are still frozen, until kube-apiserver serves no
// watch of group from the CRDs any more (retireCRDs makes it end them once it has torn
// down their storage, a second after the change at least), at most timeout.
// kube-apiserver may take up to twice its request timeout to tear the storage down when
// requests to it are in flight. It reports whether they ended.
func awaitWatchesEnded(ctx context.Context, cfg *rest.Config, group string, timeout time.Duration, progress io.Writer) bool {
	return pollWatches(ctx, cfg, group, "end on the CRDs", timeout, progress, func(n int, _ time.Duration) (bool, string) {
		return n == 0, ""
	})
}

// awaitWatchesOnServer waits, while writes are still frozen, until the generated server
// (the replica cfg reaches) serves want watches of group, as many as kube-apiserver served
// from the CRDs before they ended, or the number it serves has not changed for two
// seconds (with several replicas, the clients spread over them), or for three when it is
// 0 (a plain watch that ended may not come back), at most timeout. As in
// awaitWatchesSettled, a client that relists registers its watch after its list. It
// reads the server's /metrics, which the migration's user may only when a rule grants
// the non-resource URL; without, the wait is skipped with a line on progress.
func awaitWatchesOnServer(ctx context.Context, cfg *rest.Config, group string, want int, timeout time.Duration, progress io.Writer) {
	pollWatches(ctx, cfg, group, "move to the generated server", timeout, progress, func(n int, stable time.Duration) (bool, string) {
		return n >= want || (n > 0 && stable >= 2*time.Second) || (n == 0 && stable >= 3*time.Second),
			fmt.Sprintf("%d watches of %s served by the generated server (%d were served from the CRDs)", n, group, want)
	})
}
