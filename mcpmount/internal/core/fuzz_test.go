package core

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/signals"
)

// FuzzInputResponses feeds answersOf (the inputResponses of tasks/update
// and of MRTR retries) arbitrary responses for an open interrupt with an
// arbitrary schema and actions. It must not panic; what it accepts answers
// an open interrupt with a valid action, and what it refuses names the
// input key.
func FuzzInputResponses(f *testing.F) {
	f.Add(`{"i-1":{"action":"accept","content":{"action":"accept"}}}`, "", "accept,reject", true)
	f.Add(`{"i-1":{"action":"maybe"}}`, "", "", true)
	f.Add(`{"never":{"action":"accept"}}`, "", "", false)
	f.Add(`{"i-1":{"action":"accept","content":{"name":"Ada"}}}`, `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`, "", false)
	f.Add(`{"i-1":{"action":"accept","content":{"value":"{\"a\":[1,2]}"}}}`, `{"type":"object","properties":{"a":{"type":"array"}}}`, "", false)
	f.Add(`{"i-1":5}`, `{"type":"object"}`, "", false)
	f.Add(`{"i-1":{"action":"decline"},"i-2":{"action":"cancel"}}`, "", "", true)
	f.Fuzz(func(t *testing.T, responses, schema, actions string, approval bool) {
		it := signals.Interrupt{ID: "i-1", Kind: signals.KindClarification, Schema: json.RawMessage(schema)}
		if approval {
			it.Kind = signals.KindApproval
		}
		if actions != "" {
			it.Actions = strings.Split(actions, ",")
		}
		if len(it.Schema) == 0 {
			it.Schema = nil
		}
		snap := signals.Snapshot{Interrupts: []signals.Interrupt{it, {ID: "i-2", Kind: signals.KindClarification}}}
		var raw map[string]json.RawMessage
		if json.Unmarshal([]byte(responses), &raw) != nil {
			return // tasks/update refuses it before answersOf
		}
		res, err := answersOf(signals.Subject{Tenant: "acme", SubjectID: "alice"}, snap, raw)
		if err != nil {
			var ar *answerRefusal
			if !asRefusal(err, &ar) || ar.key == "" || !strings.Contains(err.Error(), "inputResponses[") {
				t.Fatalf("refusal %v does not name the input key", err)
			}
			return
		}
		for _, r := range res {
			if _, open := snap.Interrupt(r.InterruptID); !open {
				t.Fatalf("answered %q, which is not open", r.InterruptID)
			}
			switch r.Action {
			case signals.ActionAccept, signals.ActionDecline, signals.ActionCancel:
			default:
				t.Fatalf("accepted the action %q", r.Action)
			}
		}
	})
}

// asRefusal is errors.As for an *answerRefusal.
func asRefusal(err error, target **answerRefusal) bool {
	ar, ok := err.(*answerRefusal)
	if ok {
		*target = ar
	}
	return ok
}
