package bench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// The raw side: what a program using the Temporal Go SDK directly does for
// each operation, on the same workflow type with the same input, memo and
// search attributes as runs.Service.

// rawStart starts a run of the approval tool with ExecuteWorkflow alone
// (the SDK's defaults: not eager) and returns its workflow ID.
func (s *stack) rawStart(ctx context.Context) (string, error) {
	id, err := runid.New(s.caller.Tenant, nil)
	if err != nil {
		return "", err
	}
	owner := signals.Owner{Tenant: s.caller.Tenant, Subject: s.caller}
	opts := client.StartWorkflowOptions{
		ID:                                       id,
		TaskQueue:                                s.spec.TaskQueue,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		Memo: map[string]any{
			signals.MemoOwner:     owner,
			signals.MemoTransport: signals.TransportMCP,
			signals.MemoContract:  signals.ContractOpenWOP,
		},
		TypedSearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrTenant).ValueSet(s.caller.Tenant),
			temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrTool).ValueSet(s.spec.Name),
			temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrTransport).ValueSet(signals.TransportMCP),
			temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrStatus).ValueSet(string(signals.StatusPending)),
		),
	}
	in := signals.StartRequest{Tool: s.spec.Name, Arguments: json.RawMessage("{}"), Owner: owner, Transport: signals.TransportMCP}
	if _, err := s.c.ExecuteWorkflow(ctx, opts, s.spec.Type(), in); err != nil {
		return "", fmt.Errorf("ExecuteWorkflow: %w", err)
	}
	return id, nil
}

// rawQuery is QueryWorkflow(getRun), decoded.
func (s *stack) rawQuery(ctx context.Context, id string) (signals.Snapshot, error) {
	start := time.Now()
	v, err := s.c.QueryWorkflow(ctx, id, "", signals.QueryGetRun)
	if err != nil {
		return signals.Snapshot{}, fmt.Errorf("QueryWorkflow: %w", err)
	}
	if r := s.rawQueries.Load(); r != nil {
		r.add(time.Since(start))
	}
	var snap signals.Snapshot
	if err := v.Get(&snap); err != nil {
		return signals.Snapshot{}, err
	}
	return snap, nil
}

