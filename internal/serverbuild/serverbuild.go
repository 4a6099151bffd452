// Package serverbuild compiles a generated server's command, for `aagen up` and
// `aagen conformance`.
package serverbuild

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aagen-dev/aagen/internal/gocmd"
	"github.com/aagen-dev/aagen/runtime/buildinfo"
)

// Build compiles ./cmd/<serverName> of the module in moduleDir into bin. The server reports
// the aagen that built it (buildinfo.AagenVersionLinkFlag). The go command's messages
// (downloads, compiler errors) go to stderr as they come, so the error does not repeat them.
func Build(ctx context.Context, moduleDir, serverName, bin string, stderr io.Writer) error {
	build := gocmd.Cmd{Args: []string{"build", "-ldflags=" + buildinfo.AagenVersionLinkFlag(buildinfo.Read().Aagen), "-o", bin, "./cmd/" + serverName}, Dir: moduleDir, Stderr: stderr}
	if _, err := build.Run(ctx); err != nil {
		if ge, ok := errors.AsType[*gocmd.Error](err); ok {
			err = ge.Err
		}
		return fmt.Errorf("building %s: %w", serverName, err)
	}
	return nil
}
