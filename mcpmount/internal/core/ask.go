package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// Asker asks the client of a call one question while the call runs and
// returns its answer. A dialect that can reach its client during a call
// (the session dialect's elicitation/create) supplies one in CallRequest; the
// core decides what to ask and what the answer does.
type Asker interface {
	// Ask sends the question and waits for the answer; it returns when
	// ctx ends (the question was withdrawn). An answer off the
	// requestedSchema is an error that is no *jsonrpc.Error (the SDK's
	// check); the client's own failure to answer is a *jsonrpc.Error.
	Ask(ctx context.Context, message string, requestedSchema any) (*mcp.ElicitResult, error)
}

// questionFollower asks the client of a blocking call the open questions
// of the run it waits for that the caller may answer (one that asks other
// approvers is not asked: the call waits for them), through the call's
// Asker, and resolves each answer through the path of tasks/update
// (resolveInputs: eligibility checked, applied at most once). A decline or cancel is resolved as
// such, so the tool takes its own decline path. A question that closes
// otherwise (answered elsewhere, the run ended) is withdrawn; an answer
// that arrives after that resolves nothing.
type questionFollower struct {
	m   *Core
	c   *blockingCall
	ctx context.Context // the call's waiting context

	asking map[string]context.CancelFunc // by interruptId; only the waiting goroutine uses it
	wg     sync.WaitGroup
}

// followQuestions starts following the questions of c's run within ctx.
func (m *Core) followQuestions(ctx context.Context, c *blockingCall) *questionFollower {
	return &questionFollower{m: m, c: c, ctx: ctx, asking: map[string]context.CancelFunc{}}
}

// outdated reports whether the run's open questions differ from the ones
// being asked.
func (f *questionFollower) outdated(s signals.Snapshot) bool {
	open := 0
	for _, it := range s.Interrupts {
		if !Askable(it, f.c.caller) {
			continue
		}
		if _, ok := f.asking[it.ID]; !ok {
			return true
		}
		open++
	}
	return open != len(f.asking)
}

// sync asks the run's new open questions and withdraws the ones no longer
// open.
func (f *questionFollower) sync(s signals.Snapshot) {
	open := map[string]bool{}
	for _, it := range s.Interrupts {
		if Askable(it, f.c.caller) {
			open[it.ID] = true
		}
	}
	for id, cancel := range f.asking {
		if !open[id] {
			cancel()
			delete(f.asking, id)
		}
	}
	for _, it := range s.Interrupts {
		if !open[it.ID] {
			continue
		}
		if _, ok := f.asking[it.ID]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(f.ctx)
		f.asking[it.ID] = cancel
		f.wg.Add(1)
		go f.ask(ctx, it)
	}
}

// Askable reports whether a client may be asked question it for caller:
// the client answers it (not an external event) and caller is one of its
// approvers.
func Askable(it signals.Interrupt, caller signals.Subject) bool {
	return it.ClientAnswered() && it.Eligible(caller)
}

// ask asks one question and resolves its answer.
func (f *questionFollower) ask(ctx context.Context, it signals.Interrupt) {
	defer f.wg.Done()
	if err := f.m.askOne(ctx, f.c.asker, f.c.caller, f.c.runID, it); err != nil && ctx.Err() == nil {
		// The question stays open: it can still be answered by tasks/get +
		// tasks/update or REST, or the call times out.
		f.m.log.Warn("the client's answer was not applied; the question stays open", zap.String("runId", f.c.runID),
			zap.String("interruptId", it.ID), zap.Error(err))
	}
}

// maxAnswerRefusals bounds how often one question is asked again after
// an answer that did not fit it.
const maxAnswerRefusals = 8

