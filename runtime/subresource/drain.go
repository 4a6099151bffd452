package subresource

import (
	"context"
	"sync"
)

// Drainer is implemented by the storages whose requests stay open (streams and
// connections). Package server calls Drain when the server begins its graceful shutdown:
// every open stream then ends (its function's context is cancelled), so that it does not
// hold the shutdown up until its timeout.
type Drainer interface {
	Drain()
}

// LongRunning is implemented by the storages whose requests stay open. Package server
// exempts them from the request timeout and counts them as long-running, like watches and
// pods/log, pods/exec.
type LongRunning interface {
	LongRunning() bool
}

// draining is closed by Drain; the zero value is not usable, see newDraining.
type draining struct {
	once sync.Once
	ch   chan struct{}
}

func newDraining() *draining { return &draining{ch: make(chan struct{})} }

// Drain ends the open streams and refuses none: a request after it ends at once.
func (d *draining) Drain() { d.once.Do(func() { close(d.ch) }) }

// context returns a context that is also cancelled when the storage drains.
func (d *draining) context(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-d.ch:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
