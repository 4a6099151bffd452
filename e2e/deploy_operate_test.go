package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// Bounds of operateDeployedServer, from runs on the 2-core CI machine (docs/reliability.md).
const (
	// rolloutFailedWritesBound is how many creates may fail while a rolling update replaces
	// both server Pods: none, since the old Pods keep serving through their shutdown delay
	// while kube-proxy stops sending them connections.
	rolloutFailedWritesBound = 0
	// killFailedWritesBound is how many creates (one every 100 ms) may fail after a server
	// Pod is killed: those in flight at the Pod and those sent to its address before
	// kube-proxy removes it.
	killFailedWritesBound = 30
	// killRecoveryBound is how long two server Pods may take to be Ready again after one is
	// killed.
	killRecoveryBound = 90 * time.Second
)

// deployLoad is a steady load on the deployed server through kube-apiserver: a writer that
// creates a Boat every 100 ms, a watcher that follows the Boats from the resourceVersion it
// last saw whenever its watch ends, and a poller of the APIServices' Available condition.
type deployLoad struct {
	mu sync.Mutex
	// acked are the Boats whose create was answered 201, ackedIn how many of them were sent
	// in each phase (a create sent before a fault and answered after it counts for the phase
	// before); failed the create errors, each with the phase it was answered in.
	acked   []string
	ackedIn map[string]int
	// firstAckIn is when the first create sent in each phase was acknowledged.
	firstAckIn map[string]time.Time
	failed     []string
	// seen are the Boats the watcher saw added; expired the watches that ended with 410;
	// watches says when each watch started and how it ended.
	seen    map[string]bool
	expired int
	watches []string
	// unavailable are the APIService observations that were not Available, with the phase.
	unavailable []string
	phase       string

	cancel context.CancelFunc
	done   sync.WaitGroup
}

func (l *deployLoad) setPhase(p string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.phase = p
}

// acknowledged is how many creates sent in phase were acknowledged, and when the first was.
func (l *deployLoad) acknowledged(phase string) (int, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ackedIn[phase], l.firstAckIn[phase]
}

// failures is how many creates failed in phase.
func (l *deployLoad) failures(phase string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, f := range l.failed {
		if strings.HasPrefix(f, phase+": ") {
			out = append(out, f)
		}
	}
	return out
}

