// This file is yours: aagen created it once and never overwrites it.

package boat

import (
	"bufio"
	"context"
	"fmt"

	marinav1alpha1 "example.com/marina/pkg/apis/marina/v1alpha1"
	"github.com/aagen-dev/aagen/runtime/subresource"
)

// ConnectAttach serves one connection attach to obj (websocket, v5.channel.k8s.io, on boats/<name>/attach):
// read what the client sends from session.Stdin, write to session.Stdout and Stderr, and
// return when done or when ctx is done. The error, or success, is sent as the status.
//
// The boat's radio: every line the harbour sends is acknowledged ("<boat> copies: <line>,
// over") until the harbour closes the channel.
func (Hooks) ConnectAttach(ctx context.Context, obj *marinav1alpha1.Boat, session subresource.Session) error {
	if _, err := fmt.Fprintf(session.Stdout, "%s on channel 16, over\n", obj.Name); err != nil {
		return err
	}
	lines := bufio.NewScanner(session.Stdin)
	for lines.Scan() {
		if _, err := fmt.Fprintf(session.Stdout, "%s copies: %s, over\n", obj.Name, lines.Text()); err != nil {
			return err
		}
	}
	if err := lines.Err(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(session.Stdout, "%s out\n", obj.Name)
	return err
}
