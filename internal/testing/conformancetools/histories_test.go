package conformancetools_test

// The history corpus: workflow histories of every example tool and fixture
// in each state that applies, recorded on the embedded Temporal server with
// the harness and tools of a release, and replayed by TestReplayHistories
// with the current code. A change to the harness or a tool that changes the
// commands a run emits, without a workflow.GetVersion guard, fails the replay
// of the histories recorded before it: runs in flight would fail the same way
// after an upgrade. See docs/upgrades.md.
//
// Record a new set (a directory of its own; existing files are never
// overwritten):
//
//	OPENWOP_RECORD_HISTORIES=<set> go test ./internal/testing/conformancetools -run TestRecordHistories
//
// <set> names the directory under testdata/histories (1 or true: today's
// date). -run TestRecordHistories/<tool> records one tool's scenarios only.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/internal/testing/conformancetools"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
	"github.com/openwop/temporal-mcp/workflows"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

// recordEnv names the environment variable that turns TestRecordHistories
// on; its value names the set to record.
const recordEnv = "OPENWOP_RECORD_HISTORIES"

// historiesDir holds the corpus: one directory per recorded set.
const historiesDir = "testdata/histories"

// historyTenant is the tenant of the recorded runs.
const historyTenant = "acme"

var (
	bob    = signals.Subject{Issuer: "test", SubjectID: "bob", Tenant: historyTenant}
	listed = signals.Subject{Issuer: "test", SubjectID: conformancetools.ListedApprover, Tenant: historyTenant}
)

// scenario drives one run of tool into state; the history is recorded when
// drive returns.
type scenario struct {
	tool  string
	state string // waiting, resolved, declined, completed, cancelled, failed
	args  string
	pre   map[string]json.RawMessage
	drive func(r *recorder, id string)
}

// expenseArgs are the arguments of approve_expense with the managers'
// deadline escalateAfter (seconds): bob manages, alice directs.
func expenseArgs(escalateAfter int) string {
	return fmt.Sprintf(`{"amount":42,"purpose":"taxi","escalateAfterSeconds":%d,"managers":["bob"],"directors":["alice"]}`, escalateAfter)
}

// name is the file name of the scenario's history.
func (s scenario) name() string { return s.tool + "." + s.state + ".json" }

