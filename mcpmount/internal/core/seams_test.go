package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap/zaptest"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/internal/testing/runstest"
	"github.com/openwop/temporal-mcp/mcpmount/internal/requeststate"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// The core's seams (Asker, Response, ProgressNotifier) driven directly,
// over the fake run service: no dialect, no transport.

// nameSchema is the schema of the question the "ask" tool's run asks.
const nameSchema = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`

// seamCatalog is the tools of the seam tests.
func seamCatalog(t *testing.T) *catalog.Static {
	t.Helper()
	c, err := catalog.NewStatic(
		signals.ToolSpec{Name: "greet", Description: "says hello", TaskSupport: signals.TaskForbidden,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)},
		signals.ToolSpec{Name: "slow", Description: "works a while", TaskSupport: signals.TaskOptional},
		signals.ToolSpec{Name: "task_only", Description: "runs as a task", TaskSupport: signals.TaskRequired},
		signals.ToolSpec{Name: "rpc_fail", Description: "fails", TaskSupport: signals.TaskOptional},
		signals.ToolSpec{Name: "ask", Description: "asks a name", TaskSupport: signals.TaskOptional, CanSuspend: true},
	)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// seamOnStart shapes the runs of seamCatalog: greet completes at once,
// rpc_fail fails with a JSON-RPC error, ask waits for the caller's name.
func seamOnStart(req runs.NewRun, s *signals.Snapshot) {
	switch req.Tool.Name {
	case "greet":
		var a struct{ Name string }
		_ = json.Unmarshal(req.Arguments, &a)
		complete(s, "Hello, "+a.Name+"!")
	case "rpc_fail":
		s.Status = signals.StatusFailed
		s.Error = &signals.RunError{Message: "no such order", RPCCode: -32602}
	case "ask":
		s.Status, s.StatusMessage = signals.StatusWaitingInput, signals.StatusWaitingInput.Message()
		s.Interrupts = []signals.Interrupt{askName(s.RunID)}
	}
}

// askName is the question of an "ask" run.
func askName(runID string) signals.Interrupt {
	return signals.Interrupt{ID: runID + "-i1", NodeID: "ask", Kind: signals.KindClarification, Key: "name",
		Title: "Your name?", Schema: json.RawMessage(nameSchema), RequestedAt: time.Now().UTC()}
}

// greetAnswer completes a run with a greeting of the name its last
// resolution gave.
func greetAnswer(s *signals.Snapshot) {
	var c struct{ Name string }
	_ = json.Unmarshal(s.Resolved[len(s.Resolved)-1].Content, &c)
	complete(s, "Hello, "+c.Name+"!")
}

// complete marks a run completed with a text result.
func complete(s *signals.Snapshot, text string) {
	s.Status, s.StatusMessage = signals.StatusCompleted, signals.StatusCompleted.Message()
	s.Result = &signals.ToolResult{Content: []Content{{Type: "text", Text: text}}}
}

// newSeamCore builds a core over f with the seam catalog, no companion
// tools and no list tool; mutate changes its options.
func newSeamCore(t *testing.T, f *runstest.Fake, mutate func(*Options)) *Core {
	t.Helper()
	states, err := requeststate.NewCodec(make([]byte, 32), time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.OnStart(seamOnStart)
	opts := Options{Runs: f, Catalog: seamCatalog(t), Log: zaptest.NewLogger(t), States: states,
		MaxRounds: 3, MaxWait: 5 * time.Second, KeepAlive: 10 * time.Millisecond, NoCompanions: true, NoRunList: true}
	if mutate != nil {
		mutate(&opts)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Tracker().Wait)
	return c
}

// anon is the context of a request of the anonymous caller.
func anon() context.Context { return auth.WithSubject(context.Background(), auth.Anonymous()) }

// wantRPC fails unless err is a JSON-RPC error with code and message.
func wantRPC(t *testing.T, err error, code int64, message string) *jsonrpc.Error {
	t.Helper()
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != code || rpc.Message != message {
		t.Fatalf("error = %v, want JSON-RPC %d %q", err, code, message)
	}
	return rpc
}

// textOf is the text of a tool result's one text block.
func textOf(t *testing.T, res mcp.Result) (string, bool) {
	t.Helper()
	tr, ok := res.(*ToolResult)
	if !ok || len(tr.Content) != 1 || tr.Content[0].Type != "text" {
		t.Fatalf("result = %#v, want a tool result of one text block", res)
	}
	return tr.Content[0].Text, tr.IsError
}

// TestCallToolOutcomes: what CallTool answers for each kind of call, and
// whether a run started.
func TestCallToolOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		req     CallRequest
		check   func(t *testing.T, f *runstest.Fake, res mcp.Result, err error)
		started int
	}{
		{"a run that ends at once answers its tool result", CallRequest{Name: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)},
			func(t *testing.T, _ *runstest.Fake, res mcp.Result, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if text, isErr := textOf(t, res); text != "Hello, Ada!" || isErr {
					t.Fatalf("result = %q (isError %t), want Hello, Ada!", text, isErr)
				}
			}, 1},
		{"a task wanted answers the task created", CallRequest{Name: "slow", Arguments: json.RawMessage(`{}`), Task: TaskWanted},
			func(t *testing.T, f *runstest.Fake, res mcp.Result, err error) {
				tc, ok := res.(*TaskCreated)
				if err != nil || !ok {
					t.Fatalf("CallTool = %#v, %v; want a *TaskCreated", res, err)
				}
				if tc.Snap.RunID != f.LastID() || tc.Snap.Status != signals.StatusRunning || tc.Snap.Tool != "slow" {
					t.Fatalf("task = %s %s of %s, want the running run %s of slow", tc.Snap.RunID, tc.Snap.Status, tc.Snap.Tool, f.LastID())
				}
			}, 1},
		{"a task of a tool that forbids tasks is refused", CallRequest{Name: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`), Task: TaskWanted},
			wantRefusal(TaskRefusal{Tool: "greet", Forbidden: true}), 0},
		{"a tool that runs only as a task refuses a blocking call", CallRequest{Name: "task_only", Arguments: json.RawMessage(`{}`)},
			wantRefusal(TaskRefusal{Tool: "task_only"}), 0},
		{"an unknown tool is -32602", CallRequest{Name: "nope", Arguments: json.RawMessage(`{}`)},
			func(t *testing.T, _ *runstest.Fake, _ mcp.Result, err error) {
				wantRPC(t, err, jsonrpc.CodeInvalidParams, `unknown tool "nope"`)
			}, 0},
		{"arguments the tool refuses are a tool error", CallRequest{Name: "greet", Arguments: json.RawMessage(`{"name":7}`)},
			func(t *testing.T, _ *runstest.Fake, res mcp.Result, err error) {
				if err != nil {
					t.Fatal(err)
				}
				if text, isErr := textOf(t, res); !isErr || text == "" {
					t.Fatalf("result = %q (isError %t), want a tool error", text, isErr)
				}
			}, 0},
		{"a run failed with a JSON-RPC error answers that error", CallRequest{Name: "rpc_fail", Arguments: json.RawMessage(`{}`)},
			func(t *testing.T, _ *runstest.Fake, _ mcp.Result, err error) {
				wantRPC(t, err, -32602, "no such order")
			}, 1},
		{"a question no one can answer during the call refuses it", CallRequest{Name: "ask", Arguments: json.RawMessage(`{}`)},
			func(t *testing.T, _ *runstest.Fake, _ mcp.Result, err error) {
				rpc := wantRPC(t, err, mcp.CodeMissingRequiredClientCapabilities,
					`tool "ask" may ask for input while it runs: call it as a task (declare the Tasks extension "io.modelcontextprotocol/tasks"), or declare the client capability elicitation so that its questions are asked during the call`)
				assertJSON(t, rpc.Data, `{"requiredCapabilities":{"elicitation":{}}}`)
			}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := runstest.New()
			c := newSeamCore(t, f, nil)
			req := tt.req
			res, err := c.CallTool(anon(), &req)
			tt.check(t, f, res, err)
			if n := f.StartCount(); n != tt.started {
				t.Fatalf("%d runs started, want %d", n, tt.started)
			}
		})
	}
}