// rawTerminal reads a closed run: DescribeWorkflowExecution, then its close
// event, decoded.
func (s *stack) rawTerminal(ctx context.Context, id string) (signals.RunRecord, error) {
	d, err := s.c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return signals.RunRecord{}, fmt.Errorf("DescribeWorkflowExecution: %w", err)
	}
	if d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return signals.RunRecord{}, fmt.Errorf("run %s is still running", id)
	}
	it := s.c.GetWorkflowHistory(ctx, id, d.GetWorkflowExecutionInfo().GetExecution().GetRunId(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	var last *historypb.HistoryEvent
	for it.HasNext() {
		if last, err = it.Next(); err != nil {
			return signals.RunRecord{}, err
		}
	}
	var rec signals.RunRecord
	p := last.GetWorkflowExecutionCompletedEventAttributes().GetResult().GetPayloads()
	if len(p) == 0 {
		return signals.RunRecord{}, fmt.Errorf("run %s closed without a result", id)
	}
	return rec, converter.GetDefaultDataConverter().FromPayload(p[0], &rec)
}

// rawResolve signals an accept of the interrupt and queries getRun (the
// query sees the signal applied), as runs.Service does without checks.
func (s *stack) rawResolve(ctx context.Context, id, interruptID string) (signals.Snapshot, error) {
	nonce := make([]byte, 12)
	_, _ = rand.Read(nonce)
	r := signals.Resolution{InterruptID: interruptID, Action: signals.ActionAccept, Content: json.RawMessage(`{"action":"accept"}`),
		ResolvedBy: s.caller, RequestID: base64.RawURLEncoding.EncodeToString(nonce)}
	if err := s.c.SignalWorkflow(ctx, id, "", signals.SignalResolveInterrupt, r); err != nil {
		return signals.Snapshot{}, fmt.Errorf("SignalWorkflow: %w", err)
	}
	snap, err := s.rawQuery(ctx, id)
	if err != nil {
		return snap, err
	}
	if got, ok := snap.ResolvedBy(interruptID); !ok || got.RequestID != r.RequestID {
		return snap, fmt.Errorf("run %s: resolution not applied", id)
	}
	return snap, nil
}

// rawCancel signals the reason and requests cancellation.
func (s *stack) rawCancel(ctx context.Context, id string) error {
	if err := s.c.SignalWorkflow(ctx, id, "", signals.SignalCancelReason,
		signals.CancelRequest{Reason: signals.ReasonCallerRequested, CancelledBy: s.caller}); err != nil {
		return fmt.Errorf("SignalWorkflow: %w", err)
	}
	if err := s.c.CancelWorkflow(ctx, id, ""); err != nil {
		return fmt.Errorf("CancelWorkflow: %w", err)
	}
	return nil
}

// rawWaiting starts a run and queries it until it waits for approval,
// returning the interrupt id.
func (s *stack) rawWaiting(ctx context.Context) (id, interruptID string, err error) {
	if id, err = s.rawStart(ctx); err != nil {
		return "", "", err
	}
	interruptID, err = s.rawInterrupt(ctx, id)
	return id, interruptID, err
}

// rawInterrupt queries the run until it has an open interrupt.
func (s *stack) rawInterrupt(ctx context.Context, id string) (string, error) {
	for {
		snap, err := s.rawQuery(ctx, id)
		if err != nil {
			return "", err
		}
		if len(snap.Interrupts) > 0 {
			return snap.Interrupts[0].ID, nil
		}
		if snap.Status.Terminal() {
			return "", fmt.Errorf("run %s ended: %s", id, snap.Status)
		}
	}
}

// rawLifecycle is the raw SDK's full lifecycle: ExecuteWorkflow, a query
// until the approval is asked, Signal + Query to resolve it, then
// Describe + close event until completed.
func (s *stack) rawLifecycle(ctx context.Context) (string, error) {
	id, key, err := s.rawWaiting(ctx)
	if err != nil {
		return id, err
	}
	if _, err := s.rawResolve(ctx, id, key); err != nil {
		return id, err
	}
	for {
		rec, err := s.rawTerminal(ctx, id)
		if err == nil {
			if rec.Snapshot.Status != signals.StatusCompleted {
				return id, fmt.Errorf("run %s: %s", id, rec.Snapshot.Status)
			}
			return id, nil
		}
		if ctx.Err() != nil {
			return id, err
		}
	}
}

// mountLifecycle is the same over MCP: tools/call, tasks/get until the
// approval is asked, tasks/update, tasks/get until completed.
func (s *stack) mountLifecycle(ctx context.Context, m *mcpClient) (string, error) {
	task, err := m.callTool(approvalTool, map[string]any{})
	if err != nil {
		return "", err
	}
	id := runOf(task)
	key, err := waitInput(ctx, m, task)
	if err != nil {
		return id, err
	}
	if err := m.approve(task, key); err != nil {
		return id, err
	}
	for {
		res, err := m.get(task)
		if err != nil {
			return id, err
		}
		switch res.Status {
		case "completed":
			return id, nil
		case "working", "input_required":
		default:
			return id, fmt.Errorf("task %s: %v", task, res.Status)
		}
		if ctx.Err() != nil {
			return id, ctx.Err()
		}
	}
}

// waitInput polls tasks/get until the task asks for input.
func waitInput(ctx context.Context, m *mcpClient, task string) (string, error) {
	for {
		res, err := m.get(task)
		if err != nil {
			return "", err
		}
		if k := inputKey(res); k != "" && res.Status == "input_required" {
			return k, nil
		}
		if res.Status != "working" {
			return "", fmt.Errorf("task %s: %v", task, res)
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
	}
}
