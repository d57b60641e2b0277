package signals_test

import (
	"encoding/json"
	"testing"

	"github.com/openwop/temporal-mcp/signals"
)

func TestInterruptQuestion(t *testing.T) {
	approval := `{"properties":{"action":{"enum":["accept","reject"],"type":"string"}},"required":["action"],"type":"object"}`
	flat := `{"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer"}}}`
	tests := []struct {
		name    string
		in      signals.Interrupt
		message string
		schema  string
		client  bool
	}{
		{"approval", signals.Interrupt{Kind: signals.KindApproval, Title: "Ship?", Description: "today"}, "Ship? — today", approval, true},
		{"actions without a schema", signals.Interrupt{Kind: signals.KindCustom, Title: "Pick", Actions: []string{"a", "b"}},
			"Pick", `{"properties":{"action":{"enum":["a","b"],"type":"string"}},"required":["action"],"type":"object"}`, true},
		{"flat schema", signals.Interrupt{Kind: signals.KindClarification, Schema: json.RawMessage(flat)}, "Input requested", flat, true},
		{"nested schema", signals.Interrupt{Kind: signals.KindClarification, Title: "Q",
			Schema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"array"}}}`)}, "Q", signals.FallbackSchema, true},
		{"password", signals.Interrupt{Kind: signals.KindClarification, Title: "Q",
			Schema: json.RawMessage(`{"type":"object","properties":{"p":{"type":"string","format":"password"}}}`)}, "Q", signals.FallbackSchema, true},
		{"no schema", signals.Interrupt{Kind: signals.KindClarification, Title: "Q"}, "Q", signals.FallbackSchema, true},
		{"external event", signals.Interrupt{Kind: signals.KindExternalEvent, Title: "E"}, "E", signals.FallbackSchema, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.Message(); got != tc.message {
				t.Errorf("Message = %q, want %q", got, tc.message)
			}
			if got := string(tc.in.RequestedSchema()); got != tc.schema {
				t.Errorf("RequestedSchema = %s, want %s", got, tc.schema)
			}
			if got := tc.in.ClientAnswered(); got != tc.client {
				t.Errorf("ClientAnswered = %v, want %v", got, tc.client)
			}
		})
	}
}
