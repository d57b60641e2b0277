package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/mcpmount/internal/ownership"
	"github.com/openwop/temporal-mcp/mcpmount/internal/requeststate"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
	"github.com/openwop/temporal-mcp/telemetry"
)

// Reasons and codes of the blocking path.
const (
	// reasonRoundsExceeded is the run.cancelled reason when a task-less
	// call used up its MRTR rounds.
	reasonRoundsExceeded = "mcp-mrtr-rounds-exceeded"
	// codeRoundsExceeded prefixes the isError text of that answer.
	codeRoundsExceeded = "mcp_mrtr_rounds_exceeded"
)

// blockingCall is one task-less tools/call (or MRTR retry) that owns its
// run until its response is delivered.
type blockingCall struct {
	tool   *catalog.Tool
	caller signals.Subject
	claim  *ownership.Claim
	// response is the response that carries the call (nil: none to act on).
	response Response
	digest   string
	runID    string
	round    int // input rounds answered so far
	// asker asks the client the run's questions (nil: the call answers
	// them as input requests instead).
	asker Asker
	// notify sends progress notifications on the request's stream.
	notify ProgressNotifier
	// elicit: the client is asked the run's questions through Asker
	// while the call waits.
	elicit bool
	// progressToken is the request's _meta.progressToken, nil when none.
	progressToken any
	// companion: the client can answer no question by the protocol, so a
	// question is answered with a handoff (the companion tools follow it).
	companion bool
	// handsOver: the client took no task, so the wait's bound (waitBound)
	// is answered with a handoff it can follow with the companion tools.
	handsOver bool
	// idempotencyKey is the call's idempotency key ("": none).
	idempotencyKey string
}

// Principal names the caller in a requestState and as the owner of an HTTP
// session of the session dialect: tenant, issuer and subject id (two
// identity providers may use the same sub).
func Principal(s signals.Subject) string { return s.Tenant + "|" + s.Issuer + "|" + s.SubjectID }

// SuspendsForInput reports whether the snapshot has an interrupt the client
// can answer (external events are not the client's to answer).
func SuspendsForInput(s signals.Snapshot) bool {
	for _, it := range s.Interrupts {
		if it.Kind != signals.KindExternalEvent {
			return true
		}
	}
	return false
}

// await waits for the run to end or to ask the client for input, and
// answers: the CallToolResult of a terminal run, an InputRequiredResult
// (MRTR) for open interrupts, or, at the wait's bound (waitBound), a
// handoff (or, for a client that follows tasks in a dialect of its own,
// an isError result that names the run). A client the dialect can
// ask during the call (blockingCall.asker) is asked the run's questions
// instead, and the call waits on until the run ends. A request
// with a progressToken gets notifications/progress while it waits.
func (m *Core) await(ctx context.Context, c *blockingCall) (mcp.Result, error) {
	if c.response != nil {
		defer c.response.KeepAlive(m.keepAlive)()
	}
	if m.metrics != nil {
		m.metrics.BlockingCall(1)
		defer m.metrics.BlockingCall(-1)
	}
	bound := waitBound(c.tool.Spec(), m.maxWait)
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	// A session-dialect request's handler context is not tied to its
	// connection, so also stop waiting when the transport says the request
	// is gone.
	defer c.claim.AfterGone(cancel)()
	prog := m.startProgress(wctx, c)
	defer prog.stop()
	var follower *questionFollower
	if c.elicit {
		follower = m.followQuestions(wctx, c)
		defer follower.stop()
	}
	// Progress reports every change of the run's event log; without it
	// the call needs only what the run publishes.
	opts := []runs.AwaitOption{runs.PublishedOnly()}
	if prog != nil {
		opts = nil
	}
	for {
		snap, err := m.runs.Await(wctx, c.caller, c.runID, func(s signals.Snapshot) bool {
			prog.observe(s)
			if follower != nil {
				return follower.outdated(s)
			}
			return SuspendsForInput(s)
		}, opts...)
		switch {
		case err == nil:
		case isGone(c.claim):
			// The client left: the claim settles undelivered and cancels
			// the run; nothing more is sent for this request.
			return nil, context.Canceled
		case ctx.Err() != nil:
			// The client cancelled the request (notifications/cancelled in
			// a session, whose connection stays up): the run goes with it,
			// whatever happens to the SDK's answer.
			c.claim.Abandon()
			return nil, context.Canceled
		case errors.Is(err, context.DeadlineExceeded) && c.handsOver:
			// The run still works at the bound: handed over as it is now,
			// before the host gives the request up (a delivered handoff
			// settles the request's claim: the run is the caller's).
			if snap, err = m.runs.Get(ctx, c.caller, c.runID, runs.AllowStale()); err != nil {
				return nil, m.lookupErr(ctx, "get run", c.runID, err)
			}
			return handoff(c, snap, m.resultLimit), nil
		case errors.Is(err, context.DeadlineExceeded):
			return stillRunning(c, bound), nil
		default:
			m.RunLog(ctx, c.runID, c.tool.Name()).Error("await run", zap.Error(err))
			return nil, Internal()
		}
		if snap.Status.Terminal() {
			m.pacer.Observe(snap)
			if RPCFailure(snap) {
				return nil, &jsonrpc.Error{Code: int64(snap.Error.RPCCode), Message: snap.Error.Message}
			}
			return RunResult(snap, m.resultLimit), nil
		}
		if c.companion {
			return handoff(c, snap, m.resultLimit), nil
		}
		if follower == nil {
			return m.askInput(ctx, c, snap)
		}
		follower.sync(snap)
	}
}

