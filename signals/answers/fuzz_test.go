package answers_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/answers"
)

// FuzzCheckAnswer checks arbitrary answers against interrupts with
// arbitrary schemas and actions (answers.Check), and asks them as a
// client is asked (signals.Interrupt.RequestedSchema): no panic, a refusal
// is an *answers.Error naming the interrupt, an accepted answer is an
// object within the size bound whose action (for a question that asks
// one) is offered, and the requested schema is always a JSON object
// schema.
func FuzzCheckAnswer(f *testing.F) {
	flat := `{"type":"object","properties":{"page":{"type":"boolean"},"n":{"type":"integer","minimum":1,"maximum":5},` +
		`"s":{"type":"string","minLength":2,"maxLength":3},"c":{"type":"string","enum":["a","b"]}},"required":["page"],"additionalProperties":false}`
	nested := `{"type":"object","properties":{"items":{"type":"array","items":{"type":"string"}}},"required":["items"]}`
	for _, c := range []struct{ kind, schema, actions, action, content string }{
		{"clarification", flat, "", "accept", `{"page":true,"n":3,"s":"ab","c":"a"}`},
		{"clarification", flat, "", "accept", `{"page":"yes"}`},
		{"clarification", flat, "", "accept", ``},
		{"clarification", flat, "", "maybe", `{"page":true}`},
		{"clarification", flat, "", "decline", `{"page":"yes"}`},
		{"custom", nested, "", "accept", `{"value":"{\"items\":[\"a\"]}"}`},
		{"custom", nested, "", "accept", `{"value":"items: a"}`},
		{"approval", "", "accept,reject,edit", "accept", `{"action":"edit"}`},
		{"approval", "", "ship,hold", "accept", `{}`},
		{"approval", "", "accept,reject", "accept", `{"action":true}`},
		{"clarification", "", "", "accept", `"text"`},
		{"custom", `{"type":"object","properties":{"a":{"$ref":"#"}}}`, "", "accept", `{"a":{"a":{}}}`},
		{"custom", `{"type":"object","patternProperties":{"^(a+)+$":{"type":"string"}}}`, "", "accept", `{"aaaaaaaaaaaaaaaaaaaaaaaa!":1}`},
		{"custom", `{"type":"object","properties":{"x":{"type":"array","uniqueItems":true}}}`, "", "accept", `{"x":[1,2,3,1]}`},
		{"custom", `{"type":"string"}`, "", "accept", `{}`},
		{"custom", `{"type":"object","$ref":"http://example.com/schema"}`, "", "accept", `{}`},
	} {
		f.Add(c.kind, c.schema, c.actions, c.action, c.content)
	}
	f.Fuzz(func(t *testing.T, kind, schema, actions, action, content string) {
		it := signals.Interrupt{ID: "acme/AAAAAAAAAAAAAAAAAAAAAAAA-i1", Kind: signals.InterruptKind(kind)}
		if schema != "" {
			if !json.Valid([]byte(schema)) {
				return // an interrupt's schema travels as JSON: it is valid
			}
			it.Schema = json.RawMessage(schema)
		}
		if actions != "" {
			it.Actions = strings.Split(actions, ",")
		}
		rs := it.RequestedSchema()
		var asked struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(rs, &asked); err != nil || asked.Type != "object" {
			t.Fatalf("RequestedSchema = %s, not an object schema (%v)", rs, err)
		}
		r := signals.Resolution{InterruptID: it.ID, Action: signals.Action(action), Content: json.RawMessage(content)}
		err := answers.Check(it, r)
		if err != nil {
			var ae *answers.Error
			if !errors.As(err, &ae) || ae.InterruptID != it.ID || ae.Problem == "" {
				t.Fatalf("Check = %v, want an *answers.Error naming the interrupt", err)
			}
			return
		}
		if r.Action != signals.ActionAccept {
			if r.Action != signals.ActionDecline && r.Action != signals.ActionCancel {
				t.Fatalf("accepted the action %q", r.Action)
			}
			return
		}
		checkAccepted(t, it, content)
	})
}

// checkAccepted checks content that Check accepted for it.
func checkAccepted(t *testing.T, it signals.Interrupt, content string) {
	t.Helper()
	c := bytes.TrimSpace([]byte(content))
	if len(c) == 0 || string(c) == "null" {
		c = []byte("{}")
	}
	if len(c) > signals.MaxInputBytes {
		t.Fatalf("accepted %d bytes of content", len(c))
	}
	var obj map[string]any
	if err := json.Unmarshal(c, &obj); err != nil {
		t.Fatalf("accepted content that is not an object: %v", err)
	}
	if it.AsksAction() {
		a, named := obj["action"]
		s, _ := a.(string)
		offered := it.OfferedActions()
		if named && !slices.Contains(offered, s) || !named && !slices.Contains(offered, "accept") {
			t.Fatalf("accepted %s for a question offering %q", c, offered)
		}
	}
}
