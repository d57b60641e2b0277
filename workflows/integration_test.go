package workflows_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap/zaptest"

	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
	"github.com/openwop/temporal-mcp/workflows"
)

// These tests run the tool workflows on the embedded Temporal server, started
// the way runs.Service starts them, and read them the way it reads them.

// listed is the only eligible approver of conformance-approval-approvers.
var listed = signals.Subject{Issuer: "test", SubjectID: conformancetools.ListedApprover, Tenant: tenant}

type server struct {
	t    *testing.T
	c    client.Client
	tq   string
	acts *tools.Activities
	reg  *workflows.Registry
	w    worker.Worker
	env  *testenv.Env
}

// newServer starts a worker for the default registry with fixtures on a task
// queue of its own.
func newServer(t *testing.T) *server {
	t.Helper()
	env := testenv.Temporal(t)
	acts := tools.NewActivities(zaptest.NewLogger(t), tools.ActivityOptions{HeartbeatInterval: 200 * time.Millisecond, SectionDelay: 10 * time.Millisecond})
	reg, err := conformancetools.Registry(acts)
	if err != nil {
		t.Fatal(err)
	}
	tq := testenv.UniqueTaskQueue(t)
	w := env.NewWorker(t, tq, reg.Register)
	return &server{t: t, c: env.Client, tq: tq, acts: acts, reg: reg, w: w, env: env}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

var (
	saTenant    = temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrTenant)
	saTool      = temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrTool)
	saTransport = temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrTransport)
	saStatus    = temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrStatus)
)

// start starts tool as runs.Service does and returns the run id.
func (s *server) start(tool string, args any) (string, client.WorkflowRun) {
	s.t.Helper()
	id, err := runid.New(tenant, rand.Reader)
	if err != nil {
		s.t.Fatal(err)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		s.t.Fatal(err)
	}
	owner := signals.Owner{Tenant: tenant, Subject: alice}
	run, err := s.c.ExecuteWorkflow(ctx(s.t), client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             s.tq,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		Memo:                  map[string]any{"owner": owner, "transport": signals.TransportMCP},
		TypedSearchAttributes: temporal.NewSearchAttributes(
			saTenant.ValueSet(tenant),
			saTool.ValueSet(tool),
			saTransport.ValueSet(signals.TransportMCP),
			saStatus.ValueSet(string(signals.StatusPending)),
		),
	}, tool, signals.StartRequest{Arguments: raw, Owner: owner, Transport: signals.TransportMCP})
	if err != nil {
		s.t.Fatalf("start %s: %v", tool, err)
	}
	return id, run
}

func (s *server) snapshot(id string) signals.Snapshot {
	s.t.Helper()
	v, err := s.c.QueryWorkflow(ctx(s.t), id, "", signals.QueryGetRun)
	if err != nil {
		s.t.Fatalf("query getRun %s: %v", id, err)
	}
	var snap signals.Snapshot
	if err := v.Get(&snap); err != nil {
		s.t.Fatal(err)
	}
	return snap
}

func (s *server) events(id string) []signals.Event {
	s.t.Helper()
	v, err := s.c.QueryWorkflow(ctx(s.t), id, "", signals.QueryEvents, signals.EventsQuery{AfterSequence: -1})
	if err != nil {
		s.t.Fatalf("query events %s: %v", id, err)
	}
	var p signals.EventPage
	if err := v.Get(&p); err != nil {
		s.t.Fatal(err)
	}
	return p.Events
}

