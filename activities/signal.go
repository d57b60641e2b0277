package activities

import "context"

// SignalFunc signals the workflow workflowID (run runID) with name and
// arg, as client.Client.SignalWorkflow does.
type SignalFunc func(ctx context.Context, workflowID, runID, name string, arg any) error

// signalKey is the context key of a SignalFunc.
type signalKey struct{}

// WithSignal returns a copy of ctx, an activity's context, in which
// ReportProgress signals the activity's run through f instead of the
// activity's Temporal client: for a test environment that has no server
// to signal through (workflowstest sets it for every activity it runs).
func WithSignal(ctx context.Context, f SignalFunc) context.Context {
	return context.WithValue(ctx, signalKey{}, f)
}

// signalOf returns the SignalFunc of ctx, or nil when none was set.
func signalOf(ctx context.Context) SignalFunc {
	f, _ := ctx.Value(signalKey{}).(SignalFunc)
	return f
}
