package workflows_test

// The harness tests run tools in the SDK's test environment: the example
// tools (examples/tools), the conformance fixtures
// (internal/testing/conformancetools), both written with this package exactly
// as a user writes a tool, and small tools defined here.

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

const testRunID = "acme/AbCdEfGhIjKlMnOpQrStUvWx"

// newHarness returns a test kit Env of the example tools, the fixtures and
// extra: alice calls, the run's id is testRunID. The tests resolve the
// run's interrupts with raw resolutions (Env.Resolve), as clients that
// race, repeat or are not allowed would.
func newHarness(t *testing.T, extra ...workflows.Tool) *workflowstest.Env {
	t.Helper()
	acts := tools.NewActivities(nil, tools.ActivityOptions{HeartbeatInterval: 50 * time.Millisecond, SectionDelay: time.Millisecond})
	tools := append(append(tools.ExampleTools(), conformancetools.Tools()...), extra...)
	reg, err := workflows.NewRegistry(tools, acts)
	if err != nil {
		t.Fatal(err)
	}
	h := workflowstest.New(reg)
	h.RunID, h.Caller = testRunID, alice
	return h
}

// run calls tool and returns the run record and the workflow's error.
func run(t *testing.T, h *workflowstest.Env, tool string, args any) (signals.RunRecord, error) {
	t.Helper()
	res, err := h.Call(tool, args)
	if err != nil {
		t.Fatal(err)
	}
	return signals.RunRecord{Snapshot: res.Snapshot, Events: res.Events}, res.Err
}

