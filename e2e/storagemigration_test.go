package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/aagen-dev/aagen/e2e/cluster"
	"github.com/aagen-dev/aagen/runtime/etcd"
	"github.com/aagen-dev/aagen/runtime/server"
)

// TestStorageVersionMigration moves the storage version of kbexample's Visitor from
// v1beta1 to v1: an "old" server (a copy of kbexample with v1beta1 marked as Visitor's
// storage version) writes visitors; the real kbexample server, started on the same etcd
// data, reads them in every version, says which resources hold objects in an old storage
// version, rewrites them, and afterwards etcd (read directly) holds only v1 visitors.
func TestStorageVersionMigration(t *testing.T) {
	skipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	old := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata/kbexample"), old, nil)
	moveMarker(t, filepath.Join(old, "api/v1/visitor_types.go"), filepath.Join(old, "api/v1beta1/visitor_types.go"),
		"// +kubebuilder:storageversion\n", "// Visitor is the Schema for the visitors API\n")
	upOld := startUpPattern(t, old, "./api/...", 20*time.Minute)
	dyn := dynamic.NewForConfigOrDie(upOld.restConfig(t))
	const n = 20
	for i := range n {
		for _, v := range []string{"v1beta1", "v1"} {
			vis := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": webapp + "/" + v, "kind": "Visitor",
				"metadata": map[string]any{"name": fmt.Sprintf("%s-%02d", v, i), "namespace": "default"},
				"spec":     map[string]any{"guestbook": "main", "comment": fmt.Sprintf("written in %s", v), "rating": int64(4)},
			}}
			if _, err := dyn.Resource(visitors(v)).Namespace("default").Create(ctx, vis, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	upOld.stop(t)
	etcdDir := filepath.Join(old, ".aagen", "etcd")
	if got := storedVisitorVersions(t, ctx, etcdDir); got[webapp+"/v1beta1"] != 2*n || len(got) != 1 {
		t.Fatalf("the old server stored visitors as %v, want %d in v1beta1", got, 2*n)
	}

	upgraded := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata/kbexample"), upgraded, nil)
	up := startUpPattern(t, upgraded, "./api/...", 20*time.Minute, "--embedded-etcd-dir="+etcdDir, "--storage-migration-qps=20")
	cfg := up.restConfig(t)
	dyn = dynamic.NewForConfigOrDie(cfg)

	t.Run("readable in every version", func(t *testing.T) {
		for _, v := range []string{"v1", "v1beta1"} {
			list, err := dyn.Resource(visitors(v)).Namespace("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != 2*n {
				t.Errorf("%s: %d visitors, want %d", v, len(list.Items), 2*n)
			}
			for _, item := range list.Items {
				comment, _, _ := unstructured.NestedString(item.Object, "spec", "comment")
				rating, _, _ := unstructured.NestedInt64(item.Object, "spec", "rating")
				if item.GetAPIVersion() != webapp+"/"+v || !strings.HasPrefix(comment, "written in") || rating != 4 {
					t.Errorf("%s %s: apiVersion %s, comment %q, rating %d", v, item.GetName(), item.GetAPIVersion(), comment, rating)
				}
			}
		}
	})

	t.Run("reported and migrated", func(t *testing.T) {
		var report server.StorageVersionReport
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			report = storageVersions(t, cfg)
			for _, r := range report.Resources {
				if r.Resource == "visitors" {
					return !report.Migrating && r.Stale == 0 && r.Objects[webapp+"/v1"] == 2*n, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("migration did not finish: %v; report %+v", err, report)
		}
		if report.Migrated != 2*n || report.Error != "" {
			t.Errorf("report: migrated %d (want %d), error %q", report.Migrated, 2*n, report.Error)
		}
		logs := up.stderr.String()
		if !strings.Contains(logs, "objects stored in an old version; migrating them") || !strings.Contains(logs, `resource="visitors"`) {
			t.Errorf("the server did not log which resources hold objects in an old version:\n%s", cluster.Tail(logs, 3000))
		}
		if !strings.Contains(logs, "storage-version migration done") {
			t.Errorf("no log line at the end of the migration:\n%s", cluster.Tail(logs, 3000))
		}
	})
	up.stop(t)

	if got := storedVisitorVersions(t, ctx, etcdDir); got[webapp+"/v1"] != 2*n || len(got) != 1 {
		t.Errorf("after the migration etcd holds visitors as %v, want all %d in v1", got, 2*n)
	}
}

// moveMarker moves the marker line from the file from to the file to, before the line
// anchor.
func moveMarker(t *testing.T, from, to, marker, anchor string) {
	t.Helper()
	src, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.ReadFile(to)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), marker) || !strings.Contains(string(dst), anchor) {
		t.Fatalf("cannot move %q from %s to %s: the example changed", marker, from, to)
	}
	if err := os.WriteFile(from, []byte(strings.Replace(string(src), marker, "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, []byte(strings.Replace(string(dst), anchor, marker+anchor, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// storedVisitorVersions opens the (stopped) server's etcd data directory and counts the
// stored visitors by the apiVersion they are encoded in.
func storedVisitorVersions(t *testing.T, ctx context.Context, dir string) map[string]int {
	t.Helper()
	e, err := etcd.Start(ctx, etcd.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{e.ClientURL()}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Get(ctx, "/registry/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, kv := range resp.Kvs {
		if !strings.Contains(string(kv.Key), "/visitors/") {
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
		}
		if err := json.Unmarshal(kv.Value, &head); err != nil {
			t.Fatalf("%s is not JSON: %v", kv.Key, err)
		}
		out[head.APIVersion]++
	}
	return out
}

// storageVersions reads the server's storage-version report.
func storageVersions(t *testing.T, cfg *rest.Config) server.StorageVersionReport {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(cfg.Host + server.StorageVersionsPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r server.StorageVersionReport
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%s: %v\n%s", server.StorageVersionsPath, err, body)
	}
	return r
}
