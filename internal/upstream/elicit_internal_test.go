package upstream

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/signals"
)

func TestMarkLine(t *testing.T) {
	token := json.RawMessage(`"run/1/1"`)
	tests := []struct{ name, line, want string }{
		{"elicitation", `data: {"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{"message":"m"}}` + "\n",
			`data: {"id":3,"jsonrpc":"2.0","method":"elicitation/create","params":{"_meta":{"io.openwop/call":"run/1/1"},"message":"m"}}` + "\n"},
		{"elicitation with _meta", `data:{"jsonrpc":"2.0","id":4,"method":"elicitation/create","params":{"_meta":{"k":1},"message":"m"}}` + "\n",
			`data: {"id":4,"jsonrpc":"2.0","method":"elicitation/create","params":{"_meta":{"io.openwop/call":"run/1/1","k":1},"message":"m"}}` + "\n"},
		{"progress", `data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}` + "\n", ""},
		{"text naming the method", `data: {"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\"elicitation/create\""}]}}` + "\n", ""},
		{"event line", "event: message\n", ""},
		{"not JSON", "data: elicitation/create\"elicitation/create\"\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == "" {
				want = tc.line
			}
			if got := string(markLine([]byte(tc.line), token)); got != want {
				t.Fatalf("markLine(%q) = %q, want %q", tc.line, got, want)
			}
		})
	}
	// A stream is passed on line by line, whatever the reads.
	body := "event: message\ndata: " + `{"jsonrpc":"2.0","id":3,"method":"elicitation/create","params":{}}` + "\n\nid: 2\n"
	out, err := io.ReadAll(markElicitations(io.NopCloser(io.LimitReader(strings.NewReader(body), int64(len(body)))), token))
	if err != nil || !strings.Contains(string(out), `"_meta":{"io.openwop/call":"run/1/1"}`) || !strings.HasSuffix(string(out), "\n\nid: 2\n") {
		t.Fatalf("markElicitations = %q, %v", out, err)
	}
}

func TestFromText(t *testing.T) {
	multi := `{"type":"object","properties":{"name":{"type":"string"},"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}}},"required":["name"]}`
	nested := `{"type":"object","properties":{"name":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}},"required":["name"]}`
	flat := `{"type":"object","properties":{"name":{"type":"string"}}}`
	tests := []struct{ name, schema, content, want string }{
		{"flat form", flat, `{"name":"Ada"}`, `{"name":"Ada"}`},
		{"flat form whose answer is a value", `{"type":"object","properties":{"value":{"type":"string"}}}`, `{"value":"{}"}`, `{"value":"{}"}`},
		{"multi-select form", multi, `{"name":"Ada","tags":["a"]}`, `{"name":"Ada","tags":["a"]}`},
		{"multi-select form answered as text before it was a form", multi, `{"value":"{\"name\":\"Ada\",\"tags\":[\"a\"]}"}`, `{"name":"Ada","tags":["a"]}`},
		{"asked as JSON text", nested, `{"value":"{\"name\":\"Ada\",\"tags\":[\"x\"]}"}`, `{"name":"Ada","tags":["x"]}`},
		{"asked as JSON text, answered as the object", nested, `{"name":"Ada"}`, `{"name":"Ada"}`},
		{"text that is not JSON", nested, `{"value":"Ada"}`, `{"value":"Ada"}`},
		{"no content", flat, ``, `{}`},
		{"null content", flat, `null`, `{}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := signals.Interrupt{Kind: signals.KindClarification, Schema: json.RawMessage(tc.schema)}
			if got := string(fromText(in, json.RawMessage(tc.content))); got != tc.want {
				t.Fatalf("fromText(%s) = %s, want %s", tc.content, got, tc.want)
			}
		})
	}
}
