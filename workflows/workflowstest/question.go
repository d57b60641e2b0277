package workflowstest

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/answers"
	"github.com/openwop/temporal-mcp/workflows"
)

// Question is a question a tool asked, as an agent sees it.
type Question struct {
	// ID is the question's key in an MCP task's inputRequests, and the key
	// of its answer in inputResponses: the interrupt id (<runId>-i<n>) of a
	// question asked by the run, the input's key for one asked before the
	// run starts.
	ID string
	// Key is the key the tool gave the question (ApprovalRequest.Key,
	// InputRequest.Key, the pre-run input's key): the key of Env.Answer.
	Key string
	// Kind is the interrupt's kind, empty for a pre-run input. An agent
	// never sees an external-event question: another system answers it
	// over REST.
	Kind signals.InterruptKind
	// Message and RequestedSchema are the MCP elicitation's: what the agent
	// shows and the JSON Schema of the content it must answer with.
	Message         string
	RequestedSchema json.RawMessage
	// Interrupt is the interrupt as the run published it (zero for a
	// pre-run input).
	Interrupt signals.Interrupt
	// Answer is the answer the run accepted, nil when none was.
	Answer *Answer
	// Refusals are the answers refused before it, in order, each saying
	// why (as the server's -32602 or 400 would).
	Refusals []error

	failed bool // the Env gave up on the question
}

// questionOf is the question of an open interrupt.
func questionOf(it signals.Interrupt) *Question {
	return &Question{
		ID:              it.ID,
		Key:             it.Key,
		Kind:            it.Kind,
		Message:         it.Message(),
		RequestedSchema: it.RequestedSchema(),
		Interrupt:       it,
	}
}

// Answer is an agent's (or a person's) answer to a question.
type Answer struct {
	// Action is accept, decline or cancel (MCP ElicitResult.action).
	Action signals.Action
	// Content is the answer's content on accept: any value that encodes
	// to a JSON object matching the question's RequestedSchema.
	Content any
	// By is who answers; the zero Subject means the Env's Caller.
	By signals.Subject
}

// Accept is the answer accepting the question with content.
func Accept(content any) Answer { return Answer{Action: signals.ActionAccept, Content: content} }

// Choose is the answer to an approval choosing action ("accept",
// "reject" or another action it offers), as an MCP client answers the
// approval's form: accept with content {"action": action}.
func Choose(action string) Answer { return Accept(map[string]string{"action": action}) }

// Decline is the answer declining the question.
func Decline() Answer { return Answer{Action: signals.ActionDecline} }

// Cancel is the answer cancelling the question, and so the run.
func Cancel() Answer { return Answer{Action: signals.ActionCancel} }

// As returns a with By set to who.
func (a Answer) As(who signals.Subject) Answer {
	a.By = who
	return a
}

// Answer registers the answer to the question with key key: the Env gives
// it when the run asks the question. An answer the server would refuse
// fails the call (Call's error) and cancels the run.
func (e *Env) Answer(key string, a Answer) {
	e.answers[key] = answerer{f: func(Question) Answer { return a }}
}

// AnswerFunc registers f to answer the question with key key when the run
// asks it. f sees the question as the agent does; when the answer it gives
// is refused, f is asked again with the refusal added to
// Question.Refusals (at most 10 times), as an agent corrects its answer.
func (e *Env) AnswerFunc(key string, f func(Question) Answer) {
	e.answers[key] = answerer{f: f, retry: true}
}

// AnswerAt gives a as the answer to the question with key key at virtual
// time d after the run starts, as a person who answers late does. When
// the question is open then, it is answered as Answer does (a refused
// answer fails the call). When it is not (it expired, the run withdrew it,
// or it was answered), the answer is refused as REST and the companion
// tool refuse it (tasks/update ignores it): nothing reaches the run, the
// refusal, which wraps workflows.ErrExpired or workflows.ErrWithdrawn for
// a withdrawn question, is added to the question's Refusals, and the run
// goes on. An answer to a question the run has not asked by then fails
// the call.
func (e *Env) AnswerAt(d time.Duration, key string, a Answer) {
	e.At(d, func() {
		if e.env.IsWorkflowCompleted() {
			return
		}
		snap, err := e.Snapshot()
		if err != nil {
			return
		}
		q := e.askedAs(key)
		if q == nil {
			e.fail(fmt.Errorf("workflowstest: an answer to %q at %v, before the run asked it", key, d))
			return
		}
		it, open := snap.Interrupt(q.ID)
		if !open {
			q.Refusals = append(q.Refusals, notOpen(q, snap))
			return
		}
		res, err := e.check(it, snap, a)
		if err != nil {
			q.failed = true
			e.fail(fmt.Errorf("workflowstest: the answer to question %q was refused: %w", q.Key, err))
			return
		}
		q.Answer = &a
		e.env.SignalWorkflow(signals.SignalResolveInterrupt, res)
	})
}

// askedAs is the last question the run asked with key, nil when none.
func (e *Env) askedAs(key string) *Question {
	for i := len(e.asked) - 1; i >= 0; i-- {
		if e.asked[i].Key == key && e.asked[i].Kind != "" {
			return e.asked[i]
		}
	}
	return nil
}

