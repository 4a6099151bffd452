// Package templates holds the text/template files aagen renders into a generated project
// (deploy manifests, Dockerfile). Go code is emitted with jennifer in generator/emit; every
// other file comes from here, embedded into the aagen binary.
package templates

import "embed"

// Deploy holds the deploy manifests, one template per file under deploy/.
//
//go:embed deploy/*.tmpl
var Deploy embed.FS
