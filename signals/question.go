package signals

import (
	"bytes"
	"cmp"
	"encoding/json"
)

// How a client is asked to answer an open interrupt (docs/contract.md, "How
// MCP shows an open interrupt"): the message and requestedSchema of the MCP
// elicitation that stands for it. The mount asks every dialect's question
// with these, and the test kit (package workflows/workflowstest) shows a
// tool's questions the same way.

// FallbackSchema is the requestedSchema of an interrupt with no schema
// that asks no action: one string property "value" holding the answer as
// JSON text. An interrupt whose schema is not a form (AsksText) is asked
// the same way, its own schema given in the property's description
// (RequestedSchema).
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

// AsksText reports whether the interrupt is asked as JSON text (its
// RequestedSchema has the one property "value"): it asks no action and
// its schema is absent or not a form (see RequestedSchema).
func (i Interrupt) AsksText() bool {
	return !i.AsksAction() && !formSchema(i.Schema)
}

// RequestedSchema is the JSON Schema of the answer a client is asked for:
//   - an interrupt that AsksAction asks for {"action": one of
//     OfferedActions};
//   - one whose schema is a form, as MCP 2025-11-25 elicitation allows
//     (an object whose properties are each a string, number, integer or
//     boolean, none writeOnly, with no format but email, uri, date and
//     date-time, or a multi-select: an array
//     whose items are strings of an enum or an anyOf of titled consts), is asked
//     with its own schema;
//   - one with another schema is asked for {"value": the answer as JSON
//     text}, the description of "value" holding its schema (compact
//     JSON), so that the asker knows what to send;
//   - one with none is asked with FallbackSchema.
func (i Interrupt) RequestedSchema() json.RawMessage {
	if i.AsksAction() {
		b, _ := json.Marshal(map[string]any{
			"type":       "object",
			"properties": map[string]any{"action": map[string]any{"type": "string", "enum": i.OfferedActions()}},
			"required":   []string{"action"},
		})
		return b
	}
	if formSchema(i.Schema) {
		return i.Schema
	}
	var compact bytes.Buffer
	if json.Compact(&compact, i.Schema) != nil || compact.Len() == 0 {
		return json.RawMessage(FallbackSchema)
	}
	b, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{"value": map[string]any{"type": "string",
			"description": "the answer, as JSON text valid against this JSON Schema: " + compact.String()}},
		"required": []string{"value"},
	})
	return b
}

// formField is a property of a schema, as far as the form rule looks.
type formField struct {
	Type      any        `json:"type"`
	Format    string     `json:"format"`
	WriteOnly bool       `json:"writeOnly"`
	Items     *formField `json:"items"`
	Enum      []any      `json:"enum"`
	AnyOf     []struct {
		Const any    `json:"const"`
		Title string `json:"title"`
	} `json:"anyOf"`
}

// formSchema reports whether raw is an object schema that an MCP form can
// ask: each of its properties a form field (isFormField).
func formSchema(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	var s struct {
		Type       string               `json:"type"`
		Properties map[string]formField `json:"properties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil || s.Type != "object" {
		return false
	}
	for _, p := range s.Properties {
		if !p.isFormField() {
			return false
		}
	}
	return true
}

// formFormats are the string formats an MCP 2025-11-25 form field may
// have (none, or one a client renders); a password, a uuid or any other
// is asked as JSON text, since clients refuse the form.
var formFormats = map[string]bool{"": true, "email": true, "uri": true, "date": true, "date-time": true}

// isFormField reports whether f is a primitive (string, number, integer,
// boolean) with no format but formFormats, none writeOnly, or a multi-select: an array
// whose items are strings of an enum or an anyOf of titled string consts
// (selectsStrings).
func (f formField) isFormField() bool {
	t, ok := f.Type.(string)
	if !ok || f.WriteOnly || !formFormats[f.Format] {
		return false
	}
	switch t {
	case "string", "number", "integer", "boolean":
		return true
	case "array":
		return f.Items != nil && f.Items.selectsStrings()
	}
	return false
}

// selectsStrings reports whether f, the items of a multi-select, is
// {"type":"string","enum":[strings]} or {"anyOf":[{"const":string,
// "title":string}]}, as MCP 2025-11-25 has them.
func (f formField) selectsStrings() bool {
	switch {
	case f.WriteOnly:
		return false
	case f.Type == "string" && len(f.Enum) > 0 && len(f.AnyOf) == 0:
		for _, v := range f.Enum {
			if _, ok := v.(string); !ok {
				return false
			}
		}
		return true
	case f.Type == nil && len(f.Enum) == 0 && len(f.AnyOf) > 0:
		for _, c := range f.AnyOf {
			if v, ok := c.Const.(string); !ok || v == "" || c.Title == "" {
				return false
			}
		}
		return true
	}
	return false
}
