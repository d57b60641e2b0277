package workflows

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/answers"
)

// QuestionSpec describes a question to put to a person or another system
// (an interrupt, in OpenWOP's terms) with Raise. Approve, AskInput, AskAs,
// AskInputs and WaitExternal build one for the common kinds.
type QuestionSpec struct {
	// Kind is the interrupt kind: approval, clarification, external-event or
	// custom.
	Kind signals.InterruptKind
	// Key is the deterministic re-entry key. It is required and may be used
	// once per run.
	Key string
	// NodeID names the suspended node. Empty means the enclosing Step, or the
	// Key when there is none.
	NodeID string
	// Title is the short prompt shown to the resolver (defaults to Key).
	Title string
	// Description is optional longer text.
	Description string
	// Actions are the approval actions offered. Approvals default to
	// accept and reject.
	Actions []string
	// Schema is the JSON Schema (type object) of the content expected on
	// accept. Nil for approvals.
	Schema json.RawMessage
	// Approvers, when non-empty, are the only principals who may resolve the
	// interrupt.
	Approvers []string
	// Timeout, when positive, is how long the question stays open: a
	// durable timer then withdraws it (Interrupt.ExpiresAt says when),
	// and Wait returns ErrExpired. Zero means no deadline.
	Timeout time.Duration
}

// Errors of a question that ended without an answer. Both leave the run
// going: the question has left the open interrupts, and an answer to it
// resolves nothing (the server refuses it where it can say so).
var (
	// ErrExpired is returned by Pending.Wait (and Approve, AskInput,
	// AskAs, AskInputs, WaitExternal) when the question's Timeout
	// elapsed before an answer was applied.
	ErrExpired = errors.New("question expired")
	// ErrWithdrawn is returned by Pending.Wait for a question the tool
	// withdrew with Pending.Withdraw.
	ErrWithdrawn = errors.New("question withdrawn")
)

// Pending is an open interrupt raised with Raise.
type Pending struct {
	r         *run
	interrupt signals.Interrupt
	done      bool
	closed    bool
	withdrawn string // signals.WithdrawnExpired or WithdrawnByRun, once withdrawn
	res       signals.Resolved
	stopTimer workflow.CancelFunc // stops the expiry timer; nil without one
}

// Interrupt returns the interrupt as published in the snapshot.
func (p *Pending) Interrupt() signals.Interrupt { return p.interrupt }

// Wait blocks until the interrupt is resolved and returns the applied
// resolution (whatever its action). It returns ErrExpired when the
// question's Timeout elapses first and ErrWithdrawn when it was withdrawn.
// When ctx is cancelled first it withdraws the question, unless the run
// itself is being cancelled, and returns a cancellation error: so an ask
// whose context a timer cancels leaves no question open. It also returns a
// cancellation error when the resolution's action is cancel (the run is
// then being cancelled with reason mcp-elicitation-cancelled).
func (p *Pending) Wait(ctx workflow.Context) (signals.Resolved, error) {
	err := workflow.Await(ctx, func() bool { return p.done || p.closed || p.withdrawn != "" })
	switch {
	case err != nil:
		p.r.withdraw(p, signals.WithdrawnByRun)
		return signals.Resolved{}, err
	case p.withdrawn != "":
		return signals.Resolved{}, p.withdrawnError()
	case !p.done:
		return signals.Resolved{}, temporal.NewCanceledError()
	}
	if p.res.Action == signals.ActionCancel {
		return p.res, temporal.NewCanceledError()
	}
	return p.res, nil
}

// Withdraw closes the question without an answer, if it is still open:
// it leaves the run's open interrupts at once (the run's status follows),
// the log gets interrupt.withdrawn, an answer to it resolves nothing, and
// Wait returns ErrWithdrawn. It does nothing once the question is answered
// or expired, or while the run is ending.
func (p *Pending) Withdraw() { p.r.withdraw(p, signals.WithdrawnByRun) }

