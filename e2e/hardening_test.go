package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Accept headers clients send.
const (
	acceptJSON            = "application/json"
	acceptYAML            = "application/yaml"
	acceptAny             = "*/*"
	acceptProtobuf        = "application/vnd.kubernetes.protobuf"
	acceptProtobufOrJSON  = "application/vnd.kubernetes.protobuf, application/json" // client-go's default for built-in types
	acceptProtobufWatch   = "application/vnd.kubernetes.protobuf;stream=watch"
	acceptCBOR            = "application/cbor"
	acceptTable           = "application/json;as=Table;v=v1;g=meta.k8s.io"
	acceptTableKubectl    = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
	acceptProtobufTable   = "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io"
	acceptMetadataList    = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"
	contentTypeJSON       = "application/json"
	contentTypeYAML       = "application/yaml"
	contentTypeProtobuf   = "application/vnd.kubernetes.protobuf"
	embeddedEtcdLogPrefix = `"embedded etcd ready" url="`
)

// TestLocalServerHardening runs the example with `aagen up` (embedded etcd) and checks
//   - that the embedded etcd refuses a process of another local user (nobody) while the
//     server's own user can use it;
//   - content negotiation for every Accept a client may send, on get, list, watch, tables
//     and the status and scale subresources, as kube-apiserver negotiates for a built-in
//     resource (the generated types have protobuf methods: protobuf where the client
//     prefers it, objects, lists and watch streams alike; no protobuf tables);
//   - that a value under a resource's prefix that does not decode fails as it does in
//     kube-apiserver 1.37: a get of that object and a list from etcd answer 500
//     StorageReadError naming its key, other objects are served, and a delete with
//     ignoreStoreReadErrorWithClusterBreakingPotential removes it through the API.
func TestLocalServerHardening(t *testing.T) {
	skipShort(t)
	dir := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata/example"), dir, nil)
	up := startUp(t, dir, 20*time.Minute)
	cfg := up.restConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	etcdURL := embeddedEtcdURL(t, up.stderr.String())
	t.Logf("embedded etcd: %s", etcdURL)

	dyn := dynamic.NewForConfigOrDie(cfg)
	ns := "harbour"
	if _, err := dyn.Resource(boats).Namespace(ns).Create(ctx, boat("sound", nil, 9), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fleet := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "marina.example.com/v1alpha1", "kind": "Fleet",
		"metadata": map[string]any{"name": "armada"},
		"spec":     map[string]any{"replicas": int64(2)},
	}}
	fleets := boats.GroupVersion().WithResource("fleets")
	if _, err := dyn.Resource(fleets).Namespace(ns).Create(ctx, fleet, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("embedded etcd refuses another local user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Fatalf("this test starts a process as user nobody and needs to run as root (euid %d)", os.Geteuid())
		}
		probe := buildEtcdProbe(t)
		out, err := runAs(t, probe, etcdURL, nil)
		if err != nil {
			t.Fatalf("probe as the server's user failed, want success: %v\n%s", err, out)
		}
		t.Logf("as the server's user: %s", out)
		nobody, err := user.Lookup("nobody")
		if err != nil {
			t.Fatalf("look up user nobody: %v", err)
		}
		uid, _ := strconv.ParseUint(nobody.Uid, 10, 32)
		gid, _ := strconv.ParseUint(nobody.Gid, 10, 32)
		out, err = runAs(t, probe, etcdURL, &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)})
		if err == nil || !strings.Contains(out, "permission denied") {
			t.Errorf("probe as nobody: err = %v, output %q; want refused with permission denied", err, out)
		}
		t.Logf("as nobody: %s", out)

		// The server process listens on its secure port and nothing else over TCP: no
		// etcd client, peer or metrics port.
		server := childPID(t, up.cmd.Process.Pid)
		ports := listeningTCPPorts(t, server)
		u, err := url.Parse(cfg.Host)
		if err != nil {
			t.Fatal(err)
		}
		if len(ports) != 1 || strconv.Itoa(ports[0]) != u.Port() {
			t.Errorf("server process %d listens on TCP ports %v, want only its secure port %s", server, ports, u.Port())
		}
	})

	t.Run("content negotiation", func(t *testing.T) {
		client := rawClient(t, cfg)
		base := strings.TrimSuffix(cfg.Host, "/") + "/apis/marina.example.com/v1alpha1/namespaces/" + ns
		type want struct {
			code        int
			contentType string
			kind        string // for JSON answers
		}
		ok := func(kind string) want { return want{200, contentTypeJSON, kind} }
		notAcceptable := want{code: http.StatusNotAcceptable}
		protobuf := want{200, contentTypeProtobuf, ""}
		cases := []struct {
			path, accept string
			want         want
		}{
			{"/boats", acceptJSON, ok("BoatList")},
			{"/boats", acceptYAML, want{200, contentTypeYAML, ""}},
			{"/boats", acceptAny, ok("BoatList")},
			{"/boats", "", ok("BoatList")},
			{"/boats", acceptProtobufOrJSON, protobuf},
			{"/boats", acceptProtobuf, protobuf},
			{"/boats", acceptCBOR, notAcceptable}, // CBORServingAndStorage is off in 1.37
			{"/boats", acceptTable, ok("Table")},
			{"/boats", acceptTableKubectl, ok("Table")},
			{"/boats", acceptProtobufTable + "," + acceptJSON, ok("BoatList")}, // no protobuf tables, as for a CRD
			{"/boats", acceptProtobufTable, notAcceptable},
			{"/boats", acceptMetadataList, want{200, contentTypeProtobuf, ""}}, // metadata clients (garbage collector)
			{"/boats/sound", acceptJSON, ok("Boat")},
			{"/boats/sound", acceptYAML, want{200, contentTypeYAML, ""}},
			{"/boats/sound", acceptAny, ok("Boat")},
			{"/boats/sound", acceptProtobufOrJSON, protobuf},
			{"/boats/sound", acceptProtobuf, protobuf},
			{"/boats/sound", acceptTable, ok("Table")},
			{"/boats/sound/status", acceptProtobufOrJSON, protobuf},
			{"/boats/sound/status", acceptProtobuf, protobuf},
			{"/boats/sound/status", acceptYAML, want{200, contentTypeYAML, ""}},
			{"/fleets/armada/scale", acceptProtobufOrJSON, protobuf},
			{"/fleets/armada/scale", acceptJSON, ok("Scale")},
			{"/fleets/armada/scale", acceptProtobuf, protobuf},
			{"/fleets/armada/scale", acceptTable, ok("Table")},
			{"/boats?watch=1", acceptProtobuf, want{200, acceptProtobufWatch, ""}},
			{"/boats?watch=1", acceptProtobufWatch, want{200, acceptProtobufWatch, ""}},
			{"/boats?watch=1", acceptProtobufOrJSON, want{200, acceptProtobufWatch, ""}},
		}
		for _, c := range cases {
			t.Run(c.path+" Accept: "+c.accept, func(t *testing.T) {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+c.path, nil)
				if err != nil {
					t.Fatal(err)
				}
				if c.accept != "" {
					req.Header.Set("Accept", c.accept)
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var body []byte
				// A watch's body ends with the watch (a minute): read it only when it is an error.
				if !strings.Contains(c.path, "watch=1") || resp.StatusCode != c.want.code {
					body, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
				}
				resp.Body.Close()
				if resp.StatusCode != c.want.code {
					t.Fatalf("status %d, want %d; Content-Type %q; body %.300q", resp.StatusCode, c.want.code, resp.Header.Get("Content-Type"), body)
				}
				if c.want.contentType != "" && !strings.HasPrefix(resp.Header.Get("Content-Type"), c.want.contentType) {
					t.Errorf("Content-Type %q, want %s", resp.Header.Get("Content-Type"), c.want.contentType)
				}
				if c.want.kind != "" {
					var obj struct{ Kind string }
					if err := json.Unmarshal(body, &obj); err != nil || obj.Kind != c.want.kind {
						t.Errorf("kind %q (%v), want %s; body %.300q", obj.Kind, err, c.want.kind, body)
					}
				}
			})
		}

		// A watch whose client accepts JSON first, or anything, gets JSON events.
		for _, accept := range []string{acceptAny, acceptJSON, "application/json;stream=watch, " + acceptProtobufWatch} {
			t.Run("watch Accept: "+accept, func(t *testing.T) {
				wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
				defer wcancel()
				req, err := http.NewRequestWithContext(wctx, http.MethodGet, base+"/boats?watch=1&resourceVersion=0", nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Accept", accept)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), contentTypeJSON) {
					t.Fatalf("status %d, Content-Type %q; want 200 JSON", resp.StatusCode, resp.Header.Get("Content-Type"))
				}
				var ev struct {
					Type   string
					Object struct {
						Kind     string
						Metadata struct{ Name string }
					}
				}
				if err := json.NewDecoder(bufio.NewReader(resp.Body)).Decode(&ev); err != nil {
					t.Fatalf("first watch event: %v", err)
				}
				if ev.Type != "ADDED" || ev.Object.Kind != "Boat" || ev.Object.Metadata.Name != "sound" {
					t.Errorf("first watch event %+v, want ADDED Boat sound", ev)
				}
			})
		}
	})

	t.Run("corrupt value fails its object as in kube-apiserver", func(t *testing.T) {
		etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdURL}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		defer etcd.Close()
		keys, err := etcd.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		var soundKey string
		for _, kv := range keys.Kvs {
			if strings.HasSuffix(string(kv.Key), "/boats/"+ns+"/sound") {
				soundKey = string(kv.Key)
			}
		}
		if soundKey == "" {
			t.Fatalf("no etcd key for boat sound among %d keys", len(keys.Kvs))
		}
		badKey := strings.TrimSuffix(soundKey, "sound") + "wreck"
		if _, err := etcd.Put(ctx, badKey, "not json{"); err != nil {
			t.Fatal(err)
		}
		bc := dyn.Resource(boats).Namespace(ns)

		_, err = bc.Get(ctx, "wreck", metav1.GetOptions{})
		if code := statusCode(err); code != http.StatusInternalServerError || !strings.Contains(err.Error(), "corrupt object") {
			t.Errorf("get of the corrupt object: %v (code %d), want 500 naming a corrupt object", err, code)
		}
		if _, err := bc.Get(ctx, "sound", metav1.GetOptions{}); err != nil {
			t.Errorf("get of another object: %v", err)
		}
		_, err = bc.List(ctx, metav1.ListOptions{})
		if code := statusCode(err); code != http.StatusInternalServerError || !strings.Contains(err.Error(), badKey) || reason(err) != metav1.StatusReasonStoreReadError {
			t.Errorf("list: %v (code %d, reason %q), want 500 StorageReadError naming %s", err, code, reason(err), badKey)
		}
		if err := bc.Delete(ctx, "wreck", metav1.DeleteOptions{}); statusCode(err) != http.StatusInternalServerError {
			t.Errorf("plain delete of the corrupt object: %v, want 500", err)
		}
		unsafe := true
		if err := bc.Delete(ctx, "wreck", metav1.DeleteOptions{IgnoreStoreReadErrorWithClusterBreakingPotential: &unsafe}); err != nil {
			t.Fatalf("delete with ignoreStoreReadErrorWithClusterBreakingPotential: %v", err)
		}
		list, err := bc.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list after the unsafe delete: %v", err)
		}
		if len(list.Items) != 1 || list.Items[0].GetName() != "sound" {
			t.Errorf("list after the unsafe delete has %d items, want boat sound only", len(list.Items))
		}
	})
}

