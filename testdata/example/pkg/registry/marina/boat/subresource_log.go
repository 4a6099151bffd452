// This file is yours: aagen created it once and never overwrites it.

package boat

import (
	"context"
	"fmt"
	"io"
	"time"

	marinav1alpha1 "example.com/marina/pkg/apis/marina/v1alpha1"
	"github.com/aagen-dev/aagen/runtime/subresource"
)

// StreamLog writes the stream log of obj to w (GET boats/<name>/log[?follow=true]). Without
// opts.Follow, return when everything is written; with it, keep writing what comes until ctx
// is done (the client went away or the server is shutting down). Each write reaches the
// client at once and blocks while it does not read.
//
// The boat's logbook: one entry for the boat and one per condition; followed, the watch
// adds an entry every half second ("all's well") until the reader goes away.
func (Hooks) StreamLog(ctx context.Context, obj *marinav1alpha1.Boat, opts subresource.StreamOptions, w io.Writer) error {
	phase := obj.Status.Phase
	if phase == "" {
		phase = "Arriving"
	}
	if _, err := fmt.Fprintf(w, "logbook of %s, %d m, dock %q: %s\n", obj.Name, obj.Spec.LengthMeters, obj.Spec.Dock, phase); err != nil {
		return err
	}
	for _, c := range obj.Status.Conditions {
		if _, err := fmt.Fprintf(w, "%s %s: %s\n", c.LastTransitionTime.UTC().Format(time.RFC3339), c.Type, c.Message); err != nil {
			return err
		}
	}
	if !opts.Follow {
		return nil
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for bell := 1; ; bell++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if _, err := fmt.Fprintf(w, "watch bell %d: all's well aboard %s\n", bell, obj.Name); err != nil {
				return err
			}
		}
	}
}