// withdrawnError is the error Wait returns for a withdrawn question.
func (p *Pending) withdrawnError() error {
	in := p.interrupt
	if p.withdrawn == signals.WithdrawnExpired && in.ExpiresAt != nil {
		return fmt.Errorf("workflows: %w: %q was not answered by %s", ErrExpired, in.Key, in.ExpiresAt.Format(time.RFC3339))
	}
	return fmt.Errorf("workflows: %w: %q", ErrWithdrawn, in.Key)
}

// Raise opens an interrupt and returns without waiting for its resolution:
// it mints the interrupt id (<runId>-i<n>), publishes the interrupt in the
// snapshot, moves the run to the matching waiting status and appends
// node.suspended and interrupt.requested. Several interrupts may be open at
// once; wait for each with Pending.Wait. With a Timeout, a durable timer
// (on ctx: cancelling ctx stops it) withdraws the interrupt when it
// elapses.
func Raise(ctx workflow.Context, spec QuestionSpec) (*Pending, error) {
	r, err := from(ctx)
	if err != nil {
		return nil, err
	}
	if r.cancelling || r.terminal || ctx.Err() != nil {
		return nil, temporal.NewCanceledError()
	}
	if spec.Key == "" {
		return nil, errors.New("workflows: interrupt key is empty")
	}
	if r.keys[spec.Key] {
		return nil, fmt.Errorf("workflows: interrupt key %q already used in this run", spec.Key)
	}
	switch spec.Kind {
	case signals.KindApproval:
		if len(spec.Actions) == 0 {
			spec.Actions = []string{ApprovalAccept, ApprovalReject}
		}
	case signals.KindClarification, signals.KindExternalEvent, signals.KindCustom:
	default:
		return nil, fmt.Errorf("workflows: unsupported interrupt kind %q", spec.Kind)
	}
	if spec.Timeout < 0 {
		return nil, fmt.Errorf("workflows: interrupt %q has a negative timeout", spec.Key)
	}
	if spec.Schema != nil && !isObject(spec.Schema) {
		return nil, fmt.Errorf("workflows: interrupt %q schema is not a JSON object", spec.Key)
	}
	spec.NodeID = cmp.Or(spec.NodeID, currentNode(ctx), spec.Key)
	spec.Title = cmp.Or(spec.Title, spec.Key)
	r.keys[spec.Key] = true
	r.minted++
	in := signals.Interrupt{
		ID:          fmt.Sprintf("%s-i%d", r.snap.RunID, r.minted),
		NodeID:      spec.NodeID,
		Kind:        spec.Kind,
		Key:         spec.Key,
		Title:       spec.Title,
		Description: spec.Description,
		Actions:     slices.Clone(spec.Actions),
		Schema:      spec.Schema,
		Approvers:   slices.Clone(spec.Approvers),
		RequestedAt: r.now(),
	}
	if spec.Timeout > 0 {
		at := in.RequestedAt.Add(spec.Timeout)
		in.ExpiresAt = &at
	}
	p := &Pending{r: r, interrupt: in}
	r.pending[in.ID] = p
	r.snap.Interrupts = append(r.snap.Interrupts, in)
	r.emit(signals.EventNodeSuspended, in.NodeID, map[string]any{
		"nodeId":      in.NodeID,
		"interruptId": in.ID,
		"kind":        in.Kind,
		"key":         in.Key,
	})
	r.emit(signals.EventInterruptRequested, in.NodeID, requestedPayload(in))
	r.setStatus(r.waitingStatus())
	if spec.Timeout > 0 {
		p.expireAfter(ctx, spec.Timeout)
	}
	return p, nil
}

// expireAfter starts the durable timer that withdraws p, as expired, d
// from now. Cancelling ctx stops it, and so does the answer (resolve).
func (p *Pending) expireAfter(ctx workflow.Context, d time.Duration) {
	tctx, stop := workflow.WithCancel(ctx)
	p.stopTimer = stop
	t := workflow.NewTimerWithOptions(tctx, d, workflow.TimerOptions{Summary: "question " + p.interrupt.Key + " expires"})
	workflow.GoNamed(tctx, "expire-"+p.interrupt.ID, func(c workflow.Context) {
		if t.Get(c, nil) == nil {
			p.r.withdraw(p, signals.WithdrawnExpired)
		}
	})
}

