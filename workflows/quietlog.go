package workflows

import (
	"context"
	"errors"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
)

// heartbeatErrorLine is the line the Temporal SDK logs, at WARN level, when
// the answer to an activity's heartbeat is an error, the activity's
// cancellation included (go.temporal.io/sdk/internal, internalHeartBeat).
const heartbeatErrorLine = "RecordActivityHeartbeat with error"

// quietCancellation is the worker interceptor of Registry.Run that keeps a
// normal cancellation out of the worker's warnings: the SDK's
// heartbeatErrorLine is logged at DEBUG level when its error says the
// activity was cancelled or its run has ended, which is how a
// cancellation reaches an activity (package activities), not a fault.
// Every other line is logged as the SDK logs it.
type quietCancellation struct {
	interceptor.WorkerInterceptorBase
}

// InterceptActivity wraps the activity's outbound interceptor.
func (*quietCancellation) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &quietActivityInbound{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}}
}

// quietActivityInbound gives the activity a quietActivityOutbound.
type quietActivityInbound struct {
	interceptor.ActivityInboundInterceptorBase
}

// Init wraps outbound.
func (a *quietActivityInbound) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	return a.Next.Init(&quietActivityOutbound{ActivityOutboundInterceptorBase: interceptor.ActivityOutboundInterceptorBase{Next: outbound}})
}

// quietActivityOutbound gives the activity (and the SDK, which logs
// through it) a quietLogger.
type quietActivityOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
}

// GetLogger returns the activity's logger, quiet about cancellations.
func (o *quietActivityOutbound) GetLogger(ctx context.Context) log.Logger {
	return newQuietLogger(o.Next.GetLogger(ctx))
}

// quietLogger logs heartbeatErrorLine about a cancellation at DEBUG
// level, and every other line as base does. Like the SDK's own wrappers,
// it keeps the caller a logger reports: the activity's line, not its own.
type quietLogger struct {
	base log.Logger // the activity's logger
	out  log.Logger // base, skipping quietLogger's own frame
}

func newQuietLogger(base log.Logger) quietLogger {
	return quietLogger{base: base, out: log.Skip(base, 1)}
}

// Debug logs at DEBUG level.
func (l quietLogger) Debug(msg string, keyvals ...any) { l.out.Debug(msg, keyvals...) }

// Info logs at INFO level.
func (l quietLogger) Info(msg string, keyvals ...any) { l.out.Info(msg, keyvals...) }

// Warn logs at WARN level, except heartbeatErrorLine about a cancellation.
func (l quietLogger) Warn(msg string, keyvals ...any) {
	if msg == heartbeatErrorLine && cancellation(keyvals) {
		l.out.Debug(msg, keyvals...)
		return
	}
	l.out.Warn(msg, keyvals...)
}

// Error logs at ERROR level.
func (l quietLogger) Error(msg string, keyvals ...any) { l.out.Error(msg, keyvals...) }

// With returns the logger with keyvals on every line (log.WithLogger).
func (l quietLogger) With(keyvals ...any) log.Logger {
	return newQuietLogger(log.With(l.base, keyvals...))
}

// WithCallerSkip returns the logger skipping depth more callers
// (log.WithSkipCallers).
func (l quietLogger) WithCallerSkip(depth int) log.Logger {
	return newQuietLogger(log.Skip(l.base, depth))
}

// cancellation reports whether the error among keyvals says the activity
// was cancelled (a canceled error) or its run has ended (not found).
func cancellation(keyvals []any) bool {
	for _, v := range keyvals {
		err, ok := v.(error)
		if !ok {
			continue
		}
		var canceled *temporal.CanceledError
		var gone *serviceerror.NotFound
		if errors.As(err, &canceled) || errors.As(err, &gone) {
			return true
		}
	}
	return false
}
