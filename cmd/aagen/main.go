// Command aagen turns a package of Go API types into a Kubernetes aggregated API server.
//
//	aagen generate ./pkg/apis/...   # write the server, clients and OpenAPI into the module
//	aagen up ./pkg/apis/...         # generate, build and run it locally on embedded etcd
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "aagen:", err)
		os.Exit(1)
	}
}