// embeddedEtcdURL finds the embedded etcd's URL in the server's log.
func embeddedEtcdURL(t *testing.T, log string) string {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(embeddedEtcdLogPrefix) + `([^"]+)"`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no %s line in the server's log:\n%s", embeddedEtcdLogPrefix, log)
	}
	if !strings.HasPrefix(m[1], "unix:///") {
		t.Errorf("embedded etcd URL %s, want a unix socket", m[1])
	}
	return m[1]
}

// buildEtcdProbe builds e2e/etcdprobe into a directory every user can read and enter.
func buildEtcdProbe(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "aagen-etcdprobe-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "etcdprobe")
	run(t, repoRoot(t), "go", "build", "-o", bin, "./e2e/etcdprobe")
	return bin
}

// runAs runs bin with arg, as cred when it is not nil.
func runAs(t *testing.T, bin, arg string, cred *syscall.Credential) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, arg)
	cmd.Dir = filepath.Dir(bin)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// rawClient is an HTTP client with cfg's TLS and credentials, for requests whose headers
// the test sets itself.
func rawClient(t *testing.T, cfg *rest.Config) *http.Client {
	t.Helper()
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: rt, Timeout: time.Minute}
}

// statusCode returns the HTTP code of an API error, 0 for nil.
func statusCode(err error) int {
	if err == nil {
		return 0
	}
	if s, ok := err.(interface{ Status() metav1.Status }); ok {
		return int(s.Status().Code)
	}
	return -1
}