// startDeployLoad starts the load; the Boats it creates are named prefix-0, prefix-1, ...
func startDeployLoad(t *testing.T, ctx context.Context, dyn dynamic.Interface, boats schema.GroupVersionResource, apiservices []string, prefix string) *deployLoad {
	t.Helper()
	list, err := dyn.Resource(boats).Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &deployLoad{seen: map[string]bool{}, ackedIn: map[string]int{}, firstAckIn: map[string]time.Time{}, phase: "steady", cancel: cancel}
	l.done.Add(3)
	go func() {
		defer l.done.Done()
		for i := 0; ctx.Err() == nil; i++ {
			name := fmt.Sprintf("%s-%d", prefix, i)
			l.mu.Lock()
			sentIn := l.phase
			l.mu.Unlock()
			_, err := dyn.Resource(boats).Namespace("default").Create(ctx, boat(name, nil, 10), metav1.CreateOptions{})
			l.mu.Lock()
			switch {
			case err == nil:
				l.acked = append(l.acked, name)
				if l.ackedIn[sentIn]++; l.ackedIn[sentIn] == 1 {
					l.firstAckIn[sentIn] = time.Now()
				}
			case ctx.Err() == nil:
				l.failed = append(l.failed, fmt.Sprintf("%s: %s at %s: %v", l.phase, name, time.Now().Format("15:04:05.000"), err))
			}
			l.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	go func() {
		defer l.done.Done()
		rv := list.GetResourceVersion()
		note := func(format string, args ...any) {
			l.mu.Lock()
			l.watches = append(l.watches, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
			l.mu.Unlock()
		}
		for ctx.Err() == nil {
			note("watch from %s", rv)
			w, err := dyn.Resource(boats).Namespace("default").Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				note("watch refused: %v", err)
				if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
					l.mu.Lock()
					l.expired++
					l.mu.Unlock()
				}
				time.Sleep(200 * time.Millisecond)
				continue
			}
			events := 0
			for ev := range w.ResultChan() {
				events++
				if ev.Type == watch.Error {
					note("error event: %v", apierrors.FromObject(ev.Object))
					if s := apierrors.FromObject(ev.Object); apierrors.IsResourceExpired(s) || apierrors.IsGone(s) {
						l.mu.Lock()
						l.expired++
						l.mu.Unlock()
					}
					break
				}
				o, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				rv = o.GetResourceVersion()
				if ev.Type == watch.Added {
					l.mu.Lock()
					l.seen[o.GetName()] = true
					l.mu.Unlock()
				}
			}
			note("watch ended after %d events", events)
			w.Stop()
		}
	}()
	go func() {
		defer l.done.Done()
		apiserviceGVR := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
		for ctx.Err() == nil {
			for _, name := range apiservices {
				as, err := dyn.Resource(apiserviceGVR).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					continue
				}
				conds, _, _ := unstructured.NestedSlice(as.Object, "status", "conditions")
				for _, c := range conds {
					if m := c.(map[string]any); m["type"] == "Available" && m["status"] != "True" {
						l.mu.Lock()
						l.unavailable = append(l.unavailable, fmt.Sprintf("%s: %s at %s: %v: %v", l.phase, name, time.Now().Format("15:04:05.000"), m["reason"], m["message"]))
						l.mu.Unlock()
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return l
}

// missing are the acknowledged creates not in stored (lost) and those the watcher did not
// see (unseen).
func (l *deployLoad) missing(stored map[string]bool) (lost, unseen []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, name := range l.acked {
		if !stored[name] {
			lost = append(lost, name)
		}
		if !l.seen[name] {
			unseen = append(unseen, name)
		}
	}
	return lost, unseen
}

// listedBoats are the names of the Boats of namespace default, listed through dyn.
func listedBoats(t *testing.T, ctx context.Context, dyn dynamic.Interface, boats schema.GroupVersionResource) map[string]bool {
	t.Helper()
	list, err := dyn.Resource(boats).Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for _, o := range list.Items {
		stored[o.GetName()] = true
	}
	return stored
}

// stop ends the load and waits for its goroutines; calling it again does nothing more.
func (l *deployLoad) stop() {
	l.cancel()
	l.done.Wait()
}

// operateDeployedServer runs the deployed server through what operating it brings, under a
// steady write and watch load through kube-apiserver (deployLoad): a rolling update of the
// server Deployment (`kubectl rollout restart`), then one server Pod killed (deleted with no
// grace period: its container gets SIGKILL). Then every acknowledged create must be stored
// (0 lost), the watcher must have seen each and never got 410 Gone, the rolling update may
// fail at most rolloutFailedWritesBound creates and leave the APIServices Available, and the
// kill at most killFailedWritesBound creates, with both Pods Ready again within
// killRecoveryBound.
func operateDeployedServer(t *testing.T, ctx context.Context, kubeconfig string, kube kubernetes.Interface, dyn dynamic.Interface,
	ns, deployment, selector string, boats schema.GroupVersionResource, apiservices []string) {
	t.Helper()
	load := startDeployLoad(t, ctx, dyn, boats, apiservices, "load")
	defer load.stop()
	time.Sleep(3 * time.Second)

	before, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	load.setPhase("rollout")
	start := time.Now()
	if out, err := kubectl(t, kubeconfig, "", "-n", ns, "rollout", "restart", "deployment/"+deployment); err != nil {
		t.Fatalf("kubectl rollout restart: %v\n%s", err, out)
	}
	if out, err := kubectl(t, kubeconfig, "", "-n", ns, "rollout", "status", "deployment/"+deployment, "--timeout=55s"); err != nil {
		pods, _ := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		t.Fatalf("kubectl rollout status: %v\n%s\n%s", err, out, describePods(pods))
	}
	rollout := time.Since(start)
	// The old Pods drain after the rollout reports success: keep the load on through it.
	time.Sleep(15 * time.Second)
	t.Logf("rolling update of deployment/%s done in %s", deployment, rollout.Round(100*time.Millisecond))

	load.setPhase("kill")
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("listing the server Pods: %v", err)
	}
	// The fault happened: no Pod of before the rolling update is left.
	for _, old := range before.Items {
		for _, p := range pods.Items {
			if p.Name == old.Name {
				t.Fatalf("Pod %s of before the rolling update still exists after it:\n%s", p.Name, describePods(pods))
			}
		}
	}
	// The victim is a Pod of the rollout's ReplicaSet, Ready (the old ones may still be
	// terminating).
	victim := ""
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && podReady(&p) {
			victim = p.Name
			break
		}
	}
	if victim == "" {
		t.Fatalf("no Ready server Pod to kill:\n%s", describePods(pods))
	}
	zero := int64(0)
	start = time.Now()
	if err := kube.CoreV1().Pods(ns).Delete(ctx, victim, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	var readyPods *corev1.PodList
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, false, func(ctx context.Context) (bool, error) {
		readyPods, err = kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, p := range readyPods.Items {
			if p.Name != victim && p.DeletionTimestamp == nil && podReady(&p) {
				ready++
			}
		}
		return ready == 2, nil
	}); err != nil {
		t.Fatalf("two server Pods not Ready within 3 minutes of killing %s:\n%s", victim, describePods(readyPods))
	}
	recovery := time.Since(start)
	t.Logf("server Pod %s killed; two Pods Ready again after %s", victim, recovery.Round(100*time.Millisecond))
	time.Sleep(5 * time.Second)
	load.stop()

	// Every acknowledged create is stored, and the watcher saw it.
	lost, unseen := load.missing(listedBoats(t, ctx, dyn, boats))
	sort.Strings(lost)
	watches := 0
	for _, w := range load.watches {
		if strings.Contains(w, " watch from ") {
			watches++
		}
	}
	t.Logf("load: %d creates acknowledged, %d failed (rollout %d, kill %d); %d lost; watcher saw %d in %d watches, %d ended with 410; APIService not Available in %d of its polls",
		len(load.acked), len(load.failed), len(load.failures("rollout")), len(load.failures("kill")), len(lost), len(load.seen), watches, load.expired, len(load.unavailable))
	// The watch open before the rolling update was served by a Pod it replaced: it must have
	// ended (the server ends watches when it shuts down) and been resumed.
	if watches < 2 {
		t.Errorf("the watcher's first watch never ended, though the Pod serving it was replaced:\n%s", strings.Join(load.watches, "\n"))
	}
	if len(lost) > 0 {
		t.Errorf("%d acknowledged creates are not stored: %v", len(lost), lost)
	}
	if len(unseen) > 0 {
		t.Errorf("the watcher never saw %d acknowledged creates: %v\nits watches:\n%s", len(unseen), unseen, strings.Join(load.watches, "\n"))
	}
	if load.expired > 0 {
		t.Errorf("%d watches resumed from their last resourceVersion ended with 410 Gone", load.expired)
	}
	if f := load.failures("steady"); len(f) > 0 {
		t.Errorf("%d creates failed before any fault: %v", len(f), f)
	}
	if f := load.failures("rollout"); len(f) > rolloutFailedWritesBound {
		t.Errorf("%d creates failed during the rolling update (bound %d): %v", len(f), rolloutFailedWritesBound, f)
	}
	if f := load.failures("kill"); len(f) > killFailedWritesBound {
		t.Errorf("%d creates failed after a server Pod was killed (bound %d): %v", len(f), killFailedWritesBound, f)
	}
	var rolloutUnavailable []string
	for _, u := range load.unavailable {
		if !strings.HasPrefix(u, "kill: ") {
			rolloutUnavailable = append(rolloutUnavailable, u)
		}
	}
	if len(rolloutUnavailable) > 0 {
		t.Errorf("an APIService left Available during the rolling update: %v", rolloutUnavailable)
	}
	if len(load.unavailable) > 0 {
		t.Logf("APIService not Available after the kill: %v", load.unavailable)
	}
	if recovery > killRecoveryBound {
		t.Errorf("two server Pods Ready again %s after one was killed (bound %s)", recovery.Round(time.Second), killRecoveryBound)
	}
}