// await polls getRun until ok holds (10 s at most).
func (s *server) await(id string, ok func(signals.Snapshot) bool) signals.Snapshot {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		snap := s.snapshot(id)
		if ok(snap) {
			return snap
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("run %s: condition not reached, last snapshot %+v", id, snap)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *server) resolve(id string, res signals.Resolution) {
	s.t.Helper()
	if err := s.c.SignalWorkflow(ctx(s.t), id, "", signals.SignalResolveInterrupt, res); err != nil {
		s.t.Fatalf("signal resolution: %v", err)
	}
}

// statusAttr reads the run's OpenWOPStatus search attribute.
func (s *server) statusAttr(id string) string {
	s.t.Helper()
	d, err := s.c.DescribeWorkflowExecution(ctx(s.t), id, "")
	if err != nil {
		s.t.Fatal(err)
	}
	p := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[signals.SearchAttrStatus]
	var v string
	if p != nil {
		if err := converter.GetDefaultDataConverter().FromPayload(p, &v); err != nil {
			s.t.Fatal(err)
		}
	}
	return v
}

// replay replays the run's whole history with the current workflow code: it
// fails on any nondeterminism of the harness or the tool.
func (s *server) replay(id string) {
	s.t.Helper()
	rp := worker.NewWorkflowReplayer()
	s.reg.RegisterWorkflows(rp)
	it := s.c.GetWorkflowHistory(ctx(s.t), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	hist := &historypb.History{}
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			s.t.Fatal(err)
		}
		hist.Events = append(hist.Events, ev)
	}
	// The run id (workflow ID) is part of the state (interrupt ids), so the
	// replay must see the original one.
	err := rp.ReplayWorkflowHistoryWithOptions(nil, hist, worker.ReplayWorkflowHistoryOptions{
		OriginalExecution: workflow.Execution{ID: id},
	})
	if err != nil {
		s.t.Errorf("replay of %s: %v", id, err)
	}
}

// closeRecord reads the run record from the run's close event alone.
func (s *server) closeRecord(id string) (enumspb.EventType, signals.RunRecord) {
	s.t.Helper()
	it := s.c.GetWorkflowHistory(ctx(s.t), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
	if !it.HasNext() {
		s.t.Fatalf("run %s has no close event", id)
	}
	ev, err := it.Next()
	if err != nil {
		s.t.Fatal(err)
	}
	dc := converter.GetDefaultDataConverter()
	var rec signals.RunRecord
	switch ev.GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
		err = dc.FromPayloads(ev.GetWorkflowExecutionCompletedEventAttributes().GetResult(), &rec)
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
		err = dc.FromPayloads(ev.GetWorkflowExecutionFailedEventAttributes().GetFailure().GetApplicationFailureInfo().GetDetails(), &rec)
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
		err = dc.FromPayloads(ev.GetWorkflowExecutionCanceledEventAttributes().GetDetails(), &rec)
	default:
		s.t.Fatalf("close event of %s is %s", id, ev.GetEventType())
	}
	if err != nil {
		s.t.Fatalf("decode run record from %s: %v", ev.GetEventType(), err)
	}
	return ev.GetEventType(), rec
}

