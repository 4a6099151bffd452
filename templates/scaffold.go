package templates

import "embed"

// Scaffold holds the templates of `aagen init` and `aagen create api`, one per file under
// scaffold/: the new project's go.mod, Makefile, README.md and .gitignore, and the doc.go
// and <kind>_types.go of a new API version and kind. They are rendered by package
// generator/scaffold with text/template; Go results are gofmt'ed there.
//
//go:embed scaffold/*.tmpl
var Scaffold embed.FS