// notOpen is the refusal of an answer to q, which is not open in snap.
func notOpen(q *Question, snap signals.Snapshot) error {
	if w, gone := snap.WithdrawnAs(q.ID); gone {
		if w.Reason == signals.WithdrawnExpired {
			return fmt.Errorf("question %q expired at %s: %w", q.Key, w.WithdrawnAt.Format(time.RFC3339), workflows.ErrExpired)
		}
		return fmt.Errorf("question %q: %w by the run", q.Key, workflows.ErrWithdrawn)
	}
	if _, done := snap.ResolvedBy(q.ID); done {
		return fmt.Errorf("question %q was answered already", q.Key)
	}
	return fmt.Errorf("question %q is not open", q.Key)
}

// maxAttempts bounds how often an AnswerFunc is asked for one question.
const maxAttempts = 10

// answer answers the open question q of the run in snap, if an answer is
// registered for its key.
func (e *Env) answer(q *Question, it signals.Interrupt, snap signals.Snapshot) {
	ans, ok := e.answers[q.Key]
	if !ok {
		return // AnswerTimeout ends the wait
	}
	for {
		a := ans.f(*q)
		res, err := e.check(it, snap, a)
		if err == nil {
			q.Answer = &a
			e.env.SignalWorkflow(signals.SignalResolveInterrupt, res)
			return
		}
		q.Refusals = append(q.Refusals, err)
		if !ans.retry || len(q.Refusals) >= maxAttempts {
			q.failed = true
			e.fail(fmt.Errorf("workflowstest: the answer to question %q was refused: %w", q.Key, err))
			return
		}
	}
}

// check checks a as the server checks an answer before it signals it
// (the caller's eligibility, then answers.Check against the question as
// the run published it), and returns the resolution to signal. A refused
// content is an *answers.Error, as the server's -32602 or 400 says it.
func (e *Env) check(it signals.Interrupt, snap signals.Snapshot, a Answer) (signals.Resolution, error) {
	by := a.By
	if by.SubjectID == "" {
		by = e.Caller
	}
	res := signals.Resolution{InterruptID: it.ID, Action: a.Action, ResolvedBy: by,
		RequestID: fmt.Sprintf("workflowstest-%d", len(e.asked))}
	switch a.Action {
	case signals.ActionAccept, signals.ActionDecline, signals.ActionCancel:
	default:
		return res, fmt.Errorf("action %q: want accept, decline or cancel", a.Action)
	}
	if by.Tenant != snap.Owner.Tenant || !it.Eligible(by) {
		return res, fmt.Errorf("%s of tenant %s may not answer it (approvers %v)", by.SubjectID, by.Tenant, it.Approvers)
	}
	if a.Action != signals.ActionAccept {
		return res, nil
	}
	content, err := encodeContent(a.Content)
	if err != nil {
		return res, err
	}
	res.Content = content
	if err := answers.Check(it, res); err != nil {
		return res, err
	}
	return res, nil
}

// encodeContent encodes an answer's content; nil is no content.
func encodeContent(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode the content: %w", err)
	}
	if string(raw) == "null" {
		return nil, nil
	}
	return raw, nil
}

// askBeforeRun asks the tool's pre-run inputs, as the server does before
// it starts a run, and returns the answers to start the run with.
func (e *Env) askBeforeRun(ct *catalog.Tool, spec signals.ToolSpec) (map[string]json.RawMessage, error) {
	if len(spec.PreRunInputs) == 0 {
		return nil, nil
	}
	out := make(map[string]json.RawMessage, len(spec.PreRunInputs))
	for _, in := range spec.PreRunInputs {
		schema := in.Schema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		q := &Question{ID: in.Key, Key: in.Key, Message: in.Message, RequestedSchema: schema}
		e.asked = append(e.asked, q)
		ans, ok := e.answers[in.Key]
		if !ok {
			return nil, fmt.Errorf("workflowstest: %s asks %q (%s) before it runs: register an answer with Env.Answer(%q, ...)",
				spec.Name, in.Key, in.Message, in.Key)
		}
		for {
			a := ans.f(*q)
			if a.Action == signals.ActionDecline || a.Action == signals.ActionCancel {
				q.Answer = &a
				return nil, fmt.Errorf("workflowstest: input %q was %sed; the tool did not run", in.Key, a.Action)
			}
			content, err := encodeContent(a.Content)
			if err == nil && a.Action != signals.ActionAccept {
				err = fmt.Errorf("action %q: want accept, decline or cancel", a.Action)
			}
			if err == nil {
				if content == nil {
					content = json.RawMessage(`{}`)
				}
				content, err = ct.ValidateInput(in.Key, content)
			}
			if err == nil {
				q.Answer = &a
				out[in.Key] = content
				break
			}
			q.Refusals = append(q.Refusals, err)
			if !ans.retry || len(q.Refusals) >= maxAttempts {
				return nil, fmt.Errorf("workflowstest: the answer to input %q was refused: %w", in.Key, err)
			}
		}
	}
	return out, nil
}
