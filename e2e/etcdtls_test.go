package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// TestDeployedEtcdRequiresClientCertificates runs the etcd binary with the arguments of the
// example's emitted StatefulSet (testdata/example/config/deploy, which TestGolden keeps equal
// to what aagen generates) and the certificates aagen made for it, and checks that:
//   - a client without a certificate, one over plain HTTP and one whose certificate comes
//     from another CA (the aggregator's serving certificate) are refused on the client port;
//   - a client without a certificate is refused on the peer port;
//   - the server's client certificate, found through the server Deployment's own
//     --etcd-certfile, --etcd-keyfile and --etcd-cafile and its Secret volume, can write
//     and read.
//   - the generated server, run with those flags against this member, stores objects there.
//
// Only what a single process on loopback needs is rewritten (logged below): listen and
// advertise addresses become free loopback ports, the data directory and the Secret mounts
// become temporary directories, and the initial cluster keeps only this member. Every TLS
// and authentication flag is used as emitted.
func TestDeployedEtcdRequiresClientCertificates(t *testing.T) {
	skipShort(t)
	runsTools(t)
	deployDir := filepath.Join(repoRoot(t), "testdata/example/config/deploy")
	secrets := readSecrets(t, filepath.Join(deployDir, "certs", "etcd-certs.yaml"), filepath.Join(deployDir, "certs", "serving-cert.yaml"))
	sts := findStatefulSet(t, filepath.Join(deployDir, "zz_generated.etcd.yaml"))
	dep := findDeployment(t, filepath.Join(deployDir, "zz_generated.apiserver.yaml"))
	tmp := t.TempDir()

	// The etcd container, with its Secret volumes written to disk where the pod would
	// mount them.
	c := sts.Spec.Template.Spec.Containers[0]
	podName := sts.Name + "-0"
	mounts := mountSecrets(t, tmp, "etcd", c.VolumeMounts, sts.Spec.Template.Spec.Volumes, secrets)
	ports := map[string]string{} // emitted port -> free loopback port
	local := func(port string) string {
		if _, ok := ports[port]; !ok {
			ports[port] = strconv.Itoa(cluster.FreePort(t))
		}
		return ports[port]
	}
	// rewriteURLs points the URLs of a flag at loopback, keeping scheme and port role.
	rewriteURLs := func(list string) string {
		var out []string
		for _, u := range strings.Split(list, ",") {
			name, raw, named := strings.Cut(u, "=")
			if !named {
				raw, name = name, ""
			}
			parsed, err := url.Parse(raw)
			if err != nil {
				t.Fatalf("emitted URL %q: %v", raw, err)
			}
			parsed.Host = net.JoinHostPort("127.0.0.1", local(parsed.Port()))
			if named {
				out = append(out, name+"="+parsed.String())
			} else {
				out = append(out, parsed.String())
			}
		}
		return strings.Join(out, ",")
	}
	if len(c.Command) == 0 || c.Command[0] != "etcd" {
		t.Fatalf("etcd container command = %q, want etcd and its flags", c.Command)
	}
	var args, rewritten []string
	flags := map[string]string{}
	for _, arg := range c.Command[1:] {
		arg = strings.ReplaceAll(arg, "$(POD_NAME)", podName) // what the kubelet substitutes
		flag, value, _ := strings.Cut(arg, "=")
		flags[flag] = value
		orig := arg
		switch flag {
		case "--data-dir":
			arg = flag + "=" + filepath.Join(tmp, "data")
		case "--listen-client-urls", "--advertise-client-urls", "--listen-peer-urls", "--initial-advertise-peer-urls", "--listen-metrics-urls":
			arg = flag + "=" + rewriteURLs(value)
		case "--initial-cluster":
			var own string
			for _, m := range strings.Split(value, ",") {
				if strings.HasPrefix(m, podName+"=") {
					own = m
				}
			}
			if own == "" {
				t.Fatalf("--initial-cluster %q has no member %s", value, podName)
			}
			arg = flag + "=" + rewriteURLs(own)
		default:
			for dir, local := range mounts {
				arg = strings.ReplaceAll(arg, dir+"/", local+"/")
			}
		}
		if arg != orig {
			rewritten = append(rewritten, orig+" -> "+arg)
		}
		args = append(args, arg)
	}
	for _, want := range []string{"--client-cert-auth", "--peer-client-cert-auth"} {
		if flags[want] != "true" {
			t.Errorf("emitted StatefulSet has %s=%q, want true", want, flags[want])
		}
	}
	for _, f := range []string{"--listen-client-urls", "--listen-peer-urls"} {
		if !strings.HasPrefix(flags[f], "https://") {
			t.Errorf("emitted StatefulSet has %s=%s, want https", f, flags[f])
		}
	}
	t.Logf("rewritten for one local process:\n  %s", strings.Join(rewritten, "\n  "))

	bin := cluster.EtcdBinary(t)
	var logs bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("etcd log:\n%s", logs.String())
		}
	})
	clientPort, peerPort := ports[portOf(t, flags["--listen-client-urls"])], ports[portOf(t, flags["--listen-peer-urls"])]
	metricsPort := ports[portOf(t, flags["--listen-metrics-urls"])]
	waitHTTP(t, "http://127.0.0.1:"+metricsPort+"/readyz", time.Minute)

	memberHost, err := url.Parse(strings.Split(flags["--advertise-client-urls"], ",")[0])
	if err != nil {
		t.Fatal(err)
	}
	serverName := memberHost.Hostname() // the name the server dials and verifies
	ca := x509.NewCertPool()
	if !ca.AppendCertsFromPEM(secrets[volumeSecret(t, sts.Spec.Template.Spec.Volumes, c.VolumeMounts, flags["--trusted-ca-file"])].Data["ca.crt"]) {
		t.Fatal("no etcd CA in the member Secret")
	}
	clientAddr := "127.0.0.1:" + clientPort

	// The server's client certificate, as its Deployment mounts and names it.
	sc := dep.Spec.Template.Spec.Containers[0]
	serverMounts := mountSecrets(t, tmp, "server", sc.VolumeMounts, dep.Spec.Template.Spec.Volumes, secrets)
	serverFlags := map[string]string{}
	for _, a := range sc.Args {
		f, v, _ := strings.Cut(a, "=")
		serverFlags[f] = v
	}
	localPath := func(p string) string {
		for dir, local := range serverMounts {
			if strings.HasPrefix(p, dir+"/") {
				return local + strings.TrimPrefix(p, dir)
			}
		}
		t.Fatalf("%s is not on a Secret volume of the server's Deployment", p)
		return ""
	}
	for _, f := range []string{"--etcd-certfile", "--etcd-keyfile", "--etcd-cafile"} {
		if serverFlags[f] == "" {
			t.Fatalf("the server's Deployment does not pass %s", f)
		}
	}
	clientCert, err := tls.LoadX509KeyPair(localPath(serverFlags["--etcd-certfile"]), localPath(serverFlags["--etcd-keyfile"]))
	if err != nil {
		t.Fatal(err)
	}
	serverCA, err := os.ReadFile(localPath(serverFlags["--etcd-cafile"]))
	if err != nil {
		t.Fatal(err)
	}
	serverPool := x509.NewCertPool()
	serverPool.AppendCertsFromPEM(serverCA)
	servingCert, err := tls.X509KeyPair(secrets["marina-apiserver-serving-cert"].Data["tls.crt"], secrets["marina-apiserver-serving-cert"].Data["tls.key"])
	if err != nil {
		t.Fatal(err)
	}

	t.Run("client port refuses a client without a certificate", func(t *testing.T) {
		err := tlsExchange(clientAddr, &tls.Config{RootCAs: ca, ServerName: serverName})
		if err == nil || !strings.Contains(err.Error(), "certificate required") {
			t.Errorf("TLS without a client certificate: err = %v, want 'certificate required'", err)
		}
		if err := etcdPut(clientAddr, serverName, &tls.Config{RootCAs: ca, ServerName: serverName}); err == nil {
			t.Error("etcd client without a certificate could write")
		}
	})
	t.Run("client port refuses a certificate of another CA", func(t *testing.T) {
		// GetClientCertificate sends the certificate even though the server's list of
		// acceptable CAs does not name its issuer (Certificates would send none).
		cfg := &tls.Config{RootCAs: ca, ServerName: serverName, GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &servingCert, nil
		}}
		if err := tlsExchange(clientAddr, cfg); err == nil || !strings.Contains(err.Error(), "unknown certificate authority") {
			t.Errorf("TLS with the aggregator's serving certificate: err = %v, want it refused", err)
		}
		if err := etcdPut(clientAddr, serverName, cfg); err == nil {
			t.Error("etcd client with a certificate of another CA could write")
		}
	})
	t.Run("client port refuses plain HTTP", func(t *testing.T) {
		if err := etcdPut(clientAddr, serverName, nil); err == nil {
			t.Error("etcd client over plain HTTP could write")
		}
	})
	t.Run("peer port refuses a peer without a certificate", func(t *testing.T) {
		err := tlsExchange("127.0.0.1:"+peerPort, &tls.Config{RootCAs: ca, ServerName: serverName})
		if err == nil || !strings.Contains(err.Error(), "certificate required") {
			t.Errorf("TLS to the peer port without a certificate: err = %v, want 'certificate required'", err)
		}
	})
	t.Run("the server's client certificate is accepted", func(t *testing.T) {
		cfg := &tls.Config{RootCAs: serverPool, ServerName: serverName, Certificates: []tls.Certificate{clientCert}}
		if err := etcdPut(clientAddr, serverName, cfg); err != nil {
			t.Errorf("etcd client with the server's certificate: %v", err)
		}
	})
	t.Run("the generated server stores through it with the Deployment's etcd flags", func(t *testing.T) {
		// The example's server, run locally with the Deployment's --etcd-cafile,
		// --etcd-certfile and --etcd-keyfile (files as the pod mounts them) against
		// this member, on loopback (its certificate covers 127.0.0.1, as kubeadm's do).
		bin := filepath.Join(tmp, "marina-apiserver")
		run(t, filepath.Join(repoRoot(t), "testdata/example"), "go", "build", "-o", bin, "./cmd/marina-apiserver")
		local := filepath.Join(tmp, "local")
		args := []string{"--local", "--local-dir=" + local, "--secure-port=" + strconv.Itoa(cluster.FreePort(t)),
			"--etcd-servers=https://" + clientAddr}
		for _, f := range []string{"--etcd-cafile", "--etcd-certfile", "--etcd-keyfile"} {
			args = append(args, f+"="+localPath(serverFlags[f]))
		}
		proc := cluster.StartProcess(t, "marina-apiserver", bin, args...)
		deadline := time.Now().Add(3 * time.Minute)
		for !strings.Contains(proc.Out.String(), "export KUBECONFIG=") {
			if proc.Exited() || time.Now().After(deadline) {
				t.Fatalf("the server did not become ready:\n%s", cluster.Tail(proc.Out.String(), 4000))
			}
			time.Sleep(200 * time.Millisecond)
		}
		restCfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(local, "kubeconfig"))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := dynamic.NewForConfigOrDie(restCfg).Resource(boats).Namespace("harbour").Create(ctx, boat("moored", nil, 7), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create through the server: %v", err)
		}
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{"https://" + clientAddr}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
			TLS: &tls.Config{RootCAs: serverPool, Certificates: []tls.Certificate{clientCert}}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		resp, err := c.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, kv := range resp.Kvs {
			found = found || strings.HasSuffix(string(kv.Key), "/boats/harbour/moored")
		}
		if !found {
			t.Errorf("boat moored not stored in the mTLS etcd (%d keys)", len(resp.Kvs))
		}
	})
}

