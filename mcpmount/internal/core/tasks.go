package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/mcpmount/internal/methods"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/answers"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// CancelTimeout bounds a cancellation that runs detached from its request.
const CancelTimeout = 30 * time.Second

// ErrTerminal is the error of Tasks.Cancel for a run that had already
// ended: it is left alone. A dialect answers it as its revision says.
var ErrTerminal = errors.New("the task's run has already ended")

// Tasks serves the operations on tasks that every dialect offers: read,
// list, answer, cancel, await the result, follow. It is the only road from
// a dialect to the run service: each dialect decodes its wire into these
// calls and encodes what they return.
type Tasks struct {
	core *Core
}

// Tasks returns the core's task operations.
func (m *Core) Tasks() *Tasks { return m.tasks }

// target checks the extension gate (declared: the request declared the
// Tasks extension, or speaks a dialect that needs no declaration) and
// decodes the taskId. Every id the caller cannot use gets TaskNotFound.
// The gate comes first, so a non-declaring request learns nothing about
// the id.
func (t *Tasks) target(ctx context.Context, method string, declared bool, rawID json.RawMessage) (signals.Subject, string, error) {
	if !declared {
		return signals.Subject{}, "", TasksExtensionRequired(method)
	}
	caller, err := t.core.Caller(ctx)
	if err != nil {
		return signals.Subject{}, "", err
	}
	var wire string
	if err := json.Unmarshal(rawID, &wire); err != nil {
		return signals.Subject{}, "", TaskNotFound()
	}
	id, err := runid.Parse(wire)
	if err != nil {
		return signals.Subject{}, "", TaskNotFound()
	}
	t.core.tracing.link(ctx, caller, id)
	return caller, id, nil
}

// lookupErr maps a Runs error onto the wire: every unreadable run is the
// same "task not found"; anything else is an internal error.
func (m *Core) lookupErr(ctx context.Context, op, runID string, err error) error {
	if errors.Is(err, runs.ErrNotFound) || errors.Is(err, runs.ErrTenantMismatch) {
		return TaskNotFound()
	}
	m.RunLog(ctx, runID, "").Error(op, zap.Error(err))
	return Internal()
}

// Get reads the task rawID (tasks/get) with the run's getRun query;
// declared tells whether the request may use tasks (target). The
// dialect projects the run for the caller, which it returns too. A
// reading held while a fresh one is slow answers only if it is no older
// than the task's poll interval (pollStale).
func (t *Tasks) Get(ctx context.Context, declared bool, rawID json.RawMessage) (signals.Snapshot, signals.Subject, error) {
	caller, id, err := t.target(ctx, methods.TasksGet, declared, rawID)
	if err != nil {
		return signals.Snapshot{}, caller, err
	}
	snap, err := t.core.runs.Get(ctx, caller, id, pollStale(t.core.pacer))
	if err != nil {
		return signals.Snapshot{}, caller, t.core.lookupErr(ctx, "get run", id, err)
	}
	return snap, caller, nil
}

// pollStale is the read option of a poll (tasks/get): a reading held while
// a fresh one is slow answers it if it is no older than the poll interval
// its task suggests, so that an answer is never older than the client's
// last poll.
func pollStale(p *Pacer) runs.ReadOption {
	if p == nil {
		return runs.AllowStale()
	}
	return runs.AllowStaleWithin(func(s signals.Snapshot) time.Duration {
		return p.Interval(s.Tool, TaskStatus(s, InputRequests(s)) == TaskInputRequired)
	})
}

// Update answers the task rawID's input requests (tasks/update): each
// inputResponses entry naming an open interrupt resolves it, applied at
// most once; an entry the caller may not answer (not an approver) or that
// does not fit refuses the whole request, nothing signalled
// (Core.resolveInputs). Entries naming nothing open resolve nothing. It
// returns after every resolution was applied, so the next tasks/get no
// longer lists it.
func (t *Tasks) Update(ctx context.Context, declared bool, rawID, rawResponses json.RawMessage) error {
	caller, id, err := t.target(ctx, methods.TasksUpdate, declared, rawID)
	if err != nil {
		return err
	}
	var responses map[string]json.RawMessage
	if len(rawResponses) > 0 && string(rawResponses) != "null" {
		if err := json.Unmarshal(rawResponses, &responses); err != nil {
			return InvalidParams("tasks/update: inputResponses must be an object keyed by input request")
		}
	}
	// A reading that knows a key neither open nor answered may predate
	// the question: the run is read anew (runs.Showing).
	snap, err := t.core.runs.Get(ctx, caller, id, runs.Showing(slices.Collect(maps.Keys(responses))...))
	if err != nil {
		return t.core.lookupErr(ctx, "get run", id, err)
	}
	return t.core.resolveInputs(ctx, caller, id, snap, responses)
}

// Cancel cancels the task rawID (tasks/cancel) with reason
// caller-requested; once accepted, the cancellation completes even if the
// client goes away. It returns the run as the run service answered the
// request (it reads cancelling). A run that had already ended is left
// alone: Cancel returns its last reading and ErrTerminal.
func (t *Tasks) Cancel(ctx context.Context, declared bool, rawID json.RawMessage) (signals.Snapshot, error) {
	caller, id, err := t.target(ctx, methods.TasksCancel, declared, rawID)
	if err != nil {
		return signals.Snapshot{}, err
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CancelTimeout)
	defer cancel()
	snap, err := t.core.runs.Cancel(cctx, caller, id, signals.ReasonCallerRequested)
	switch {
	case errors.Is(err, runs.ErrTerminal):
		return snap, ErrTerminal
	case err != nil:
		return signals.Snapshot{}, t.core.lookupErr(ctx, "cancel run", id, err)
	}
	return snap, nil
}

