package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/answers"
	"github.com/openwop/temporal-mcp/workflows"
)

// An upstream's elicitation/create (form mode) is the run's question:
// the activity's session hands it to the run of the call that asks with
// the workflow update elicitUpdate, whose handler asks it
// (workflows.Raise: a clarification with the upstream's message and
// schema, answers checked as every question's) and returns the answer,
// which the session gives the upstream as the elicitation's result.

// elicitUpdate is the workflow update by which a call's activity asks
// its run the upstream's question.
const elicitUpdate = "openwop-upstream-elicit"

// Elicitation is an upstream's form elicitation, as the run's history
// keeps it (the update's argument). Call is the progress token of the
// attempt that relays it.
type Elicitation struct {
	Call    string          `json:"call"`
	Message string          `json:"message"`
	Schema  json.RawMessage `json:"requestedSchema"`
}

// ElicitAnswer is the answer to an Elicitation (the update's result):
// accept with its content, decline or cancel.
type ElicitAnswer struct {
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content,omitempty"`
}

// asked is an Elicitation the run has received.
type asked struct {
	e       Elicitation
	pending *workflows.Pending // once asked
	ans     ElicitAnswer
	done    bool
}

// elicitations are the upstream's elicitations of a run's call.
type elicitations struct {
	queue   []*asked // received, not yet asked
	open    []*asked // asked, not yet answered
	stopped bool     // no more are asked: the run's context ended
}

// serveElicitations makes the run answer elicitUpdate for as long as ctx
// lasts: each update's Elicitation is asked as a question of its own (key
// upstream-elicitation-<n>, in the order they came), and the update
// returns its answer; one that comes once ctx has ended answers cancel.
// It adds no command to the run's history until an update comes.
func serveElicitations(ctx workflow.Context) (*elicitations, error) {
	es := &elicitations{}
	handler := func(uctx workflow.Context, e Elicitation) (ElicitAnswer, error) {
		a := &asked{e: e}
		es.queue = append(es.queue, a)
		if err := workflow.Await(uctx, func() bool { return a.done || es.stopped }); err != nil || !a.done {
			return ElicitAnswer{Action: "cancel"}, nil
		}
		return a.ans, nil
	}
	validate := func(e Elicitation) error {
		var s map[string]json.RawMessage
		if json.Unmarshal(e.Schema, &s) != nil {
			return errors.New("the requested schema is not a JSON object")
		}
		return nil
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, elicitUpdate, handler,
		workflow.UpdateHandlerOptions{Validator: validate}); err != nil {
		return nil, fmt.Errorf("upstream: elicitation handler: %w", err)
	}
	workflow.GoNamed(ctx, "upstream-elicitations", func(c workflow.Context) {
		defer func() { es.stopped = true }()
		for n := 1; ; n++ {
			if workflow.Await(c, func() bool { return len(es.queue) > 0 }) != nil {
				return
			}
			a := es.queue[0]
			es.queue = es.queue[1:]
			// The questions of an attempt that has ended go.
			es.withdraw(func(o *asked) bool { return o.e.Call != a.e.Call })
			es.open = append(es.open, a)
			key := fmt.Sprintf("upstream-elicitation-%d", n)
			workflow.GoNamed(c, key, func(c workflow.Context) {
				a.ans, a.done = es.ask(c, key, a), true
			})
		}
	})
	return es, nil
}

// withdraw withdraws the open questions that match: nobody waits for
// their answer any more.
func (es *elicitations) withdraw(match func(*asked) bool) {
	for _, o := range es.open {
		if match(o) && o.pending != nil {
			o.pending.Withdraw()
		}
	}
}

// ask asks a's Elicitation as the run's question key and returns the
// answer: a decline is a decline, and anything else that ends the
// question (a cancel answer, the run's cancellation, its withdrawal, a
// question that cannot be asked) is a cancel.
func (es *elicitations) ask(ctx workflow.Context, key string, a *asked) ElicitAnswer {
	defer func() {
		es.open = slices.DeleteFunc(es.open, func(o *asked) bool { return o == a })
	}()
	p, err := workflows.Raise(ctx, workflows.QuestionSpec{Kind: signals.KindClarification, Key: key, Title: a.e.Message, Schema: a.e.Schema})
	if err == nil {
		a.pending = p
		var res signals.Resolved
		res, err = p.Wait(ctx)
		switch {
		case err == nil && res.Action == signals.ActionDecline:
			return ElicitAnswer{Action: "decline"}
		case err == nil:
			return ElicitAnswer{Action: "accept", Content: fromText(p.Interrupt(), res.Content)}
		}
	}
	workflow.GetLogger(ctx).Info("Upstream elicitation answered cancel", "key", key, "error", err)
	return ElicitAnswer{Action: "cancel"}
}

// inflight is a call of an upstream tool in flight: the activity that
// makes it.
type inflight struct {
	ctx        context.Context // the activity's
	workflowID string
	runID      string
	token      string // the call's progress token: unique per attempt
	mu         sync.Mutex
	asked      int // elicitations relayed so far
}

// updateID is the id of the update of the call's next elicitation.
func (f *inflight) updateID() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked++
	return fmt.Sprintf("%s/elicitation-%d", f.token, f.asked)
}

// begin records the activity of ctx as a call in flight of c until the
// returned func is called.
func (c *conn) begin(ctx context.Context, token string) (end func()) {
	info := activity.GetInfo(ctx)
	f := &inflight{ctx: ctx, workflowID: info.WorkflowExecution.ID, runID: info.WorkflowExecution.RunID, token: token}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[*inflight]bool{}
	}
	c.calls[f] = true
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.calls, f)
	}
}