// withdraw closes p's interrupt without an answer while the run goes on
// (reason signals.WithdrawnExpired or WithdrawnByRun): it leaves the open
// interrupts and joins the snapshot's Withdrawn, interrupt.withdrawn is
// appended and the run's status recomputed (and published). It does
// nothing for an interrupt no longer open, or once the run is being
// cancelled or has ended (the run's end closes its interrupts).
func (r *run) withdraw(p *Pending, reason string) {
	if p.done || p.closed || p.withdrawn != "" || r.terminal || r.cancelling || r.root.Err() != nil {
		return
	}
	// Runs that began before withdrawal kept the interrupt open.
	if workflow.GetVersion(r.root, changeWithdraw, workflow.DefaultVersion, versionWithdraw) < versionWithdraw {
		return
	}
	in := p.interrupt
	p.withdrawn = reason
	if p.stopTimer != nil {
		p.stopTimer()
	}
	delete(r.pending, in.ID)
	r.snap.Interrupts = slices.DeleteFunc(r.snap.Interrupts, func(i signals.Interrupt) bool { return i.ID == in.ID })
	r.snap.Withdrawn = append(r.snap.Withdrawn, signals.Withdrawn{InterruptID: in.ID, Reason: reason, WithdrawnAt: r.now()})
	payload := map[string]any{
		"nodeId":      in.NodeID,
		"interruptId": in.ID,
		"kind":        in.Kind,
		"key":         in.Key,
		"reason":      reason,
	}
	if in.ExpiresAt != nil {
		payload["expiresAt"] = in.ExpiresAt
	}
	r.emit(signals.EventInterruptWithdrawn, in.NodeID, payload)
	r.setStatus(r.waitingStatus())
}

// requestedPayload is the interrupt.requested payload: the interrupt as the
// snapshot shows it, plus the OpenWOP InterruptPayload fields (data,
// resumeSchema).
func requestedPayload(in signals.Interrupt) any {
	data := map[string]any{"title": in.Title}
	if in.Description != "" {
		data["description"] = in.Description
	}
	switch in.Kind {
	case signals.KindApproval:
		data["artifactId"] = in.Key
		data["artifactType"] = "tool-run"
		data["actions"] = in.Actions
		if len(in.Approvers) > 0 {
			data["approversList"] = in.Approvers
		}
	case signals.KindClarification:
		q := map[string]any{"id": in.Key, "question": in.Title}
		if in.Schema != nil {
			q["schema"] = in.Schema
		}
		data["questions"] = []any{q}
	}
	var timeoutMs int64
	if in.ExpiresAt != nil {
		timeoutMs = in.ExpiresAt.Sub(in.RequestedAt).Milliseconds()
	}
	return struct {
		signals.Interrupt
		Data         map[string]any  `json:"data"`
		ResumeSchema json.RawMessage `json:"resumeSchema,omitempty"`
		TimeoutMs    int64           `json:"timeoutMs,omitempty"`
	}{in, data, in.Schema, timeoutMs}
}

// dispatch starts the one coroutine that drains the resolution signal
// channel and applies each resolution to the open interrupt it names.
func (r *run) dispatch(ctx workflow.Context) {
	onSignal(ctx, signals.SignalResolveInterrupt, "resolveInterruptDispatcher", r.resolve)
}

// onSignal starts the coroutine named coroutine, on a context that
// cancellation does not reach, which receives every signal of the channel
// name, in order, and applies it.
func onSignal[T any](ctx workflow.Context, name, coroutine string, apply func(T)) {
	ch := workflow.GetSignalChannel(ctx, name)
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	workflow.GoNamed(dctx, coroutine, func(c workflow.Context) {
		for {
			var v T
			ch.Receive(c, &v)
			apply(v)
		}
	})
}

