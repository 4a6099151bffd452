package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aagen-dev/aagen/internal/migrate"
)

func newMigrateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Move a CRD's objects into the generated server of the same types",
		Long: `migrate moves the objects of an API group served by CRDs into the generated server of the
same types, keeping their identity (docs/migration.md). 'plan' says what a migration would meet
and changes nothing; 'apply' copies the objects and points the group at the server; 'rollback'
brings the CRDs up to the server's objects and points the group back at them.`,
	}
	cmd.AddCommand(newMigratePlanCommand(), newMigrateApplyCommand(), newMigrateRollbackCommand())
	return cmd
}

func newMigratePlanCommand() *cobra.Command {
	var kubeconfig, serverKubeconfig, group string
	var skip []string
	cmd := &cobra.Command{
		Use:   "plan --group GROUP --server-kubeconfig FILE",
		Short: "Compare the CRDs with the generated server and dry-run every object on it",
		Long: `plan reads the group's CustomResourceDefinitions from the cluster (--kubeconfig) and what the
generated server serves (--server-kubeconfig, reaching the server directly: its APIService does
not claim the group yet), and reports per resource: the versions and storage version on each
side, the schema fields that differ (from the CRD and the server's /openapi/v3), and every
object of the CRD the server would refuse (a dry-run create and a dry-run import of each, on
the server) with the fields and reasons; the user of --server-kubeconfig needs the verb
"import" on the group's resources (docs/migration.md). It changes nothing. It exits non-zero when the server lacks a resource, a
version or the scope the CRD has, or would refuse an object --skip does not name.`,
		Example: `  aagen migrate plan --group webapp.example.com --server-kubeconfig apiserver.local.config/local/kubeconfig`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cluster, server, err := loadKubeconfigs(kubeconfig, serverKubeconfig)
			if err != nil {
				return err
			}
			plan, err := migrate.RunPlan(cmd.Context(), migrate.PlanOptions{Cluster: cluster, Server: server, Group: group, Skip: skip})
			if err != nil {
				return err
			}
			plan.Print(cmd.OutOrStdout())
			if plan.Blocking() {
				return fmt.Errorf("the plan for %s has problems or objects the generated server would refuse (above)", group)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster serving the CRDs (default: $KUBECONFIG, then ~/.kube/config)")
	cmd.Flags().StringVar(&serverKubeconfig, "server-kubeconfig", "", "kubeconfig reaching the generated server directly")
	cmd.Flags().StringVar(&group, "group", "", "the API group to migrate")
	cmd.Flags().StringSliceVar(&skip, "skip", nil, "leave this object out: <resource>.<group>/<namespace>/<name> (cluster-scoped: <resource>.<group>/<name>); repeatable")
	return cmd
}

// loadKubeconfigs loads --kubeconfig (the cluster) and --server-kubeconfig (the generated
// server, directly, without a client-side rate limit).
func loadKubeconfigs(kubeconfig, serverKubeconfig string) (cluster, server *rest.Config, err error) {
	if serverKubeconfig == "" {
		return nil, nil, fmt.Errorf("--server-kubeconfig is required: a kubeconfig reaching the generated server directly")
	}
	if cluster, err = loadKubeconfig(kubeconfig); err != nil {
		return nil, nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	if server, err = loadKubeconfig(serverKubeconfig); err != nil {
		return nil, nil, fmt.Errorf("--server-kubeconfig: %w", err)
	}
	// No client-side limit for the generated server: until the switch it serves the
	// migration alone, whose 8 requests at a time (internal/migrate's copyWorkers) bound
	// its load; at 50 a second, the plan's dry runs of 10,000 objects took 200 s.
	server.QPS, server.Burst = -1, 0
	return cluster, server, nil
}

// loadKubeconfig loads a kubeconfig file, or with "" the default loading rules, with
// kubectl's client-side rate limits (50 requests a second, bursts of 300) rather than
// client-go's default of 5: a migration lists, writes and checks every object of a group.
func loadKubeconfig(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 50, 300
	return cfg, nil
}

func newMigrateApplyCommand() *cobra.Command {
	var kubeconfig, serverKubeconfig, group, service, caBundleFile string
	var port int32
	var skip []string
	cmd := &cobra.Command{
		Use:   "apply --group GROUP --server-kubeconfig FILE --service NAMESPACE/NAME --ca-bundle FILE",
		Short: "Move the group's objects from its CRDs to the generated server and point the group at it",
		Long: `apply runs the plan and stops when it blocks; opens the generated server's import; copies every
object of the group's CRDs into it while the CRDs serve; freezes writes to the group on the
cluster (a ValidatingAdmissionPolicy, lifted at the end whatever happens); copies again what
changed and removes what was deleted; checks both sides equal; points the group's APIServices
at the server's Service (--service, --service-port, --ca-bundle: the CA of its serving
certificate), marked not automanaged; checks that kube-apiserver then serves the objects the
CRDs held (counts and content hashes); marks the CRDs' versions deprecated, which ends the
watches kube-apiserver still serves from them; lifts the freeze and closes the import. Objects keep
their uid, timestamps, generation, metadata, managed fields and status; their resourceVersions
are new, so informers relist (docs/migration.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if serverKubeconfig == "" || service == "" || caBundleFile == "" {
				return fmt.Errorf("--server-kubeconfig, --service and --ca-bundle are required")
			}
			ns, name, ok := strings.Cut(service, "/")
			if !ok || ns == "" || name == "" {
				return fmt.Errorf("--service %q: want NAMESPACE/NAME of the generated server's Service", service)
			}
			caBundle, err := os.ReadFile(caBundleFile)
			if err != nil {
				return fmt.Errorf("--ca-bundle: %w", err)
			}
			cluster, server, err := loadKubeconfigs(kubeconfig, serverKubeconfig)
			if err != nil {
				return err
			}
			res, err := migrate.Apply(cmd.Context(), migrate.ApplyOptions{Cluster: cluster, Server: server, Group: group, Skip: skip,
				ServiceNamespace: ns, ServiceName: name, ServicePort: port, CABundle: caBundle, Progress: cmd.ErrOrStderr()})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s is served by the generated server: %v objects verified; writes were frozen for %v\n",
				group, res.Verification.Objects, res.Frozen.Round(time.Millisecond))
			return nil
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster serving the CRDs (default: $KUBECONFIG, then ~/.kube/config)")
	cmd.Flags().StringVar(&serverKubeconfig, "server-kubeconfig", "", "kubeconfig reaching the generated server directly")
	cmd.Flags().StringVar(&group, "group", "", "the API group to migrate")
	cmd.Flags().StringSliceVar(&skip, "skip", nil, "leave this object out: <resource>.<group>/<namespace>/<name> (cluster-scoped: <resource>.<group>/<name>); repeatable")
	cmd.Flags().StringVar(&service, "service", "", "the generated server's Service, NAMESPACE/NAME")
	cmd.Flags().Int32Var(&port, "service-port", 443, "the port of the Service")
	cmd.Flags().StringVar(&caBundleFile, "ca-bundle", "", "PEM file of the CA that signed the server's serving certificate")
	return cmd
}

func newMigrateRollbackCommand() *cobra.Command {
	var kubeconfig, serverKubeconfig, group string
	cmd := &cobra.Command{
		Use:   "rollback --group GROUP --server-kubeconfig FILE",
		Short: "Move the group back from the generated server to its CRDs, after apply",
		Long: `rollback undoes apply: it freezes writes to the group (a ValidatingAdmissionPolicy, which the
generated server evaluates too; lifted at the end whatever happens) but its own; lists the
generated server's objects; hands the group's APIServices back to kube-apiserver (their
automanaged label as before apply, no Service) and waits until kube-apiserver serves the CRDs
again; brings every CRD object up to the server's content (metadata, spec, status, managed
fields), deletes those deleted on the server, and leaves alone what apply skipped; checks both
sides equal; tells the generated server, which ends the watches it still serves; and lifts the
freeze. uids the CRDs hold are kept; an object created on the server
after apply is created anew with a new uid (reported). The server keeps its objects. Run again
after a failure, it goes on from where it stopped (docs/migration.md).`,
		Example: `  aagen migrate rollback --group webapp.example.com --server-kubeconfig migrator.kubeconfig`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cluster, server, err := loadKubeconfigs(kubeconfig, serverKubeconfig)
			if err != nil {
				return err
			}
			res, err := migrate.Rollback(cmd.Context(), migrate.RollbackOptions{Cluster: cluster, Server: server, Group: group, Progress: cmd.ErrOrStderr()})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s is served by its CRDs again: %v objects verified (%d updated, %d created anew, %d deleted, %d unchanged); writes were frozen for %v\n",
				group, res.Verification.Objects, len(res.Updated), len(res.Recreated), len(res.Deleted), res.Unchanged, res.Frozen.Round(time.Millisecond))
			for _, id := range res.Recreated {
				fmt.Fprintf(out, "created anew, with a new uid (objects that refer to it by uid must be updated): %s\n", id)
			}
			for _, id := range slices.Sorted(maps.Keys(res.Partial)) {
				fmt.Fprintf(out, "kept but for %s: %s\n", strings.Join(res.Partial[id], ", "), id)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster serving the CRDs (default: $KUBECONFIG, then ~/.kube/config)")
	cmd.Flags().StringVar(&serverKubeconfig, "server-kubeconfig", "", "kubeconfig reaching the generated server directly")
	cmd.Flags().StringVar(&group, "group", "", "the API group to move back")
	return cmd
}