// wantRefusal checks that a call was refused as want.
func wantRefusal(want TaskRefusal) func(t *testing.T, _ *runstest.Fake, _ mcp.Result, err error) {
	return func(t *testing.T, _ *runstest.Fake, _ mcp.Result, err error) {
		t.Helper()
		var got *TaskRefusal
		if !errors.As(err, &got) || *got != want {
			t.Fatalf("error = %v, want %+v", err, want)
		}
	}
}

// assertJSON fails unless got and want are the same JSON value.
func assertJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("decode %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("decode %s: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Fatalf("JSON = %s, want %s", gb, wb)
	}
}

// question is one question a fakeAsker was asked.
type question struct {
	message string
	schema  string
}

// fakeAsker answers every question with the next of its answers, and
// records the questions.
type fakeAsker struct {
	mu      sync.Mutex
	asked   []question
	answers []*mcp.ElicitResult
	err     error
}

func (a *fakeAsker) Ask(_ context.Context, message string, schema any) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, _ := json.Marshal(schema)
	a.asked = append(a.asked, question{message, string(b)})
	if a.err != nil {
		return nil, a.err
	}
	res := a.answers[0]
	if len(a.answers) > 1 {
		a.answers = a.answers[1:]
	}
	return res, nil
}

func (a *fakeAsker) questions() []question {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]question(nil), a.asked...)
}