// resolve applies res if it is the first eligible resolution of an open
// interrupt, and ignores it otherwise. Every decision depends only on the
// run's history, so replays decide the same.
func (r *run) resolve(res signals.Resolution) {
	ignore := func(why string) {
		r.logger.Info("Resolution ignored", "reason", why, "interruptId", res.InterruptID,
			"requestId", res.RequestID, "resolvedBy", res.ResolvedBy.SubjectID)
	}
	if r.terminal || r.cancelling || r.root.Err() != nil {
		// Once a cancellation is requested no resolution applies, whatever
		// the order the two arrived in within one workflow task.
		ignore("run is being cancelled or has ended")
		return
	}
	p, ok := r.pending[res.InterruptID]
	if !ok {
		if _, done := r.snap.ResolvedBy(res.InterruptID); done {
			ignore("interrupt already resolved")
		} else if w, gone := r.snap.WithdrawnAs(res.InterruptID); gone {
			ignore("interrupt " + w.Reason)
		} else {
			ignore("no open interrupt with that id")
		}
		return
	}
	in := p.interrupt
	if t := r.snap.Owner.Tenant; t != "" && res.ResolvedBy.Tenant != t {
		ignore("resolver belongs to another tenant")
		return
	}
	if !in.Eligible(res.ResolvedBy) {
		ignore("resolver is not an eligible approver")
		return
	}
	var resume json.RawMessage
	switch res.Action {
	case signals.ActionAccept:
		resume = res.Content
		if in.Kind == signals.KindApproval {
			action := approvalAction(res)
			if !slices.Contains(in.Actions, action) {
				ignore(fmt.Sprintf("approval action %q is not offered", action))
				return
			}
			resume = mustJSON(map[string]string{"action": action})
		}
	case signals.ActionDecline:
		resume = json.RawMessage(`{"declined":true}`)
		if in.Kind == signals.KindApproval {
			resume = json.RawMessage(`{"action":"reject"}`)
		}
	case signals.ActionCancel:
		resume = json.RawMessage(`{"cancelled":true}`)
	default:
		ignore(fmt.Sprintf("unknown action %q", res.Action))
		return
	}

	delete(r.pending, in.ID)
	r.snap.Interrupts = slices.DeleteFunc(r.snap.Interrupts, func(i signals.Interrupt) bool { return i.ID == in.ID })
	applied := signals.Resolved{Resolution: res, ResolvedAt: r.now()}
	r.snap.Resolved = append(r.snap.Resolved, applied)
	payload := map[string]any{
		"nodeId":      in.NodeID,
		"interruptId": in.ID,
		"kind":        in.Kind,
		"key":         in.Key,
		"action":      res.Action,
		"resumeValue": resume,
		"resolvedBy":  res.ResolvedBy,
	}
	if in.Kind == signals.KindApproval && res.Action != signals.ActionCancel {
		payload["decision"] = approvalAction(res)
	}
	r.emit(signals.EventInterruptResolved, in.NodeID, payload)
	r.traceResolution(in, applied)
	p.done = true
	p.res = applied
	if p.stopTimer != nil {
		p.stopTimer()
	}
	if res.Action == signals.ActionCancel {
		r.beginCancel(signals.ReasonElicitationCancelled)
		return
	}
	r.setStatus(r.waitingStatus())
}

// approvalAction is the approval action a resolution chose: "reject" for a
// decline, the content's action for an accept (MCP sends
// {"action":"accept"} or {"action":"reject"} as the form content), "accept"
// when the content names none.
func approvalAction(res signals.Resolution) string {
	if res.Action == signals.ActionDecline {
		return ApprovalReject
	}
	var c struct {
		Action string `json:"action"`
	}
	if len(res.Content) > 0 && json.Unmarshal(res.Content, &c) == nil && c.Action != "" {
		return c.Action
	}
	return ApprovalAccept
}

func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err) // only called with maps of strings
	}
	return raw
}

