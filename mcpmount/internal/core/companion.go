package core

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/answers"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// The companion tools follow runs for a client that did not declare the
// Tasks extension, and so has no protocol way to read a run once its call
// was answered, answer its questions or cancel it: the model itself does
// it by calling them. Such a client sees them in tools/list
// (ClientCaps.FollowsRuns); its call that outlasts the blocking bound
// (below the hosts' limits), and, when it cannot answer questions by
// elicitation, its call of a tool that asks one, is answered with the
// run's status and what to call next (a handoff) instead of an error.
// They obey tenancy and approvers as
// tasks/* does, and check answers as tasks/update does.
const (
	// CompanionStatus reads a run: its status, open questions, result.
	CompanionStatus = signals.ReservedToolPrefix + "run_status"
	// CompanionAnswer answers one of a run's open questions.
	CompanionAnswer = signals.ReservedToolPrefix + "run_answer"
	// CompanionCancel cancels a run.
	CompanionCancel = signals.ReservedToolPrefix + "run_cancel"
)

// CompanionTool describes one companion tool as tools/list lists it.
type CompanionTool struct {
	Name         string
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  *signals.ToolAnnotations
}

// companionOutput is the output schema of every companion tool and of a
// handoff: a run's status (RunStatus).
const companionOutput = `{"type":"object","properties":{` +
	`"runId":{"type":"string","description":"the run, as the companion tools and GET /runs/{runId} take it"},` +
	`"tool":{"type":"string","description":"the tool the run runs"},` +
	`"status":{"type":"string","enum":["working","input_required","completed","failed","cancelled"]},` +
	`"message":{"type":"string","description":"what the run is doing, in a sentence"},` +
	`"questions":{"type":"array","items":{"type":"object","properties":{` +
	`"key":{"type":"string"},"message":{"type":"string"},"schema":{"type":"object"},` +
	`"answerers":{"type":"object","description":"who may answer: its approvers, or anyone of the tenant; callerMay says whether you may",` +
	`"properties":{"approvers":{"type":"array","items":{"type":"string"}},"anyone":{"type":"boolean"},"callerMay":{"type":"boolean"}},` +
	`"required":["callerMay"]},` +
	`"expiresAt":{"type":"string","format":"date-time","description":"when the question expires unanswered (the run then withdraws it)"}},` +
	`"required":["key","message","answerers"]}},` +
	`"result":{"type":"object","description":"the tool's result, once the run ended"},` +
	`"next":{"type":"string","description":"what to call next"}},` +
	`"required":["runId","status","next"]}`

const runIDProperty = `"runId":{"type":"string","minLength":1,"description":"the runId a tool call or an earlier companion call answered"}`

// companionTools describes the companion tools; maxWait bounds the
// status tool's waitSeconds.
func companionTools(maxWait time.Duration) []CompanionTool {
	f, t := false, true
	out := json.RawMessage(companionOutput)
	return []CompanionTool{{
		Name: CompanionStatus,
		Description: "Read a long-running tool call's run: its status, the questions it waits for (and who may answer them) and, " +
			"once it ended, its result. Set waitSeconds to wait until the run ends or its open questions change.",
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%s,`+
			`"waitSeconds":{"type":"integer","minimum":0,"description":"wait up to this long (at most %d) for the run to end or its open questions to change (default 0)"}},`+
			`"required":["runId"],"additionalProperties":false}`, runIDProperty, int(maxWait/time.Second))),
		OutputSchema: out,
		Annotations:  &signals.ToolAnnotations{Title: "Run status", ReadOnlyHint: true, OpenWorldHint: &f},
	}, {
		Name: CompanionAnswer,
		Description: "Answer a question a run asked (its key and schema come from the tool call or " + CompanionStatus + "). " +
			"The content must match the question's schema; the run then goes on.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` + runIDProperty + `,` +
			`"key":{"type":"string","minLength":1,"description":"the question's key"},` +
			`"action":{"type":"string","enum":["accept","decline","cancel"],"default":"accept","description":"accept answers with content; decline or cancel refuse to answer"},` +
			`"content":{"type":"object","description":"the answer, matching the question's schema"}},` +
			`"required":["runId","key"],"additionalProperties":false}`),
		OutputSchema: out,
		Annotations:  &signals.ToolAnnotations{Title: "Answer a run's question", DestructiveHint: &t, OpenWorldHint: &f},
	}, {
		Name:        CompanionCancel,
		Description: "Cancel a run. A run that already ended is left as it is.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` + runIDProperty + `},` +
			`"required":["runId"],"additionalProperties":false}`),
		OutputSchema: out,
		Annotations: &signals.ToolAnnotations{Title: "Cancel a run", DestructiveHint: &t, IdempotentHint: true,
			OpenWorldHint: &f},
	}}
}

