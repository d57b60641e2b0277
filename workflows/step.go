package workflows

import (
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/signals"
)

// ToolError is a failure a tool reports on purpose. The run ends failed with
// its code and message. Make one with Fail, FailAt or ProtocolError.
type ToolError struct {
	// Code is the OpenWOP error code, e.g. "conformance_test_failure".
	Code string
	// Message is the human-readable message; it becomes the text of the
	// failed run's result.
	Message string
	// RPCCode, when non-zero, marks a JSON-RPC error raised for the call
	// itself rather than a tool failure (MCP task status "failed").
	RPCCode int
	// NodeID names the failed node in node.failed and run.failed. Empty means
	// the enclosing Step, or the tool itself.
	NodeID string
}

// Error implements error.
func (e *ToolError) Error() string { return e.Code + ": " + e.Message }

// Fail returns an error that ends the run failed with the given code and
// message (MCP: a completed task whose result has isError set).
func Fail(code, message string) error { return &ToolError{Code: code, Message: message} }

// FailAt is Fail naming the node that failed.
func FailAt(nodeID, code, message string) error {
	return &ToolError{Code: code, Message: message, NodeID: nodeID}
}

// ProtocolError returns an error that ends the run failed with a JSON-RPC
// error for the call itself (MCP: a failed task whose error carries rpcCode
// and message). Its run error code is CodeProtocolError.
func ProtocolError(rpcCode int, message string) error {
	return &ToolError{Code: CodeProtocolError, Message: message, RPCCode: rpcCode}
}

// ErrDeclined is returned by AskInput, AskAs and WaitExternal when the
// resolver declined to answer. Approve reports a decline as a rejected
// Decision instead.
var ErrDeclined = errors.New("workflows: the request was declined")

// stepError marks an error with the node (Step) it came from.
type stepError struct {
	node     string
	reported bool // node.failed already appended
	err      error
}

func (e *stepError) Error() string { return fmt.Sprintf("step %s: %v", e.node, e.err) }
func (e *stepError) Unwrap() error { return e.err }

// nodeKey is the workflow.Context key of the current Step's node id.
type nodeKey struct{}

// currentNode is the node id of the innermost Step around ctx, or "".
func currentNode(ctx workflow.Context) string {
	n, _ := ctx.Value(nodeKey{}).(string)
	return n
}

// Step runs fn as the node nodeID of the run: it appends node.started, then
// node.completed when fn succeeds, node.cancelled when it ends because the run
// is being cancelled, or node.failed when it fails. Interrupts raised inside
// fn belong to the node unless their request names another one.
//
// While fn runs, the run's progress names the step (ReportProgress adds
// counts), and so does its status message when nodeID is a declared name
// (signals.ValidStepName): "the run is running: step generate". nodeID
// must never carry tool content.
func Step[T any](ctx workflow.Context, nodeID string, fn func(ctx workflow.Context) (T, error)) (T, error) {
	var zero T
	r, err := from(ctx)
	if err != nil {
		return zero, err
	}
	r.emit(signals.EventNodeStarted, nodeID, map[string]any{"nodeId": nodeID})
	outer := r.snap.Progress
	r.setProgress(stepProgress(nodeID))
	out, err := fn(workflow.WithValue(ctx, nodeKey{}, nodeID))
	r.setProgress(outer)
	switch {
	case err == nil:
		r.emit(signals.EventNodeCompleted, nodeID, map[string]any{"nodeId": nodeID})
		return out, nil
	case r.cancelling || ctx.Err() != nil || temporal.IsCanceledError(err):
		r.emit(signals.EventNodeCancelled, nodeID, map[string]any{"nodeId": nodeID})
		return out, err
	}
	var se *stepError
	if errors.As(err, &se) {
		// An inner step failed first; it stays the failed node.
		r.emit(signals.EventNodeFailed, nodeID, map[string]any{"nodeId": nodeID, "error": classify(err)})
		return out, err
	}
	runErr := classify(err)
	r.emit(signals.EventNodeFailed, nodeID, map[string]any{"nodeId": nodeID, "error": runErr})
	return out, &stepError{node: nodeID, reported: true, err: err}
}

// PreRunInput returns the answer the mount collected for the tool's pre-run
// input request key (signals.ToolSpec.PreRunInputs) before the run started.
func PreRunInput(ctx workflow.Context, key string) (json.RawMessage, bool) {
	r, err := from(ctx)
	if err != nil {
		return nil, false
	}
	v, ok := r.preRun[key]
	return v, ok
}

// Owner returns the owner of the run: the tenant and the subject of the
// caller that started it (signals.StartRequest.Owner). It is false
// outside a tool run.
func Owner(ctx workflow.Context) (signals.Owner, bool) {
	r, err := from(ctx)
	if err != nil {
		return signals.Owner{}, false
	}
	return r.snap.Owner, true
}