// TestCallToolAsksThroughAsker: a blocking call whose run asks a question
// asks it through the call's Asker (its message and requestedSchema), the
// answer is resolved on the run (applied once, by the caller), and the call
// answers the run's result. An answer that does not fit is not applied:
// the question is asked again, saying why.
func TestCallToolAsksThroughAsker(t *testing.T) {
	accept := func(content string) *mcp.ElicitResult {
		var m map[string]any
		_ = json.Unmarshal([]byte(content), &m)
		return &mcp.ElicitResult{Action: "accept", Content: m}
	}
	tests := []struct {
		name     string
		answers  []*mcp.ElicitResult
		messages []string
		want     string
	}{
		{"answered", []*mcp.ElicitResult{accept(`{"name":"Ada"}`)}, []string{"Your name?"}, "Hello, Ada!"},
		{"asked again after an answer off the schema", []*mcp.ElicitResult{accept(`{"name":7}`), accept(`{"name":"Bo"}`)},
			[]string{"Your name?", "Your name? (the last answer was refused: "}, "Hello, Bo!"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := runstest.New()
			f.OnResolve(greetAnswer)
			c := newSeamCore(t, f, nil)
			a := &fakeAsker{answers: tt.answers}
			res, err := c.CallTool(anon(), &CallRequest{Name: "ask", Arguments: json.RawMessage(`{}`), Asker: a})
			if err != nil {
				t.Fatal(err)
			}
			if text, isErr := textOf(t, res); text != tt.want || isErr {
				t.Fatalf("result = %q (isError %t), want %q", text, isErr, tt.want)
			}
			asked := a.questions()
			if len(asked) != len(tt.messages) {
				t.Fatalf("asked %d questions %v, want %d", len(asked), asked, len(tt.messages))
			}
			for i, q := range asked {
				if i == 0 && q.message != tt.messages[0] || i > 0 && !strings.HasPrefix(q.message, tt.messages[i]) {
					t.Fatalf("question %d = %q, want %q", i, q.message, tt.messages[i])
				}
				assertJSON(t, []byte(q.schema), nameSchema)
			}
			id := f.LastID()
			resolved := f.Resolutions()
			if len(resolved) != 1 || resolved[0].InterruptID != id+"-i1" || resolved[0].Action != signals.ActionAccept ||
				!resolved[0].ResolvedBy.Same(auth.Anonymous()) {
				t.Fatalf("resolutions = %+v, want one accept of %s-i1 by the caller", resolved, id)
			}
			assertJSON(t, resolved[0].Content, `{"name":"`+tt.want[len("Hello, "):len(tt.want)-1]+`"}`)
		})
	}
}

