package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/aagen-dev/aagen/e2e/cluster"
	"github.com/aagen-dev/aagen/internal/gocmd"
)

// testSubresources checks Boat's imperative subresources (action depart, view berth, stream
// log, connection attach) through kube-apiserver's aggregator, with delegated authentication
// and authorization, and ends the generated server with a followed stream open. It runs as
// the last subtest of TestAggregation, after the RoleBindings of alice (edit) and victor
// (view) in ns exist.
func testSubresources(t *testing.T, ctx context.Context, cp *cluster.ControlPlane, backend *cluster.Backend, dir, ns string) {
	boatsPath := "/apis/marina.example.com/v1alpha1/namespaces/" + ns + "/boats"
	kube := kubernetes.NewForConfigOrDie(cp.Admin)

	t.Run("discovery", func(t *testing.T) {
		list, err := kube.Discovery().ServerResourcesForGroupVersion("marina.example.com/v1alpha1")
		if err != nil {
			t.Fatal(err)
		}
		verbs := map[string]string{}
		for _, r := range list.APIResources {
			verbs[r.Name] = strings.Join(r.Verbs, ",")
		}
		for name, want := range map[string]string{"boats/depart": "create", "boats/berth": "get,patch,update", "boats/log": "get", "boats/attach": "get,create"} {
			if got, ok := verbs[name]; !ok || !sameSet(got, want) {
				t.Errorf("discovery of %s through kube-apiserver: verbs %q (listed: %v), want %q", name, got, ok, want)
			}
		}
	})

	// The generated client's Depart, GetBerth and UpdateBerth, the REST client's stream and
	// the websocket executor, from the example's own test, against kube-apiserver.
	t.Run("generated client through kube-apiserver", func(t *testing.T) {
		runExampleTest(t, ctx, cp, dir, ns, "TestSubresources")
	})

	dyn := dynamic.NewForConfigOrDie(cp.Admin)
	boatsGVR := schema.GroupVersionResource{Group: "marina.example.com", Version: "v1alpha1", Resource: "boats"}
	if _, err := dyn.Resource(boatsGVR).Namespace(ns).Create(ctx, boat("kestrel", nil, 11), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("kubectl create --raw runs the action", func(t *testing.T) {
		body := filepath.Join(t.TempDir(), "departure.json")
		if err := os.WriteFile(body, []byte(`{"apiVersion":"marina.example.com/v1alpha1","kind":"DepartureRequest","destination":"Falmouth"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := kubectl(t, cp.Kubeconfig, "", "create", "--raw", boatsPath+"/kestrel/depart", "-f", body)
		if err != nil || !strings.Contains(out, `"phase":"Departed"`) || !strings.Contains(out, "bound for Falmouth") {
			t.Fatalf("kubectl create --raw .../depart: %v\n%s", err, out)
		}
		if out, err := kubectl(t, cp.Kubeconfig, "", "create", "--raw", boatsPath+"/kestrel/depart", "-f", body); err == nil || !strings.Contains(out, "already departed") {
			t.Errorf("second departure: want a Conflict, got %v\n%s", err, out)
		}
	})

	// A ValidatingAdmissionPolicy on boats/depart (CREATE of the body) is enforced by the
	// generated server's admission: kube-apiserver only proxies aggregated requests.
	t.Run("admission runs on the action", func(t *testing.T) {
		name := "no-departures-to-atlantis"
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptrTo(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{"marina.example.com"}, APIVersions: []string{"*"}, Resources: []string{"boats/depart"}},
					},
				}}},
				Validations: []admissionregistrationv1.Validation{{Expression: "object.destination != 'Atlantis'", Message: "Atlantis is not on the chart"}},
			},
		}
		if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
		}
		if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Resource(boatsGVR).Namespace(ns).Create(ctx, boat("petrel", nil, 6), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		depart := func(to string, dryRun bool) error {
			req := kube.CoreV1().RESTClient().Post().AbsPath(boatsPath, "petrel", "depart").SetHeader("Content-Type", "application/json").
				Body([]byte(`{"apiVersion":"marina.example.com/v1alpha1","kind":"DepartureRequest","destination":"` + to + `"}`))
			if dryRun {
				req = req.Param("dryRun", "All")
			}
			return req.Do(ctx).Error()
		}
		// The server's policy informer picks the policy up within seconds; until then the
		// dry runs succeed and change nothing.
		var err error
		if werr := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			err = depart("Atlantis", true)
			return err != nil, nil
		}); werr != nil || !strings.Contains(err.Error(), "Atlantis is not on the chart") {
			t.Fatalf("departure to Atlantis: want the policy's denial, got %v", err)
		}
		if err := depart("Atlantis", false); err == nil || !strings.Contains(err.Error(), "Atlantis is not on the chart") {
			t.Errorf("departure to Atlantis: want the policy's denial, got %v", err)
		}
		if err := depart("Cork", false); err != nil {
			t.Errorf("departure to Cork: %v", err)
		}
	})

	t.Run("kubectl get --raw follows the log until it is closed", func(t *testing.T) {
		kctx, stop := context.WithCancel(ctx)
		defer stop()
		cmd := exec.CommandContext(kctx, cluster.KubeBinary(t, "kubectl"), "--kubeconfig", cp.Kubeconfig, "get", "--raw", boatsPath+"/kestrel/log?follow=true")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		lines := readLines(stdout, "watch bell 2")
		select {
		case got := <-lines:
			if !strings.HasPrefix(got[0], "logbook of kestrel") || !strings.Contains(strings.Join(got, "\n"), "Departed: bound for Falmouth") {
				t.Errorf("kubectl get --raw log: %q", got)
			}
		case <-time.After(time.Minute):
			t.Fatalf("no second watch bell from kubectl get --raw ...log?follow=true; stderr: %s", stderr.String())
		}
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			t.Fatalf("kubectl ended a followed stream by itself: %v %s", err, stderr.String())
		case <-time.After(time.Second):
		}
		stop()
		<-exited
		// The generated server sees the client go away: its open log streams go back to 0.
		admin := cp.PKI.FrontProxy(backend, "admin", "system:masters")
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			return openStreams(t, admin, "log") == 0, nil
		}); err != nil {
			t.Errorf("the generated server still serves %v log stream(s) after the client closed", openStreams(t, admin, "log"))
		}
	})

	t.Run("client-go follows the log until it closes", func(t *testing.T) {
		sctx, stop := context.WithCancel(ctx)
		defer stop()
		body, err := kube.CoreV1().RESTClient().Get().AbsPath(boatsPath, "kestrel", "log").Param("follow", "true").Stream(sctx)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-readLines(body, "watch bell 1"):
			if !strings.HasPrefix(got[0], "logbook of kestrel") {
				t.Errorf("client-go log: %q", got)
			}
		case <-time.After(time.Minute):
			t.Fatal("no watch bell from client-go's stream")
		}
		stop()
		body.Close()
	})

	attach := func(cfg *rest.Config, host string) (string, error) {
		url := strings.TrimSuffix(host, "/") + boatsPath + "/kestrel/attach?stdin=true&stdout=true"
		ex, err := remotecommand.NewWebSocketExecutor(cfg, "GET", url)
		if err != nil {
			return "", err
		}
		var out bytes.Buffer
		err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("radio check\nsecurite\n"), Stdout: &out})
		return out.String(), err
	}
	const radioLog = "kestrel on channel 16, over\nkestrel copies: radio check, over\nkestrel copies: securite, over\nkestrel out\n"

	t.Run("websocket connection through kube-apiserver", func(t *testing.T) {
		out, err := attach(cp.PKI.User(t, cp.Admin, "alice"), cp.Host)
		if err != nil || out != radioLog {
			t.Fatalf("alice (edit) attach through kube-apiserver: %v\n%q", err, out)
		}
		if _, err := attach(cp.PKI.User(t, cp.Admin, "victor"), cp.Host); err == nil || !strings.Contains(err.Error(), `User "victor" cannot get resource "boats/attach"`) {
			t.Errorf("victor (view) attach through kube-apiserver: want 403, got %v", err)
		}
	})

	t.Run("SPDY connection through kube-apiserver", func(t *testing.T) {
		u, err := url.Parse(strings.TrimSuffix(cp.Host, "/") + boatsPath + "/kestrel/attach?stdin=true&stdout=true")
		if err != nil {
			t.Fatal(err)
		}
		ex, err := remotecommand.NewSPDYExecutor(cp.PKI.User(t, cp.Admin, "alice"), "POST", u)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("radio check\nsecurite\n"), Stdout: &out})
		if err != nil || out.String() != radioLog {
			t.Fatalf("alice (edit) attach over SPDY through kube-apiserver: %v\n%q", err, out.String())
		}
	})

	// Straight to the generated server with the aggregator's front-proxy credentials: only
	// its delegated authorization (a SubjectAccessReview) decides.
	t.Run("delegated authorization of the connection at the generated server", func(t *testing.T) {
		host := "https://127.0.0.1:" + strconv.Itoa(backend.Port)
		out, err := attach(cp.PKI.FrontProxy(backend, "alice", "system:authenticated"), host)
		if err != nil || out != radioLog {
			t.Fatalf("alice (edit) attach at the generated server: %v\n%q", err, out)
		}
		_, err = attach(cp.PKI.FrontProxy(backend, "victor", "system:authenticated"), host)
		if err == nil || !strings.Contains(err.Error(), `User "victor" cannot get resource "boats/attach" in API group "marina.example.com" in the namespace "`+ns+`"`) {
			t.Errorf("victor (view) attach at the generated server: want its 403, got %v", err)
		}
		// victor may read the log (view, like pods/log) but not run the action (edit).
		victor := cp.PKI.FrontProxy(backend, "victor", "system:authenticated")
		if code, body := httpGet(t, victor, boatsPath+"/kestrel/log"); code != 200 || !strings.HasPrefix(string(body), "logbook of kestrel") {
			t.Errorf("victor (view) log at the generated server: %d %s", code, body)
		} // The roles README lists: the view berth is in view (read), its update and the action
		// in edit only; a connection over POST is authorized as create.
		if code, body := httpGet(t, victor, boatsPath+"/kestrel/berth"); code != 200 {
			t.Errorf("victor (view) GET berth at the generated server: %d %s", code, body)
		}
		hc, err := rest.HTTPClientFor(victor)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ method, sub, want string }{
			{"POST", "depart", `User "victor" cannot create resource "boats/depart"`},
			{"PUT", "berth", `User "victor" cannot update resource "boats/berth"`},
			{"POST", "attach", `User "victor" cannot create resource "boats/attach"`},
		} {
			req, err := http.NewRequestWithContext(ctx, c.method, victor.Host+boatsPath+"/kestrel/"+c.sub, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var status metav1.Status // the message, not the JSON-escaped body
			_ = json.Unmarshal(body, &status)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(status.Message, c.want) {
				t.Errorf("victor (view) %s %s at the generated server: %d %s; want 403 %q", c.method, c.sub, resp.StatusCode, body, c.want)
			}
		}
	})

	// The generated server's graceful shutdown ends an open followed stream at once,
	// instead of waiting for it up to its shutdown timeout (--request-timeout, 60 s).
	t.Run("graceful shutdown ends open streams", func(t *testing.T) {
		admin := cp.PKI.FrontProxy(backend, "admin", "system:masters")
		rc, err := rest.UnversionedRESTClientFor(withSerializer(admin))
		if err != nil {
			t.Fatal(err)
		}
		body, err := rc.Get().AbsPath(boatsPath, "kestrel", "log").Param("follow", "true").Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer body.Close()
		select {
		case <-readLines(body, "watch bell 1"):
		case <-time.After(time.Minute):
			t.Fatal("no watch bell from the generated server")
		}
		ended := make(chan error, 1)
		go func() { _, err := io.Copy(io.Discard, body); ended <- err }()
		start := time.Now()
		if err := backend.Process.Cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ended:
			t.Logf("the followed stream ended %v after SIGINT", time.Since(start))
		case <-time.After(20 * time.Second):
			t.Fatal("a followed stream was still open 20s after the generated server was told to shut down")
		}
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 40*time.Second, true, func(context.Context) (bool, error) {
			return backend.Process.Exited(), nil
		}); err != nil {
			t.Errorf("the generated server had not exited 40s after SIGINT")
		}
	})
}

// readLines reads lines from r in the background and sends them all once one starts with
// last (the channel stays empty if none does).
func readLines(r io.Reader, last string) <-chan []string {
	out := make(chan []string, 1)
	go func() {
		var lines []string
		s := bufio.NewScanner(r)
		for s.Scan() {
			lines = append(lines, s.Text())
			if strings.HasPrefix(s.Text(), last) {
				out <- lines
				return
			}
		}
	}()
	return out
}

// openStreams is the generated server's apiserver_longrunning_requests gauge of boats/<sub>.
func openStreams(t *testing.T, cfg *rest.Config, sub string) float64 {
	t.Helper()
	code, body := httpGet(t, cfg, "/metrics")
	if code != 200 {
		t.Fatalf("metrics of the generated server: %d", code)
	}
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "apiserver_longrunning_requests{") || !strings.Contains(line, `resource="boats"`) || !strings.Contains(line, `subresource="`+sub+`"`) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// withSerializer is cfg with what an unversioned REST client needs.
func withSerializer(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	return c
}

func sameSet(a, b string) bool {
	as, bs := strings.Split(a, ","), strings.Split(b, ",")
	if len(as) != len(bs) {
		return false
	}
	seen := map[string]bool{}
	for _, x := range as {
		seen[x] = true
	}
	for _, x := range bs {
		if !seen[x] {
			return false
		}
	}
	return true
}

// runExampleTest runs the example's own test name (in dir/test) against kube-apiserver
// (MARINA_KUBECONFIG, MARINA_NAMESPACE), and fails unless it ran and passed.
func runExampleTest(t *testing.T, ctx context.Context, cp *cluster.ControlPlane, dir, ns, name string) {
	t.Helper()
	out, err := gocmd.Cmd{
		Args: []string{"test", "-count=1", "-v", "-run", "^" + name + "$", "./test/"},
		Dir:  dir,
		Env:  append(os.Environ(), "MARINA_KUBECONFIG="+cp.Kubeconfig, "MARINA_NAMESPACE="+ns),
	}.Run(ctx)
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name+" ") {
		t.Fatalf("the example's %s against kube-apiserver: %v\n%s", name, err, cluster.Tail(string(out), 4000))
	}
}