// companions serves the companion tools on the core's runs: it holds their
// descriptions and compiled input schemas.
type companions struct {
	*Core
	tools   []CompanionTool
	schemas map[string]*jsonschema.Resolved
}

// newCompanions compiles the companion tools' input schemas.
func newCompanions(m *Core) (*companions, error) {
	c := &companions{Core: m, tools: companionTools(m.maxWait), schemas: map[string]*jsonschema.Resolved{}}
	for _, t := range c.tools {
		r, err := answers.CompileSchema(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("companion tool %s: %w", t.Name, err)
		}
		c.schemas[t.Name] = r
	}
	return c, nil
}

// CompanionTools are the tools the mount adds to a listing: with
// followers set, the companion tools that follow a run (none when they
// are off, Options.NoCompanions), and then the list tool, which every
// client is listed (unless Options.NoRunList).
func (m *Core) CompanionTools(followers bool) []CompanionTool {
	var out []CompanionTool
	if followers && m.companions != nil {
		out = append(out, m.companions.tools...)
	}
	if m.runList != nil {
		out = append(out, m.runList.tool)
	}
	return out
}

// serves reports whether a call names a companion tool (never, when they
// are off: c is nil).
func (c *companions) serves(name string) bool {
	if c == nil {
		return false
	}
	_, ok := c.schemas[name]
	return ok
}

// companionArgs are the arguments of every companion tool.
type companionArgs struct {
	RunID       string          `json:"runId"`
	WaitSeconds int             `json:"waitSeconds"`
	Key         string          `json:"key"`
	Action      string          `json:"action"`
	Content     json.RawMessage `json:"content"`
}

// callCompanion serves a call of a companion tool. Arguments that do not
// fit, and runs the caller cannot see, are tool results with isError the
// model can act on; a run of another tenant reads exactly as one that
// does not exist.
func (m *companions) callCompanion(ctx context.Context, req *CallRequest) (mcp.Result, error) {
	caller, err := m.Caller(ctx)
	if err != nil {
		return nil, err
	}
	args, problem := m.decode(req.Name, req.Arguments)
	if problem != "" {
		return toolError(problem), nil
	}
	id, err := runid.Parse(args.RunID)
	if err != nil || runid.Tenant(id) != caller.Tenant {
		return notVisible(args.RunID), nil
	}
	m.tracing.link(ctx, caller, id)
	var snap signals.Snapshot
	switch req.Name {
	case CompanionStatus:
		snap, err = m.companionWait(ctx, req.Response, caller, id, time.Duration(args.WaitSeconds)*time.Second, questionsChange)
	case CompanionAnswer:
		var refusal *ToolResult
		refusal, err = m.companionAnswer(ctx, caller, id, args)
		switch {
		case err != nil:
			return nil, m.companionErr(ctx, id, err)
		case refusal != nil:
			return refusal, nil
		}
		snap, err = m.companionWait(ctx, req.Response, caller, id, m.inlineWait, questionOpen)
	default: // CompanionCancel
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CancelTimeout)
		defer cancel()
		if snap, err = m.runs.Cancel(cctx, caller, id, signals.ReasonCallerRequested); errors.Is(err, runs.ErrTerminal) {
			snap, err = m.runs.Get(ctx, caller, id)
		}
	}
	if err != nil {
		if errors.Is(err, runs.ErrNotFound) || errors.Is(err, runs.ErrTenantMismatch) {
			return notVisible(args.RunID), nil
		}
		return nil, m.companionErr(ctx, id, err)
	}
	return RunStatusResult(snap, caller, false, m.resultLimit), nil
}

