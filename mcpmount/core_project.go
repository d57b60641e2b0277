package mcpmount

import (
	"encoding/json"
	"time"

	"github.com/openwop/temporal-mcp/signals"
)

// projector turns run snapshots into the task shapes of the dialects (the
// Tasks extension's in dialect_2026_tasks.go, the 2025-11-25 task methods'
// in dialect_2025_11_25_tasks.go).
type projector struct {
	pollIntervalMs int64
}

func timestamp(t time.Time) string {
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	return t.UTC().Format(time.RFC3339Nano)
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