func snapshot(t *testing.T, h *workflowstest.Env) signals.Snapshot {
	t.Helper()
	s, err := h.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func events(t *testing.T, h *workflowstest.Env, after int) signals.EventPage {
	t.Helper()
	v, err := h.Temporal().QueryWorkflow(signals.QueryEvents, signals.EventsQuery{AfterSequence: after})
	if err != nil {
		t.Fatalf("query events: %v", err)
	}
	var p signals.EventPage
	if err := v.Get(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestApprovalGateAcceptOnceDuplicateIgnored(t *testing.T) {
	h := newHarness(t)
	iid := testRunID + "-i1"
	var waiting signals.Snapshot
	var eventsBefore, eventsAfterReads int
	h.At(time.Second, func() {
		waiting = snapshot(t, h)
		eventsBefore = len(events(t, h, -1).Events)
		snapshot(t, h)
		snapshot(t, h)
		eventsAfterReads = len(events(t, h, -1).Events)
		h.Resolve(signals.Resolution{InterruptID: iid, Action: signals.ActionAccept,
			Content: json.RawMessage(`{"action":"accept"}`), ResolvedBy: alice, RequestID: "r1"})
		// The duplicate (another resolver, another answer) arrives after the
		// first resolution was applied.
		h.Resolve(signals.Resolution{InterruptID: iid, Action: signals.ActionAccept,
			Content: json.RawMessage(`{"action":"reject"}`), ResolvedBy: bob, RequestID: "r2"})
	})
	rec, err := run(t, h, "conformance-approval", map[string]any{})

	if waiting.Status != signals.StatusWaitingApproval {
		t.Fatalf("status while suspended = %s, want waiting-approval", waiting.Status)
	}
	if len(waiting.Interrupts) != 1 {
		t.Fatalf("open interrupts = %+v, want 1", waiting.Interrupts)
	}
	in := waiting.Interrupts[0]
	if in.ID != iid || in.NodeID != "gate" || in.Kind != signals.KindApproval || !equal(in.Actions, []string{"accept", "reject"}) {
		t.Errorf("interrupt = %+v", in)
	}
	if waiting.CurrentNodeID() != "gate" || waiting.RunID != testRunID || waiting.Tool != "conformance-approval" {
		t.Errorf("snapshot identity = %+v", waiting)
	}
	if eventsBefore != eventsAfterReads {
		t.Errorf("reads appended events: %d before, %d after", eventsBefore, eventsAfterReads)
	}

	if err != nil {
		t.Fatalf("run error: %v", err)
	}
	checkLog(t, testRunID, rec.Events)
	want := []string{"run.started", "node.suspended", "interrupt.requested", "interrupt.resolved", "run.completed"}
	if got := types(rec.Events); !equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	s := rec.Snapshot
	if s.Status != signals.StatusCompleted || len(s.Interrupts) != 0 {
		t.Errorf("final snapshot = %+v", s)
	}
	if len(s.Resolved) != 1 || s.Resolved[0].RequestID != "r1" || s.Resolved[0].ResolvedBy.SubjectID != "alice" {
		t.Errorf("resolved = %+v, want only r1 by alice", s.Resolved)
	}
	if string(s.Outputs) != `{"approved":true,"decision":"accept"}` {
		t.Errorf("outputs = %s", s.Outputs)
	}
	var p map[string]any
	if err := json.Unmarshal(rec.Events[1].Payload, &p); err != nil || p["interruptId"] != iid || p["kind"] != "approval" {
		t.Errorf("node.suspended payload = %s", rec.Events[1].Payload)
	}
	if err := json.Unmarshal(rec.Events[3].Payload, &p); err != nil || p["action"] != "accept" || p["decision"] != "accept" {
		t.Errorf("interrupt.resolved payload = %s", rec.Events[3].Payload)
	}
	if s.Result == nil || s.Result.IsError || len(s.Result.Content) != 1 || string(s.Result.StructuredContent) != string(s.Outputs) {
		t.Errorf("result = %+v", s.Result)
	}
}

func TestApprovalResolutions(t *testing.T) {
	iid := testRunID + "-i1"
	tests := []struct {
		name     string
		tool     string
		res      []signals.Resolution
		outputs  string
		resolved []string // request ids applied
	}{
		{
			name:     "reject takes the decline path",
			tool:     "conformance-approval",
			res:      []signals.Resolution{{InterruptID: iid, Action: signals.ActionAccept, Content: json.RawMessage(`{"action":"reject"}`), ResolvedBy: alice, RequestID: "a"}},
			outputs:  `{"approved":false,"decision":"reject"}`,
			resolved: []string{"a"},
		},
		{
			name:     "decline is a rejection",
			tool:     "conformance-approval",
			res:      []signals.Resolution{{InterruptID: iid, Action: signals.ActionDecline, ResolvedBy: alice, RequestID: "a"}},
			outputs:  `{"approved":false,"decision":"reject"}`,
			resolved: []string{"a"},
		},
		{
			name: "unknown id, unknown action, action not offered and other tenant are ignored",
			tool: "conformance-approval",
			res: []signals.Resolution{
				{InterruptID: testRunID + "-i9", Action: signals.ActionAccept, ResolvedBy: alice, RequestID: "unknown"},
				{InterruptID: iid, Action: "maybe", ResolvedBy: alice, RequestID: "bad-action"},
				{InterruptID: iid, Action: signals.ActionAccept, Content: json.RawMessage(`{"action":"refine"}`), ResolvedBy: alice, RequestID: "not-offered"},
				{InterruptID: iid, Action: signals.ActionAccept, ResolvedBy: signals.Subject{SubjectID: "alice", Tenant: "other"}, RequestID: "tenant"},
				{InterruptID: iid, Action: signals.ActionAccept, ResolvedBy: alice, RequestID: "ok"},
			},
			outputs:  `{"approved":true,"decision":"accept"}`,
			resolved: []string{"ok"},
		},
		{
			name: "ineligible resolver is ignored, listed approver decides",
			tool: "conformance-approval-approvers",
			res: []signals.Resolution{
				{InterruptID: iid, Action: signals.ActionAccept, ResolvedBy: alice, RequestID: "alice"},
				{InterruptID: iid, Action: signals.ActionAccept, ResolvedBy: signals.Subject{SubjectID: conformancetools.ListedApprover, Tenant: "acme"}, RequestID: "listed"},
			},
			outputs:  `{"approved":true,"decision":"accept"}`,
			resolved: []string{"listed"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			var afterEach []signals.Status
			for i, r := range tc.res {
				h.At(time.Duration(i+1)*time.Second, func() {
					h.Resolve(r)
				})
				if i < len(tc.res)-1 {
					h.At(time.Duration(i+1)*time.Second+time.Millisecond, func() {
						afterEach = append(afterEach, snapshot(t, h).Status)
					})
				}
			}
			rec, err := run(t, h, tc.tool, map[string]any{})
			for i, st := range afterEach {
				if st != signals.StatusWaitingApproval {
					t.Errorf("after ignored resolution %d: status %s, want waiting-approval", i, st)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			checkLog(t, testRunID, rec.Events)
			if string(rec.Snapshot.Outputs) != tc.outputs {
				t.Errorf("outputs = %s, want %s", rec.Snapshot.Outputs, tc.outputs)
			}
			var got []string
			for _, r := range rec.Snapshot.Resolved {
				got = append(got, r.RequestID)
			}
			if !equal(got, tc.resolved) {
				t.Errorf("applied resolutions %v, want %v", got, tc.resolved)
			}
			if n := count(rec.Events, signals.EventInterruptResolved); n != 1 {
				t.Errorf("%d interrupt.resolved events, want 1", n)
			}
		})
	}
}

func TestMultiInputTwoOpenInterrupts(t *testing.T) {
	h := newHarness(t)
	var first, second signals.Snapshot
	h.At(time.Second, func() {
		first = snapshot(t, h)
		h.Resolve(signals.Resolution{InterruptID: testRunID + "-i2", Action: signals.ActionAccept,
			Content: json.RawMessage(`{"color":"green"}`), ResolvedBy: alice, RequestID: "c"})
	})
	h.At(2*time.Second, func() {
		second = snapshot(t, h)
		h.Resolve(signals.Resolution{InterruptID: testRunID + "-i1", Action: signals.ActionAccept,
			Content: json.RawMessage(`{"name":"Ada"}`), ResolvedBy: alice, RequestID: "n"})
	})
	rec, err := run(t, h, "multi_input", map[string]any{})

	if first.Status != signals.StatusWaitingInput || len(first.Interrupts) != 2 {
		t.Fatalf("first snapshot: status %s, %d interrupts; want waiting-input with 2", first.Status, len(first.Interrupts))
	}
	for _, in := range first.Interrupts {
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(in.Schema, &schema); err != nil || schema.Type != "object" || len(schema.Properties) != 1 {
			t.Errorf("interrupt %s schema = %s", in.ID, in.Schema)
		}
		if in.Kind != signals.KindClarification {
			t.Errorf("interrupt %s kind = %s", in.ID, in.Kind)
		}
	}
	if second.Status != signals.StatusWaitingInput || len(second.Interrupts) != 1 || second.Interrupts[0].ID != testRunID+"-i1" {
		t.Fatalf("after one answer: %+v", second)
	}
	if err != nil {
		t.Fatal(err)
	}
	checkLog(t, testRunID, rec.Events)
	if rec.Snapshot.Result == nil || rec.Snapshot.Result.Content[0].Text != "Hello Ada, your favourite colour is green." {
		t.Errorf("result = %+v", rec.Snapshot.Result)
	}
	if string(rec.Snapshot.Outputs) != `{"result":"Hello Ada, your favourite colour is green."}` {
		t.Errorf("outputs = %s", rec.Snapshot.Outputs)
	}
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name    string
		tool    string
		code    string
		message string
		rpc     int
		node    string
		events  []string
	}{
		{"conformance failure", "conformance-failure", "conformance_test_failure", "Intentional conformance failure", 0, "fail",
			[]string{"run.started", "node.failed", "run.failed"}},
		{"tool error", "failing_job", "job_failed", "failing_job failed on purpose", 0, "failing_job",
			[]string{"run.started", "node.failed", "run.failed"}},
		{"protocol error", "protocol_error_job", workflows.CodeProtocolError, "protocol_error_job raised a JSON-RPC error on purpose", -32603, "protocol_error_job",
			[]string{"run.started", "node.failed", "run.failed"}},
		{"plain error", "plain_error", workflows.CodeToolError, "something broke", 0, "plain_error",
			[]string{"run.started", "node.failed", "run.failed"}},
		{"step error", "step_error", "bad_step", "the step failed", 0, "inner",
			[]string{"run.started", "node.started", "node.failed", "run.failed"}},
	}
	extra := []workflows.Tool{
		workflows.NewTool("plain_error", "fails with a plain error", func(workflow.Context, noInput) (string, error) {
			return "", errors.New("something broke")
		}),
		workflows.NewTool("step_error", "fails inside a step", func(ctx workflow.Context, _ noInput) (string, error) {
			return workflows.Step(ctx, "inner", func(workflow.Context) (string, error) { return "", workflows.Fail("bad_step", "the step failed") })
		}),
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, extra...)
			rec, err := run(t, h, tc.tool, map[string]any{})
			var app *temporal.ApplicationError
			if !errors.As(err, &app) {
				t.Fatalf("error = %v, want an application error", err)
			}
			if app.Type() != tc.code || !app.NonRetryable() {
				t.Errorf("error type %q (non-retryable %v), want %q", app.Type(), app.NonRetryable(), tc.code)
			}
			s := rec.Snapshot
			if s.Status != signals.StatusFailed || s.Error == nil || s.Error.Code != tc.code || s.Error.Message != tc.message || s.Error.RPCCode != tc.rpc {
				t.Errorf("snapshot = %+v error %+v", s, s.Error)
			}
			if s.Result == nil || !s.Result.IsError || s.Result.Content[0].Text != tc.message {
				t.Errorf("result = %+v", s.Result)
			}
			checkLog(t, testRunID, rec.Events)
			if got := types(rec.Events); !equal(got, tc.events) {
				t.Errorf("events = %v, want %v", got, tc.events)
			}
			for _, e := range rec.Events {
				if e.Type == signals.EventNodeFailed && e.NodeID != tc.node {
					t.Errorf("node.failed node = %q, want %q", e.NodeID, tc.node)
				}
			}
		})
	}
}

func TestCancelWithReason(t *testing.T) {
	tests := []struct {
		name   string
		tool   string
		args   any
		reason *signals.CancelRequest
		want   string
	}{
		{"signalled reason, activity", "conformance-cancellable", map[string]any{"delayMs": 20000},
			&signals.CancelRequest{Reason: signals.ReasonMCPRequestCancelled, CancelledBy: alice}, signals.ReasonMCPRequestCancelled},
		{"default reason, timer", "conformance-delay", map[string]any{"delayMs": 20000}, nil, signals.ReasonCallerRequested},
		{"while waiting for approval", "conformance-approval", map[string]any{}, &signals.CancelRequest{Reason: "operator"}, "operator"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.At(500*time.Millisecond, func() {
				if tc.reason != nil {
					h.Temporal().SignalWorkflow(signals.SignalCancelReason, *tc.reason)
				}
				h.Temporal().CancelWorkflow()
			})
			rec, err := run(t, h, tc.tool, tc.args)
			var canceled *temporal.CanceledError
			if !errors.As(err, &canceled) {
				t.Fatalf("error = %v, want canceled", err)
			}
			s := rec.Snapshot
			if s.Status != signals.StatusCancelled || s.CancelReason != tc.want || len(s.Interrupts) != 0 {
				t.Errorf("snapshot = %+v", s)
			}
			checkLog(t, testRunID, rec.Events)
			last := rec.Events[len(rec.Events)-1]
			var p struct{ Reason string }
			if last.Type != signals.EventRunCancelled || json.Unmarshal(last.Payload, &p) != nil || p.Reason != tc.want {
				t.Errorf("last event %s %s, want run.cancelled with reason %s", last.Type, last.Payload, tc.want)
			}
		})
	}
}

