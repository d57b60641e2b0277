package mcpmount

import (
	"encoding/json"
	"time"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// projector turns run snapshots into Tasks extension wire shapes (the
// mcp.tasks.status table of the OpenWOP interop map).
type projector struct {
	pollIntervalMs int64
}

func timestamp(t time.Time) string {
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// taskStatus maps a run status onto a task status. An interrupt-waiting run
// with nothing the client can answer reads working.
func taskStatus(snap signals.Snapshot, requests map[string]inputRequest) string {
	switch snap.Status {
	case signals.StatusCompleted:
		return taskCompleted
	case signals.StatusFailed:
		if snap.Error != nil && snap.Error.RPCCode != 0 {
			return taskFailed
		}
		return taskCompleted
	case signals.StatusCancelled:
		return taskCancelled
	case signals.StatusWaitingApproval, signals.StatusWaitingInput:
		if len(requests) > 0 {
			return taskInputRequired
		}
	}
	return taskWorking
}

func (p projector) task(snap signals.Snapshot, status string) task {
	return task{
		TaskID:         runid.Project(snap.RunID),
		Status:         status,
		StatusMessage:  snap.StatusMessage,
		CreatedAt:      timestamp(snap.CreatedAt),
		LastUpdatedAt:  timestamp(snap.UpdatedAt),
		TTLMs:          nil,
		PollIntervalMs: p.pollIntervalMs,
	}
}

// createTask builds the CreateTaskResult for a freshly started run.
func (p projector) createTask(snap signals.Snapshot) *createTaskResult {
	status := taskStatus(snap, inputRequests(snap))
	return &createTaskResult{ResultType: resultTask, task: p.task(snap, status)}
}

// detailedTask builds the tasks/get result.
func (p projector) detailedTask(snap signals.Snapshot) *detailedTaskResult {
	reqs := inputRequests(snap)
	status := taskStatus(snap, reqs)
	res := &detailedTaskResult{ResultType: resultComplete, task: p.task(snap, status)}
	switch status {
	case taskInputRequired:
		res.InputRequests = reqs
	case taskCompleted:
		// The inlined CallToolResult is labelled like a direct answer: the
		// Tasks extension's clients validate it as a complete result.
		res.Result = completeResult(runResult(snap), true)
	case taskFailed:
		res.Error = &taskError{Code: snap.Error.RPCCode, Message: snap.Error.Message}
	}
	return res
}

// runResult is the CallToolResult of a terminal run: what a blocking
// tools/call answers and what a completed task inlines.
func runResult(snap signals.Snapshot) *toolResult {
	res := &toolResult{}
	if snap.Result != nil {
		for _, c := range snap.Result.Content {
			typ := c.Type
			if typ == "" {
				typ = "text"
			}
			res.Content = append(res.Content, content{Type: typ, Text: c.Text})
		}
		res.StructuredContent = snap.Result.StructuredContent
		res.IsError = snap.Result.IsError
	}
	switch snap.Status {
	case signals.StatusCompleted:
		if len(res.Content) == 0 {
			text := string(snap.Outputs)
			if text == "" {
				text = "{}"
			}
			res.Content = []content{{Type: "text", Text: text}}
		}
	case signals.StatusFailed:
		res.IsError = true
		if len(res.Content) == 0 {
			msg := "the run failed"
			if snap.Error != nil && snap.Error.Message != "" {
				msg = snap.Error.Message
			}
			res.Content = []content{{Type: "text", Text: msg}}
		}
	case signals.StatusCancelled:
		res.IsError = true
		res.StructuredContent = nil
		res.Content = []content{{Type: "text", Text: "the run was cancelled"}}
	}
	if res.Content == nil {
		res.Content = []content{}
	}
	return res
}

// inputRequests projects every open interrupt a client can answer onto an
// elicitation/create request keyed by its raw interruptId.
func inputRequests(snap signals.Snapshot) map[string]inputRequest {
	var out map[string]inputRequest
	for _, it := range snap.Interrupts {
		if it.Kind == signals.KindExternalEvent {
			continue
		}
		if out == nil {
			out = make(map[string]inputRequest, len(snap.Interrupts))
		}
		out[it.ID] = inputRequest{
			Method: "elicitation/create",
			Params: elicitParams{Mode: "form", Message: interruptMessage(it), RequestedSchema: interruptSchema(it)},
		}
	}
	return out
}

func interruptMessage(it signals.Interrupt) string {
	msg := it.Title
	if msg == "" {
		msg = "Input requested"
	}
	if it.Description != "" {
		msg += " — " + it.Description
	}
	return msg
}

// interruptSchema is the requestedSchema of an interrupt's elicitation:
// approvals ask for an action, other interrupts for their own schema when
// it is a flat object of primitive properties (the only shape form mode
// allows). Any other schema is asked as one string property "value" holding
// the answer as JSON text.
func interruptSchema(it signals.Interrupt) json.RawMessage {
	if it.Kind == signals.KindApproval || len(it.Schema) == 0 && len(it.Actions) > 0 {
		actions := it.Actions
		if len(actions) == 0 {
			actions = []string{"accept", "reject"}
		}
		b, _ := json.Marshal(map[string]any{
			"type":       "object",
			"properties": map[string]any{"action": map[string]any{"type": "string", "enum": actions}},
			"required":   []string{"action"},
		})
		return b
	}
	if flatPrimitiveSchema(it.Schema) {
		return it.Schema
	}
	return json.RawMessage(fallbackSchema)
}

const fallbackSchema = `{"type":"object","properties":{"value":{"type":"string","description":"the answer, as JSON text"}},"required":["value"]}`

// flatPrimitiveSchema reports whether raw is an object schema whose
// properties are all primitive (string, number, integer, boolean), none of
// them writeOnly or a password.
func flatPrimitiveSchema(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	var s struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type      any    `json:"type"`
			Format    string `json:"format"`
			WriteOnly bool   `json:"writeOnly"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil || s.Type != "object" {
		return false
	}
	for _, p := range s.Properties {
		t, ok := p.Type.(string)
		if !ok || p.WriteOnly || p.Format == "password" {
			return false
		}
		switch t {
		case "string", "number", "integer", "boolean":
		default:
			return false
		}
	}
	return true
}