// tlsExchange completes a TLS handshake with addr and reads once, which is where a
// server that rejects the client's certificate reports it under TLS 1.3. It returns nil
// only when the server kept the connection open.
func tlsExchange(addr string, cfg *tls.Config) error {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return nil // open and waiting for the client: accepted
	}
	if err == nil {
		return nil
	}
	return err
}

// etcdPut writes and reads a key through etcd's client, which dials addr but names the
// member as the server does (etcd's client verifies the endpoint's host name); tlsCfg nil
// means plain HTTP.
func etcdPut(addr, memberName string, tlsCfg *tls.Config) error {
	scheme := "https"
	if tlsCfg == nil {
		scheme = "http"
	}
	_, port, _ := net.SplitHostPort(addr)
	dial := grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	})
	c, err := clientv3.New(clientv3.Config{
		Endpoints: []string{scheme + "://" + net.JoinHostPort(memberName, port)}, TLS: tlsCfg,
		DialTimeout: 3 * time.Second, DialOptions: []grpc.DialOption{dial}, Logger: zap.NewNop(),
	})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, "/registry/probe", "x"); err != nil {
		return err
	}
	resp, err := c.Get(ctx, "/registry/probe")
	if err != nil {
		return err
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "x" {
		return fmt.Errorf("read back %v", resp.Kvs)
	}
	return nil
}