// resolveInputs resolves the open interrupts that responses answer (keyed
// by interruptId, each an ElicitResult), in key order. It is the one path of
// tasks/update, of MRTR retries and of the session-dialect elicitation answers:
// every answer is first checked against its question and the caller
// (answersOf), so that an answer the caller may not give (not one of the
// question's approvers) or that does not fit is refused (-32602 naming the
// input key and the rule, an *answerRefusal) before any of the request's
// answers is signalled, and its question stays open. Runs checks both again
// and applies each resolution at most once. Keys naming nothing open, and
// resolutions that lose (already resolved, run ended), resolve nothing and
// are not errors.
func (m *Core) resolveInputs(ctx context.Context, caller signals.Subject, runID string, snap signals.Snapshot, responses map[string]json.RawMessage) error {
	res, err := answersOf(caller, snap, responses)
	if refusal := (*answerRefusal)(nil); errors.As(err, &refusal) && refusal.rule == ruleApprovers {
		// The run service refuses it against the same reading, signalling
		// nothing, and records the refusal (the audit trail).
		var er ElicitResponse
		_ = json.Unmarshal(responses[refusal.key], &er) // the action, for the record
		_, _ = m.runs.Resolve(ctx, caller, runID, signals.Resolution{InterruptID: refusal.key, Action: signals.Action(er.Action)}, runs.Held(snap))
	}
	if err != nil {
		return err
	}
	for _, r := range res {
		if _, err := m.runs.Resolve(ctx, caller, runID, r, runs.Held(snap)); err != nil {
			switch {
			case errors.Is(err, runs.ErrNotOpen), errors.Is(err, runs.ErrAlreadyResolved), errors.Is(err, runs.ErrTerminal):
				m.RunLog(ctx, runID, snap.Tool).Debug("input response resolved nothing",
					zap.String("interruptId", r.InterruptID), zap.Error(err))
			case errors.Is(err, runs.ErrNotApplied):
				// Recorded with the run: applied when a worker serves it.
				m.log.Debug("input response recorded, not applied yet", zap.String("runId", runID),
					zap.String("interruptId", r.InterruptID))
			case errors.Is(err, runs.ErrNotEligible):
				// answersOf checked the same snapshot: not reached.
				return notApprover(r.InterruptID)
			default:
				if refusal := answerRefused(r.InterruptID, err); refusal != nil {
					return refusal
				}
				return m.lookupErr(ctx, "resolve interrupt", runID, err)
			}
		}
	}
	return nil
}

// answersOf decodes and checks the responses that answer an open
// interrupt of snap, in key order: caller must be one of its approvers
// (signals.Interrupt.Eligible) and the answer must fit it (answers.Check).
// Keys naming nothing open (or an external event, which is not the
// client's to answer) are left out.
func answersOf(caller signals.Subject, snap signals.Snapshot, responses map[string]json.RawMessage) ([]signals.Resolution, error) {
	keys := make([]string, 0, len(responses))
	for k := range responses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []signals.Resolution
	for _, key := range keys {
		it, open := snap.Interrupt(key)
		if !open || it.Kind == signals.KindExternalEvent {
			continue // never issued, already answered, or not a client input
		}
		if !it.Eligible(caller) {
			return nil, notApprover(key)
		}
		var er ElicitResponse
		if err := json.Unmarshal(responses[key], &er); err != nil {
			return nil, &answerRefusal{key: key, rule: ruleFit, problem: "not an ElicitResult object with a string action"}
		}
		res := signals.Resolution{InterruptID: key, Action: signals.Action(er.Action)}
		if res.Action == signals.ActionAccept && len(er.Content) > 0 && string(er.Content) != "null" {
			res.Content = er.Content
		}
		if refusal := answerRefused(key, answers.Check(it, res)); refusal != nil {
			return nil, refusal
		}
		out = append(out, res)
	}
	return out, nil
}

// The rules an answer is refused by (answerRefusal.rule, the "rule" of
// its error's data).
const (
	// ruleApprovers: only the question's approvers may answer it.
	ruleApprovers = "approvers"
	// ruleFit: the answer must fit the question (its actions and schema).
	ruleFit = "fit"
)

// answerRefusal is the refusal of an input response: on the wire -32602
// (the params name an answer the server will not apply, as they name an
// unknown task) whose message names the input key and the rule, and whose
// data is {"inputResponse": key, "rule": rule}.
type answerRefusal struct {
	key     string
	rule    string
	problem string
}

func (e *answerRefusal) Error() string {
	return fmt.Sprintf("inputResponses[%q]: %s", e.key, e.problem)
}

// Unwrap returns the refusal's JSON-RPC error.
func (e *answerRefusal) Unwrap() error {
	rpc := InvalidParams(e.Error())
	rpc.Data, _ = json.Marshal(map[string]string{"inputResponse": e.key, "rule": e.rule})
	return rpc
}

// notApprover is the refusal of an answer to question key from a caller
// that is not one of its approvers.
func notApprover(key string) *answerRefusal {
	return &answerRefusal{key: key, rule: ruleApprovers, problem: "you may not answer this question: only its approvers may"}
}

// answerRefused is the refusal of err when it is an *answers.Error, and
// nil otherwise.
func answerRefused(key string, err error) *answerRefusal {
	var ae *answers.Error
	if !errors.As(err, &ae) {
		return nil
	}
	return &answerRefusal{key: key, rule: ruleFit, problem: ae.Problem}
}
