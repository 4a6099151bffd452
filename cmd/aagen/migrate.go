package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aagen-dev/aagen/internal/migrate"
)

func newMigrateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Move a CRD's objects into the generated server of the same types (plan only, so far)",
		Long: `migrate moves the objects of an API group served by CRDs into the generated server of the
same types, keeping their identity (docs/migration.md). 'plan' says what a migration would meet
and changes nothing; the copy and the switch are not there yet.`,
	}
	cmd.AddCommand(newMigratePlanCommand())
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
			if serverKubeconfig == "" {
				return fmt.Errorf("--server-kubeconfig is required: a kubeconfig reaching the generated server directly")
			}
			cluster, err := loadKubeconfig(kubeconfig)
			if err != nil {
				return fmt.Errorf("--kubeconfig: %w", err)
			}
			server, err := loadKubeconfig(serverKubeconfig)
			if err != nil {
				return fmt.Errorf("--server-kubeconfig: %w", err)
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

// loadKubeconfig loads a kubeconfig file, or with "" the default loading rules.
func loadKubeconfig(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
}
