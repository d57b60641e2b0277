// Package runsignal lets a test environment carry, in an activity's
// context, how the activity signals its run: activities.ReportProgress
// signals through it when it is set (workflowstest sets it, as the SDK's
// test environment has no server to signal through), and through the
// activity's Temporal client otherwise.
package runsignal

import "context"

// Func signals the workflow workflowID (run runID) with name and arg.
type Func func(ctx context.Context, workflowID, runID, name string, arg any) error

type key struct{}

// With returns ctx with f as the way its activity signals its run.
func With(ctx context.Context, f Func) context.Context {
	return context.WithValue(ctx, key{}, f)
}

// From returns the Func of ctx, or nil when none was set.
func From(ctx context.Context) Func {
	f, _ := ctx.Value(key{}).(Func)
	return f
}