// companionErr maps an error of a companion call onto the wire.
func (m *companions) companionErr(ctx context.Context, id string, err error) error {
	var rpc *jsonrpc.Error
	switch {
	case errors.As(err, &rpc):
		return rpc
	case ctx.Err() != nil:
		return context.Canceled
	}
	return m.lookupErr(ctx, "companion call", id, err)
}

// decode checks a companion call's arguments against its input schema.
func (c *companions) decode(name string, raw json.RawMessage) (companionArgs, string) {
	var args companionArgs
	if problem := decodeArgs(c.schemas[name], name, raw, &args); problem != "" {
		return args, problem
	}
	args.Action = cmp.Or(args.Action, string(signals.ActionAccept))
	return args, ""
}

// waitUntil says when a companion wait ends before its bound (besides the
// run's end).
type waitUntil uint8

const (
	// questionsChange: the run's set of open questions is no longer the
	// one of the first reading (one was asked, answered, withdrawn).
	questionsChange waitUntil = iota
	// questionOpen: the run has an open question (an answer's wait: the
	// run asks its next question, or the answered one is still open).
	questionOpen
)

// companionWait reads the run, after waiting up to wait for it to end or
// for until. The wait holds a waiting slot of admission control, as a
// blocking call does, and keeps the response alive.
func (m *companions) companionWait(ctx context.Context, resp Response, caller signals.Subject, id string, wait time.Duration, until waitUntil) (signals.Snapshot, error) {
	if wait = min(wait, m.maxWait); wait <= 0 {
		return m.runs.Get(ctx, caller, id)
	}
	ticket, err := m.admit(caller.Tenant, admission.NeedWait)
	if err != nil {
		return signals.Snapshot{}, err
	}
	defer ticket.Done()
	if resp != nil {
		defer resp.KeepAlive(m.keepAlive)()
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var first []string // the open questions of the first reading
	started := false
	snap, err := m.runs.Await(wctx, caller, id, func(s signals.Snapshot) bool {
		if until == questionOpen {
			return s.Status.Terminal() || SuspendsForInput(s)
		}
		open := slices.Sorted(maps.Keys(InputRequests(s)))
		if !started {
			first, started = open, true
		}
		return s.Status.Terminal() || !slices.Equal(open, first)
	}, runs.PublishedOnly())
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return m.runs.Get(ctx, caller, id)
	}
	return snap, err
}