// TestCallToolAskerFailure: a client that fails to answer (a JSON-RPC
// error of its own) leaves the question open, and the call waits on to
// its bound.
func TestCallToolAskerFailure(t *testing.T) {
	f := runstest.New()
	c := newSeamCore(t, f, func(o *Options) { o.MaxWait = 200 * time.Millisecond })
	a := &fakeAsker{err: &jsonrpc.Error{Code: -1, Message: "user closed the dialog"}}
	res, err := c.CallTool(anon(), &CallRequest{Name: "ask", Arguments: json.RawMessage(`{}`), Asker: a})
	if err != nil {
		t.Fatal(err)
	}
	if text, isErr := textOf(t, res); !isErr || !strings.HasPrefix(text, "The run "+f.LastID()+" is still running after 200ms.") {
		t.Fatalf("result = %q (isError %t), want the still-running answer", text, isErr)
	}
	if n := len(a.questions()); n != 1 {
		t.Fatalf("asked %d times, want once", n)
	}
	if n := len(f.ResolveCalls()); n != 0 {
		t.Fatalf("%d resolutions, want none", n)
	}
	snap, err := f.Get(context.Background(), auth.Anonymous(), f.LastID())
	if err != nil || len(snap.Interrupts) != 1 {
		t.Fatalf("run = %+v, %v; want its question still open", snap, err)
	}
}

// fakeResponse is a Response that records what the core did with it.
type fakeResponse struct {
	mu         sync.Mutex
	keepAlives []time.Duration
	stopped    int
}

func (r *fakeResponse) KeepAlive(interval time.Duration) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keepAlives = append(r.keepAlives, interval)
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.stopped++
	}
}

// TestCallToolOwnedByItsResponse: a blocking call keeps its response alive
// while it waits and owns its run until the response is settled. When the
// request leaves before the answer, the call ends and the run is cancelled
// with reason mcp-request-cancelled; a delivered answer releases the run.
func TestCallToolOwnedByItsResponse(t *testing.T) {
	tests := []struct {
		name       string
		leaves     bool
		wantReason string
	}{
		{"the request leaves before the answer", true, signals.ReasonMCPRequestCancelled},
		{"the answer is delivered", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := runstest.New()
			started := make(chan string, 1)
			c := newSeamCore(t, f, func(o *Options) { o.AfterStart = func(id string) { started <- id } })
			reqCtx, leave := context.WithCancel(anon())
			defer leave()
			claim := c.Tracker().Open(reqCtx)
			resp := &fakeResponse{}
			type answer struct {
				res mcp.Result
				err error
			}
			done := make(chan answer, 1)
			go func() {
				res, err := c.CallTool(reqCtx, &CallRequest{Name: "slow", Arguments: json.RawMessage(`{}`), Claim: claim, Response: resp})
				done <- answer{res, err}
			}()
			id := <-started
			if tt.leaves {
				leave()
			} else {
				f.Update(id, func(s *signals.Snapshot) { complete(s, "done") })
			}
			got := <-done
			// The transport settles the claim: delivered unless the client left.
			claim.Settle(!tt.leaves)
			c.Tracker().Wait()
			if tt.leaves && !errors.Is(got.err, context.Canceled) {
				t.Fatalf("CallTool = %v, %v; want context.Canceled", got.res, got.err)
			}
			if !tt.leaves {
				if text, _ := textOf(t, got.res); got.err != nil || text != "done" {
					t.Fatalf("CallTool = %q, %v; want the run's result", text, got.err)
				}
			}
			reason, cancelled := f.CancelReason(id)
			if reason != tt.wantReason || cancelled != (tt.wantReason != "") {
				t.Fatalf("cancel reason = %q (cancelled %t), want %q", reason, cancelled, tt.wantReason)
			}
			resp.mu.Lock()
			defer resp.mu.Unlock()
			if len(resp.keepAlives) != 1 || resp.keepAlives[0] != 10*time.Millisecond || resp.stopped != 1 {
				t.Fatalf("keep-alives %v started, %d stopped; want one every 10ms, stopped", resp.keepAlives, resp.stopped)
			}
		})
	}
}