func TestIntegrationStartRunning(t *testing.T) {
	s := newServer(t)
	id, run := s.start("conformance-delay", map[string]any{"delayMs": 2500})
	snap := s.await(id, func(x signals.Snapshot) bool { return x.Status != signals.StatusPending })
	if snap.Status != signals.StatusRunning || snap.RunID != id || snap.Tool != "conformance-delay" || snap.Owner.Subject.SubjectID != "alice" {
		t.Fatalf("snapshot after start = %+v", snap)
	}
	if got := s.statusAttr(id); got != string(signals.StatusRunning) {
		t.Errorf("OpenWOPStatus = %q, want running", got)
	}
	var rec signals.RunRecord
	if err := run.Get(ctx(t), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Snapshot.Status != signals.StatusCompleted {
		t.Errorf("final status %s", rec.Snapshot.Status)
	}
	typ, closed := s.closeRecord(id)
	if typ != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED || closed.Snapshot.Status != signals.StatusCompleted ||
		string(closed.Snapshot.Outputs) != `{"delayedMs":2500}` {
		t.Errorf("close event %s record %+v", typ, closed.Snapshot)
	}
	checkLog(t, id, closed.Events)
	s.replay(id)
	if got := s.statusAttr(id); got != string(signals.StatusCompleted) {
		t.Errorf("OpenWOPStatus after completion = %q", got)
	}
}

func TestIntegrationApprovalOnceDuplicateIgnored(t *testing.T) {
	s := newServer(t)
	id, run := s.start("conformance-approval", map[string]any{})
	snap := s.await(id, func(x signals.Snapshot) bool { return x.Status == signals.StatusWaitingApproval })
	if len(snap.Interrupts) != 1 {
		t.Fatalf("interrupts = %+v", snap.Interrupts)
	}
	in := snap.Interrupts[0]
	if in.ID != id+"-i1" || !runid.Valid(in.ID) || strings.Contains(in.ID, "~") || in.Kind != signals.KindApproval || in.NodeID != "gate" {
		t.Errorf("interrupt = %+v", in)
	}
	if got := s.statusAttr(id); got != string(signals.StatusWaitingApproval) {
		t.Errorf("OpenWOPStatus = %q, want waiting-approval", got)
	}
	// Reads append nothing.
	n := len(s.events(id))
	s.snapshot(id)
	s.snapshot(id)
	s.snapshot(id)
	if m := len(s.events(id)); m != n {
		t.Errorf("three reads changed the event count from %d to %d", n, m)
	}

	s.resolve(id, signals.Resolution{InterruptID: in.ID, Action: signals.ActionAccept, Content: json.RawMessage(`{"action":"accept"}`), ResolvedBy: alice, RequestID: "first"})
	// The duplicate either reaches the run (which ignores it) or finds it
	// already closed; both leave exactly one resolution.
	err := s.c.SignalWorkflow(ctx(t), id, "", signals.SignalResolveInterrupt, signals.Resolution{InterruptID: in.ID, Action: signals.ActionAccept, Content: json.RawMessage(`{"action":"reject"}`), ResolvedBy: bob, RequestID: "second"})
	if err != nil && !strings.Contains(err.Error(), "already completed") {
		t.Fatal(err)
	}

	var rec signals.RunRecord
	if err := run.Get(ctx(t), &rec); err != nil {
		t.Fatal(err)
	}
	_, closed := s.closeRecord(id)
	checkLog(t, id, closed.Events)
	s.replay(id)
	resolved := 0
	for _, e := range closed.Events {
		if e.Type == signals.EventInterruptResolved {
			resolved++
		}
	}
	if resolved != 1 {
		t.Errorf("%d interrupt.resolved events, want 1: %v", resolved, types(closed.Events))
	}
	if r := closed.Snapshot.Resolved; len(r) != 1 || r[0].RequestID != "first" {
		t.Errorf("applied resolutions = %+v, want only the first", r)
	}
	if closed.Snapshot.Status != signals.StatusCompleted || string(closed.Snapshot.Outputs) != `{"approved":true,"decision":"accept"}` {
		t.Errorf("final snapshot = %+v", closed.Snapshot)
	}
	// The terminal run still answers its query, with the same state.
	if q := s.snapshot(id); q.Status != signals.StatusCompleted || q.LastSequence != closed.Snapshot.LastSequence {
		t.Errorf("query after close = %+v", q)
	}
}

func TestIntegrationDuplicateResolutionIgnoredWhileOpen(t *testing.T) {
	s := newServer(t)
	id, run := s.start("multi_input", map[string]any{})
	snap := s.await(id, func(x signals.Snapshot) bool { return len(x.Interrupts) == 2 })
	if snap.Status != signals.StatusWaitingInput {
		t.Fatalf("status %s", snap.Status)
	}
	name, color := snap.Interrupts[0].ID, snap.Interrupts[1].ID
	s.resolve(id, signals.Resolution{InterruptID: name, Action: signals.ActionAccept, Content: json.RawMessage(`{"name":"Ada"}`), ResolvedBy: alice, RequestID: "1"})
	s.resolve(id, signals.Resolution{InterruptID: name, Action: signals.ActionAccept, Content: json.RawMessage(`{"name":"Eve"}`), ResolvedBy: bob, RequestID: "2"})
	after := s.snapshot(id)
	if after.Status != signals.StatusWaitingInput || len(after.Interrupts) != 1 || after.Interrupts[0].ID != color {
		t.Fatalf("after answering one twice: %+v", after)
	}
	if r, ok := after.ResolvedBy(name); !ok || r.RequestID != "1" || len(after.Resolved) != 1 {
		t.Errorf("resolved = %+v", after.Resolved)
	}
	s.resolve(id, signals.Resolution{InterruptID: color, Action: signals.ActionAccept, Content: json.RawMessage(`{"color":"red"}`), ResolvedBy: alice, RequestID: "3"})
	var rec signals.RunRecord
	if err := run.Get(ctx(t), &rec); err != nil {
		t.Fatal(err)
	}
	if got := rec.Snapshot.Result.Content[0].Text; got != "Hello Ada, your favourite colour is red." {
		t.Errorf("text = %q", got)
	}
	n := 0
	for _, e := range rec.Events {
		if e.Type == signals.EventInterruptResolved {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d interrupt.resolved for two interrupts: %v", n, types(rec.Events))
	}
	checkLog(t, id, rec.Events)
	s.replay(id)
}

func TestIntegrationIneligibleResolverIgnored(t *testing.T) {
	s := newServer(t)
	id, run := s.start("conformance-approval-approvers", map[string]any{})
	snap := s.await(id, func(x signals.Snapshot) bool { return x.Status == signals.StatusWaitingApproval })
	iid := snap.Interrupts[0].ID
	s.resolve(id, signals.Resolution{InterruptID: iid, Action: signals.ActionAccept, ResolvedBy: alice, RequestID: "alice"})
	after := s.snapshot(id) // a query after the signal sees it handled
	if after.Status != signals.StatusWaitingApproval || len(after.Resolved) != 0 || len(after.Interrupts) != 1 {
		t.Fatalf("after an ineligible resolution: %+v", after)
	}
	s.resolve(id, signals.Resolution{InterruptID: iid, Action: signals.ActionAccept, ResolvedBy: listed, RequestID: "listed"})
	if err := run.Get(ctx(t), nil); err != nil {
		t.Fatal(err)
	}
	_, closed := s.closeRecord(id)
	if r := closed.Snapshot.Resolved; len(r) != 1 || r[0].RequestID != "listed" {
		t.Errorf("applied = %+v", r)
	}
}

func TestIntegrationCancelWithReason(t *testing.T) {
	s := newServer(t)
	id, run := s.start("conformance-cancellable", map[string]any{"delayMs": 60000})
	// Wait until the Sleep activity runs (its node started).
	s.await(id, func(x signals.Snapshot) bool { return x.LastSequence >= 1 })
	time.Sleep(500 * time.Millisecond)

	begin := time.Now()
	if err := s.c.SignalWorkflow(ctx(t), id, "", signals.SignalCancelReason, signals.CancelRequest{Reason: signals.ReasonMCPRequestCancelled, CancelledBy: alice}); err != nil {
		t.Fatal(err)
	}
	if err := s.c.CancelWorkflow(ctx(t), id, ""); err != nil {
		t.Fatal(err)
	}
	err := run.Get(ctx(t), nil)
	var canceled *temporal.CanceledError
	if !errors.As(err, &canceled) {
		t.Fatalf("run error = %v, want canceled", err)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("cancellation took %v, want < 5s", d)
	}
	typ, closed := s.closeRecord(id)
	if typ != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED || closed.Snapshot.Status != signals.StatusCancelled || closed.Snapshot.CancelReason != signals.ReasonMCPRequestCancelled {
		t.Fatalf("close event %s, snapshot %+v", typ, closed.Snapshot)
	}
	checkLog(t, id, closed.Events)
	s.replay(id)
	last := closed.Events[len(closed.Events)-1]
	var p struct {
		Reason      string
		CancelledBy signals.Subject
	}
	if last.Type != signals.EventRunCancelled || json.Unmarshal(last.Payload, &p) != nil || p.Reason != signals.ReasonMCPRequestCancelled || p.CancelledBy.SubjectID != "alice" {
		t.Errorf("last event %s %s", last.Type, last.Payload)
	}
	if got := s.acts.Cancelled(id); !slices.Contains(got, "Sleep") {
		t.Errorf("activities cancelled in the run = %v, want Sleep", got)
	}
	if got := s.statusAttr(id); got != string(signals.StatusCancelled) {
		t.Errorf("OpenWOPStatus = %q, want cancelled", got)
	}
}

func TestIntegrationCancelDefaultReasonWhileWaiting(t *testing.T) {
	s := newServer(t)
	id, run := s.start("publish_report", map[string]any{"title": "Q3", "topic": "sales"})
	s.await(id, func(x signals.Snapshot) bool { return x.Status == signals.StatusWaitingApproval })
	if err := s.c.CancelWorkflow(ctx(t), id, ""); err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx(t), nil); !temporal.IsCanceledError(err) {
		t.Fatalf("err = %v", err)
	}
	_, closed := s.closeRecord(id)
	if closed.Snapshot.CancelReason != signals.ReasonCallerRequested || len(closed.Snapshot.Interrupts) != 0 {
		t.Errorf("snapshot = %+v", closed.Snapshot)
	}
	checkLog(t, id, closed.Events)
	s.replay(id)
}

func TestIntegrationElicitationCancel(t *testing.T) {
	s := newServer(t)
	id, run := s.start("confirm_delete", map[string]any{"filename": "a.txt"})
	snap := s.await(id, func(x signals.Snapshot) bool { return x.Status == signals.StatusWaitingInput })
	s.resolve(id, signals.Resolution{InterruptID: snap.Interrupts[0].ID, Action: signals.ActionCancel, ResolvedBy: alice, RequestID: "c"})
	if err := run.Get(ctx(t), nil); !temporal.IsCanceledError(err) {
		t.Fatalf("err = %v, want canceled", err)
	}
	typ, closed := s.closeRecord(id)
	if typ != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED || closed.Snapshot.CancelReason != signals.ReasonElicitationCancelled {
		t.Errorf("close %s snapshot %+v", typ, closed.Snapshot)
	}
	checkLog(t, id, closed.Events)
	s.replay(id)
}

func TestIntegrationFailure(t *testing.T) {
	tests := []struct {
		tool string
		code string
		rpc  int
	}{
		{"conformance-failure", "conformance_test_failure", 0},
		{"failing_job", "job_failed", 0},
		{"protocol_error_job", workflows.CodeProtocolError, -32603},
	}
	s := newServer(t)
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			id, run := s.start(tc.tool, map[string]any{})
			err := run.Get(ctx(t), nil)
			var app *temporal.ApplicationError
			if !errors.As(err, &app) || app.Type() != tc.code {
				t.Fatalf("err = %v, want application error %s", err, tc.code)
			}
			typ, closed := s.closeRecord(id)
			e := closed.Snapshot.Error
			if typ != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED || closed.Snapshot.Status != signals.StatusFailed || e == nil || e.Code != tc.code || e.RPCCode != tc.rpc {
				t.Fatalf("close %s snapshot %+v error %+v", typ, closed.Snapshot, e)
			}
			checkLog(t, id, closed.Events)
			s.replay(id)
			if got := s.statusAttr(id); got != string(signals.StatusFailed) {
				t.Errorf("OpenWOPStatus = %q", got)
			}
			// A failed run is not retried: exactly one execution.
			d, err := s.c.DescribeWorkflowExecution(ctx(t), id, "")
			if err != nil || d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_FAILED {
				t.Errorf("describe: %v %v", err, d.GetWorkflowExecutionInfo().GetStatus())
			}
		})
	}
}

