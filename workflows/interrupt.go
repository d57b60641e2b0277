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
}

// Pending is an open interrupt raised with Raise.
type Pending struct {
	interrupt signals.Interrupt
	done      bool
	closed    bool
	res       signals.Resolved
}

// Interrupt returns the interrupt as published in the snapshot.
func (p *Pending) Interrupt() signals.Interrupt { return p.interrupt }

// Wait blocks until the interrupt is resolved and returns the applied
// resolution (whatever its action). It returns a cancellation error when ctx
// is cancelled first, or when the resolution's action is cancel (the run is
// then being cancelled with reason mcp-elicitation-cancelled).
func (p *Pending) Wait(ctx workflow.Context) (signals.Resolved, error) {
	if err := workflow.Await(ctx, func() bool { return p.done || p.closed }); err != nil {
		return signals.Resolved{}, err
	}
	if !p.done {
		return signals.Resolved{}, temporal.NewCanceledError()
	}
	if p.res.Action == signals.ActionCancel {
		return p.res, temporal.NewCanceledError()
	}
	return p.res, nil
}

// Raise opens an interrupt and returns without waiting for its resolution:
// it mints the interrupt id (<runId>-i<n>), publishes the interrupt in the
// snapshot, moves the run to the matching waiting status and appends
// node.suspended and interrupt.requested. Several interrupts may be open at
// once; wait for each with Pending.Wait.
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
	p := &Pending{interrupt: in}
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
	return p, nil
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
	return struct {
		signals.Interrupt
		Data         map[string]any  `json:"data"`
		ResumeSchema json.RawMessage `json:"resumeSchema,omitempty"`
	}{in, data, in.Schema}
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
// answer or a run cancellation returns a cancellation error.
func Approve(ctx workflow.Context, req ApprovalRequest) (Decision, error) {
	p, err := Raise(ctx, QuestionSpec{
		Kind:        signals.KindApproval,
		Key:         req.Key,
		NodeID:      req.NodeID,
		Title:       req.Title,
		Description: req.Description,
		Actions:     req.Actions,
		Approvers:   req.Approvers,
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
	// Schema is a JSON Schema of type object with primitive properties, so
	// the mount can present it as a form. AskAs derives it from its type
	// parameter when nil; AskInput requires it.
	Schema json.RawMessage
	// Approvers, when non-empty, are the only principals who may answer.
	Approvers []string
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
// cancellation returns a cancellation error.
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