// askOne asks the client one open question of the run through a and
// resolves its answer through the path of tasks/update (resolveInputs). An
// answer that does not fit the question, refused by the SDK against the
// requestedSchema or by answers.Check, is not applied: the question
// stays open and is asked again, its message saying why the last answer
// was refused, up to maxAnswerRefusals times. An answer the caller may not
// give (not an approver) is refused and not asked again: it returns that
// refusal, and the question stays open. It returns the error of an
// ask the client failed (a JSON-RPC error: asking again would not help) or
// of a resolution that failed otherwise; nil once the answer was resolved
// or ctx ended.
func (m *Core) askOne(ctx context.Context, a Asker, caller signals.Subject, runID string, it signals.Interrupt) error {
	message := it.Message()
	for range maxAnswerRefusals + 1 {
		res, err := a.Ask(ctx, message, it.RequestedSchema())
		if ctx.Err() != nil {
			return nil
		}
		var problem string
		var rpcErr *jsonrpc.Error
		switch {
		case errors.As(err, &rpcErr):
			return fmt.Errorf("ask the client: %w", err)
		case err != nil:
			// The SDK checked the answer against the requestedSchema.
			problem = err.Error()
		default:
			problem, err = m.resolveAnswer(ctx, caller, runID, it.ID, res)
			if problem == "" {
				return err
			}
		}
		m.log.Info("the client's answer does not fit its question; asking again", zap.String("runId", runID),
			zap.String("interruptId", it.ID), zap.String("problem", problem))
		message = fmt.Sprintf("%s (the last answer was refused: %s)", it.Message(), problem)
	}
	return fmt.Errorf("interrupt %s: %d answers refused", it.ID, maxAnswerRefusals+1)
}

// resolveAnswer resolves the client's answer to interrupt id of the run,
// read anew. It returns the problem of an answer that does not fit the
// question ("" when it fits) and the error of a resolution that failed,
// or of an answer the caller may not give.
func (m *Core) resolveAnswer(ctx context.Context, caller signals.Subject, runID, id string, res *mcp.ElicitResult) (string, error) {
	answer, err := json.Marshal(res)
	if err != nil {
		return "", fmt.Errorf("the client's answer does not encode: %w", err)
	}
	// The question was asked from the run's history: a reading held may
	// predate it (runs.Showing).
	snap, err := m.runs.Get(ctx, caller, runID, runs.Showing(id))
	if err != nil {
		return "", fmt.Errorf("read the run to apply the client's answer: %w", err)
	}
	err = m.resolveInputs(ctx, caller, runID, snap, map[string]json.RawMessage{id: answer})
	if refusal := (*answerRefusal)(nil); errors.As(err, &refusal) && refusal.rule == ruleFit {
		return refusal.problem, nil
	}
	return "", err
}

// stop withdraws every pending question and waits for the goroutines.
func (f *questionFollower) stop() {
	for id, cancel := range f.asking {
		cancel()
		delete(f.asking, id)
	}
	f.wg.Wait()
}

// askPreRun asks the client a tool's missing pre-run inputs through a,
// one at a time in key order, and returns responses with the answers
// added, as a multi-round-trip request (MRTR) retry would carry them.
func (m *Core) askPreRun(ctx context.Context, a Asker, responses mcp.InputResponseMap, ir *InputRequired) (mcp.InputResponseMap, error) {
	keys := make([]string, 0, len(ir.InputRequests))
	for k := range ir.InputRequests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := maps.Clone(responses)
	if out == nil {
		out = mcp.InputResponseMap{}
	}
	for _, k := range keys {
		req := ir.InputRequests[k]
		res, err := a.Ask(ctx, req.Params.Message, req.Params.RequestedSchema)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			var rpcErr *jsonrpc.Error
			if errors.As(err, &rpcErr) {
				return nil, &jsonrpc.Error{Code: codeInternalError, Message: fmt.Sprintf("elicitation of input %q failed: %s", k, rpcErr.Message)}
			}
			return nil, &jsonrpc.Error{Code: codeInternalError, Message: fmt.Sprintf("elicitation of input %q failed: %v", k, err)}
		}
		out[k] = res
	}
	return out, nil
}
