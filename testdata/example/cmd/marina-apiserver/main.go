// This file is yours: aagen created it once and never overwrites it.

// Command marina-apiserver serves the API as a Kubernetes aggregated API server; see --help.
package main

import (
	"fmt"
	"os"

	"example.com/marina/pkg/apiserver"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	cmd, err := apiserver.NewCommand(ctx, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(cli.Run(cmd))
}