// asking is the call an elicitation belongs to: the one whose progress
// token its _meta carries (callStreams marks it so), or else the one call
// in flight. An elicitation/create names no request of the client's, so
// on stdio, with several calls in flight at once, there is no telling
// which one asks.
func (c *conn) asking(meta mcp.Meta) (*inflight, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if token, ok := meta[metaCall].(string); ok {
		for f := range c.calls {
			if f.token == token {
				return f, nil
			}
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "elicitation refused: the call that asks has ended"}
	}
	if len(c.calls) != 1 {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"elicitation refused: %d calls are in flight on this session, and an elicitation does not say which one asks", len(c.calls))}
	}
	for f := range c.calls {
		return f, nil
	}
	return nil, nil
}

// onElicit relays an upstream's form elicitation to the run of the call
// in flight and answers with the run's answer. When the call ends first
// (its run was cancelled) the answer is cancel.
func (c *conn) onElicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if m := req.Params.Mode; m != "" && m != "form" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("elicitation mode %q is not relayed: only form", m)}
	}
	f, err := c.asking(req.Params.Meta)
	if err != nil {
		return nil, err
	}
	return c.relay(ctx, f, req.Params)
}

// relay asks the run of the call f the elicitation p and returns the
// run's answer: cancel when the call ends first.
func (c *conn) relay(ctx context.Context, f *inflight, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	schema, err := json.Marshal(p.RequestedSchema)
	if err != nil || p.RequestedSchema == nil {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(f.ctx, cancel)
	defer stop()
	h, err := activity.GetClient(f.ctx).UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   f.workflowID,
		RunID:        f.runID,
		UpdateID:     f.updateID(),
		UpdateName:   elicitUpdate,
		Args:         []any{Elicitation{Call: f.token, Message: p.Message, Schema: schema}},
		WaitForStage: client.WorkflowUpdateStageAccepted,
	})
	var ans ElicitAnswer
	if err == nil {
		err = h.Get(ctx, &ans)
	}
	switch {
	case ctx.Err() != nil:
		return &mcp.ElicitResult{Action: "cancel"}, nil
	case err != nil:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the run could not ask the question: %v", err)}
	}
	res := &mcp.ElicitResult{Action: ans.Action}
	if ans.Action == "accept" {
		if err := json.Unmarshal(ans.Content, &res.Content); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the answer's content does not decode: %v", err)}
		}
	}
	return res, nil
}

// fromText is the content of an accepted answer as the upstream asked
// for it. A question whose schema is not a form (signals.Interrupt.AsksText)
// is asked as JSON text: its answer {"value": "<JSON text>"}, checked
// against the upstream's schema, is the content that text holds. The rule
// is the content's, not the question's, so that an answer given as text
// before the form rule took multi-selects still reaches the upstream as the
// object when the run replays.
func fromText(in signals.Interrupt, content json.RawMessage) json.RawMessage {
	if len(content) == 0 || string(content) == "null" {
		return json.RawMessage(`{}`)
	}
	var obj map[string]json.RawMessage
	var text string
	if json.Unmarshal(content, &obj) != nil || len(obj) != 1 || json.Unmarshal(obj["value"], &text) != nil {
		return content
	}
	rs, err := answers.CompileSchema(in.Schema)
	var v, answer any
	if err != nil || json.Unmarshal(content, &v) != nil || rs.Validate(v) == nil || json.Unmarshal([]byte(text), &answer) != nil {
		return content
	}
	return json.RawMessage(text)
}

// metaCall is the _meta key by which callStreams marks an elicitation
// with the progress token of the call whose response stream carried it.
const metaCall = "io.openwop/call"

// callStreams is the http.RoundTripper of a streamable HTTP upstream that
// tells its elicitations apart: an upstream sends a call's elicitation on
// the response stream of the POST of that tools/call, so each
// elicitation/create read from such a stream is marked (metaCall in its
// _meta) with the call's progress token.
type callStreams struct{ next http.RoundTripper }

func (t callStreams) RoundTrip(req *http.Request) (*http.Response, error) {
	var token json.RawMessage
	if req.Method == http.MethodPost && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Meta struct {
					ProgressToken json.RawMessage `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" {
			token = msg.Params.Meta.ProgressToken
		}
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil || len(token) == 0 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, err
	}
	resp.Body = markElicitations(resp.Body, token)
	return resp, nil
}

// markElicitations is body, an SSE stream, with each elicitation/create
// request marked with token.
func markElicitations(body io.ReadCloser, token json.RawMessage) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		r := bufio.NewReader(body)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				if _, werr := pw.Write(markLine(line, token)); werr != nil {
					return
				}
			}
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				_ = pw.CloseWithError(err)
				return
			}
		}
	}()
	return readCloser{pr, func() error { _ = pr.Close(); return body.Close() }}
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// markLine is an SSE line, marked with token when it is the data of an
// elicitation/create request.
func markLine(line []byte, token json.RawMessage) []byte {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok || !bytes.Contains(data, []byte(`"elicitation/create"`)) {
		return line
	}
	var msg map[string]json.RawMessage
	var params map[string]json.RawMessage
	if json.Unmarshal(data, &msg) != nil || string(msg["method"]) != `"elicitation/create"` || json.Unmarshal(msg["params"], &params) != nil {
		return line
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := params["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return line
	}
	meta[metaCall] = token
	var err error
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return line
	}
	if msg["params"], err = json.Marshal(params); err != nil {
		return line
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return line
	}
	return append(append([]byte("data: "), out...), '\n')
}