func TestIntegrationPublishReport(t *testing.T) {
	s := newServer(t)
	id, run := s.start("publish_report", map[string]any{"title": "Q3", "topic": "sales", "sections": 2})
	snap := s.await(id, func(x signals.Snapshot) bool { return x.Status == signals.StatusWaitingApproval })
	s.resolve(id, signals.Resolution{InterruptID: snap.Interrupts[0].ID, Action: signals.ActionAccept, Content: json.RawMessage(`{"action":"accept"}`), ResolvedBy: bob, RequestID: "r"})
	var rec signals.RunRecord
	if err := run.Get(ctx(t), &rec); err != nil {
		t.Fatal(err)
	}
	var out tools.PublishReportOutput
	if err := json.Unmarshal(rec.Snapshot.Outputs, &out); err != nil {
		t.Fatal(err)
	}
	body, ok := s.acts.Published(out.ReportID)
	if !out.Published || out.ApprovedBy != "bob" || !ok || !strings.Contains(body, "## Section 2") {
		t.Errorf("outputs %+v, published %v %q", out, ok, body)
	}
	checkLog(t, id, rec.Events)
}

func TestIntegrationRunSurvivesServerRestart(t *testing.T) {
	srv := testenv.StartServer(t, filepath.Join(t.TempDir(), "temporal.db"))
	acts := tools.NewActivities(zaptest.NewLogger(t), tools.ActivityOptions{})
	reg, err := conformancetools.Registry(acts)
	if err != nil {
		t.Fatal(err)
	}
	tq := testenv.UniqueTaskQueue(t)
	srv.NewWorker(t, tq, reg.Register)
	s := &server{t: t, c: srv.Client, tq: tq, acts: acts, reg: reg}
	id, _ := s.start("conformance-approval", map[string]any{})
	before := s.await(id, func(x signals.Snapshot) bool { return x.Status == signals.StatusWaitingApproval })

	srv.Restart(t)
	srv.NewWorker(t, tq, reg.Register)
	s.c = srv.Client
	after := s.snapshot(id)
	if after.Status != signals.StatusWaitingApproval || len(after.Interrupts) != 1 || after.Interrupts[0].ID != before.Interrupts[0].ID {
		t.Fatalf("after restart: %+v", after)
	}
	s.resolve(id, signals.Resolution{InterruptID: after.Interrupts[0].ID, Action: signals.ActionAccept, ResolvedBy: alice, RequestID: "r"})
	var rec signals.RunRecord
	if err := srv.Client.GetWorkflow(ctx(t), id, "").Get(ctx(t), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Snapshot.Status != signals.StatusCompleted {
		t.Errorf("status %s", rec.Snapshot.Status)
	}
	checkLog(t, id, rec.Events)
}

func TestIntegrationResolutionRacingCancel(t *testing.T) {
	for _, resolveFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "resolution sent first", false: "cancel sent first"}[resolveFirst], func(t *testing.T) {
			s := newServer(t)
			id, run := s.start("conformance-approval", map[string]any{})
			snap := s.await(id, func(x signals.Snapshot) bool { return x.Status == signals.StatusWaitingApproval })
			// With the worker stopped, both arrive in the run's next workflow
			// task together.
			s.w.Stop()
			res := signals.Resolution{InterruptID: snap.Interrupts[0].ID, Action: signals.ActionAccept, ResolvedBy: alice, RequestID: "r"}
			cancel := func() {
				if err := s.c.CancelWorkflow(ctx(t), id, ""); err != nil {
					t.Fatal(err)
				}
			}
			if resolveFirst {
				s.resolve(id, res)
				cancel()
			} else {
				cancel()
				s.resolve(id, res)
			}
			s.env.NewWorker(t, s.tq, s.reg.Register)
			if err := run.Get(ctx(t), nil); !temporal.IsCanceledError(err) {
				t.Fatalf("err = %v, want canceled", err)
			}
			_, closed := s.closeRecord(id)
			checkLog(t, id, closed.Events)
			for _, e := range closed.Events {
				if e.Type == signals.EventInterruptResolved {
					t.Errorf("resolution applied although the cancel came in the same task: %v", types(closed.Events))
				}
			}
			s.replay(id)
		})
	}
}
