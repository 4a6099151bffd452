package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/aagen-dev/aagen/generator"
	"github.com/aagen-dev/aagen/generator/deploycerts"
	"github.com/aagen-dev/aagen/generator/emit"
	"github.com/aagen-dev/aagen/generator/layout"
	"github.com/aagen-dev/aagen/internal/conformance"
	"github.com/aagen-dev/aagen/internal/serverbuild"
	"github.com/aagen-dev/aagen/runtime/buildinfo"
)

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "aagen",
		Short: "Generate a Kubernetes aggregated API server from Go API types",
		Long: `aagen reads a package of Go API types (+groupName, +genclient and kubebuilder markers) and
generates a complete aggregated API server into the same module: registration, deepcopy,
REST storage on etcd, OpenAPI, clientset, listers, informers, apply configurations and
the server command.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().BoolP("verbose", "v", false, "print detail: each generator's time and each file written or deleted")
	root.AddCommand(newInitCommand(), newCreateCommand(), newGenerateCommand(), newUpCommand(), newCertsCommand(), newConformanceCommand(), newMigrateCommand(), newVersionCommand())
	return root
}

// generateFlags are the flags shared by generate and up.
type generateFlags struct {
	dir          string
	name         string
	generatedDir string
	replace      string
	version      string
	noGoMod      bool
	backends     []string
	verify       bool
	force        bool
	deploy       emit.DeployOptions
}

func (f *generateFlags) add(cmd *cobra.Command, withVerify bool) {
	fs := cmd.Flags()
	fs.StringVarP(&f.dir, "dir", "C", ".", "directory to run in; it must be inside the module that holds the types")
	fs.StringVar(&f.name, "name", "", "server name (default <module base>-apiserver); the command is cmd/<name>")
	fs.StringVar(&f.generatedDir, "generated-dir", layout.GeneratedDir, "module-relative directory for clientset, listers, informers, apply configurations and OpenAPI")
	fs.StringVar(&f.replace, "aagen-replace", "", "aagen checkout the module's go.mod replaces the runtime with (default: the checkout this aagen was built from)")
	fs.StringVar(&f.version, "aagen-version", "", "require this published aagen version instead of a replace")
	fs.BoolVar(&f.noGoMod, "no-go-mod", false, "leave go.mod alone (no runtime requirement, no go mod tidy)")
	fs.StringSliceVar(&f.backends, "backend", nil, "serve these kinds (<Kind>.<group>, e.g. PodMetrics.metrics.k8s.io) from your own backend, as if marked +aagen:backend: for a published package you do not edit")
	fs.StringVar(&f.deploy.Dir, "deploy-dir", layout.DeployDir, "module-relative directory for the deploy manifests")
	fs.StringVar(&f.deploy.Namespace, "namespace", "", "namespace the server is deployed to (default: the server name)")
	fs.StringVar(&f.deploy.Image, "image", "", "container image of the server (default <name>:latest)")
	fs.StringSliceVar(&f.deploy.EtcdServers, "etcd-servers", nil, "use this external etcd cluster instead of deploying a 3-member etcd StatefulSet")
	fs.StringVar(&f.deploy.EtcdImage, "etcd-image", emit.DefaultEtcdImage, "image of the etcd StatefulSet")
	fs.BoolVar(&f.deploy.CertManager, "cert-manager", false, "let cert-manager issue the serving certificate and inject the CA into the APIServices (instead of local certificates in <deploy-dir>/certs)")
	fs.BoolVar(&f.force, "force", false, "run every generator even when nothing changed since the last run")
	if withVerify {
		fs.BoolVar(&f.verify, "verify", false, "write nothing; fail listing the generated files that are out of date")
	}
}

// progress returns where progress lines go: the terminal, or nowhere when stderr is piped
// (unless -v asks for them).
func progress(cmd *cobra.Command) (log io.Writer, verbose bool) {
	verbose, _ = cmd.Flags().GetBool("verbose")
	errOut := cmd.ErrOrStderr()
	if verbose {
		return errOut, true
	}
	if f, ok := errOut.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return errOut, false
	}
	return nil, false
}

func (f *generateFlags) options(cmd *cobra.Command, patterns []string) generator.Options {
	log, verbose := progress(cmd)
	return generator.Options{
		Warn:         cmd.ErrOrStderr(),
		Verbose:      verbose,
		Dir:          f.dir,
		Patterns:     patterns,
		ServerName:   f.name,
		GeneratedDir: f.generatedDir,
		Runtime:      generator.RuntimeRef{Replace: f.replace, Version: f.version, Skip: f.noGoMod},
		Backends:     f.backends,
		Verify:       f.verify,
		Force:        f.force,
		Deploy:       f.deploy,
		Log:          log,
	}
}

func newGenerateCommand() *cobra.Command {
	var f generateFlags
	cmd := &cobra.Command{
		Use:   "generate [packages]",
		Short: "Generate the aggregated API server for the given types packages",
		Example: `  aagen generate ./pkg/apis/...
  aagen generate --verify ./pkg/apis/...   # in CI: fail when generated code is stale`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := generator.Generate(cmd.Context(), f.options(cmd, args))
			return err
		},
	}
	f.add(cmd, true)
	f.addDatastore(cmd)
	return cmd
}