// TestCallToolOverloaded: a call admission control refuses returns an
// *Overloaded, which wraps the -32603 overload error, and starts nothing.
func TestCallToolOverloaded(t *testing.T) {
	ctl, err := admission.New(admission.Options{TenantMax: 1, RetryAfter: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	held, err := ctl.Admit(auth.Anonymous().Tenant, admission.NeedStart)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Done()
	f := runstest.New()
	c := newSeamCore(t, f, func(o *Options) { o.Admission = ctl })
	_, err = c.CallTool(anon(), &CallRequest{Name: "slow", Arguments: json.RawMessage(`{}`), Response: &fakeResponse{}})
	var over *Overloaded
	if !errors.As(err, &over) || over.Rejection.Reason != admission.ReasonTenant {
		t.Fatalf("error = %v, want an *Overloaded for the tenant", err)
	}
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInternalError {
		t.Fatalf("error = %v, want the -32603 overload", err)
	}
	assertJSON(t, rpc.Data, `{"retryAfter":3,"reason":"tenant"}`)
	if rpc.Message != over.Rejection.Error() {
		t.Fatalf("message = %q, want the rejection's %q", rpc.Message, over.Rejection.Error())
	}
	if f.StartCount() != 0 {
		t.Fatal("a run started")
	}
}

// fakeNotifier records the progress notifications sent.
type fakeNotifier struct {
	mu   sync.Mutex
	sent []mcp.ProgressNotificationParams
}

func (n *fakeNotifier) NotifyProgress(_ context.Context, p *mcp.ProgressNotificationParams) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sent = append(n.sent, *p)
	return nil
}

func (n *fakeNotifier) notifications() []mcp.ProgressNotificationParams {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]mcp.ProgressNotificationParams(nil), n.sent...)
}

// TestCallToolNotifiesProgress: a blocking call with a progressToken
// notifies its ProgressNotifier of each change of its run, with the
// token, increasing progress, the run's counts as the total and its status
// message; none after the answer. A call without a token notifies nothing.
func TestCallToolNotifiesProgress(t *testing.T) {
	for _, token := range []any{"tok", nil} {
		f := runstest.New()
		started := make(chan string, 1)
		// No heartbeat within the test: only changes are notified.
		c := newSeamCore(t, f, func(o *Options) { o.KeepAlive = time.Hour; o.AfterStart = func(id string) { started <- id } })
		n := &fakeNotifier{}
		done := make(chan error, 1)
		go func() {
			_, err := c.CallTool(anon(), &CallRequest{Name: "slow", Arguments: json.RawMessage(`{}`), ProgressToken: token, Notify: n})
			done <- err
		}()
		id := <-started
		waitFor(t, func() bool { return token == nil || len(n.notifications()) == 1 })
		f.Update(id, func(s *signals.Snapshot) {
			s.StatusMessage, s.LastSequence, s.Progress = "loading", 1, &signals.Progress{Step: "load", Done: 1, Total: 4}
		})
		waitFor(t, func() bool { return token == nil || len(n.notifications()) == 2 })
		f.Update(id, func(s *signals.Snapshot) { complete(s, "done") })
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		got := n.notifications()
		if token == nil {
			if len(got) != 0 {
				t.Fatalf("notified %+v without a progressToken", got)
			}
			continue
		}
		want := []mcp.ProgressNotificationParams{
			{ProgressToken: "tok", Progress: 1, Message: signals.StatusRunning.Message()},
			{ProgressToken: "tok", Progress: 2, Total: 5, Message: "loading"},
			{ProgressToken: "tok", Progress: 2.5, Total: 5, Message: signals.StatusCompleted.Message()},
		}
		if len(got) != len(want) {
			t.Fatalf("notified %+v, want %+v", got, want)
		}
		for i := range want {
			if got[i].ProgressToken != want[i].ProgressToken || got[i].Progress != want[i].Progress ||
				got[i].Total != want[i].Total || got[i].Message != want[i].Message {
				t.Fatalf("notification %d = %+v, want %+v", i, got[i], want[i])
			}
		}
	}
}