// reason returns the reason of an API error.
func reason(err error) metav1.StatusReason {
	if s, ok := err.(interface{ Status() metav1.Status }); ok {
		return s.Status().Reason
	}
	return metav1.StatusReason(fmt.Sprint(err))
}

// childPID returns the pid of the only child process of parent.
func childPID(t *testing.T, parent int) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var children []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces, so split after its ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(parent) {
			children = append(children, pid)
		}
	}
	if len(children) != 1 {
		t.Fatalf("process %d has children %v, want exactly one (the server)", parent, children)
	}
	return children[0]
}

// listeningTCPPorts returns the TCP ports (IPv4 and IPv6) process pid listens on.
func listeningTCPPorts(t *testing.T, pid int) []int {
	t.Helper()
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	fds, err := os.ReadDir(filepath.Join(proc, "fd"))
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(proc, "fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
		}
	}
	var ports []int
	seen := map[int64]bool{}
	for _, table := range []string{"net/tcp", "net/tcp6"} {
		data, err := os.ReadFile(filepath.Join(proc, table))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fields := strings.Fields(line)
			// sl local_address rem_address st ... inode (field 9)
			if len(fields) <= 9 || fields[3] != "0A" || !inodes[fields[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(fields[1], ":")
			port, err := strconv.ParseInt(hexPort, 16, 32)
			if err != nil {
				t.Fatalf("%s: bad local address %q", table, fields[1])
			}
			if !seen[port] {
				seen[port] = true
				ports = append(ports, int(port))
			}
		}
	}
	return ports
}