// companionAnswer checks and applies an answer to one open question: a
// refusal (the question is not open, the answer does not fit, the caller
// may not answer it) is a tool result naming why, and leaves the question
// open.
func (m *companions) companionAnswer(ctx context.Context, caller signals.Subject, id string, args companionArgs) (*ToolResult, error) {
	snap, err := m.runs.Get(ctx, caller, id, runs.Showing(args.Key))
	if err != nil {
		if errors.Is(err, runs.ErrNotFound) || errors.Is(err, runs.ErrTenantMismatch) {
			return notVisible(args.RunID), nil
		}
		return nil, err
	}
	it, open := snap.Interrupt(args.Key)
	if w, gone := snap.WithdrawnAs(args.Key); gone {
		return m.refusedAnswer(snap, caller, withdrawnProblem(args.Key, w.Reason)), nil
	}
	if !open || !it.ClientAnswered() {
		return m.refusedAnswer(snap, caller, fmt.Sprintf("question %q is not open on this run", args.Key)), nil
	}
	if a := AnswerersOf(it, caller); !a.CallerMay {
		return m.refusedAnswer(snap, caller, fmt.Sprintf("you may not answer question %q: %s may", args.Key, a.who())), nil
	}
	res := signals.Resolution{InterruptID: args.Key, Action: signals.Action(args.Action)}
	if res.Action == signals.ActionAccept && len(args.Content) > 0 && string(args.Content) != "null" {
		res.Content = args.Content
	}
	if err := answers.Check(it, res); err != nil {
		return m.refusedAnswer(snap, caller, fmt.Sprintf("the answer to %q was refused: %s", args.Key, answerProblem(err))), nil
	}
	_, err = m.runs.Resolve(ctx, caller, id, res, runs.Held(snap))
	switch {
	case err == nil, errors.Is(err, runs.ErrNotApplied):
		return nil, nil
	case errors.Is(err, runs.ErrNotEligible):
		return m.refusedAnswer(snap, caller, fmt.Sprintf("you may not answer question %q: only its approvers may", args.Key)), nil
	case errors.Is(err, runs.ErrExpired):
		return m.refusedAnswer(snap, caller, withdrawnProblem(args.Key, signals.WithdrawnExpired)), nil
	case errors.Is(err, runs.ErrWithdrawn):
		return m.refusedAnswer(snap, caller, withdrawnProblem(args.Key, signals.WithdrawnByRun)), nil
	case errors.Is(err, runs.ErrAlreadyResolved), errors.Is(err, runs.ErrNotOpen):
		return m.refusedAnswer(snap, caller, fmt.Sprintf("question %q was answered already", args.Key)), nil
	case errors.Is(err, runs.ErrTerminal):
		return m.refusedAnswer(snap, caller, "the run ended before the answer reached it"), nil
	}
	if r := answerRefused(args.Key, err); r != nil {
		return m.refusedAnswer(snap, caller, fmt.Sprintf("the answer to %q was refused: %s", args.Key, r.problem)), nil
	}
	m.RunLog(ctx, id, snap.Tool).Error("answer through "+CompanionAnswer, zap.Error(err))
	return nil, Internal()
}

// withdrawnProblem says why an answer to question key, which its run
// withdrew for reason (signals.WithdrawnExpired or WithdrawnByRun), is
// refused.
func withdrawnProblem(key, reason string) string {
	if reason == signals.WithdrawnExpired {
		return fmt.Sprintf("question %q expired before it was answered: the run no longer waits for it, and the answer resolves nothing", key)
	}
	return fmt.Sprintf("question %q was withdrawn by the run: it no longer waits for it, and the answer resolves nothing", key)
}

// answerProblem is the rule an answer broke, in a sentence (answerRefused's
// problem, or err's text for an error of another kind).
func answerProblem(err error) string {
	if r := answerRefused("", err); r != nil {
		return r.problem
	}
	return err.Error()
}

// notVisible is the one answer about a run the caller cannot see:
// malformed, unknown, or another tenant's.
func notVisible(given string) *ToolResult {
	return toolError(fmt.Sprintf("no run %q is visible to you", given))
}

// refusedAnswer is the refusal of an answer, with the run's status (its
// questions still open).
func (m *companions) refusedAnswer(snap signals.Snapshot, caller signals.Subject, why string) *ToolResult {
	res := RunStatusResult(snap, caller, false, m.resultLimit)
	res.IsError = true
	res.Content[0].Text = why + ". " + res.Content[0].Text
	return res
}

// RunStatus is the structured content of a companion tool's result and of
// a handoff: where a run stands and what the model calls next.
type RunStatus struct {
	RunID     string        `json:"runId"`
	Tool      string        `json:"tool,omitempty"`
	Status    string        `json:"status"`
	Message   string        `json:"message,omitempty"`
	Questions []RunQuestion `json:"questions,omitempty"`
	Result    *ToolResult   `json:"result,omitempty"`
	Next      string        `json:"next"`
}

