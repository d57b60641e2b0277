package workflowstest_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

// The tools of these tests, written as an author writes them.

type orderIn struct {
	OrderID string `json:"orderId"`
}

type orderOut struct {
	Decision string `json:"decision"`
	Note     string `json:"note,omitempty"`
	Pages    int    `json:"pages,omitempty"`
	Name     string `json:"name,omitempty"`
}

type noteAnswer struct {
	Note  string `json:"note"`
	Pages int    `json:"pages"`
}

// approveThenNote asks for an approval, then for a note (a flat form).
func approveThenNote(ctx workflow.Context, in orderIn) (orderOut, error) {
	d, err := workflows.Approve(ctx, workflows.ApprovalRequest{Key: "approve", Title: "Ship " + in.OrderID + "?",
		Description: "it leaves today", Approvers: []string{"tester", "boss"}})
	if err != nil || !d.Approved {
		return orderOut{Decision: d.Action}, err
	}
	n, err := workflows.AskAs[noteAnswer](ctx, workflows.InputRequest{Key: "note", Title: "A note for the label"})
	return orderOut{Decision: d.Action, Note: n.Note, Pages: n.Pages}, err
}

// greetPreRun reads the name asked before the run.
func greetPreRun(ctx workflow.Context, _ struct{}) (orderOut, error) {
	raw, _ := workflows.PreRunInput(ctx, "who")
	var who struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(raw, &who)
	return orderOut{Name: who.Name}, nil
}

