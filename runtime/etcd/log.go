package etcd

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// logState is shared between one Server and the zap logger handed to its
// etcd.
type logState struct {
	// starting is true while embed.StartEtcd runs in Start's goroutine;
	// fatal and panic log calls then panic with a *startupAbort.
	starting atomic.Bool
	// closing is true once Close (or a failed Start) began stopping etcd;
	// the errors etcd logs about its own listeners closing are dropped.
	closing atomic.Bool
}

// newLogger returns the zap logger etcd logs through: entries at level and
// above go to out (nothing when out is nil), except shutdown noise.
func newLogger(out io.Writer, level zapcore.Level, state *logState) *zap.Logger {
	var inner zapcore.Core = zapcore.NewNopCore()
	if out != nil {
		encCfg := zap.NewProductionEncoderConfig()
		encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
		inner = zapcore.NewCore(zapcore.NewConsoleEncoder(encCfg), zapcore.Lock(zapcore.AddSync(out)), level)
	}
	return zap.New(&quietCore{Core: inner, state: state},
		zap.WithFatalHook(terminalHook{state: state, otherwise: zapcore.WriteThenFatal}),
		zap.WithPanicHook(terminalHook{state: state, otherwise: zapcore.WriteThenPanic}),
	).Named("etcd")
}

// quietCore drops the errors etcd logs while it is being closed, such as
// "setting up serving from embedded etcd failed ... http: Server closed".
type quietCore struct {
	zapcore.Core
	state *logState
}

func (c *quietCore) With(fields []zapcore.Field) zapcore.Core {
	return &quietCore{Core: c.Core.With(fields), state: c.state}
}

func (c *quietCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return ce
}

func (c *quietCore) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	if c.state.closing.Load() && isShutdownNoise(fields) {
		return nil
	}
	if isBenignVersionRace(ent, fields) {
		return nil
	}
	return c.Core.Write(ent, fields)
}

// isBenignVersionRace reports etcd's version monitor failing to record the storage
// version before the first raft entry is applied ("missing term information"). etcd
// retries on its next tick; seen when a member is stopped right after it started.
func isBenignVersionRace(ent zapcore.Entry, fields []zapcore.Field) bool {
	err := fieldError(fields)
	return err != nil && ent.Message == "failed to update storage version" && strings.Contains(err.Error(), "missing term information")
}

// isShutdownNoise reports whether an entry carries an error that only says a
// server or listener was closed.
func isShutdownNoise(fields []zapcore.Field) bool {
	err := fieldError(fields)
	if err == nil {
		return false
	}
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"use of closed network connection", "Server closed", "server closed", "listener closed", "server stopped"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// fieldError returns the error of the first zap.Error field, if any.
func fieldError(fields []zapcore.Field) error {
	for _, f := range fields {
		if f.Type == zapcore.ErrorType {
			if err, ok := f.Interface.(error); ok {
				return err
			}
		}
	}
	return nil
}

// startupAbort is the error Start returns when etcd logged at fatal or panic
// level while starting.
type startupAbort struct {
	msg string
	err error
}

func (a *startupAbort) Error() string {
	if a.err == nil {
		return a.msg
	}
	return fmt.Sprintf("%s: %v", a.msg, a.err)
}

func (a *startupAbort) Unwrap() error { return a.err }

// terminalHook runs after a fatal or panic entry was written. While Start is
// starting etcd it panics with a *startupAbort, which Start recovers;
// otherwise it does what zap does by default (exit or panic), because etcd
// cannot continue.
type terminalHook struct {
	state     *logState
	otherwise zapcore.CheckWriteAction
}

func (h terminalHook) OnWrite(ce *zapcore.CheckedEntry, fields []zapcore.Field) {
	if h.state.starting.Load() {
		panic(&startupAbort{msg: ce.Message, err: fieldError(fields)})
	}
	h.otherwise.OnWrite(ce, fields)
}