// readSecrets reads the Secrets in the given multi-document YAML files, by name.
func readSecrets(t *testing.T, files ...string) map[string]*corev1.Secret {
	t.Helper()
	out := map[string]*corev1.Secret{}
	for _, f := range files {
		for _, doc := range yamlDocs(t, f) {
			var s corev1.Secret
			if err := yaml.Unmarshal(doc, &s); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if s.Kind == "Secret" {
				out[s.Name] = &s
			}
		}
	}
	return out
}

func findStatefulSet(t *testing.T, file string) *appsv1.StatefulSet {
	t.Helper()
	for _, doc := range yamlDocs(t, file) {
		var s appsv1.StatefulSet
		if err := yaml.Unmarshal(doc, &s); err == nil && s.Kind == "StatefulSet" {
			return &s
		}
	}
	t.Fatalf("%s has no StatefulSet", file)
	return nil
}

func findDeployment(t *testing.T, file string) *appsv1.Deployment {
	t.Helper()
	for _, doc := range yamlDocs(t, file) {
		var d appsv1.Deployment
		if err := yaml.Unmarshal(doc, &d); err == nil && d.Kind == "Deployment" {
			return &d
		}
	}
	t.Fatalf("%s has no Deployment", file)
	return nil
}

func yamlDocs(t *testing.T, file string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	for _, d := range bytes.Split(data, []byte("\n---\n")) {
		if len(bytes.TrimSpace(d)) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

// mountSecrets writes the Secret volumes among mounts under tmp/prefix, as the kubelet
// would mount them, and returns mount path -> local directory.
func mountSecrets(t *testing.T, tmp, prefix string, mounts []corev1.VolumeMount, volumes []corev1.Volume, secrets map[string]*corev1.Secret) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range mounts {
		for _, v := range volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			s, ok := secrets[v.Secret.SecretName]
			if !ok {
				continue // not one aagen writes locally
			}
			dir := filepath.Join(tmp, prefix, m.Name)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			for k, data := range s.Data {
				if err := os.WriteFile(filepath.Join(dir, k), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			out[m.MountPath] = dir
		}
	}
	return out
}

// volumeSecret returns the name of the Secret mounted at the directory holding path.
func volumeSecret(t *testing.T, volumes []corev1.Volume, mounts []corev1.VolumeMount, path string) string {
	t.Helper()
	for _, m := range mounts {
		if strings.HasPrefix(path, m.MountPath+"/") {
			for _, v := range volumes {
				if v.Name == m.Name && v.Secret != nil {
					return v.Secret.SecretName
				}
			}
		}
	}
	t.Fatalf("%s is not on a Secret volume", path)
	return ""
}

// portOf returns the port of the first URL in a comma-separated list.
func portOf(t *testing.T, list string) string {
	t.Helper()
	u, err := url.Parse(strings.Split(list, ",")[0])
	if err != nil || u.Port() == "" {
		t.Fatalf("no port in %q (%v)", list, err)
	}
	return u.Port()
}

// waitHTTP waits until url answers 200.
func waitHTTP(t *testing.T, url string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("%s: %s", resp.Status, body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after %s: %v", url, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
