package mcpmount

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// handSchema is the question the hand-written workflow asks: a boolean
// "page", required, nothing else.
const handSchema = `{"type":"object","properties":{"page":{"type":"boolean"}},"required":["page"],"additionalProperties":false}`

// handWritten is an openwop tool workflow written from docs/contract.md
// alone, without the workflows harness, as a TypeScript or Python workflow
// is: it takes the StartRequest, answers getRun and getRunEvents from
// memory, publishes OpenWOPStatus and the openwopState memo at each
// change, asks one question and reads its answer from the resolveInterrupt
// signal, then leaves its RunRecord. It trusts the answer's shape, as a
// workflow may once the server checks answers: an answer without a
// boolean page fails the run.
func handWritten(ctx workflow.Context, req signals.StartRequest) (signals.RunRecord, error) {
	runID := workflow.GetInfo(ctx).WorkflowExecution.ID
	now := func() time.Time { return workflow.Now(ctx).UTC() }
	snap := signals.Snapshot{RunID: runID, Tool: req.Tool, Status: signals.StatusWaitingInput, Owner: req.Owner,
		Transport: req.Transport, CreatedAt: req.CreatedAt, UpdatedAt: now(), LastSequence: -1,
		Interrupts: []signals.Interrupt{{ID: runID + "-i1", NodeID: "ask", Kind: signals.KindClarification, Key: "page",
			Title: "Page the on-call engineer?", Schema: json.RawMessage(handSchema), RequestedAt: now()}}}
	snap.StatusMessage = snap.Status.Message()
	if err := workflow.SetQueryHandler(ctx, signals.QueryGetRun, func() (signals.Snapshot, error) { return snap, nil }); err != nil {
		return signals.RunRecord{}, err
	}
	if err := workflow.SetQueryHandler(ctx, signals.QueryEvents, func(signals.EventsQuery) (signals.EventPage, error) {
		return signals.EventPage{Events: []signals.Event{}, LastSequence: snap.LastSequence}, nil
	}); err != nil {
		return signals.RunRecord{}, err
	}
	publish := func() error {
		if err := workflow.UpsertTypedSearchAttributes(ctx,
			temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrStatus).ValueSet(string(snap.Status))); err != nil {
			return err
		}
		return workflow.UpsertMemo(ctx, map[string]any{signals.MemoState: signals.PublishedState{Status: snap.Status,
			StatusMessage: snap.StatusMessage, Interrupts: snap.Interrupts, OpenInterrupts: len(snap.Interrupts),
			UpdatedAt: snap.UpdatedAt, LastSequence: snap.LastSequence}})
	}
	if err := publish(); err != nil {
		return signals.RunRecord{}, err
	}
	var answer map[string]any
	for ch := workflow.GetSignalChannel(ctx, signals.SignalResolveInterrupt); answer == nil; {
		var res signals.Resolution
		ch.Receive(ctx, &res)
		if res.InterruptID != runID+"-i1" || res.Action != signals.ActionAccept {
			continue
		}
		if err := json.Unmarshal(res.Content, &answer); err != nil || answer == nil {
			return signals.RunRecord{}, temporal.NewNonRetryableApplicationError("the answer is not an object", "bad_answer", err)
		}
		snap.Resolved = append(snap.Resolved, signals.Resolved{Resolution: res, ResolvedAt: now()})
	}
	page, ok := answer["page"].(bool)
	if !ok || len(answer) != 1 {
		return signals.RunRecord{}, temporal.NewNonRetryableApplicationError("the answer has no boolean page alone", "bad_answer", nil)
	}
	out, _ := json.Marshal(map[string]bool{"paged": page})
	snap.Interrupts, snap.Status, snap.UpdatedAt = nil, signals.StatusCompleted, now()
	snap.StatusMessage, snap.Outputs = snap.Status.Message(), out
	snap.Result = &signals.ToolResult{Content: []signals.Content{{Type: "text", Text: string(out)}}, StructuredContent: out}
	if err := publish(); err != nil {
		return signals.RunRecord{}, err
	}
	return signals.RunRecord{Snapshot: snap, Events: []signals.Event{}}, nil
}

// TestHandWrittenOpenWOPAnswers: answers to a question of an openwop
// workflow that implements the contract by hand (standing for one in
// another language) are checked against the schema the run published:
// a value of the wrong type, a missing required property and an extra
// property are refused with -32602 naming the key and the rule, the run
// never sees them, and a fitting answer completes it.
func TestHandWrittenOpenWOPAnswers(t *testing.T) {
	s := newStackWith(t, nil, "", func(o *Options) func(*Mount) {
		env := testenv.Temporal(t)
		tq := testenv.UniqueTaskQueue(t)
		env.NewWorker(t, tq, func(w worker.Registry) {
			w.RegisterWorkflowWithOptions(handWritten, workflow.RegisterOptions{Name: "hand_written"})
		})
		o.Runs = runs.New(env.Client, env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace})
		o.Catalog = staticCatalog(t, signals.ToolSpec{Name: "hand_written", Description: "asks whether to page",
			InputSchema: json.RawMessage(`{"type":"object"}`), CanSuspend: true, TaskSupport: signals.TaskOptional,
			Contract: signals.ContractOpenWOP})
		return nil
	})
	c := s.client(t, "", tasksCaps())
	id := callTool(t, c, "hand_written", map[string]any{})["taskId"].(string)
	res := waitTask(t, c, id, status("input_required"))
	key := runOf(t, id) + "-i1"
	if res["inputRequests"].(map[string]any)[key] == nil {
		t.Fatalf("tasks/get = %v, want the question %s", res, key)
	}
	for _, tt := range []struct {
		name string
		bad  map[string]any
		rule string
	}{
		{"wrong type", map[string]any{"page": "yes"}, "page: yes is of type string; its type must be boolean"},
		{"missing required", map[string]any{}, "required"},
		{"extra property", map[string]any{"page": true, "note": "x"}, "additional properties"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			wantRefusal(t, c.call("tasks/update", map[string]any{"taskId": id,
				"inputResponses": map[string]any{key: accept(tt.bad)}}, nil), key, tt.rule)
			if got := wantResult(t, c.call("tasks/get", map[string]any{"taskId": id}, nil)); got["status"] != "input_required" {
				t.Fatalf("after the refusal tasks/get = %v", got)
			}
			// The run answers getRun itself: no resolution reached it.
			snap, err := s.runs.Get(context.Background(), auth.Anonymous(), runOf(t, id))
			if err != nil || len(snap.Resolved) != 0 || len(snap.Interrupts) != 1 {
				t.Fatalf("run = %+v, %v", snap, err)
			}
		})
	}
	c.t = t
	wantResult(t, c.call("tasks/update", map[string]any{"taskId": id,
		"inputResponses": map[string]any{key: accept(map[string]any{"page": true})}}, nil))
	done := waitTask(t, c, id, func(r map[string]any) bool { return r["status"] != "input_required" && r["status"] != "working" })
	if got := resultOf(t, done["result"]); done["status"] != "completed" || !strings.Contains(got, `"paged":true`) {
		t.Fatalf("task = %v", done)
	}
	var app *temporal.ApplicationError
	if err := s.env.Client.GetWorkflow(context.Background(), runOf(t, id), "").Get(context.Background(), nil); errors.As(err, &app) {
		t.Fatalf("the run failed: %v", err)
	}
}