// Approval actions.
const (
	ApprovalAccept = "accept"
	ApprovalReject = "reject"
)

// ApprovalRequest asks a human to approve something.
type ApprovalRequest struct {
	// Key is the interrupt key (unique per run).
	Key string
	// NodeID names the approval gate node (default: enclosing Step, or Key).
	NodeID string
	// Title is the question shown to the approver.
	Title string
	// Description is optional longer text.
	Description string
	// Actions are the actions offered (default accept and reject).
	Actions []string
	// Approvers, when non-empty, are the only principals who may decide.
	Approvers []string
	// Timeout, when positive, is how long the approval stays open: Approve
	// then withdraws it and returns ErrExpired. Zero means no deadline.
	Timeout time.Duration
}

// Decision is the answer to an approval.
type Decision struct {
	// Action is the chosen action: "accept", "reject" (also for a decline) or
	// another offered action.
	Action string
	// Approved is set when the action is accept or edit-accept.
	Approved bool
	// Content is the resolver's content, if any.
	Content json.RawMessage
	// By is who decided.
	By signals.Subject
	// At is when the decision was applied.
	At time.Time
}

// Approve raises an approval interrupt (status waiting-approval) and waits
// for the decision. A decline is a rejected Decision, not an error; a cancel
// answer or a run cancellation returns a cancellation error, an elapsed
// req.Timeout ErrExpired.
func Approve(ctx workflow.Context, req ApprovalRequest) (Decision, error) {
	p, err := Raise(ctx, QuestionSpec{
		Kind:        signals.KindApproval,
		Key:         req.Key,
		NodeID:      req.NodeID,
		Title:       req.Title,
		Description: req.Description,
		Actions:     req.Actions,
		Approvers:   req.Approvers,
		Timeout:     req.Timeout,
	})
	if err != nil {
		return Decision{}, err
	}
	res, err := p.Wait(ctx)
	if err != nil {
		return Decision{}, err
	}
	action := approvalAction(res.Resolution)
	return Decision{
		Action:   action,
		Approved: action == ApprovalAccept || action == "edit-accept",
		Content:  res.Content,
		By:       res.ResolvedBy,
		At:       res.ResolvedAt,
	}, nil
}

// InputRequest asks a human for structured input while the run runs (a
// clarification interrupt: AskInput, AskAs, AskInputs). A question asked
// before the run starts is a pre-run input (WithPreRunInput, read with
// PreRunInput; signals.PreRunInput in the tool's spec).
type InputRequest struct {
	// Key is the interrupt key (unique per run).
	Key string
	// NodeID names the node (default: enclosing Step, or Key).
	NodeID string
	// Title is the question shown to the resolver.
	Title string
	// Description is optional longer text.
	Description string
	// Schema is a JSON Schema of type object; one whose properties an MCP
	// form allows (primitives and multi-selects, docs/contract.md) is
	// presented as a form, another is asked as JSON text. AskAs derives
	// it from its type parameter when nil; AskInput requires it.
	Schema json.RawMessage
	// Approvers, when non-empty, are the only principals who may answer.
	Approvers []string
	// Timeout, when positive, is how long the question stays open: the
	// ask then withdraws it and returns ErrExpired. Zero means no
	// deadline.
	Timeout time.Duration
}

func (q InputRequest) spec(kind signals.InterruptKind) QuestionSpec {
	return QuestionSpec{
		Kind:        kind,
		Key:         q.Key,
		NodeID:      q.NodeID,
		Title:       q.Title,
		Description: q.Description,
		Schema:      q.Schema,
		Approvers:   q.Approvers,
		Timeout:     q.Timeout,
	}
}

// AskInput raises a clarification interrupt (status waiting-input) and waits
// for the answer's content. A decline returns ErrDeclined; a cancel answer or
// a run cancellation returns a cancellation error. AskInputFrom also tells
// who answered.
func AskInput(ctx workflow.Context, req InputRequest) (json.RawMessage, error) {
	a, err := AskInputFrom(ctx, req)
	return a.Value, err
}

