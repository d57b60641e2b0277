package catalog

import (
	"context"

	"github.com/openwop/temporal-mcp/signals"
)

// CodeOutputMismatch is the run error code of a completed run whose result
// does not match its tool's output schema (see CheckOutput).
const CodeOutputMismatch = "output_schema_mismatch"

// CheckOutput returns snap as is, except a completed run's whose
// structuredContent does not match the output schema src lists for the
// run's tool: that run is answered failed, with the error code
// CodeOutputMismatch and a message naming the mismatch as its result text
// (MCP: a tool error). Whatever language a tool's workflow is written in,
// its result is checked here, against the spec it was published with.
//
// A run whose tool src cannot look up now (unknown, or unavailable) is
// answered as is. During a rollout, a result that matches the output
// schema of another version still served by live workers
// (Source.OtherVersions) is accepted too: a run of an older version
// produces its own version's outputs. The run's event log is what the run
// recorded and is not changed.
func CheckOutput(ctx context.Context, src Source, snap signals.Snapshot) signals.Snapshot {
	if snap.Status != signals.StatusCompleted || snap.Result == nil || snap.Result.IsError {
		return snap
	}
	t, err := src.Lookup(ctx, snap.Tool)
	if err != nil {
		return snap
	}
	err = t.CheckResult(snap.Result.StructuredContent)
	if err == nil || matchesOtherVersion(src, snap) {
		return snap
	}
	msg := err.Error()
	snap.Status = signals.StatusFailed
	snap.StatusMessage = snap.Status.Message()
	snap.Outputs = nil
	snap.Error = &signals.RunError{Code: CodeOutputMismatch, Message: msg}
	snap.Result = &signals.ToolResult{Content: []signals.Content{{Type: "text", Text: msg}}, IsError: true}
	return snap
}

// OutputCheck is CheckOutput bound to src, in the shape of runs.Amend's
// amendment; nil for a nil src (nothing to check against).
func OutputCheck(src Source) func(context.Context, signals.Snapshot) signals.Snapshot {
	if src == nil {
		return nil
	}
	return func(ctx context.Context, snap signals.Snapshot) signals.Snapshot { return CheckOutput(ctx, src, snap) }
}

// matchesOtherVersion reports whether the completed run's result matches
// the output schema of another version of its tool that live workers
// serve.
func matchesOtherVersion(src Source, snap signals.Snapshot) bool {
	for _, t := range src.OtherVersions(snap.Tool) {
		if t.CheckResult(snap.Result.StructuredContent) == nil {
			return true
		}
	}
	return false
}
