package runs

import (
	"context"
	"time"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/signals"
)

// CodeOutputMismatch is the run error code of a completed run whose result
// does not match its tool's output schema (see CheckOutputs).
const CodeOutputMismatch = "output_schema_mismatch"

// CheckOutputs returns a Backend that answers every snapshot of b as is,
// except a completed run's whose structuredContent does not match the
// output schema tools lists for the run's tool: that run is answered
// failed, with the error code CodeOutputMismatch and a message naming the
// mismatch, as its result text (MCP: a tool error). It is the one place
// the check is made: the MCP mount and the REST API wrap their Backend
// with it, so every dialect and REST see the same answer, whatever
// language the tool's workflow is written in.
//
// A run whose tool tools cannot look up now (unknown, or unavailable) is
// answered as is. During a rollout (tools a catalog.Versioned), a result
// that matches the output schema of a version still served by live
// workers is accepted too: a run of an older version produces its own
// version's outputs. The run's event log is what the run recorded and is not
// changed.
//
// A nil tools checks nothing: it returns b.
func CheckOutputs(b Backend, tools catalog.Source) Backend {
	if tools == nil || b == nil {
		return b
	}
	if c, ok := b.(*checked); ok && c.tools == tools {
		return b
	}
	return &checked{Backend: b, tools: tools}
}

// checked is the Backend CheckOutputs returns.
type checked struct {
	Backend
	tools catalog.Source
}

// check answers snap failed when it is a completed run whose result does
// not match its tool's output schema.
func (c *checked) check(ctx context.Context, snap signals.Snapshot) signals.Snapshot {
	if snap.Status != signals.StatusCompleted || snap.Result == nil || snap.Result.IsError {
		return snap
	}
	t, err := c.tools.Lookup(ctx, snap.Tool)
	if err != nil {
		return snap
	}
	if err := t.CheckResult(snap.Result.StructuredContent); err != nil {
		if matchesOtherVersion(c.tools, snap) {
			return snap
		}
		msg := err.Error()
		snap.Status = signals.StatusFailed
		snap.StatusMessage = snap.Status.Message()
		snap.Outputs = nil
		snap.Error = &signals.RunError{Code: CodeOutputMismatch, Message: msg}
		snap.Result = &signals.ToolResult{Content: []signals.Content{{Type: "text", Text: msg}}, IsError: true}
	}
	return snap
}

// matchesOtherVersion reports whether the completed run's result matches
// the output schema of another version of its tool that live workers
// serve.
func matchesOtherVersion(tools catalog.Source, snap signals.Snapshot) bool {
	vs, ok := tools.(catalog.Versioned)
	if !ok {
		return false
	}
	for _, t := range vs.OtherVersions(snap.Tool) {
		if t.CheckResult(snap.Result.StructuredContent) == nil {
			return true
		}
	}
	return false
}

func (c *checked) Start(ctx context.Context, req NewRun) (signals.Snapshot, error) {
	snap, err := c.Backend.Start(ctx, req)
	return c.check(ctx, snap), err
}

func (c *checked) Get(ctx context.Context, caller signals.Subject, runID string, opts ...ReadOption) (signals.Snapshot, error) {
	snap, err := c.Backend.Get(ctx, caller, runID, opts...)
	return c.check(ctx, snap), err
}

func (c *checked) Events(ctx context.Context, caller signals.Subject, runID string, afterSequence int, wait time.Duration) (signals.EventPage, signals.Snapshot, error) {
	page, snap, err := c.Backend.Events(ctx, caller, runID, afterSequence, wait)
	return page, c.check(ctx, snap), err
}

func (c *checked) Resolve(ctx context.Context, caller signals.Subject, runID string, r signals.Resolution, opts ...ResolveOption) (signals.Snapshot, error) {
	snap, err := c.Backend.Resolve(ctx, caller, runID, r, opts...)
	return c.check(ctx, snap), err
}

func (c *checked) Cancel(ctx context.Context, caller signals.Subject, runID, reason string) (signals.Snapshot, error) {
	snap, err := c.Backend.Cancel(ctx, caller, runID, reason)
	return c.check(ctx, snap), err
}

func (c *checked) Await(ctx context.Context, caller signals.Subject, runID string, done func(signals.Snapshot) bool, opts ...AwaitOption) (signals.Snapshot, error) {
	snap, err := c.Backend.Await(ctx, caller, runID, func(s signals.Snapshot) bool { return done(c.check(ctx, s)) }, opts...)
	return c.check(ctx, snap), err
}
