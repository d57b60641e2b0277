package answers_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/answers"
)

// TestCheck: an answer is checked against the question the run
// published: the action offered, the content against the schema (type,
// required, enum, additional properties, bounds), JSON text for a schema a
// form cannot ask.
func TestCheck(t *testing.T) {
	flat := signals.Interrupt{ID: "r-i1", Kind: signals.KindClarification, Schema: json.RawMessage(`{"type":"object",
		"properties":{"page":{"type":"boolean"},"n":{"type":"integer","minimum":1,"maximum":5},
		"s":{"type":"string","minLength":2,"maxLength":3},"c":{"type":"string","enum":["a","b"]}},
		"required":["page"],"additionalProperties":false}`)}
	nested := signals.Interrupt{ID: "r-i2", Kind: signals.KindCustom, Schema: json.RawMessage(`{"type":"object",
		"properties":{"items":{"type":"array","items":{"type":"string"}}},"required":["items"]}`)}
	approval := signals.Interrupt{ID: "r-i3", Kind: signals.KindApproval, Actions: []string{"accept", "reject", "edit"}}
	shipOrHold := signals.Interrupt{ID: "r-i5", Kind: signals.KindApproval, Actions: []string{"ship", "hold"}}
	free := signals.Interrupt{ID: "r-i4", Kind: signals.KindClarification}
	tests := []struct {
		name    string
		it      signals.Interrupt
		action  signals.Action
		content string
		rule    string // "" when the answer fits
	}{
		{"fits", flat, signals.ActionAccept, `{"page":true,"n":3,"s":"ab","c":"a"}`, ""},
		{"wrong type", flat, signals.ActionAccept, `{"page":"yes"}`, "type"},
		{"missing required", flat, signals.ActionAccept, `{}`, "required"},
		{"absent content is {}", flat, signals.ActionAccept, ``, "required"},
		{"enum", flat, signals.ActionAccept, `{"page":true,"c":"z"}`, "enum"},
		{"extra property", flat, signals.ActionAccept, `{"page":true,"x":1}`, "additional properties"},
		{"above maximum", flat, signals.ActionAccept, `{"page":true,"n":9}`, "maximum"},
		{"below minimum", flat, signals.ActionAccept, `{"page":true,"n":0}`, "minimum"},
		{"too long", flat, signals.ActionAccept, `{"page":true,"s":"abcd"}`, "s: \"abcd\" is 4 characters long, longer than the maximum length 3"},
		{"too short", flat, signals.ActionAccept, `{"page":true,"s":"a"}`, "s: \"a\" is 1 characters long, shorter than the minimum length 2"},
		{"not an object", flat, signals.ActionAccept, `[true]`, "JSON object"},
		{"unknown action", flat, "maybe", `{"page":true}`, `action "maybe"`},
		{"decline carries nothing to check", flat, signals.ActionDecline, `{"page":"yes"}`, ""},
		{"cancel carries nothing to check", flat, signals.ActionCancel, ``, ""},
		{"nested as itself", nested, signals.ActionAccept, `{"items":["a"]}`, ""},
		{"nested as JSON text", nested, signals.ActionAccept, `{"value":"{\"items\":[\"a\"]}"}`, ""},
		{"nested JSON text off schema", nested, signals.ActionAccept, `{"value":"{\"items\":[1]}"}`, "type"},
		{"nested text not JSON", nested, signals.ActionAccept, `{"value":"items: a"}`, "JSON text"},
		{"nested off schema", nested, signals.ActionAccept, `{"items":"a"}`, "type"},
		{"offered action", approval, signals.ActionAccept, `{"action":"edit"}`, ""},
		{"action not offered", approval, signals.ActionAccept, `{"action":"maybe"}`, "not offered"},
		{"no action decides accept", approval, signals.ActionAccept, ``, ""},
		{"no action, accept not offered", shipOrHold, signals.ActionAccept, `{}`, "required"},
		{"action not a string", approval, signals.ActionAccept, `{"action":true}`, "string"},
		{"no schema takes any object", free, signals.ActionAccept, `{"anything":1}`, ""},
		{"no schema takes an object only", free, signals.ActionAccept, `"text"`, "JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := answers.Check(tt.it, signals.Resolution{InterruptID: tt.it.ID, Action: tt.action, Content: json.RawMessage(tt.content)})
			if tt.rule == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ae *answers.Error
			if !errors.As(err, &ae) || ae.InterruptID != tt.it.ID || !strings.Contains(ae.Problem, tt.rule) {
				t.Fatalf("got %v, want an *answers.Error for %s naming %q", err, tt.it.ID, tt.rule)
			}
		})
	}
}
