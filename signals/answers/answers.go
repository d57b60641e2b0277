// Package answers is the contract's rule for an answer to a question a run
// asks: whether a signals.Resolution fits the signals.Interrupt it answers
// (Check), and how a schema of the contract is compiled (CompileSchema).
//
// Every side that takes an answer applies the same rule before the answer
// reaches the run: the run service and the REST API of the server, the
// author's test kit (workflows/workflowstest), which shows a tool's
// questions as an agent sees them, and a worker written against the
// contract. It needs nothing but the contract (package signals) and a JSON
// Schema validator, so none of them imports the run service for it.
package answers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/openwop/temporal-mcp/signals"
)

// Error is the refusal of an answer that does not fit the question
// it answers: an action the question does not offer, or content outside
// the schema the run published with the interrupt. Nothing was signalled:
// the question stays open and the run never sees the answer. Edges map it
// to their "invalid input" error (MCP -32602, REST 400 validation_error).
type Error struct {
	// InterruptID is the interrupt the answer was for.
	InterruptID string
	// Problem names the rule the answer breaks, e.g. `action "maybe" is
	// not offered (offered: accept, reject)` or the schema validation
	// error.
	Problem string
	// Err is the schema validation error, when there is one.
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("answer to interrupt %q refused: %s", e.InterruptID, e.Problem)
}

// Unwrap returns the schema validation error.
func (e *Error) Unwrap() error { return e.Err }

// Check checks a resolution against the interrupt it answers, as the run
// published it, and returns an *Error when it does not fit. It is the
// check every answer passes before it is signalled (the run service's
// Resolve, with Held or not, and a Backend of tests); an edge that
// resolves several answers in one request calls it for each first, so
// that a refused one resolves none.
//
// The action must be accept, decline or cancel; decline and cancel carry
// no content to check. An accepted answer's content (absent means {}) must
// be a JSON object of at most signals.MaxInputBytes bytes, and:
//   - for an interrupt that asks an action (signals.Interrupt.AsksAction),
//     {"action": one of the offered actions}, or no action at all when
//     "accept" is offered (an accept that names none decides accept);
//   - for one with a schema, valid against that schema (type, required,
//     enum, additionalProperties, bounds, ...); an interrupt asked as JSON
//     text (signals.Interrupt.AsksText) also takes {"value": "<JSON
//     text>"} whose text is valid against it;
//   - for one with neither, any object.
func Check(it signals.Interrupt, r signals.Resolution) error {
	refuse := func(err error, format string, args ...any) error {
		return &Error{InterruptID: it.ID, Problem: fmt.Sprintf(format, args...), Err: err}
	}
	switch r.Action {
	case signals.ActionAccept:
	case signals.ActionDecline, signals.ActionCancel:
		return nil
	default:
		return refuse(nil, "action %q is not one of accept, decline, cancel", r.Action)
	}
	content := bytes.TrimSpace(r.Content)
	if len(content) == 0 || bytes.Equal(content, []byte("null")) {
		content = []byte("{}")
	}
	if len(content) > signals.MaxInputBytes {
		return refuse(nil, "content too large: %d bytes, more than the %d bytes accepted", len(content), signals.MaxInputBytes)
	}
	var v any
	if err := json.Unmarshal(content, &v); err != nil {
		return refuse(err, "content is not valid JSON: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return refuse(nil, "content must be a JSON object")
	}
	if it.AsksAction() {
		return checkAction(it, obj, refuse)
	}
	if len(bytes.TrimSpace(it.Schema)) == 0 {
		return nil
	}
	rs, err := CompileSchema(it.Schema)
	if err != nil {
		return refuse(err, "the question's schema is unusable: %v", err)
	}
	verr := rs.Validate(v)
	if verr == nil {
		return nil
	}
	if text, ok := obj["value"].(string); ok && len(obj) == 1 && it.AsksText() {
		var answer any
		if err := json.Unmarshal([]byte(text), &answer); err != nil {
			return refuse(err, "value must hold the answer as JSON text: %v", err)
		}
		if err := rs.Validate(answer); err != nil {
			return refuse(err, "value: %s", Explain(err))
		}
		return nil
	}
	return refuse(verr, "content: %s", Explain(verr))
}

// checkAction checks the content of an accepted answer to a question that
// asks an action.
func checkAction(it signals.Interrupt, obj map[string]any, refuse func(error, string, ...any) error) error {
	offered := it.OfferedActions()
	raw, ok := obj["action"]
	if !ok {
		// An accept that names no action decides "accept" (docs/contract.md
		// §4.3), which the question must offer.
		if slices.Contains(offered, "accept") {
			return nil
		}
		return refuse(nil, "content: required: missing property \"action\" (one of %q)", offered)
	}
	action, ok := raw.(string)
	if !ok {
		return refuse(nil, "content: action must be a string, one of %q", offered)
	}
	if !slices.Contains(offered, action) {
		return refuse(nil, "content: enum: action %q is not offered (offered: %q)", action, offered)
	}
	return nil
}

// CompileSchema compiles a JSON Schema whose type is object, as every
// schema of the contract is: a question's (signals.Interrupt.Schema), a
// tool's input and output schema and a pre-run input's (the catalog
// compiles those with it too).
func CompileSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("decode schema: %w", err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("schema type is %q, want object", s.Type)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("resolve schema: %w", err)
	}
	return rs, nil
}