// isGone reports whether the request that holds c is gone.
func isGone(c *ownership.Claim) bool {
	select {
	case <-c.Gone():
		return true
	default:
		return false
	}
}

// askInput answers an InputRequiredResult for the run's open interrupts,
// with a sealed requestState the retry must echo. Past the round cap the
// run is cancelled instead.
func (m *Core) askInput(ctx context.Context, c *blockingCall, snap signals.Snapshot) (mcp.Result, error) {
	requests := InputRequestsFor(snap, c.caller)
	if c.round >= m.maxRounds {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CancelTimeout)
		defer cancel()
		if _, err := m.runs.Cancel(cctx, c.caller, c.runID, reasonRoundsExceeded); err != nil && !errors.Is(err, runs.ErrTerminal) {
			m.RunLog(ctx, c.runID, c.tool.Name()).Warn("cancel after the MRTR round cap", zap.Error(err))
		}
		return toolError(fmt.Sprintf("%s: the run asked for input more than %d times in one call; it was cancelled",
			codeRoundsExceeded, m.maxRounds)), nil
	}
	keys := make([]string, 0, len(requests))
	for k := range requests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	state, err := m.states.Seal(requeststate.State{
		Principal: Principal(c.caller), Tool: c.tool.Name(), ArgsDigest: c.digest,
		RunID: c.runID, Keys: keys, Round: c.round + 1,
	})
	if err != nil {
		m.RunLog(ctx, c.runID, c.tool.Name()).Error("seal requestState", zap.Error(err))
		return nil, Internal()
	}
	if m.metrics != nil {
		m.metrics.MRTRRound()
	}
	return &InputRequired{InputRequests: requests, RequestState: state}, nil
}

// waitBound is how long a task-less call of the tool waits for its run
// before it is handed over: the tool's HandoffAfter, else the server's
// (Options.MaxWait).
func waitBound(spec signals.ToolSpec, server time.Duration) time.Duration {
	if d := time.Duration(spec.HandoffAfter); d > 0 {
		return d
	}
	return server
}

// handoff answers a companion client's call whose run asks a question or
// outlasts the wait: the run's status and what to call next (fitOutput).
func handoff(c *blockingCall, snap signals.Snapshot, limit int) mcp.Result {
	return fitOutput(c.tool.Spec(), RunStatusResult(snap, c.caller, true, limit))
}

