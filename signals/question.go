package signals

import (
	"cmp"
	"encoding/json"
)

// How a client is asked to answer an open interrupt (docs/contract.md, "How
// MCP shows an open interrupt"): the message and requestedSchema of the MCP
// elicitation that stands for it. The mount asks every dialect's question
// with these, and the test kit (package workflows/workflowstest) shows a
// tool's questions the same way.

// FallbackSchema is the requestedSchema of an interrupt whose own schema
// is not a flat object of primitive properties (or that has none): one
// string property "value" holding the answer as JSON text.
const FallbackSchema = `{"type":"object","properties":{"value":{"type":"string","description":"the answer, as JSON text"}},"required":["value"]}`

// ClientAnswered reports whether a client answers the interrupt: every
// kind but external-event, which some other system answers over REST.
func (i Interrupt) ClientAnswered() bool { return i.Kind != KindExternalEvent }

// Message is the message a client is shown for the interrupt: its title
// ("Input requested" when it has none), then " — " and the description
// when there is one.
func (i Interrupt) Message() string {
	msg := cmp.Or(i.Title, "Input requested")
	if i.Description != "" {
		msg += " — " + i.Description
	}
	return msg
}

// AsksAction reports whether the interrupt is answered with one of its
// actions: an approval, or an interrupt with actions and no schema.
func (i Interrupt) AsksAction() bool {
	return i.Kind == KindApproval || len(i.Schema) == 0 && len(i.Actions) > 0
}

// OfferedActions are the actions of an interrupt that AsksAction: its
// Actions, or accept and reject when it names none.
func (i Interrupt) OfferedActions() []string {
	if len(i.Actions) == 0 {
		return []string{"accept", "reject"}
	}
	return append([]string(nil), i.Actions...)
}

// AsksText reports whether the interrupt is asked with FallbackSchema: it
// asks no action and its schema is absent or not a flat object of
// primitive properties.
func (i Interrupt) AsksText() bool {
	return !i.AsksAction() && !flatPrimitiveSchema(i.Schema)
}

// RequestedSchema is the JSON Schema of the answer a client is asked for:
// an interrupt that AsksAction asks for {"action": one of
// OfferedActions}; another interrupt with a flat object schema of
// primitive properties (the only shape an MCP form allows) is asked with
// its own schema; any other is asked with FallbackSchema.
func (i Interrupt) RequestedSchema() json.RawMessage {
	if i.AsksAction() {
		b, _ := json.Marshal(map[string]any{
			"type":       "object",
			"properties": map[string]any{"action": map[string]any{"type": "string", "enum": i.OfferedActions()}},
			"required":   []string{"action"},
		})
		return b
	}
	if flatPrimitiveSchema(i.Schema) {
		return i.Schema
	}
	return json.RawMessage(FallbackSchema)
}

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