// scenarios are the runs of the corpus: every tool of the served registry
// with fixtures, in each state that applies to it.
var scenarios = []scenario{
	// publish_report: activity, approval, activity.
	{tool: "publish_report", state: "waiting", args: `{"title":"Q3","topic":"sales","sections":2}`,
		drive: func(r *recorder, id string) { r.awaitWaiting(id, 1) }},
	{tool: "publish_report", state: "resolved", args: `{"title":"Q3","topic":"sales","sections":2}`,
		drive: func(r *recorder, id string) {
			r.answer(id, 0, signals.ActionAccept, `{"action":"accept"}`, bob)
			r.awaitClosed(id)
		}},
	{tool: "publish_report", state: "declined", args: `{"title":"Q3","topic":"sales","sections":2}`,
		drive: func(r *recorder, id string) {
			r.answer(id, 0, signals.ActionAccept, `{"action":"reject"}`, bob)
			r.awaitClosed(id)
		}},
	{tool: "publish_report", state: "cancelled", args: `{"title":"Q3","topic":"sales","sections":2}`,
		drive: func(r *recorder, id string) {
			r.awaitWaiting(id, 1)
			r.cancel(id, signals.ReasonMCPRequestCancelled)
		}},
	{tool: "publish_report", state: "failed", args: `{"title":"Q3","topic":"sales","sections":11}`,
		drive: (*recorder).awaitClosed},

	// delay: a heartbeating activity.
	{tool: "delay", state: "completed", args: `{"delayMs":300}`, drive: (*recorder).awaitClosed},
	{tool: "delay", state: "cancelled", args: `{"delayMs":60000}`,
		drive: func(r *recorder, id string) {
			r.awaitActivity(id)
			r.cancel(id, "")
		}},
	{tool: "delay", state: "failed", args: `{"delayMs":"soon"}`, drive: (*recorder).awaitClosed},

	// approve_expense: an approval with a deadline, another on expiry, a
	// progress-reporting activity. bob manages, alice directs.
	{tool: "approve_expense", state: "waiting", args: expenseArgs(600),
		drive: func(r *recorder, id string) { r.awaitWaiting(id, 1) }},
	{tool: "approve_expense", state: "resolved", args: expenseArgs(600),
		drive: func(r *recorder, id string) {
			r.answer(id, 0, signals.ActionAccept, `{"action":"accept"}`, bob)
			r.awaitClosed(id)
		}},
	{tool: "approve_expense", state: "escalated", args: expenseArgs(1),
		drive: func(r *recorder, id string) {
			r.awaitSnapshot(id, func(s signals.Snapshot) bool { return len(s.Interrupts) == 1 && s.Interrupts[0].Key == "director" })
			r.answer(id, 0, signals.ActionAccept, `{"action":"accept"}`, alice)
			r.awaitClosed(id)
		}},
	{tool: "approve_expense", state: "cancelled", args: expenseArgs(600),
		drive: func(r *recorder, id string) {
			r.awaitWaiting(id, 1)
			r.cancel(id, signals.ReasonMCPRequestCancelled)
		}},

	// Fixtures.
	{tool: "greet", state: "completed", args: `{"name":"Ada"}`, drive: (*recorder).awaitClosed},
	{tool: "slow_compute", state: "completed", args: `{"seconds":1,"label":"x"}`, drive: (*recorder).awaitClosed},
	{tool: "slow_compute", state: "cancelled", args: `{"seconds":60,"label":"x"}`,
		drive: func(r *recorder, id string) {
			r.awaitActivity(id)
			r.cancel(id, signals.ReasonMCPRequestCancelled)
		}},
	{tool: "failing_job", state: "failed", args: `{}`, drive: (*recorder).awaitClosed},
	{tool: "protocol_error_job", state: "failed", args: `{}`, drive: (*recorder).awaitClosed},
	{tool: "confirm_delete", state: "waiting", args: `{"filename":"a.txt"}`,
		drive: func(r *recorder, id string) { r.awaitWaiting(id, 1) }},
	{tool: "confirm_delete", state: "resolved", args: `{"filename":"a.txt"}`,
		drive: func(r *recorder, id string) {
			r.answer(id, 0, signals.ActionAccept, `{"confirm":true}`, alice)
			r.awaitClosed(id)
		}},
	{tool: "confirm_delete", state: "declined", args: `{"filename":"a.txt"}`,
		drive: func(r *recorder, id string) {
			r.answer(id, 0, signals.ActionDecline, ``, alice)
			r.awaitClosed(id)
		}},
	{tool: "confirm_delete", state: "cancelled", args: `{"filename":"a.txt"}`,
		drive: func(r *recorder, id string) {
			r.answer(id, 0, signals.ActionCancel, ``, alice)
			r.awaitClosed(id)
		}},
	{tool: "multi_input", state: "waiting", args: `{}`,
		drive: func(r *recorder, id string) { r.awaitWaiting(id, 2) }},
	{tool: "multi_input", state: "resolved", args: `{}`,
		drive: func(r *recorder, id string) {
			r.answer(id, 0, signals.ActionAccept, `{"name":"Ada"}`, alice)
			r.answer(id, 0, signals.ActionAccept, `{"color":"red"}`, bob)
			r.awaitClosed(id)
		}},
	{tool: "multi_input", state: "declined", args: `{}`,
		drive: func(r *recorder, id string) {
			r.answer(id, 1, signals.ActionDecline, ``, alice)
			r.answer(id, 0, signals.ActionAccept, `{"name":"Ada"}`, alice)
			r.awaitClosed(id)
		}},
	{tool: "test_tool_with_task", state: "completed", args: `{}`,
		pre:   map[string]json.RawMessage{conformancetools.PreRunUserName: json.RawMessage(`{"name":"Ada"}`)},
		drive: (*recorder).awaitClosed},
	{tool: "test_tool_with_task", state: "failed", args: `{}`, drive: (*recorder).awaitClosed},
	{tool: "conformance-approval", state: "waiting", args: `{}`,
		drive: func(r *recorder, id string) { r.awaitWaiting(id, 1) }},
	{tool: "conformance-approval", state: "resolved", args: `{}`,
		drive: func(r *recorder, id string) {
			r.answer(id, 0, signals.ActionAccept, `{"action":"accept"}`, alice)
			r.awaitClosed(id)
		}},
	{tool: "conformance-approval", state: "declined", args: `{}`,
		drive: func(r *recorder, id string) {
			r.answer(id, 0, signals.ActionDecline, ``, alice)
			r.awaitClosed(id)
		}},
	{tool: "conformance-approval", state: "cancelled", args: `{}`,
		drive: func(r *recorder, id string) {
			r.awaitWaiting(id, 1)
			r.cancel(id, "")
		}},
	{tool: "conformance-approval-approvers", state: "resolved", args: `{}`,
		drive: func(r *recorder, id string) {
			// alice is not eligible: her resolution is ignored.
			r.answer(id, 0, signals.ActionAccept, `{"action":"accept"}`, alice)
			r.answer(id, 0, signals.ActionAccept, `{"action":"accept"}`, listed)
			r.awaitClosed(id)
		}},
	{tool: "conformance-failure", state: "failed", args: `{}`, drive: (*recorder).awaitClosed},
	{tool: "conformance-delay", state: "completed", args: `{"delayMs":200}`, drive: (*recorder).awaitClosed},
	{tool: "conformance-delay", state: "cancelled", args: `{"delayMs":30000}`,
		drive: func(r *recorder, id string) {
			// node.started of "delay": the timer runs.
			r.awaitSnapshot(id, func(s signals.Snapshot) bool { return s.LastSequence >= 1 })
			r.awaitSettled(id)
			r.cancel(id, signals.ReasonMCPRequestCancelled)
		}},
	{tool: "conformance-cancellable", state: "completed", args: `{"delayMs":300}`, drive: (*recorder).awaitClosed},
	{tool: "conformance-cancellable", state: "cancelled", args: `{"delayMs":60000}`,
		drive: func(r *recorder, id string) {
			r.awaitActivity(id)
			r.cancel(id, signals.ReasonMCPRequestCancelled)
		}},
}