// addDatastore adds the deployed server's datastore flags: generate and certs, which
// regenerates the manifests, take them (up has its own --datastore, etcd or sqlite, for the
// local server).
func (f *generateFlags) addDatastore(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.deploy.Datastore, "datastore", emit.DatastoreEtcd, "where the deployed server keeps its data: etcd (a StatefulSet, or --etcd-servers) or sql (PostgreSQL/MySQL through kine; DSN in a Secret, see --datastore-secret)")
	fs.StringVar(&f.deploy.DatastoreSecret, "datastore-secret", "", "with --datastore=sql: the Secret whose key \"endpoint\" holds the DSN (default <name>-datastore)")
}

func newUpCommand() *cobra.Command {
	var f generateFlags
	var stateDir, datastore string
	cmd := &cobra.Command{
		Use:   "up [packages] [-- server flags]",
		Short: "Generate, build and run the server locally on embedded etcd (or SQLite)",
		Long: `up generates the server (if anything changed), builds it, and runs it in local mode: an
embedded etcd whose data survives restarts, TLS from a local CA, and a kubeconfig with an
admin client certificate. Once the server is ready it prints

  export KUBECONFIG=<path>

on its own line; with it, kubectl works on the new resources. Ctrl-C stops the server.
Arguments after -- go to the server (see its --help). --datastore=sqlite keeps the data
in SQLite (through kine, in the state directory) instead of etcd.`,
		Example: `  aagen up ./pkg/apis/...
  aagen up ./pkg/apis/... -- --secure-port=9443 -v=2
  aagen up --datastore=sqlite ./pkg/apis/...`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			patterns, serverArgs := args, []string(nil)
			if n := cmd.ArgsLenAtDash(); n >= 0 {
				patterns, serverArgs = args[:n], args[n:]
			}
			if len(patterns) == 0 {
				return errors.New("name the types packages, e.g. aagen up ./pkg/apis/...")
			}
			if _, err := upStorageArgs(datastore, stateDir); err != nil {
				return err // before generating and building
			}
			return up(cmd.Context(), f.options(cmd, patterns), stateDir, datastore, serverArgs, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f.add(cmd, false)
	cmd.Flags().StringVar(&stateDir, "state-dir", ".aagen", "module-relative directory for the binary, etcd data and local credentials")
	cmd.Flags().StringVar(&datastore, "datastore", upDatastoreEtcd, "where the server keeps its data: etcd (embedded) or sqlite (through kine, in the state directory)")
	return cmd
}

func up(ctx context.Context, o generator.Options, stateDir, datastore string, serverArgs []string, stdout, stderr io.Writer) error {
	res, err := generator.Generate(ctx, o)
	if err != nil {
		return err
	}
	root := res.ModuleDir
	state := filepath.Join(root, stateDir)
	bin := filepath.Join(state, "bin", res.ServerName)
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	fmt.Fprintf(log, "aagen: building %s (the first build compiles k8s.io/apiserver and etcd: a few minutes)\n", res.ServerName)
	start := time.Now()
	if err := serverbuild.Build(ctx, root, res.ServerName, bin, stderr); err != nil {
		return err
	}
	fmt.Fprintf(log, "aagen: built %s in %.0fs; starting it (Ctrl-C stops it)\n", bin, time.Since(start).Seconds())
	storageArgs, err := upStorageArgs(datastore, state)
	if err != nil {
		return err
	}
	args := append(append([]string{
		"--local",
		"--local-dir=" + filepath.Join(state, "local"),
	}, storageArgs...), serverArgs...)
	srv := exec.Command(bin, args...)
	srv.Dir, srv.Stdout, srv.Stderr = root, stdout, stderr
	// A process group of its own (see serverProcAttr); we forward one SIGTERM. The parent
	// death signal follows the thread that started the server: keep it until we return.
	srv.SysProcAttr = serverProcAttr()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := srv.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s: %w", res.ServerName, err)
		}
		return nil
	case <-ctx.Done():
		_ = srv.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("%s did not stop cleanly: %w", res.ServerName, err)
			}
			return nil
		case <-time.After(60 * time.Second):
			_ = srv.Process.Kill()
			<-done
			return fmt.Errorf("%s did not stop within 60s of the interrupt and was killed", res.ServerName)
		}
	}
}

