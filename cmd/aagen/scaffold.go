package main

import (
	"github.com/spf13/cobra"

	"github.com/aagen-dev/aagen/generator/scaffold"
)

// newInitCommand is `aagen init`: a new project.
func newInitCommand() *cobra.Command {
	var o scaffold.InitOptions
	cmd := &cobra.Command{
		Use:   "init --domain <domain> --module <module path>",
		Short: "Start a new project: a Go module ready for aagen create api and aagen generate",
		Long: `init writes a new Go module into --dir (default: the current directory, which must be
empty but for dotfiles such as .git): go.mod, a Makefile (generate, verify, build, run,
test, manifests), a README.md, a .gitignore, the types root pkg/apis/ and a PROJECT file
that records the domain and module for aagen create api.

The API groups of the project are <group>.<domain>: --domain is a DNS name you own.`,
		Example: `  aagen init --domain example.com --module example.com/foo
  aagen init --domain example.com --module example.com/foo --dir foo`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Log, _ = progress(cmd)
			return scaffold.Init(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Domain, "domain", "", "domain of the project's API groups, e.g. example.com (required)")
	fs.StringVar(&o.Module, "module", "", "Go module path of the new project, e.g. example.com/foo (required)")
	fs.StringVarP(&o.Dir, "dir", "C", ".", "directory of the new project; created if missing, else it must be empty but for dotfiles")
	fs.BoolVar(&o.SkipGoMod, "skip-go-mod", false, "do not run go mod download (offline; create api and generate run go mod tidy)")
	_ = cmd.MarkFlagRequired("domain")
	_ = cmd.MarkFlagRequired("module")
	return cmd
}

// newCreateCommand is `aagen create`, whose subcommand api adds a kind.
func newCreateCommand() *cobra.Command {
	create := &cobra.Command{
		Use:   "create",
		Short: "Add to a project made with aagen init",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	create.AddCommand(newCreateAPICommand())
	return create
}

func newCreateAPICommand() *cobra.Command {
	var o scaffold.APIOptions
	cmd := &cobra.Command{
		Use:   "api --group <group> --version <version> --kind <Kind>",
		Short: "Add a kind: its Go types in pkg/apis/<group>/<version>, ready for aagen generate",
		Long: `api writes pkg/apis/<group>/<version>/<kind>_types.go with the kind, its Spec (one example
field), its Status (with --status) and its List, marked for aagen generate, and the package's
doc.go with +groupName=<group>.<domain> when the package is new. It records the kind in
PROJECT and runs go mod tidy. It never overwrites a file: it refuses when the types file
exists or the package already declares the kind.`,
		Example: `  aagen create api --group ships --version v1alpha1 --kind Frigate --status
  aagen create api --group ships --version v1alpha1 --kind Harbor --cluster-scoped
  aagen create api --group ships --version v1 --kind Fleet --scale --plural fleets`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Log, _ = progress(cmd)
			return scaffold.CreateAPI(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Group, "group", "", "group name; the API group is <group>.<domain of PROJECT> (required)")
	fs.StringVar(&o.Version, "version", "", "API version: v1, v1beta1, v2alpha1, ... (required)")
	fs.StringVar(&o.Kind, "kind", "", "kind, an UpperCamelCase Go identifier, e.g. Frigate (required)")
	fs.StringVar(&o.Plural, "plural", "", "resource name (default: the lower-case plural of the kind)")
	fs.BoolVar(&o.ClusterScoped, "cluster-scoped", false, "the kind is cluster-scoped (default: namespaced)")
	fs.BoolVar(&o.Status, "status", false, "add a Status with conditions, served as the /status subresource")
	fs.BoolVar(&o.Scale, "scale", false, "add spec.replicas, status.replicas and status.selector for a /scale subresource (implies --status)")
	fs.StringVarP(&o.Dir, "dir", "C", ".", "a directory of the project (PROJECT is looked up from there)")
	fs.BoolVar(&o.SkipGoMod, "skip-go-mod", false, "do not run go mod tidy after writing the types")
	for _, f := range []string{"group", "version", "kind"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}