// RunQuestion is one open question of a run, as the companion tools show
// it to one caller: its key, its message, the JSON Schema an answer must
// match and who may answer it.
type RunQuestion struct {
	Key       string          `json:"key"`
	Message   string          `json:"message"`
	Schema    json.RawMessage `json:"schema,omitempty"`
	Answerers Answerers       `json:"answerers"`
	// ExpiresAt is when the question expires unanswered, if it has a
	// deadline.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// RunStatusResult is the tool result that shows a run's status to a
// model acting for caller: text that says where the run stands, who may
// answer its questions and what to call next, and RunStatus as structured
// content. handoff: it answers the call that started the run, which must
// not be repeated. An ended run's result is fitted to limit (RunResult).
func RunStatusResult(snap signals.Snapshot, caller signals.Subject, handoff bool, limit int) *ToolResult {
	st := runStatus(snap, caller, limit)
	var text strings.Builder
	id := st.RunID
	switch st.Status {
	case TaskInputRequired:
		fmt.Fprintf(&text, "Run %s of %s is waiting for an answer.", id, snap.Tool)
		for _, q := range st.Questions {
			fmt.Fprintf(&text, " Question %q: %s", q.Key, strings.TrimSpace(q.Message))
			if len(q.Schema) > 0 {
				fmt.Fprintf(&text, " [the answer's content must match the JSON Schema %s]", q.Schema)
			}
			if !q.Answerers.CallerMay {
				fmt.Fprintf(&text, " [you may not answer it: %s may]", q.Answerers.who())
			}
			if q.ExpiresAt != nil {
				fmt.Fprintf(&text, " [it expires at %s: the run then withdraws it]", q.ExpiresAt.UTC().Format(time.RFC3339))
			}
		}
	case TaskWorking:
		fmt.Fprintf(&text, "Run %s of %s is still working", id, snap.Tool)
		if st.Message != "" {
			fmt.Fprintf(&text, " (%s)", st.Message)
		}
		text.WriteString(".")
	case TaskCancelled:
		fmt.Fprintf(&text, "Run %s of %s was cancelled.", id, snap.Tool)
	default:
		fmt.Fprintf(&text, "Run %s of %s ended.", id, snap.Tool)
		for _, c := range st.Result.Content {
			if c.Type == "text" {
				text.WriteString(" " + c.Text)
			}
		}
		// The text carries the head of a result cut to the limit: the
		// structured status keeps only the note and the links.
		st.Result = withoutHead(st.Result)
	}
	if handoff {
		text.WriteString(" The call did not fail and must not be repeated: the run goes on.")
	}
	text.WriteString(" Next: " + st.Next)
	structured, _ := json.Marshal(st)
	return &ToolResult{ToolResult: signals.ToolResult{Content: []Content{{Type: "text", Text: text.String()}}, StructuredContent: structured}}
}

// runStatus is where snap stands, for a model acting for caller.
func runStatus(snap signals.Snapshot, caller signals.Subject, limit int) RunStatus {
	requests := InputRequestsFor(snap, caller)
	st := RunStatus{RunID: snap.RunID, Tool: snap.Tool, Status: TaskStatus(snap, requests),
		Message: snap.CurrentMessage(time.Now())}
	keys := make([]string, 0, len(requests))
	for k := range requests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	mayAnswer := false
	for _, k := range keys {
		p := requests[k].Params
		st.Questions = append(st.Questions, RunQuestion{Key: k, Message: p.Message, Schema: p.RequestedSchema,
			Answerers: *p.Meta.Answerers, ExpiresAt: p.Meta.ExpiresAt})
		mayAnswer = mayAnswer || p.Meta.Answerers.CallerMay
	}
	args := fmt.Sprintf(`{"runId":%q`, st.RunID)
	switch {
	case st.Status == TaskInputRequired && !mayAnswer:
		st.Next = fmt.Sprintf(`call %s with %s,"waitSeconds":30} to wait for the answer of those who may give it; %s cancels the run.`,
			CompanionStatus, args, CompanionCancel)
	case st.Status == TaskInputRequired:
		st.Next = fmt.Sprintf(`call %s with %s,"key":<the question's key>,"content":{<the answer>}} (or "action":"decline"); %s cancels the run.`,
			CompanionAnswer, args, CompanionCancel)
	case st.Status == TaskWorking:
		st.Next = fmt.Sprintf(`call %s with %s,"waitSeconds":30} to wait for it; %s cancels it.`, CompanionStatus, args, CompanionCancel)
	default:
		st.Result = RunResult(snap, limit)
		st.Next = "nothing: the run is over."
	}
	return st
}