// fitOutput fits a result about the run, not of it (a handoff, the answer
// at the wait's bound), to the tool's output schema, which its structured
// content does not match: for a tool that declares one, the result is
// marked isError and carries its text alone, since clients check the
// structured content of any result of such a tool against the schema (and
// require it on a success). Its text says the call did not fail.
func fitOutput(spec signals.ToolSpec, res *ToolResult) *ToolResult {
	if len(spec.OutputSchema) > 0 {
		res.IsError = true
		res.StructuredContent = nil
	}
	return res
}

// stillRunning is the answer at the wait's bound to a client that follows
// tasks in a dialect of its own: the run goes on, and the response names
// it so the client can follow it.
func stillRunning(c *blockingCall, maxWait time.Duration) mcp.Result {
	taskID := runid.Project(c.runID)
	text := fmt.Sprintf("The run %s is still running after %s. It goes on: follow it with tasks/get (taskId %s) "+
		"or GET /runs/%s, or call the tool as a task by declaring the %s extension.",
		c.runID, maxWait, taskID, taskID, ExtensionTasks)
	structured, _ := json.Marshal(map[string]string{"runId": c.runID, "taskId": taskID, "status": "working"})
	res := toolError(text)
	res.StructuredContent = structured
	return fitOutput(c.tool.Spec(), res)
}

// continueRun handles an MRTR retry: it opens the requestState, resolves
// the answered interrupts through the same path as tasks/update, takes
// ownership of the run again and waits as the first call did.
func (m *Core) continueRun(ctx context.Context, c *blockingCall, token string, responses mcp.InputResponseMap) (mcp.Result, error) {
	st, err := m.states.Open(token, requeststate.Binding{
		Principal: Principal(c.caller), Tool: c.tool.Name(), ArgsDigest: c.digest,
	})
	if err != nil {
		return nil, InvalidParams("invalid requestState: " + err.Error())
	}
	if st.RunID == "" || runid.Tenant(st.RunID) != c.caller.Tenant {
		return nil, InvalidParams("invalid requestState: " + requeststate.ErrForeign.Error())
	}
	c.runID, c.round = st.RunID, st.Round
	m.tracing.link(ctx, c.caller, c.runID)
	// The retry waits for the run again: it needs a waiting slot before it
	// resolves anything.
	ticket, err := m.admit(c.caller.Tenant, admission.NeedWait)
	if err != nil {
		return nil, err
	}
	defer ticket.Done()
	// The state's questions were read from the run's history: a reading
	// held may predate them (runs.Showing).
	snap, err := m.runs.Get(ctx, c.caller, c.runID, runs.Showing(st.Keys...))
	if err != nil {
		return nil, m.lookupErr(ctx, "get run", c.runID, err)
	}
	// The state answers interrupts that must still be open: if none is,
	// it was used already (here or on another replica).
	open := 0
	for _, k := range st.Keys {
		if _, ok := snap.Interrupt(k); ok {
			open++
		}
	}
	if open == 0 && !snap.Status.Terminal() {
		return nil, InvalidParams("invalid requestState: " + requeststate.ErrReplayed.Error())
	}
	answers := make(map[string]json.RawMessage, len(st.Keys))
	for _, k := range st.Keys {
		r, ok := responses[k]
		if !ok {
			continue // re-asked below if still open
		}
		raw, err := json.Marshal(r)
		if err != nil {
			return nil, InvalidParams(fmt.Sprintf("inputResponses[%q] does not encode: %v", k, err))
		}
		answers[k] = raw
	}
	if err := m.resolveInputs(ctx, c.caller, c.runID, snap, answers); err != nil {
		if refusal := (*answerRefusal)(nil); errors.As(err, &refusal) {
			// Refused before any answer was signalled: the questions are
			// still open, and the retry with fitting answers presents this
			// state again.
			m.states.Release(st)
		}
		return nil, err
	}
	// From here until this response is delivered, the retry owns the run.
	c.claim.Own(c.caller, c.runID, telemetry.RunFields(ctx, c.runID, c.tool.Name())...)
	return m.await(ctx, c)
}
