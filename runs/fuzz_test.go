package runs

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/signals"
)

// fuzzCursorKey is the cursor key of the fuzz targets' service.
var fuzzCursorKey = []byte("fuzz cursor key, 32 bytes long..")

// FuzzOpenCursor opens arbitrary list cursors (tasks/list, REST listRuns)
// for a tenant and filters: no panic, every refusal wraps ErrBadCursor,
// and a cursor that opens is one this service sealed for that tenant and
// those filters (sealing its page token again gives the same bytes), which
// another tenant cannot open.
func FuzzOpenCursor(f *testing.F) {
	s := &Service{opts: Options{CursorKey: fuzzCursorKey}}
	token := []byte(`{"CloseTime":"2026-01-01T00:00:00Z","RunID":"r1"}`)
	req := ListRequest{Tool: "greet", Status: signals.StatusCompleted}
	f.Add("acme", "greet", "completed", s.sealCursor("acme", req, token))
	f.Add("acme", "", "", s.sealCursor("acme", ListRequest{}, token))
	f.Add("acme", "", "", "garbage")
	f.Add("acme", "", "", "!!!")
	f.Add("acme", "", "", base64.RawURLEncoding.EncodeToString([]byte("short")))
	f.Add("acme", "", "", base64.StdEncoding.EncodeToString(token))
	f.Add("acme", "", "", strings.Repeat("A", maxCursorLen+1))
	f.Fuzz(func(t *testing.T, tenant, tool, status, cursor string) {
		req := ListRequest{Tool: tool, Status: signals.Status(status), Cursor: cursor}
		got, err := s.openCursor(tenant, req, cursor)
		if err != nil {
			if !errors.Is(err, ErrBadCursor) {
				t.Fatalf("openCursor = %v, want an ErrBadCursor", err)
			}
			if len(err.Error()) > 512 {
				t.Fatalf("refusal of %d bytes: %.80s...", len(err.Error()), err)
			}
			return
		}
		raw, _ := base64.RawURLEncoding.DecodeString(cursor)
		again, _ := base64.RawURLEncoding.DecodeString(s.sealCursor(tenant, req, got))
		if !bytes.Equal(raw, again) {
			t.Fatalf("opened a cursor this service did not seal: %q", cursor)
		}
		if _, err := s.openCursor(tenant+"x", req, cursor); !errors.Is(err, ErrBadCursor) {
			t.Fatalf("another tenant opened the cursor: %v", err)
		}
		// A cursor sealed for its token opens to it again.
		if back, err := s.openCursor(tenant, req, s.sealCursor(tenant, req, got)); err != nil || !bytes.Equal(back, got) {
			t.Fatalf("seal/open round trip: %q, %v", back, err)
		}
	})
}

// FuzzCheckAnswer checks arbitrary answers against interrupts with
// arbitrary schemas and actions (runs.CheckAnswer), and asks them as a
// client is asked (signals.Interrupt.RequestedSchema): no panic, a refusal
// is an *AnswerError naming the interrupt, an accepted answer is an
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
		err := CheckAnswer(it, r)
		if err != nil {
			var ae *AnswerError
			if !errors.As(err, &ae) || ae.InterruptID != it.ID || ae.Problem == "" {
				t.Fatalf("CheckAnswer = %v, want an *AnswerError naming the interrupt", err)
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

// checkAccepted checks content that CheckAnswer accepted for it.
func checkAccepted(t *testing.T, it signals.Interrupt, content string) {
	t.Helper()
	c := bytes.TrimSpace([]byte(content))
	if len(c) == 0 || string(c) == "null" {
		c = []byte("{}")
	}
	if len(c) > catalog.MaxArgumentsBytes {
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
