package signals_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/openwop/temporal-mcp/signals"
)

func TestInterruptQuestion(t *testing.T) {
	approval := `{"properties":{"action":{"enum":["accept","reject"],"type":"string"}},"required":["action"],"type":"object"}`
	flat := `{"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer"}}}`
	password := `{"type":"object","properties":{"p":{"type":"string","format":"password"}}}`
	uuid := `{"type":"object","properties":{"id":{"type":"string","format":"uuid"}}}`
	dated := `{"type":"object","properties":{"on":{"type":"string","format":"date"}}}`
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
			Schema: json.RawMessage(`{"type":"object",
				"properties":{"a":{"type":"array"}}}`)}, "Q", asText(`{"type":"object","properties":{"a":{"type":"array"}}}`), true},
		{"password", signals.Interrupt{Kind: signals.KindClarification, Title: "Q",
			Schema: json.RawMessage(password)}, "Q", asText(password), true},
		{"uuid format", signals.Interrupt{Kind: signals.KindClarification, Title: "Q",
			Schema: json.RawMessage(uuid)}, "Q", asText(uuid), true},
		{"date format", signals.Interrupt{Kind: signals.KindClarification, Title: "Q",
			Schema: json.RawMessage(dated)}, "Q", dated, true},
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

// asText is the requestedSchema of a question whose schema is not a form:
// {"value": JSON text}, the schema given in its description.
func asText(schema string) string {
	return `{"properties":{"value":{"description":"the answer, as JSON text valid against this JSON Schema: ` +
		jsonString(schema) + `","type":"string"}},"required":["value"],"type":"object"}`
}

// jsonString is s as the inside of a JSON string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// TestFormSchema: a schema is asked as a form when MCP 2025-11-25
// elicitation allows each of its properties (server-everything's
// trigger-elicitation-request asks with all of them); any other as JSON
// text.
func TestFormSchema(t *testing.T) {
	everything, err := os.ReadFile("answers/testdata/everything-elicitation.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		schema string
		form   bool
	}{
		{"server-everything's", string(everything), true},
		{"string with format and length", `{"type":"object","properties":{"e":{"type":"string","format":"email","minLength":3,"maxLength":9}}}`, true},
		{"number and integer with bounds", `{"type":"object","properties":{"n":{"type":"number","minimum":0},"i":{"type":"integer","maximum":9}}}`, true},
		{"boolean with a default", `{"type":"object","properties":{"b":{"type":"boolean","default":true}}}`, true},
		{"titled single select", `{"type":"object","properties":{"s":{"type":"string","oneOf":[{"const":"a","title":"A"}]}}}`, true},
		{"legacy titled enum", `{"type":"object","properties":{"s":{"type":"string","enum":["a"],"enumNames":["A"]}}}`, true},
		{"untitled multi-select", `{"type":"object","properties":{"m":{"type":"array","minItems":1,"maxItems":2,
			"items":{"type":"string","enum":["a","b","c"]},"default":["a"]}}}`, true},
		{"titled multi-select", `{"type":"object","properties":{"m":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"}]}}}}`, true},
		{"array of any string", `{"type":"object","properties":{"m":{"type":"array","items":{"type":"string"}}}}`, false},
		{"array without items", `{"type":"object","properties":{"m":{"type":"array"}}}`, false},
		{"array of numbers of an enum", `{"type":"object","properties":{"m":{"type":"array","items":{"type":"number","enum":[1,2]}}}}`, false},
		{"multi-select of a non-string enum", `{"type":"object","properties":{"m":{"type":"array","items":{"enum":["a",1]}}}}`, false},
		{"multi-select of a non-string const", `{"type":"object","properties":{"m":{"type":"array","items":{"anyOf":[{"const":1,"title":"A"}]}}}}`, false},
		{"multi-select of untyped enum items", `{"type":"object","properties":{"m":{"type":"array","items":{"enum":["a","b"]}}}}`, false},
		{"multi-select of untitled consts", `{"type":"object","properties":{"m":{"type":"array","items":{"anyOf":[{"const":"a"}]}}}}`, false},
		{"multi-select of an empty const", `{"type":"object","properties":{"m":{"type":"array","items":{"anyOf":[{"const":"","title":"A"}]}}}}`, false},
		{"multi-select of enum and anyOf", `{"type":"object","properties":{"m":{"type":"array","items":{"type":"string","enum":["a"],"anyOf":[{"const":"a","title":"A"}]}}}}`, false},
		{"array of objects", `{"type":"object","properties":{"m":{"type":"array","items":{"type":"object"}}}}`, false},
		{"object property", `{"type":"object","properties":{"o":{"type":"object"}}}`, false},
		{"type list", `{"type":"object","properties":{"o":{"type":["string","null"]}}}`, false},
		{"writeOnly", `{"type":"object","properties":{"p":{"type":"string","writeOnly":true}}}`, false},
		{"not an object", `{"type":"string"}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			it := signals.Interrupt{Kind: signals.KindClarification, Schema: json.RawMessage(tc.schema)}
			if got := it.AsksText(); got == tc.form {
				t.Errorf("AsksText = %v, want %v", got, !tc.form)
			}
			got := string(it.RequestedSchema())
			var compact bytes.Buffer
			_ = json.Compact(&compact, []byte(tc.schema))
			want := tc.schema
			if !tc.form {
				want = asText(compact.String())
			}
			if got != want {
				t.Errorf("RequestedSchema = %s, want %s", got, want)
			}
		})
	}
}