func TestElicitationCancelCancelsRun(t *testing.T) {
	h := newHarness(t)
	h.At(time.Second, func() {
		h.Resolve(signals.Resolution{InterruptID: testRunID + "-i1", Action: signals.ActionCancel, ResolvedBy: alice, RequestID: "c"})
	})
	rec, err := run(t, h, "confirm_delete", map[string]any{"filename": "a.txt"})
	if !temporal.IsCanceledError(err) {
		t.Fatalf("error = %v, want canceled", err)
	}
	checkLog(t, testRunID, rec.Events)
	if rec.Snapshot.Status != signals.StatusCancelled || rec.Snapshot.CancelReason != signals.ReasonElicitationCancelled {
		t.Errorf("snapshot = %+v", rec.Snapshot)
	}
	want := []string{"run.started", "node.suspended", "interrupt.requested", "interrupt.resolved", "run.cancelled"}
	if got := types(rec.Events); !equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

func TestStatusRunningAndEventsPaging(t *testing.T) {
	h := newHarness(t)
	var during signals.Snapshot
	var all, page, empty signals.EventPage
	h.At(time.Second, func() {
		during = snapshot(t, h)
		all = events(t, h, -1)
		page = events(t, h, 0)
		empty = events(t, h, 99)
	})
	rec, err := run(t, h, "conformance-delay", map[string]any{"delayMs": 2500})
	if during.Status != signals.StatusRunning {
		t.Errorf("status in flight = %s, want running", during.Status)
	}
	if got := types(all.Events); !equal(got, []string{"run.started", "node.started"}) || all.LastSequence != 1 {
		t.Errorf("events in flight = %v last %d", got, all.LastSequence)
	}
	if len(page.Events) != 1 || page.Events[0].Sequence != 1 || page.LastSequence != 1 {
		t.Errorf("events after 0 = %+v", page)
	}
	if empty.Events == nil || len(empty.Events) != 0 || empty.LastSequence != 1 {
		t.Errorf("events after 99 = %+v", empty)
	}
	var started struct {
		Owner     signals.Owner `json:"owner"`
		Transport string        `json:"transport"`
	}
	if err := json.Unmarshal(all.Events[0].Payload, &started); err != nil || started.Owner.Subject.SubjectID != "alice" || started.Transport != "mcp" {
		t.Errorf("run.started payload = %s", all.Events[0].Payload)
	}
	if err != nil {
		t.Fatal(err)
	}
	checkLog(t, testRunID, rec.Events)
	if string(rec.Snapshot.Outputs) != `{"delayedMs":2500}` {
		t.Errorf("outputs = %s", rec.Snapshot.Outputs)
	}
}

func TestRaiseRejectsReusedKey(t *testing.T) {
	tool := workflows.NewTool("reuse_key", "asks the same key twice", func(ctx workflow.Context, _ noInput) (string, error) {
		if _, err := workflows.Raise(ctx, workflows.QuestionSpec{Kind: signals.KindExternalEvent, Key: "k"}); err != nil {
			return "", err
		}
		_, err := workflows.Raise(ctx, workflows.QuestionSpec{Kind: signals.KindExternalEvent, Key: "k"})
		return "", err
	})
	h := newHarness(t, tool)
	rec, _ := run(t, h, "reuse_key", map[string]any{})
	if rec.Snapshot.Error == nil || !strings.Contains(rec.Snapshot.Error.Message, "already used") {
		t.Errorf("error = %+v", rec.Snapshot.Error)
	}
	checkLog(t, testRunID, rec.Events)
}

func TestWaitExternalStatus(t *testing.T) {
	tool := workflows.NewTool("wait_external", "waits for an external event", func(ctx workflow.Context, _ noInput) (json.RawMessage, error) {
		return workflows.WaitExternal(ctx, workflows.ExternalRequest{Key: "hook", Title: "webhook"})
	})
	h := newHarness(t, tool)
	var s signals.Snapshot
	h.At(time.Second, func() {
		s = snapshot(t, h)
		h.Resolve(signals.Resolution{InterruptID: testRunID + "-i1", Action: signals.ActionAccept, Content: json.RawMessage(`{"ok":true}`), ResolvedBy: alice})
	})
	rec, err := run(t, h, "wait_external", map[string]any{})
	if s.Status != signals.StatusWaitingExternal {
		t.Errorf("status = %s, want waiting-external", s.Status)
	}
	if err != nil {
		t.Fatal(err)
	}
	if string(rec.Snapshot.Outputs) != `{"ok":true}` {
		t.Errorf("outputs = %s", rec.Snapshot.Outputs)
	}
}

func TestCancellingWhileWorkStops(t *testing.T) {
	// The tool needs two seconds to stop after the cancellation, as an
	// activity does while it acknowledges its cancellation.
	tool := workflows.NewTool("slow_to_stop", "takes time to stop", func(ctx workflow.Context, _ noInput) (string, error) {
		err := workflow.Sleep(ctx, time.Hour)
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		_ = workflow.Sleep(dctx, 2*time.Second)
		return "", err
	})
	h := newHarness(t, tool)
	var cancelling signals.Snapshot
	h.At(time.Second, h.Temporal().CancelWorkflow)
	h.At(2*time.Second, func() { cancelling = snapshot(t, h) })
	rec, err := run(t, h, "slow_to_stop", map[string]any{})
	if cancelling.Status != signals.StatusCancelling || cancelling.CancelReason != signals.ReasonCallerRequested {
		t.Errorf("status while stopping = %s (reason %q), want cancelling", cancelling.Status, cancelling.CancelReason)
	}
	// Readers say how long the run has been cancelling.
	if got := cancelling.CancelRequestedAt.Sub(cancelling.CreatedAt); got != time.Second {
		t.Errorf("cancellation requested %v after the start (at %v), want 1s", got, cancelling.CancelRequestedAt)
	}
	if !temporal.IsCanceledError(err) || rec.Snapshot.Status != signals.StatusCancelled {
		t.Errorf("err %v, status %s; want cancelled", err, rec.Snapshot.Status)
	}
	checkLog(t, testRunID, rec.Events)
}

func TestResolutionAfterCancelIsIgnored(t *testing.T) {
	h := newHarness(t)
	h.At(time.Second, func() {
		h.Temporal().CancelWorkflow()
		h.Resolve(signals.Resolution{InterruptID: testRunID + "-i1", Action: signals.ActionAccept, ResolvedBy: alice, RequestID: "late"})
	})
	rec, err := run(t, h, "conformance-approval", map[string]any{})
	if !temporal.IsCanceledError(err) {
		t.Fatalf("err = %v, want canceled", err)
	}
	checkLog(t, testRunID, rec.Events)
	if n := count(rec.Events, signals.EventInterruptResolved); n != 0 || len(rec.Snapshot.Resolved) != 0 {
		t.Errorf("resolution applied during cancellation: %v", types(rec.Events))
	}
}
