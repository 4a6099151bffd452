// Package layout names the directories of a generated project, relative to its module
// root, so that every stage of the generator and the command line agree on them.
package layout

const (
	// GeneratedDir is the default directory of the clientset, listers, informers, apply
	// configurations and OpenAPI definitions (aagen generate --generated-dir).
	GeneratedDir = "pkg/generated"
	// DeployDir is the default directory of the deploy manifests (--deploy-dir).
	DeployDir = "config/deploy"
	// APIServerDir holds the generated server assembly (package apiserver).
	APIServerDir = "pkg/apiserver"
	// RegistryDir holds one storage package per resource: <RegistryDir>/<group>/<kind>.
	RegistryDir = "pkg/registry"
)