func newCertsCommand() *cobra.Command {
	var f generateFlags
	var renew, renewEtcd bool
	cmd := &cobra.Command{
		Use:   "certs [packages]",
		Short: "Create (or renew) the certificates of the deployed server and its etcd",
		Long: `certs creates, in <deploy-dir>/certs, a CA and a serving certificate for the server's
Service (<name>.<namespace>.svc), the Secret that carries them, and writes the CA into every
APIService's caBundle, by running generate (give it the flags you generate with); and, when
the manifests include the etcd StatefulSet, etcd's own CA with its member and client
certificates. Existing certificates are kept unless asked to renew them. With --cert-manager
no local certificates are made: cert-manager issues and renews them.

--renew issues a new serving CA and certificate with no moment when kube-apiserver distrusts
the server: the old CA is kept as ca-previous.crt and stays in caBundle (and the Secret's
ca.crt) after the new one. Apply; each server Pod loads the new certificate once kubelet has
updated its Secret volume (a minute or two; the server reloads it without a restart, and
'kubectl rollout restart' makes it certain). Then delete ca-previous.crt, generate again and
apply, so that only the new CA is trusted. A renewal is refused while ca-previous.crt exists.

--renew-etcd issues a new etcd CA and member and client certificates. It is an outage: etcd
and the server read the CA they trust when they start, so a member with new certificates and
one with old ones refuse each other. After applying, delete every etcd Pod at once, then
restart the server.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := f.options(cmd, args)
			if (renew || renewEtcd) && o.Deploy.CertManager {
				return fmt.Errorf("--renew and --renew-etcd renew the local certificates; with --cert-manager, cert-manager renews them")
			}
			root, err := generator.ModuleRoot(o.Dir)
			if err != nil {
				return err
			}
			dir := path.Join(o.Deploy.Dir, "certs")
			// What a renewal removes is put back if the generation fails, so that a failed
			// run leaves the certificates (and the manifests that name them) as they were.
			restore, err := deploycerts.Snapshot(root, dir)
			if err != nil {
				return err
			}
			previous := ""
			if renew {
				if previous, err = deploycerts.RenewServing(root, dir); err != nil {
					return err
				}
			}
			if renewEtcd {
				if err := deploycerts.RenewEtcd(root, dir); err != nil {
					return err
				}
			}
			if _, err := generator.Generate(cmd.Context(), o); err != nil {
				if renew || renewEtcd {
					if rerr := restore(); rerr != nil {
						return fmt.Errorf("%w; putting the certificates back also failed: %v", err, rerr)
					}
					return fmt.Errorf("%w (the certificates are as they were)", err)
				}
				return err
			}
			if previous != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "The previous serving CA stays in caBundle as %s: delete it, generate again and apply once every server Pod serves the new certificate.\n", previous)
			}
			if renewEtcd {
				fmt.Fprintln(cmd.ErrOrStderr(), "New etcd certificates: after applying, delete every etcd Pod at once, then restart the server (an outage).")
			}
			return nil
		},
	}
	f.add(cmd, false)
	f.addDatastore(cmd)
	cmd.Flags().BoolVar(&renew, "renew", false, "issue a new serving CA and certificate, keeping the previous CA in the APIServices' caBundle (ca-previous.crt) until you delete it")
	cmd.Flags().BoolVar(&renewEtcd, "renew-etcd", false, "issue a new etcd CA and member and client certificates (an outage: restart every etcd member at once, then the server)")
	return cmd
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print aagen's version and the Kubernetes libraries it pins",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			out := cmd.OutOrStdout()
			info, ok := debug.ReadBuildInfo()
			if !ok {
				fmt.Fprintln(out, "aagen (unknown build)")
				return
			}
			fmt.Fprintf(out, "aagen %s (%s)\n", buildinfo.Read().Aagen, info.GoVersion)
			for _, d := range info.Deps {
				switch d.Path {
				case "k8s.io/apiserver", "k8s.io/code-generator", "k8s.io/kube-openapi", "go.etcd.io/etcd/server/v3":
					fmt.Fprintf(out, "  %s %s\n", d.Path, d.Version)
				}
			}
		},
	}
}

func newConformanceCommand() *cobra.Command {
	var f generateFlags
	var binDir string
	cmd := &cobra.Command{
		Use:   "conformance [packages]",
		Short: "Send the same requests to the generated server and to controller-gen's CRD and show every difference",
		Long: `conformance generates the server (as up does) and builds it; builds kube-apiserver ` + conformance.KubeVersion + ` and
controller-gen ` + conformance.ControllerGenVersion + ` from Go modules into a cache (--bin-dir); writes the CRDs of the same
types with controller-gen and installs them on kube-apiserver; then sends both servers the
same requests, derived from the types (a valid object, each constraint at its boundary and
past it, on create, update, merge patch, JSON patch and server-side apply; CEL rules violated;
defaults; required fields; unknown fields; status writes; lists, dry run, finalizers), and
compares status code, reason, message, causes and the returned object. It prints one table
and exits non-zero when a difference is not listed as intended (docs/conformance.md).`,
		Example: `  aagen conformance ./pkg/apis/...`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = []string{"./..."}
			}
			o := f.options(cmd, args)
			res, err := conformance.Run(cmd.Context(), conformance.Options{Generate: o, BinDir: binDir, Out: cmd.OutOrStdout(), Log: cmd.ErrOrStderr()})
			if err != nil {
				return err
			}
			if n := len(res.Unlisted); n > 0 {
				return fmt.Errorf("%d difference(s) between the generated server and the CRD not listed as intended", n)
			}
			return nil
		},
	}
	f.add(cmd, false)
	cmd.Flags().StringVar(&binDir, "bin-dir", "", "where kube-apiserver and controller-gen are built and kept (default <user cache dir>/aagen/bin)")
	return cmd
}