// registryTools are the tools of registry.
func registryTools() []workflows.Tool {
	return []workflows.Tool{
		workflows.NewTool("ship", "Ship an order after approval.", approveThenNote, workflows.Suspends()),
		workflows.NewTool("greet_pre", "Greet who the caller names first.", greetPreRun,
			workflows.WithPreRunInput("who", "Who shall be greeted?",
				json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`))),
	}
}

func registry(t *testing.T) *workflows.Registry {
	t.Helper()
	reg, err := workflows.NewRegistry(registryTools())
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestCallAnswersQuestionsAsAnAgentSeesThem(t *testing.T) {
	env := workflowstest.New(registry(t))
	env.Answer("approve", workflowstest.Choose("accept"))
	env.Answer("note", workflowstest.Accept(noteAnswer{Note: "fragile", Pages: 2}))
	res, err := env.Call("ship", orderIn{OrderID: "A-1"})
	if err != nil {
		t.Fatal(err)
	}
	var out orderOut
	if err := res.Output(&out); err != nil {
		t.Fatal(err)
	}
	if out != (orderOut{Decision: "accept", Note: "fragile", Pages: 2}) {
		t.Errorf("output = %+v", out)
	}
	if len(res.Questions) != 2 {
		t.Fatalf("questions = %+v, want approve and note", res.Questions)
	}
	q := res.Questions[0]
	runID := workflowstest.DefaultTenant + "/workflowstest-run-1"
	if q.ID != runID+"-i1" || q.Key != "approve" || q.Kind != signals.KindApproval ||
		q.Message != "Ship A-1? — it leaves today" || q.Answer == nil || len(q.Refusals) != 0 {
		t.Errorf("approval question = %+v", q)
	}
	if got := string(q.RequestedSchema); got != `{"properties":{"action":{"enum":["accept","reject"],"type":"string"}},"required":["action"],"type":"object"}` {
		t.Errorf("approval requestedSchema = %s", got)
	}
	if n, _ := res.Question("note"); n.ID != runID+"-i2" || !strings.Contains(string(n.RequestedSchema), `"pages":{"type":"integer"}`) {
		t.Errorf("note question = %+v (schema %s)", n, n.RequestedSchema)
	}
	// One status per workflow task: the run answers the approval and asks
	// the note in one.
	wantStatuses := []signals.Status{signals.StatusWaitingApproval, signals.StatusWaitingInput, signals.StatusCompleted}
	if !slices.Equal(res.Statuses, wantStatuses) {
		t.Errorf("statuses = %v, want %v", res.Statuses, wantStatuses)
	}
	wantEvents := []string{"run.started", "node.suspended", "interrupt.requested", "interrupt.resolved",
		"node.suspended", "interrupt.requested", "interrupt.resolved", "run.completed"}
	if got := res.EventTypes(); !slices.Equal(got, wantEvents) {
		t.Errorf("events = %v, want %v", got, wantEvents)
	}
	if s := res.Snapshot; len(s.Resolved) != 2 || !reflect.DeepEqual(s.Resolved[0].ResolvedBy, env.Caller) || !reflect.DeepEqual(s.Owner.Subject, env.Caller) {
		t.Errorf("resolved = %+v, owner %+v", s.Resolved, s.Owner)
	}
}

// TestAnswersAreChecked: an answer the server would refuse is refused, the
// question stays open, and an agent's corrected answer is then taken.
func TestAnswersAreChecked(t *testing.T) {
	boss := signals.Subject{Issuer: "test", SubjectID: "boss", Tenant: workflowstest.DefaultTenant}
	tests := []struct {
		name    string
		approve []workflowstest.Answer // refused, then the last one taken
		note    []workflowstest.Answer
		refused []string // in the refusals, in order
	}{
		{
			name:    "action not offered",
			approve: []workflowstest.Answer{workflowstest.Choose("maybe"), workflowstest.Choose("accept")},
			refused: []string{"maybe"},
		},
		{
			name:    "not an approver",
			approve: []workflowstest.Answer{workflowstest.Choose("accept").As(signals.Subject{SubjectID: "eve", Tenant: workflowstest.DefaultTenant}), workflowstest.Choose("accept").As(boss)},
			refused: []string{"eve"},
		},
		{
			name:    "unknown action",
			approve: []workflowstest.Answer{{Action: "maybe"}, workflowstest.Choose("accept")},
			refused: []string{`"maybe"`},
		},
		{
			name:    "wrong type, missing field, extra content shape",
			approve: []workflowstest.Answer{workflowstest.Choose("accept")},
			note: []workflowstest.Answer{
				workflowstest.Accept(map[string]any{"note": "x", "pages": "two"}),
				workflowstest.Accept(map[string]any{"pages": 2}),
				workflowstest.Accept([]string{"x"}),
				workflowstest.Accept(noteAnswer{Note: "x", Pages: 2}),
			},
			refused: []string{"pages", "note", "object"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := workflowstest.New(registry(t))
			script := func(answers []workflowstest.Answer) func(workflowstest.Question) workflowstest.Answer {
				return func(q workflowstest.Question) workflowstest.Answer { return answers[len(q.Refusals)] }
			}
			env.AnswerFunc("approve", script(tc.approve))
			if tc.note == nil {
				tc.note = []workflowstest.Answer{workflowstest.Accept(noteAnswer{Note: "x", Pages: 1})}
			}
			env.AnswerFunc("note", script(tc.note))
			res, err := env.Call("ship", orderIn{OrderID: "A-2"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status() != signals.StatusCompleted {
				t.Fatalf("status = %s", res.Status())
			}
			var refusals []error
			for _, q := range res.Questions {
				refusals = append(refusals, q.Refusals...)
			}
			if len(refusals) != len(tc.refused) {
				t.Fatalf("refusals = %v, want %d naming %v", refusals, len(tc.refused), tc.refused)
			}
			for i, want := range tc.refused {
				if !strings.Contains(refusals[i].Error(), want) {
					t.Errorf("refusal %d = %v, want it to name %s", i, refusals[i], want)
				}
			}
			// The run never saw a refused answer: one resolution per question.
			if n := len(res.Snapshot.Resolved); n != 2 {
				t.Errorf("resolutions applied = %d, want 2", n)
			}
		})
	}
}

// TestCallReportsWhatItCannotAnswer: a refused Answer, or a question no
// answer is registered for, ends the run cancelled and Call says why.
func TestCallReportsWhatItCannotAnswer(t *testing.T) {
	tests := []struct {
		name    string
		answers map[string]workflowstest.Answer
		want    string
	}{
		{"no answer registered", map[string]workflowstest.Answer{"approve": workflowstest.Choose("accept")}, `Env.Answer("note"`},
		{"answer refused", map[string]workflowstest.Answer{"approve": workflowstest.Choose("later")}, `the answer to question "approve" was refused: answer to interrupt "test/workflowstest-run-1-i1" refused: content: enum: action "later" is not offered`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := workflowstest.New(registry(t))
			for k, a := range tc.answers {
				env.Answer(k, a)
			}
			began := time.Now()
			res, err := env.Call("ship", orderIn{OrderID: "A-3"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Call error = %v, want one naming %s", err, tc.want)
			}
			if res == nil || res.Status() != signals.StatusCancelled || res.Snapshot.CancelReason != signals.ReasonCallerRequested {
				t.Fatalf("result = %+v, want a cancelled run", res)
			}
			if err := res.Output(new(orderOut)); err == nil || !strings.Contains(err.Error(), "cancelled") {
				t.Errorf("Output of a cancelled run = %v", err)
			}
			t.Logf("gave up after %v", time.Since(began))
		})
	}
}

func TestDeclineAndCancel(t *testing.T) {
	tests := []struct {
		answer workflowstest.Answer
		status signals.Status
		out    orderOut
	}{
		{workflowstest.Decline(), signals.StatusCompleted, orderOut{Decision: "reject"}},
		{workflowstest.Choose("reject"), signals.StatusCompleted, orderOut{Decision: "reject"}},
		{workflowstest.Cancel(), signals.StatusCancelled, orderOut{}},
	}
	for _, tc := range tests {
		t.Run(string(tc.answer.Action), func(t *testing.T) {
			env := workflowstest.New(registry(t))
			env.Answer("approve", tc.answer)
			res, err := env.Call("ship", orderIn{OrderID: "A-4"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status() != tc.status {
				t.Fatalf("status = %s, want %s", res.Status(), tc.status)
			}
			var out orderOut
			if err := res.Output(&out); tc.status == signals.StatusCompleted && (err != nil || out != tc.out) {
				t.Errorf("output = %+v, %v; want %+v", out, err, tc.out)
			}
		})
	}
}

func TestCallRefusedBeforeTheRun(t *testing.T) {
	tests := []struct {
		name string
		tool string
		args any
		who  *workflowstest.Answer
		want string
	}{
		{"unknown tool", "nope", struct{}{}, nil, `no tool "nope"`},
		{"arguments outside the schema", "ship", map[string]any{"orderId": 7}, nil, "invalid arguments"},
		{"arguments not an object", "ship", []int{1}, nil, "must be a JSON object"},
		{"pre-run input without an answer", "greet_pre", struct{}{}, nil, `Env.Answer("who"`},
		{"pre-run input refused", "greet_pre", struct{}{}, &workflowstest.Answer{Action: signals.ActionAccept, Content: map[string]int{"name": 1}}, `input "who"`},
		{"pre-run input declined", "greet_pre", struct{}{}, &workflowstest.Answer{Action: signals.ActionDecline}, "did not run"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := workflowstest.New(registry(t))
			if tc.who != nil {
				env.Answer("who", *tc.who)
			}
			res, err := env.Call(tc.tool, tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) || res != nil {
				t.Fatalf("Call = %+v, %v; want no result and an error naming %s", res, err, tc.want)
			}
		})
	}
}

func TestPreRunInput(t *testing.T) {
	env := workflowstest.New(registry(t))
	env.Answer("who", workflowstest.Accept(map[string]string{"name": "Ada"}))
	res, err := env.Call("greet_pre", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out orderOut
	if err := res.Output(&out); err != nil || out.Name != "Ada" {
		t.Fatalf("output = %+v, %v", out, err)
	}
	if q, ok := res.Question("who"); !ok || q.ID != "who" || q.Message != "Who shall be greeted?" || q.Kind != "" {
		t.Errorf("pre-run question = %+v", q)
	}
}

// TestWhileWaiting: Snapshot, Events and Cancel from an At function.
func TestWhileWaiting(t *testing.T) {
	env := workflowstest.New(registry(t))
	var waiting signals.Snapshot
	var events []signals.Event
	env.At(time.Minute, func() {
		var err error
		if waiting, err = env.Snapshot(); err != nil {
			t.Error(err)
		}
		if events, err = env.Events(0); err != nil {
			t.Error(err)
		}
		env.Cancel(signals.ReasonMCPRequestCancelled)
	})
	env.AnswerTimeout = 2 * time.Minute
	res, err := env.Call("ship", orderIn{OrderID: "A-5"})
	if err != nil {
		t.Fatal(err)
	}
	if waiting.Status != signals.StatusWaitingApproval || len(waiting.Interrupts) != 1 || len(events) != 2 {
		t.Errorf("while waiting: %+v, events after 0: %d", waiting, len(events))
	}
	if res.Status() != signals.StatusCancelled || res.Snapshot.CancelReason != signals.ReasonMCPRequestCancelled {
		t.Errorf("final = %s (%s)", res.Status(), res.Snapshot.CancelReason)
	}
	if _, err := env.Call("ship", orderIn{}); err == nil {
		t.Error("a second Call on one Env did not fail")
	}
}

// histories are the recorded histories of the tools the stock commands serve.
var histories = filepath.Join("..", "..", "internal", "testing", "conformancetools", "testdata", "histories")

func TestReplay(t *testing.T) {
	greet := func(ctx workflow.Context, in struct {
		Name string `json:"name"`
	}) (map[string]string, error) {
		return map[string]string{"greeting": "Hello, " + in.Name + "!"}, nil
	}
	changed := func(ctx workflow.Context, in struct {
		Name string `json:"name"`
	}) (map[string]string, error) {
		_ = workflow.Sleep(ctx, time.Second) // a timer the history does not have
		return greet(ctx, in)
	}
	file := filepath.Join(histories, "2026-12-03", "greet.completed.json")
	for _, tc := range []struct {
		name string
		fn   func(workflow.Context, struct {
			Name string `json:"name"`
		}) (map[string]string, error)
		want string // in the error; "" for none
	}{
		{"same code", greet, ""},
		{"changed code", changed, "TMPRL1100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := workflows.NewRegistry([]workflows.Tool{workflows.NewTool("greet", "Greets.", tc.fn)})
			if err != nil {
				t.Fatal(err)
			}
			tool, err := workflowstest.Replay(reg, file)
			if tool != "greet" || (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Replay = %q, %v; want greet and an error naming %q", tool, err, tc.want)
			}
		})
	}
}

// TestStart runs a start the server would not make, and Result.Err is the
// workflow's error as the SDK reports it.
func TestStart(t *testing.T) {
	env := workflowstest.New(registry(t))
	res, err := env.Start("ship", signals.StartRequest{Arguments: json.RawMessage(`{"orderId":7}`)})
	if err != nil {
		t.Fatal(err)
	}
	var app *temporal.ApplicationError
	if !errors.As(res.Err, &app) || app.Type() != workflows.CodeInvalidArguments || res.Status() != signals.StatusFailed {
		t.Fatalf("err = %v, status %s; want a failure with code %s", res.Err, res.Status(), workflows.CodeInvalidArguments)
	}
	if err := res.Output(new(orderOut)); err == nil || !strings.Contains(err.Error(), workflows.CodeInvalidArguments) {
		t.Errorf("Output of a failed run = %v, want the code", err)
	}
	if !reflect.DeepEqual(res.Snapshot.Owner.Subject, env.Caller) || res.Snapshot.Transport != signals.TransportMCP {
		t.Errorf("start filled in %+v", res.Snapshot)
	}
}

// ignoresCancel asks for an approval, then waits for ever on a context
// its cancellation does not reach, whatever the answer.
func ignoresCancel(ctx workflow.Context, _ struct{}) (string, error) {
	_, _ = workflows.Approve(ctx, workflows.ApprovalRequest{Key: "go", Title: "Go ahead?"})
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	return "", workflow.Await(dctx, func() bool { return false })
}

// waitsForever waits for ever on a context its cancellation does not
// reach, without asking anything.
func waitsForever(ctx workflow.Context, _ struct{}) (string, error) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	return "", workflow.Await(dctx, func() bool { return false })
}

// hangsInActivity runs the activity Hang, which never returns while the
// test runs.
func hangsInActivity(ctx workflow.Context, _ struct{}) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Hour})
	return "", workflow.ExecuteActivity(ctx, "Hang").Get(ctx, nil)
}

// hanger holds the activity Hang, which returns once release is closed.
type hanger struct{ release chan struct{} }

// Hang waits for release.
func (h *hanger) Hang(context.Context) error {
	<-h.release
	return nil
}

// TestCallNeverNilNil: every way a call can end gives a Result or an
// error, never neither; a run still open when the environment gives up is
// an error that names the run, says that it is still open and what it
// waits for. Before, such a run ended the test binary with the SDK's
// "test timeout" panic.
func TestCallNeverNilNil(t *testing.T) {
	tests := []struct {
		name    string
		tool    string
		args    any
		setup   func(env *workflowstest.Env)
		result  bool     // a Result is wanted
		errWant []string // the error holds each ("" none: no error)
	}{
		{name: "completed", tool: "ship", args: orderIn{OrderID: "A-1"}, result: true, setup: func(env *workflowstest.Env) {
			env.Answer("approve", workflowstest.Choose("accept"))
			env.Answer("note", workflowstest.Accept(map[string]any{"note": "x", "pages": 1}))
		}},
		{name: "unknown tool", tool: "nope", args: struct{}{}, errWant: []string{`no tool "nope"`}},
		{name: "arguments refused", tool: "ship", args: map[string]any{"orderId": 3}, errWant: []string{"orderId"}},
		{name: "pre-run input unanswered", tool: "greet_pre", args: struct{}{}, errWant: []string{`Env.Answer("who"`}},
		{name: "question unanswered, cancel honoured", tool: "ship", args: orderIn{OrderID: "A-2"}, result: true,
			errWant: []string{`Env.Answer("approve"`}},
		{name: "question unanswered, cancel ignored", tool: "ignores_cancel", args: struct{}{},
			errWant: []string{"run test/workflowstest-run-1 of ignores_cancel is still open", "run timeout passed",
				"its status is cancelling", "its cancellation was requested", `Env.Answer("go"`}},
		{name: "cancel ignored", tool: "waits_forever", args: struct{}{},
			setup:   func(env *workflowstest.Env) { env.At(time.Hour, func() { env.Cancel("") }) },
			errWant: []string{"run test/workflowstest-run-1 of waits_forever is still open", "its status is cancelling", "no question is open"}},
		{name: "never ends", tool: "waits_forever", args: struct{}{},
			errWant: []string{"of waits_forever is still open", "its status is running", "no question is open"}},
		{name: "activity never returns", tool: "hangs_in_activity", args: struct{}{},
			errWant: []string{"of hangs_in_activity is still open", "test timeout passed", "its status is running",
				"no question is open", "where its workflow waits"}},
	}
	h := &hanger{release: make(chan struct{})}
	t.Cleanup(func() { close(h.release) })
	reg, err := workflows.NewRegistry(append(registryTools(),
		workflows.NewTool("ignores_cancel", "Ignores its cancellation after asking.", ignoresCancel),
		workflows.NewTool("waits_forever", "Waits for ever.", waitsForever),
		workflows.NewTool("hangs_in_activity", "Runs an activity that never returns.", hangsInActivity)), h)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := workflowstest.New(reg)
			// Nothing is left to run once the run blocks: two seconds of
			// real time tell.
			env.Temporal().SetTestTimeout(2 * time.Second)
			if tc.setup != nil {
				tc.setup(env)
			}
			res, err := env.Call(tc.tool, tc.args)
			if res == nil && err == nil {
				t.Fatal("Call returned a nil Result and a nil error")
			}
			if (res != nil) != tc.result {
				t.Errorf("Result = %+v, want one: %v", res, tc.result)
			}
			if len(tc.errWant) == 0 && err != nil {
				t.Fatalf("Call error = %v, want none", err)
			}
			for _, want := range tc.errWant {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("Call error = %v, want one holding %q", err, want)
				}
			}
			if _, again := env.Call(tc.tool, tc.args); again == nil {
				t.Error("a second Call on the Env returned no error")
			}
		})
	}
}