// Answered is an accepted answer to a question, with who gave it and
// when: what AskInputFrom and AskAsFrom return, as Decision does for
// Approve.
type Answered[T any] struct {
	// Value is the answer's content (decoded into T by AskAsFrom).
	Value T
	// By is who answered: the authenticated subject whose answer the
	// server accepted.
	By signals.Subject
	// At is when the run applied the answer (workflow time).
	At time.Time
}

// AskInputFrom is AskInput returning, with the content, who answered and
// when. A decline returns ErrDeclined.
func AskInputFrom(ctx workflow.Context, req InputRequest) (Answered[json.RawMessage], error) {
	if req.Schema == nil {
		return Answered[json.RawMessage]{}, fmt.Errorf("workflows: input request %q has no schema", req.Key)
	}
	p, err := Raise(ctx, req.spec(signals.KindClarification))
	if err != nil {
		return Answered[json.RawMessage]{}, err
	}
	return answer(ctx, p)
}

// answer waits for p and returns the accepted content with who gave it,
// or ErrDeclined.
func answer(ctx workflow.Context, p *Pending) (Answered[json.RawMessage], error) {
	res, err := p.Wait(ctx)
	if err != nil {
		return Answered[json.RawMessage]{}, err
	}
	if res.Action == signals.ActionDecline {
		return Answered[json.RawMessage]{}, ErrDeclined
	}
	return Answered[json.RawMessage]{Value: res.Content, By: res.ResolvedBy, At: res.ResolvedAt}, nil
}

// AskAs is AskInput decoding the answer into T. When req.Schema is nil it is
// derived from T with FlatSchema, and opts add rules to it (WithRange,
// WithLength, WithEnum, WithDefault, WithDescription: the options of a
// tool's input), which the question the agent sees and the check of its
// answer share; opts with a req.Schema are an error. AskAsFrom also tells
// who answered.
func AskAs[T any](ctx workflow.Context, req InputRequest, opts ...SchemaOption) (T, error) {
	a, err := AskAsFrom[T](ctx, req, opts...)
	return a.Value, err
}

// AskAsFrom is AskAs returning, with the decoded answer, who answered and
// when. A decline returns ErrDeclined. A default of the schema (WithDefault)
// is filled in for an optional property the answer leaves out before the
// answer is decoded.
func AskAsFrom[T any](ctx workflow.Context, req InputRequest, opts ...SchemaOption) (Answered[T], error) {
	switch {
	case req.Schema == nil:
		s, err := FlatSchema[T](opts...)
		if err != nil {
			return Answered[T]{}, fmt.Errorf("question %q: %w", req.Key, err)
		}
		req.Schema = s
	case len(opts) > 0:
		return Answered[T]{}, fmt.Errorf("workflows: question %q has a schema: schema options apply only to one derived from its type", req.Key)
	}
	raw, err := AskInputFrom(ctx, req)
	if err != nil {
		return Answered[T]{}, err
	}
	out := Answered[T]{By: raw.By, At: raw.At}
	if len(raw.Value) > 0 {
		content, err := fillDefaults(req.Schema, raw.Value)
		if err != nil {
			return Answered[T]{}, fmt.Errorf("answer to %q: %w", req.Key, err)
		}
		if err := json.Unmarshal(content, &out.Value); err != nil {
			return Answered[T]{}, fmt.Errorf("decode answer to %q: %w", req.Key, err)
		}
	}
	return out, nil
}

// fillDefaults returns content, an answer to a question asked with schema,
// with the default of every optional property it leaves out filled in;
// content itself when the schema has no default.
func fillDefaults(schema, content json.RawMessage) (json.RawMessage, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("decode its schema: %w", err)
	}
	defaults := false
	for _, p := range s.Properties {
		defaults = defaults || (p != nil && p.Default != nil)
	}
	if !defaults {
		return content, nil
	}
	rs, err := answers.CompileSchema(schema)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(content, &m); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if err := rs.ApplyDefaults(&m); err != nil {
		return nil, fmt.Errorf("fill in defaults: %w", err)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return out, nil
}