// TestRecordHistories records the corpus into testdata/histories/<set> when
// OPENWOP_RECORD_HISTORIES names the set; it is skipped otherwise.
func TestRecordHistories(t *testing.T) {
	set := os.Getenv(recordEnv)
	if set == "" {
		t.Skipf("set %s=<set> to record the history corpus into %s/<set>", recordEnv, historiesDir)
	}
	if set == "1" || set == "true" {
		set = time.Now().UTC().Format("2006-01-02")
	}
	if strings.ContainsAny(set, `/\`) || set == "." || set == ".." {
		t.Fatalf("%s=%q is not a directory name", recordEnv, set)
	}
	dir := filepath.Join(historiesDir, set)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	env := testenv.Temporal(t)
	acts := tools.NewActivities(nil, tools.ActivityOptions{HeartbeatInterval: 200 * time.Millisecond, SectionDelay: 10 * time.Millisecond})
	reg, err := conformancetools.Registry(acts)
	if err != nil {
		t.Fatal(err)
	}
	tq := testenv.UniqueTaskQueue(t)
	env.NewWorker(t, tq, reg.Register)
	for _, sc := range scenarios {
		t.Run(sc.tool+"/"+sc.state, func(t *testing.T) {
			file := filepath.Join(dir, sc.name())
			if _, err := os.Stat(file); err == nil {
				t.Skipf("%s exists; recorded histories are never overwritten", file)
			}
			r := &recorder{t: t, c: env.Client, tq: tq}
			id := r.start(sc)
			sc.drive(r, id)
			hist := r.history(id)
			if !r.closed(hist) {
				// A waiting run: record it, then end it.
				defer func() { _ = r.c.TerminateWorkflow(context.Background(), id, "", "history recorded") }()
			}
			raw, err := encodeHistory(hist)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("recorded %s (%d events, %d bytes)", file, len(hist.Events), len(raw))
		})
	}
}

// encodeHistory encodes hist as `temporal workflow show --output json` does
// (the JSON client.HistoryFromJSON reads), one compact event a line.
func encodeHistory(hist *historypb.History) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("{\"events\": [\n")
	for i, ev := range hist.Events {
		raw, err := temporalproto.CustomJSONMarshalOptions{}.Marshal(ev)
		if err != nil {
			return nil, err
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			return nil, err
		}
		b.Write(compact.Bytes())
		if i < len(hist.Events)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]}\n")
	return b.Bytes(), nil
}

// TestReplayHistories replays every recorded history with the current
// harness and tools: any nondeterminism fails it. It also checks that the
// corpus covers every tool the stock commands serve with the fixtures.
func TestReplayHistories(t *testing.T) {
	reg, err := conformancetools.Registry(tools.NewActivities(nil, tools.ActivityOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	replayed := workflowstest.ReplayAll(t, reg, historiesDir)
	for _, s := range reg.Specs() {
		if !replayed[s.Name] {
			t.Errorf("no recorded history of tool %s: record one (see docs/upgrades.md)", s.Name)
		}
	}
}

// TestReplayDetectsChange shows the corpus has teeth: a publish_report that
// no longer runs its generate activity before asking for approval fails the
// replay of the recorded runs, as an unguarded change would fail the runs
// in flight.
func TestReplayDetectsChange(t *testing.T) {
	changed := workflows.NewTool("publish_report", "publish_report without its generate step",
		func(ctx workflow.Context, in tools.PublishReportInput) (tools.PublishReportOutput, error) {
			d, err := workflows.Approve(ctx, workflows.ApprovalRequest{Key: "review", Title: "Publish " + in.Title + "?"})
			return tools.PublishReportOutput{Decision: d.Action}, err
		})
	reg, err := workflows.NewRegistry([]workflows.Tool{changed})
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(historiesDir, "*", "publish_report.*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no publish_report history in the corpus (%v)", err)
	}
	for _, file := range files {
		if hist := load(t, file); hist.Events[len(hist.Events)-1].GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED &&
			!slices.ContainsFunc(hist.Events, func(e *historypb.HistoryEvent) bool {
				return e.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
			}) {
			continue // failed before its first activity: nothing to diverge from
		}
		_, err := workflowstest.Replay(reg, file)
		// TMPRL1100 is the SDK's code of a nondeterminism error.
		if err == nil || !strings.Contains(err.Error(), "TMPRL1100") {
			t.Errorf("replay of %s with a changed tool: %v, want a nondeterminism error", file, err)
		}
	}
}

// load reads a history file (the JSON of `temporal workflow show --output
// json`).
func load(t *testing.T, file string) *historypb.History {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil || len(hist.Events) == 0 {
		t.Fatalf("%s: %d events, %v", file, len(hist.GetEvents()), err)
	}
	return hist
}

// recorder runs scenarios on the embedded server.
type recorder struct {
	t  *testing.T
	c  client.Client
	tq string
}

func (r *recorder) ctx() context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	r.t.Cleanup(cancel)
	return c
}

// start starts the scenario's run the way runs.Service does.
func (r *recorder) start(sc scenario) string {
	r.t.Helper()
	id, err := runid.New(historyTenant, rand.Reader)
	if err != nil {
		r.t.Fatal(err)
	}
	owner := signals.Owner{Tenant: historyTenant, Subject: alice}
	kw := temporal.NewSearchAttributeKeyKeyword
	_, err = r.c.ExecuteWorkflow(r.ctx(), client.StartWorkflowOptions{
		ID:                    id,
		TaskQueue:             r.tq,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		Memo:                  map[string]any{"owner": owner, "transport": signals.TransportMCP},
		TypedSearchAttributes: temporal.NewSearchAttributes(
			kw(signals.SearchAttrTenant).ValueSet(historyTenant),
			kw(signals.SearchAttrTool).ValueSet(sc.tool),
			kw(signals.SearchAttrTransport).ValueSet(signals.TransportMCP),
			kw(signals.SearchAttrStatus).ValueSet(string(signals.StatusPending)),
		),
	}, sc.tool, signals.StartRequest{Arguments: json.RawMessage(sc.args), Owner: owner, Transport: signals.TransportMCP, PreRunInputs: sc.pre})
	if err != nil {
		r.t.Fatalf("start %s: %v", sc.tool, err)
	}
	return id
}

func (r *recorder) snapshot(id string) signals.Snapshot {
	r.t.Helper()
	v, err := r.c.QueryWorkflow(r.ctx(), id, "", signals.QueryGetRun)
	if err != nil {
		r.t.Fatalf("query getRun %s: %v", id, err)
	}
	var s signals.Snapshot
	if err := v.Get(&s); err != nil {
		r.t.Fatal(err)
	}
	return s
}

// awaitSnapshot polls getRun until ok holds (20 s at most).
func (r *recorder) awaitSnapshot(id string, ok func(signals.Snapshot) bool) signals.Snapshot {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := r.snapshot(id)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("run %s: condition not reached, last snapshot %+v", id, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// awaitWaiting waits until n interrupts are open and the run's history has
// settled (no workflow task in flight).
func (r *recorder) awaitWaiting(id string, n int) {
	r.t.Helper()
	r.awaitSnapshot(id, func(s signals.Snapshot) bool { return len(s.Interrupts) == n })
	r.awaitSettled(id)
}

// awaitActivity waits until the run's activity has started and heartbeated.
func (r *recorder) awaitActivity(id string) {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		d, err := r.c.DescribeWorkflowExecution(r.ctx(), id, "")
		if err != nil {
			r.t.Fatal(err)
		}
		for _, a := range d.GetPendingActivities() {
			if a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED && a.GetHeartbeatDetails() != nil {
				return
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("run %s: no activity started", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// awaitSettled waits until no workflow task of the run is pending: the
// history holds everything the run did so far.
func (r *recorder) awaitSettled(id string) {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		d, err := r.c.DescribeWorkflowExecution(r.ctx(), id, "")
		if err != nil {
			r.t.Fatal(err)
		}
		if d.GetPendingWorkflowTask() == nil {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("run %s: a workflow task stays pending", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// answer resolves the i-th open interrupt once it is open.
func (r *recorder) answer(id string, i int, action signals.Action, content string, by signals.Subject) {
	r.t.Helper()
	s := r.awaitSnapshot(id, func(s signals.Snapshot) bool { return len(s.Interrupts) > i })
	res := signals.Resolution{InterruptID: s.Interrupts[i].ID, Action: action, ResolvedBy: by, RequestID: fmt.Sprintf("r%d", len(s.Resolved)+1)}
	if content != "" {
		res.Content = json.RawMessage(content)
	}
	if err := r.c.SignalWorkflow(r.ctx(), id, "", signals.SignalResolveInterrupt, res); err != nil {
		r.t.Fatal(err)
	}
	// The next query sees the signal handled.
	r.snapshot(id)
}

// cancel cancels the run (with reason, when set, signalled first) and waits
// until it has ended.
func (r *recorder) cancel(id, reason string) {
	r.t.Helper()
	if reason != "" {
		if err := r.c.SignalWorkflow(r.ctx(), id, "", signals.SignalCancelReason, signals.CancelRequest{Reason: reason, CancelledBy: alice}); err != nil {
			r.t.Fatal(err)
		}
	}
	if err := r.c.CancelWorkflow(r.ctx(), id, ""); err != nil {
		r.t.Fatal(err)
	}
	r.awaitClosed(id)
}

// awaitClosed waits until the run has ended.
func (r *recorder) awaitClosed(id string) {
	r.t.Helper()
	_ = r.c.GetWorkflow(r.ctx(), id, "").Get(r.ctx(), nil)
	if !r.closed(r.history(id)) {
		r.t.Fatalf("run %s did not end", id)
	}
}

// closed reports whether hist ends with the run's close event.
func (r *recorder) closed(hist *historypb.History) bool {
	switch hist.Events[len(hist.Events)-1].GetEventType() {
	case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
		return true
	}
	return false
}

// history reads the run's whole history.
func (r *recorder) history(id string) *historypb.History {
	r.t.Helper()
	it := r.c.GetWorkflowHistory(r.ctx(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	h := &historypb.History{}
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			r.t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	return h
}
