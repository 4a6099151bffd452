package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	clientrest "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/aagen-dev/aagen/runtime/atomicfile"
	"github.com/aagen-dev/aagen/runtime/etcd"
)

// EtcdSnapshotPath is where a server on embedded etcd serves a consistent snapshot of it
// (GET, for `<server> backup`). Like every path it needs authorization: in local mode the
// admin certificate (system:masters); deployed, kube-apiserver's answer for the non-resource
// URL (only cluster-admin-like roles grant it).
const EtcdSnapshotPath = "/backup/etcd-snapshot"

// installEtcdSnapshot serves EtcdSnapshotPath from the etcd that storage reaches, through
// the same transport (endpoints and TLS files) the storage uses.
func installEtcdSnapshot(srv *genericapiserver.GenericAPIServer, storage storagebackend.TransportConfig) {
	srv.Handler.NonGoRestfulMux.HandleFunc(EtcdSnapshotPath, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		client, err := newEtcdClient(storage)
		if err != nil {
			klog.ErrorS(err, "etcd snapshot")
			http.Error(w, "connecting to etcd failed", http.StatusInternalServerError)
			return
		}
		defer client.Close()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="etcd-snapshot.db"`)
		// The body is the snapshot as etcd streams it; a failure half-way leaves a
		// truncated body, which the hash at its end exposes (etcd.VerifySnapshot).
		n, err := etcd.WriteSnapshot(r.Context(), client, w)
		if err != nil {
			klog.ErrorS(err, "etcd snapshot", "bytes", n)
			if n == 0 {
				http.Error(w, "etcd snapshot failed", http.StatusInternalServerError)
			}
			return
		}
		klog.InfoS("etcd snapshot served", "bytes", n)
	})
}

// newEtcdClient connects to the etcd of a storage transport.
func newEtcdClient(t storagebackend.TransportConfig) (*clientv3.Client, error) {
	var tlsConfig *tls.Config
	if t.CertFile != "" || t.KeyFile != "" || t.TrustedCAFile != "" {
		info := transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.TrustedCAFile}
		var err error
		if tlsConfig, err = info.ClientConfig(); err != nil {
			return nil, fmt.Errorf("etcd client TLS: %w", err)
		}
	}
	return clientv3.New(clientv3.Config{
		Endpoints:   t.ServerList,
		TLS:         tlsConfig,
		DialTimeout: 20 * time.Second,
		Logger:      zap.NewNop(),
	})
}

// newBackupCommand returns `<server> backup`: it asks a running server for a snapshot of
// its embedded etcd and writes it to a file, verified, atomically.
func newBackupCommand(ctx context.Context, name string, stdout io.Writer) *cobra.Command {
	var to, kubeconfig string
	cmd := &cobra.Command{
		Use:   "backup --to FILE",
		Short: "Save a consistent snapshot of the running server's embedded etcd",
		Long: fmt.Sprintf(`backup asks the running %[1]s for a snapshot of its embedded etcd (etcd's
Maintenance.Snapshot: every key at one revision, taken while the server keeps serving) and
writes it to --to once its SHA-256 checks out. Restore it with '%[1]s restore'.

It reaches the server with a kubeconfig (--kubeconfig, else $KUBECONFIG or ~/.kube/config) whose
user may GET %[2]s: in local mode the admin kubeconfig in --local-dir. With --etcd-servers
(external etcd), back up etcd itself instead: etcdctl snapshot save FILE. With
--datastore-endpoint (kine on SQL), back up the database with its own tools.`, name, EtcdSnapshotPath),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to == "" {
				return fmt.Errorf("--to is required: the file to write the snapshot to")
			}
			return backup(ctx, kubeconfig, to, stdout)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "file to write the snapshot to (replaced only once the new snapshot is complete and verified)")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of a user allowed to read the snapshot (default: $KUBECONFIG, then ~/.kube/config)")
	return cmd
}

func backup(ctx context.Context, kubeconfig, to string, stdout io.Writer) error {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	client, err := clientrest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+EtcdSnapshotPath, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("requesting a snapshot from %s: %w", cfg.Host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		hint := ""
		if resp.StatusCode == http.StatusNotFound {
			hint = " (the server does not run on embedded etcd: back up its external etcd with etcdctl snapshot save, or its SQL database (--datastore-endpoint) with the database's own tools)"
		}
		return fmt.Errorf("GET %s%s: %s: %s%s", cfg.Host, EtcdSnapshotPath, resp.Status, msg, hint)
	}
	// The snapshot is checked before it takes the place of an older one at to.
	var n int64
	tmp, err := atomicfile.Stage(to, 0o600, func(w io.Writer) (err error) {
		n, err = io.Copy(w, resp.Body)
		return err
	})
	if err != nil {
		return fmt.Errorf("receiving the snapshot after %d bytes: %w", n, err)
	}
	defer os.Remove(tmp)
	st, err := etcd.VerifySnapshot(tmp)
	if err != nil {
		return err
	}
	if err := atomicfile.Commit(tmp, to); err != nil {
		return fmt.Errorf("saving the snapshot: %w", err)
	}
	fmt.Fprintf(stdout, "saved snapshot %s: revision %d, %d keys, %d bytes\n", to, st.Revision, st.Keys, n)
	return nil
}

// newRestoreCommand returns `<server> restore`: it makes a new embedded-etcd data
// directory from a snapshot.
func newRestoreCommand(name string, stdout io.Writer) *cobra.Command {
	var from, dataDir string
	cmd := &cobra.Command{
		Use:   "restore --from FILE --data-dir DIR",
		Short: "Create an embedded-etcd data directory from a snapshot",
		Long: fmt.Sprintf(`restore checks a snapshot taken by '%[1]s backup' (or etcdctl snapshot save) and
creates from it a new etcd data directory, DIR, which must not exist or be empty. Start the
server on it with --embedded-etcd-dir=DIR. It does not need the server to run.`, name),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" || dataDir == "" {
				return fmt.Errorf("--from (the snapshot) and --data-dir (a new directory) are required")
			}
			if err := etcd.Restore(from, dataDir); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "restored %s into %s; start the server with --embedded-etcd-dir=%s\n", from, dataDir, dataDir)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "snapshot file")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "new data directory for the embedded etcd")
	return cmd
}