// Answer is one answer of AskInputs.
type Answer struct {
	// Content is the accepted content (nil when declined).
	Content json.RawMessage
	// Declined is set when the resolver declined.
	Declined bool
	// By is who answered (or declined).
	By signals.Subject
	// At is when the run applied the answer.
	At time.Time
}

// AskInputs raises every request at once (they are open together, status
// waiting-input) and waits until all are answered, in any order. Answers are
// in the order of reqs, each with who gave it. A cancel answer or a run
// cancellation returns a cancellation error; an elapsed Timeout of one
// request returns ErrExpired, and the questions still open are then
// withdrawn.
func AskInputs(ctx workflow.Context, reqs ...InputRequest) ([]Answer, error) {
	pend := make([]*Pending, 0, len(reqs))
	for _, q := range reqs {
		if q.Schema == nil {
			return nil, fmt.Errorf("workflows: input request %q has no schema", q.Key)
		}
		p, err := Raise(ctx, q.spec(signals.KindClarification))
		if err != nil {
			return nil, err
		}
		pend = append(pend, p)
	}
	out := make([]Answer, len(pend))
	for i, p := range pend {
		res, err := p.Wait(ctx)
		if err != nil {
			for _, rest := range pend[i+1:] {
				rest.r.withdraw(rest, signals.WithdrawnByRun)
			}
			return nil, err
		}
		out[i] = Answer{By: res.ResolvedBy, At: res.ResolvedAt}
		if res.Action == signals.ActionDecline {
			out[i].Declined = true
		} else {
			out[i].Content = res.Content
		}
	}
	return out, nil
}

// ExternalRequest waits for an external event (status waiting-external: no
// human input is outstanding, so MCP shows the task as working). Its fields
// are InputRequest's, except that Schema optionally describes the event's
// content and Approvers, when non-empty, are the only principals who may
// deliver it.
type ExternalRequest InputRequest

// WaitExternal raises an external-event interrupt and waits for its content.
// A decline returns ErrDeclined.
func WaitExternal(ctx workflow.Context, req ExternalRequest) (json.RawMessage, error) {
	p, err := Raise(ctx, InputRequest(req).spec(signals.KindExternalEvent))
	if err != nil {
		return nil, err
	}
	a, err := answer(ctx, p)
	return a.Value, err
}

// FlatSchema derives a flat JSON Schema from the struct type T: an object
// with one primitive property (string, number, integer, boolean) per field,
// descriptions from `jsonschema` tags and required fields as in
// jsonschema.For, then edited by opts (WithRange, WithLength, WithEnum,
// WithDefault, WithDescription, WithSchema). It is the shape MCP form
// elicitation accepts; other field types are an error, and so is an option
// that does not fit (see SchemaOption).
func FlatSchema[T any](opts ...SchemaOption) (json.RawMessage, error) {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, fmt.Errorf("derive schema: %w", err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("derive schema: %T is not a struct", *new(T))
	}
	flat := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}, Required: s.Required}
	for _, name := range s.PropertyOrder {
		p := s.Properties[name]
		switch p.Type {
		case "string", "number", "integer", "boolean":
		default:
			return nil, fmt.Errorf("derive schema: property %q of %T is not a primitive", name, *new(T))
		}
		flat.Properties[name] = p
	}
	if err := applyOptions(flat, opts); err != nil {
		return nil, fmt.Errorf("derive schema of %T: %w", *new(T), err)
	}
	// Encoded as before options existed: type, properties (sorted by
	// name), required.
	raw, err := json.Marshal(struct {
		Type       string                        `json:"type"`
		Properties map[string]*jsonschema.Schema `json:"properties"`
		Required   []string                      `json:"required,omitempty"`
	}{"object", flat.Properties, flat.Required})
	if err != nil {
		return nil, fmt.Errorf("encode schema: %w", err)
	}
	return raw, nil
}