// waitFor waits up to 5 s for cond.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// taskRuns stores, for the anonymous caller, a run waiting for two
// answers (one any caller may give, one only "boss" may), a completed run,
// and another tenant's run; it returns their wire task ids.
func taskRuns(t *testing.T, f *runstest.Fake) (waiting, ended, foreign string) {
	t.Helper()
	caller := auth.Anonymous()
	now := time.Now().UTC()
	ids := make([]string, 3)
	for i, tenant := range []string{caller.Tenant, caller.Tenant, "other"} {
		id, err := runid.New(tenant, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	boss := askName(ids[0])
	boss.ID, boss.Approvers, boss.Title = ids[0]+"-boss", []string{"boss"}, "Approve?"
	owner := signals.Owner{Tenant: caller.Tenant, Subject: caller}
	f.Add(signals.Snapshot{RunID: ids[0], Tool: "ask", Status: signals.StatusWaitingInput, Owner: owner, CreatedAt: now, UpdatedAt: now,
		Interrupts: []signals.Interrupt{askName(ids[0]), boss}})
	done := signals.Snapshot{RunID: ids[1], Tool: "slow", Owner: owner, CreatedAt: now, UpdatedAt: now}
	complete(&done, "done")
	f.Add(done)
	f.Add(signals.Snapshot{RunID: ids[2], Tool: "slow", Status: signals.StatusRunning, CreatedAt: now, UpdatedAt: now,
		Owner: signals.Owner{Tenant: "other", Subject: signals.Subject{Tenant: "other", SubjectID: "x"}}})
	return runid.Project(ids[0]), runid.Project(ids[1]), runid.Project(ids[2])
}

// quoted is s as a JSON string.
func quoted(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

const tasksRequired = `%s requires the client capability extensions["io.modelcontextprotocol/tasks"]`

// TestGetTask: tasks/get reads the caller's run; a request that did not
// declare the extension is refused first, and every id the caller cannot
// read is the one "task not found".
func TestGetTask(t *testing.T) {
	f := runstest.New()
	c := newSeamCore(t, f, nil)
	waiting, _, foreign := taskRuns(t, f)
	unknown, _ := runid.New(auth.Anonymous().Tenant, nil)
	tests := []struct {
		name     string
		declared bool
		id       json.RawMessage
		code     int64
		message  string
	}{
		{"undeclared", false, quoted(waiting), mcp.CodeMissingRequiredClientCapabilities, fmt.Sprintf(tasksRequired, "tasks/get")},
		{"not a string", true, json.RawMessage(`42`), jsonrpc.CodeInvalidParams, "task not found"},
		{"malformed", true, quoted("nope"), jsonrpc.CodeInvalidParams, "task not found"},
		{"another tenant's", true, quoted(foreign), jsonrpc.CodeInvalidParams, "task not found"},
		{"unknown", true, quoted(runid.Project(unknown)), jsonrpc.CodeInvalidParams, "task not found"},
		{"the caller's", true, quoted(waiting), 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, caller, err := c.Tasks().Get(anon(), tt.declared, tt.id)
			if tt.code != 0 {
				rpc := wantRPC(t, err, tt.code, tt.message)
				if tt.code == jsonrpc.CodeInvalidParams && rpc.Data != nil {
					t.Fatalf("task not found carries data %s", rpc.Data)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if runid.Project(snap.RunID) != waiting || snap.Status != signals.StatusWaitingInput || !caller.Same(auth.Anonymous()) {
				t.Fatalf("GetTask = %s %s for %+v, want the waiting run for the caller", snap.RunID, snap.Status, caller)
			}
			if got := TaskStatus(snap, InputRequestsFor(snap, caller)); got != TaskInputRequired {
				t.Fatalf("task status = %s, want input_required", got)
			}
		})
	}
}

// TestUpdateTask: tasks/update resolves the open questions its
// inputResponses answer, once, by the caller; an answer that does not fit
// or that the caller may not give refuses the whole request (-32602 whose
// data names the input and the rule) with nothing applied.
func TestUpdateTask(t *testing.T) {
	tests := []struct {
		name      string
		declared  bool
		responses func(waitingRunID string) string
		code      int64
		message   string
		data      string
		applied   int
	}{
		{"an answer is applied", true, func(id string) string {
			return `{"` + id + `-i1":{"action":"accept","content":{"name":"Ada"}}}`
		}, 0, "", "", 1},
		{"a key naming nothing open resolves nothing", true, func(string) string {
			return `{"elsewhere":{"action":"accept","content":{"name":"Ada"}}}`
		}, 0, "", "", 0},
		{"null responses resolve nothing", true, func(string) string { return `null` }, 0, "", "", 0},
		{"one refused answer refuses the whole request", true, func(id string) string {
			return `{"` + id + `-i1":{"action":"accept","content":{"name":"Ada"}},"` + id + `-boss":{"action":"accept"}}`
		}, jsonrpc.CodeInvalidParams, "", `{"inputResponse":"{run}-boss","rule":"approvers"}`, 0},
		{"an answer of a caller not an approver is refused", true, func(id string) string {
			return `{"` + id + `-boss":{"action":"accept"}}`
		}, jsonrpc.CodeInvalidParams, `inputResponses["{run}-boss"]: you may not answer this question: only its approvers may`,
			`{"inputResponse":"{run}-boss","rule":"approvers"}`, 0},
		{"an answer that does not fit is refused", true, func(id string) string {
			return `{"` + id + `-i1":{"action":"accept","content":{"name":7}}}`
		}, jsonrpc.CodeInvalidParams, "", `{"inputResponse":"{run}-i1","rule":"fit"}`, 0},
		{"responses that are no object", true, func(string) string { return `[1]` },
			jsonrpc.CodeInvalidParams, "tasks/update: inputResponses must be an object keyed by input request", "", 0},
		{"undeclared", false, func(id string) string { return `{"` + id + `-i1":{"action":"accept","content":{"name":"Ada"}}}` },
			mcp.CodeMissingRequiredClientCapabilities, fmt.Sprintf(tasksRequired, "tasks/update"), "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := runstest.New()
			c := newSeamCore(t, f, nil)
			waiting, _, _ := taskRuns(t, f)
			runID, _ := runid.Parse(waiting)
			err := c.Tasks().Update(anon(), tt.declared, quoted(waiting), json.RawMessage(tt.responses(runID)))
			switch {
			case tt.code == 0 && err != nil:
				t.Fatal(err)
			case tt.code != 0:
				var rpc *jsonrpc.Error
				if !errors.As(err, &rpc) || rpc.Code != tt.code || tt.message != "" && rpc.Message != strings.ReplaceAll(tt.message, "{run}", runID) {
					t.Fatalf("error = %v, want %d %q", err, tt.code, strings.ReplaceAll(tt.message, "{run}", runID))
				}
				if tt.data != "" {
					assertJSON(t, rpc.Data, strings.ReplaceAll(tt.data, "{run}", runID))
				}
			}
			applied := f.Resolutions()
			if len(applied) != tt.applied {
				t.Fatalf("applied %+v, want %d resolutions", applied, tt.applied)
			}
			if tt.applied == 1 {
				if applied[0].InterruptID != runID+"-i1" || applied[0].Action != signals.ActionAccept {
					t.Fatalf("applied %+v, want the accept of %s-i1", applied[0], runID)
				}
				assertJSON(t, applied[0].Content, `{"name":"Ada"}`)
				snap, _, err := c.Tasks().Get(anon(), true, quoted(waiting))
				if _, open := snap.Interrupt(runID + "-i1"); err != nil || open {
					t.Fatalf("after the update the question is still open (%v)", err)
				}
			}
		})
	}
}

// TestCancelTask: tasks/cancel cancels the caller's run with reason
// caller-requested, leaves an ended run alone (ErrTerminal, which the
// dialects answer as success), and is
// "task not found" for a run the caller cannot read.
func TestCancelTask(t *testing.T) {
	tests := []struct {
		name     string
		declared bool
		pick     func(waiting, ended, foreign string) string
		code     int64
		message  string
		reason   string
	}{
		{"a working run is cancelled", true, func(w, _, _ string) string { return w }, 0, "", signals.ReasonCallerRequested},
		{"an ended run is left alone", true, func(_, e, _ string) string { return e }, 0, "", ""},
		{"another tenant's run is not found", true, func(_, _, o string) string { return o }, jsonrpc.CodeInvalidParams, "task not found", ""},
		{"undeclared", false, func(w, _, _ string) string { return w },
			mcp.CodeMissingRequiredClientCapabilities, fmt.Sprintf(tasksRequired, "tasks/cancel"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := runstest.New()
			c := newSeamCore(t, f, nil)
			taskID := tt.pick(taskRuns(t, f))
			runID, _ := runid.Parse(taskID)
			// A cancel goes through even when its request ends at once.
			ctx, cancel := context.WithCancel(anon())
			cancel()
			_, err := c.Tasks().Cancel(ctx, tt.declared, quoted(taskID))
			if errors.Is(err, ErrTerminal) {
				err = nil // the run had ended: left alone, which is no failure
			}
			if tt.code != 0 {
				wantRPC(t, err, tt.code, tt.message)
			} else if err != nil {
				t.Fatal(err)
			}
			reason, cancelled := f.CancelReason(runID)
			if reason != tt.reason || cancelled != (tt.reason != "") {
				t.Fatalf("cancel reason = %q (cancelled %t), want %q", reason, cancelled, tt.reason)
			}
		})
	}
}
