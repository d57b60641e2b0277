package answers_test

import (
	"encoding/json"
	"errors"
	"os"
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

// TestCheckForm: an answer to a form MCP 2025-11-25 allows, as
// server-everything's trigger-elicitation-request asks it, is checked
// against its fields, a refusal naming the field: required, enums of
// single and multi-selects, item counts, bounds.
func TestCheckForm(t *testing.T) {
	schema, err := os.ReadFile("testdata/everything-elicitation.json")
	if err != nil {
		t.Fatal(err)
	}
	it := signals.Interrupt{ID: "r-i1", Kind: signals.KindClarification, Schema: schema}
	if it.AsksText() {
		t.Fatalf("server-everything's schema is asked as JSON text, want a form")
	}
	tests := []struct {
		name    string
		content string
		problem string // "" when the answer fits
	}{
		{"required only", `{"name":"Ada"}`, ""},
		{"every field", `{"name":"Ada","check":true,"firstLine":"Once","email":"ada@example.com","homepage":"https://example.com",
			"birthdate":"1815-12-10","integer":7,"number":2.5,"untitledSingleSelectEnum":"Ross","untitledMultipleSelectEnum":["Piano","Bass"],
			"titledSingleSelectEnum":"hero-3","titledMultipleSelectEnum":["fish-1","fish-3"],"legacyTitledEnum":"pet-2"}`, ""},
		{"missing required", `{"check":true}`, "content: name is required"},
		{"single select outside its enum", `{"name":"Ada","untitledSingleSelectEnum":"Janice"}`, "untitledSingleSelectEnum: Janice is not one of the values its enum allows: Monica Rachel"},
		{"titled single select outside its consts", `{"name":"Ada","titledSingleSelectEnum":"hero-9"}`,
			"titledSingleSelectEnum: the value is not one of those its oneOf allows"},
		{"multi-select item outside its enum", `{"name":"Ada","untitledMultipleSelectEnum":["Piano","Banjo"]}`,
			"untitledMultipleSelectEnum[]: Banjo is not one of the values its enum allows: Guitar Piano"},
		{"titled multi-select item outside its consts", `{"name":"Ada","titledMultipleSelectEnum":["fish-1","fish-9"]}`,
			"titledMultipleSelectEnum[]: fish-9 is not one of the values allowed: fish-1 fish-2 fish-3"},
		{"too many items", `{"name":"Ada","untitledMultipleSelectEnum":["Guitar","Piano","Violin","Drums"]}`,
			"untitledMultipleSelectEnum: has 4 items, more than the maximum 3"},
		{"too few items", `{"name":"Ada","titledMultipleSelectEnum":[]}`, "titledMultipleSelectEnum: has 0 items, fewer than the minimum 1"},
		{"multi-select not an array", `{"name":"Ada","untitledMultipleSelectEnum":"Guitar"}`,
			"untitledMultipleSelectEnum: Guitar is of type string; its type must be array"},
		{"above maximum", `{"name":"Ada","integer":101}`, "integer: 101 is more than the maximum 100"},
		{"JSON text is not taken for a form", `{"value":"{\"name\":\"Ada\"}"}`, "name is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := answers.Check(it, signals.Resolution{InterruptID: it.ID, Action: signals.ActionAccept, Content: json.RawMessage(tt.content)})
			if tt.problem == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ae *answers.Error
			if !errors.As(err, &ae) || !strings.Contains(ae.Problem, tt.problem) {
				t.Fatalf("got %v, want a refusal naming %q", err, tt.problem)
			}
			t.Logf("%s", ae.Problem)
		})
	}
}
