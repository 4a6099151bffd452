package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/aagen-dev/aagen/runtime/buildinfo"
)

// NewCommand returns the cobra command of a generated server: every upstream flag plus
// --local, --local-dir and --embedded-etcd-dir; running it serves spec until ctx ends.
func NewCommand(ctx context.Context, spec Spec, stdout, stderr io.Writer) *cobra.Command {
	o := NewOptions(&spec)
	o.Stdout = stdout
	var showVersion bool
	cmd := &cobra.Command{
		Use:   spec.Name,
		Short: fmt.Sprintf("Serve the %s aggregated API", spec.Name),
		Long: fmt.Sprintf(`%s serves its API groups as a Kubernetes aggregated API server.

Deployed, kube-apiserver routes /apis/<group>/<version> to it through an APIService and it
delegates authentication and authorization back to kube-apiserver. Locally, --local runs it
on its own with a generated CA and kubeconfig. Without --etcd-servers it starts etcd inside
the process, storing data in --embedded-etcd-dir.`, spec.Name),
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if showVersion {
				printVersion(stdout, spec.Name, buildinfo.Read())
				return nil
			}
			if limit, why, err := softMemoryLimit(os.Getenv, cgroupRoot); err != nil {
				klog.ErrorS(err, "reading the container's memory limit; the Go runtime's soft memory limit is left as it is")
			} else if limit > 0 {
				debug.SetMemoryLimit(limit)
				klog.InfoS(fmt.Sprintf("soft memory limit %d MiB (GOMEMLIMIT): %s", limit>>20, why))
			}
			if o.Local {
				ss := o.Recommended.SecureServing
				if !cmd.Flags().Changed("bind-address") {
					ss.BindAddress = net.ParseIP("127.0.0.1")
				}
				if !cmd.Flags().Changed("secure-port") {
					ss.BindPort = DefaultLocalPort
				}
			}
			return Run(ctx, spec, o)
		},
	}
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	o.AddFlags(cmd.Flags())
	cmd.AddCommand(newBackupCommand(ctx, spec.Name, stdout), newRestoreCommand(spec.Name, stdout))
	cmd.Flags().BoolVar(&showVersion, "version", false, "Print the server's version and the aagen, Go and Kubernetes versions it was built with, then exit.")
	return cmd
}
