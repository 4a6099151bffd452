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

// TestStorageVersionMigration moves kbexample's storage version from v1beta1 to v1: an
// "old" server (a copy of kbexample with v1beta1 marked as the storage version of both
// kinds, and the Guestbook conversion written the other way round) writes visitors and
// guestbooks; the real kbexample server, started on the same etcd data, reads them in
// every version, says which resources hold objects in an old storage version, rewrites
// them, and afterwards etcd (read directly) holds only v1 objects.
func TestStorageVersionMigration(t *testing.T) {
	skipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	old := t.TempDir()
	copyTree(t, filepath.Join(repoRoot(t), "testdata/kbexample"), old, nil)
	storeInV1beta1(t, old)
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
	const books = 5
	for i := range books {
		gb := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": webapp + "/v1beta1", "kind": "Guestbook",
			"metadata": map[string]any{"name": fmt.Sprintf("book-%d", i), "namespace": "default"},
			"spec":     map[string]any{"motd": fmt.Sprintf("welcome %d", i)},
		}}
		if _, err := dyn.Resource(guestbooks("v1beta1")).Namespace("default").Create(ctx, gb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	upOld.stop(t)
	etcdDir := filepath.Join(old, ".aagen", "etcd")
	if got := storedVersions(t, ctx, etcdDir, "visitors"); got[webapp+"/v1beta1"] != 2*n || len(got) != 1 {
		t.Fatalf("the old server stored visitors as %v, want %d in v1beta1", got, 2*n)
	}
	if got := storedVersions(t, ctx, etcdDir, "guestbooks"); got[webapp+"/v1beta1"] != books || len(got) != 1 {
		t.Fatalf("the old server stored guestbooks as %v, want %d in v1beta1", got, books)
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
		for v, field := range map[string]string{"v1": "message", "v1beta1": "motd"} {
			gb, err := dyn.Resource(guestbooks(v)).Namespace("default").Get(ctx, "book-3", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got, _, _ := unstructured.NestedString(gb.Object, "spec", field); got != "welcome 3" {
				t.Errorf("guestbook book-3 in %s: spec.%s %q, want %q", v, field, got, "welcome 3")
			}
		}
	})

	t.Run("reported and migrated", func(t *testing.T) {
		var report server.StorageVersionReport
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			report = storageVersions(t, cfg)
			done := 0
			for _, r := range report.Resources {
				switch {
				case r.Resource == "visitors" && r.Stale == 0 && r.Objects[webapp+"/v1"] == 2*n:
					done++
				case r.Resource == "guestbooks" && r.Stale == 0 && r.Objects[webapp+"/v1"] == books:
					done++
				}
			}
			return !report.Migrating && done == 2, nil
		})
		if err != nil {
			t.Fatalf("migration did not finish: %v; report %+v", err, report)
		}
		if report.Migrated != 2*n+books || report.Error != "" {
			t.Errorf("report: migrated %d (want %d), error %q", report.Migrated, 2*n+books, report.Error)
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

	if got := storedVersions(t, ctx, etcdDir, "visitors"); got[webapp+"/v1"] != 2*n || len(got) != 1 {
		t.Errorf("after the migration etcd holds visitors as %v, want all %d in v1", got, 2*n)
	}
	if got := storedVersions(t, ctx, etcdDir, "guestbooks"); got[webapp+"/v1"] != books || len(got) != 1 {
		t.Errorf("after the migration etcd holds guestbooks as %v, want all %d in v1", got, books)
	}
}

// storeInV1beta1 turns the kbexample copy in dir into its previous release: v1beta1 is the
// storage version of both kinds, and Guestbook's hand-written conversion goes between v1
// and the v1beta1 hub.
func storeInV1beta1(t *testing.T, dir string) {
	t.Helper()
	moveMarker(t, filepath.Join(dir, "api/v1/visitor_types.go"), filepath.Join(dir, "api/v1beta1/visitor_types.go"),
		"// +kubebuilder:storageversion\n", "// Visitor is the Schema for the visitors API\n")
	moveMarker(t, filepath.Join(dir, "api/v1/guestbook_types.go"), filepath.Join(dir, "api/v1beta1/guestbook_types.go"),
		"// +kubebuilder:storageversion\n", "// Guestbook is the Schema for the guestbooks API\n")
	// The hooks take the storage version's types: generate writes them anew, empty.
	for _, f := range []string{"api/v1beta1/conversion.go", "api/v1beta1/zz_generated.conversion.go",
		"pkg/registry/api/guestbook/hooks.go", "pkg/registry/api/visitor/hooks.go"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	conv := `package v1

import (
	v1beta1 "example.com/kbexample/api/v1beta1"
	"k8s.io/apimachinery/pkg/conversion"
)

func Convert_v1_GuestbookSpec_To_v1beta1_GuestbookSpec(in *GuestbookSpec, out *v1beta1.GuestbookSpec, s conversion.Scope) error {
	if err := autoConvert_v1_GuestbookSpec_To_v1beta1_GuestbookSpec(in, out, s); err != nil {
		return err
	}
	out.Motd = in.Message
	return nil
}

func Convert_v1beta1_GuestbookSpec_To_v1_GuestbookSpec(in *v1beta1.GuestbookSpec, out *GuestbookSpec, s conversion.Scope) error {
	if err := autoConvert_v1beta1_GuestbookSpec_To_v1_GuestbookSpec(in, out, s); err != nil {
		return err
	}
	out.Message = in.Motd
	return nil
}
`
	if err := os.WriteFile(filepath.Join(dir, "api/v1/conversion.go"), []byte(conv), 0o644); err != nil {
		t.Fatal(err)
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

// storedValues opens the (stopped) server's etcd data directory and returns every value
// under /registry/, by key.
func storedValues(t *testing.T, ctx context.Context, dir string) map[string][]byte {
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
	out := make(map[string][]byte, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = kv.Value
	}
	return out
}

// storedVersions counts the stored objects of resource in the (stopped) server's etcd data
// directory by the apiVersion they are encoded in.
func storedVersions(t *testing.T, ctx context.Context, dir, resource string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for key, value := range storedValues(t, ctx, dir) {
		if !strings.Contains(key, "/"+resource+"/") {
			continue
		}
		_, v, err := storedHead(value)
		if err != nil {
			t.Fatalf("%s is neither JSON nor protobuf: %v", key, err)
		}
		out[v]++
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
