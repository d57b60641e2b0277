package restapi

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// TestResolveWithdrawn: an answer to a question the run withdrew is
// refused 409 interrupt_expired or interrupt_withdrawn, named by its
// interruptId or as the last question closed at its node, and nothing
// reaches the run. An open question shows its deadline (expiresAt).
func TestResolveWithdrawn(t *testing.T) {
	s := newTestServer(t)
	id := mustID(t, "acme")
	withdrawn := func(n int, node, reason string) signals.Event {
		payload, _ := json.Marshal(map[string]any{"nodeId": node, "interruptId": id + "-i" + string(rune('0'+n)), "reason": reason})
		return signals.Event{EventID: id + "-e" + string(rune('0'+n)), RunID: id, Type: signals.EventInterruptWithdrawn,
			NodeID: node, Payload: payload, Timestamp: t0, Sequence: n, SchemaVersion: 1}
	}
	snap := approvalSnapshot(id)
	expires := t0.Add(time.Hour)
	snap.Interrupts[0].ID, snap.Interrupts[0].NodeID, snap.Interrupts[0].ExpiresAt = id+"-i3", "director", &expires
	snap.Withdrawn = []signals.Withdrawn{{InterruptID: id + "-i1", Reason: signals.WithdrawnExpired, WithdrawnAt: t0},
		{InterruptID: id + "-i2", Reason: signals.WithdrawnByRun, WithdrawnAt: t0}}
	snap.LastSequence = 2
	s.runs.Add(snap, signals.Event{EventID: id + "-e0", RunID: id, Type: signals.EventRunStarted, Payload: json.RawMessage(`{}`),
		Timestamp: t0, SchemaVersion: 1}, withdrawn(1, "manager", signals.WithdrawnExpired), withdrawn(2, "other", signals.WithdrawnByRun))
	base := s.URL + "/runs/" + runid.Project(id)
	tests := []struct {
		name, node, body, code string
	}{
		{"expired, by its id", "manager", `{"resumeValue":{"action":"accept"},"interruptId":"` + id + `-i1"}`, "interrupt_expired"},
		{"expired, at its node", "manager", `{"resumeValue":{"action":"accept"}}`, "interrupt_expired"},
		{"withdrawn, by its id at another node", "director", `{"resumeValue":{"action":"accept"},"interruptId":"` + id + `-i2"}`, "interrupt_withdrawn"},
		{"withdrawn, at its node", "other", `{"resumeValue":{"action":"accept"}}`, "interrupt_withdrawn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, call(t, http.MethodPost, base+"/interrupts/"+tt.node, "key-acme", tt.body), http.StatusConflict, tt.code)
		})
	}
	if n := len(s.runs.ResolveCalls()); n != 0 {
		t.Fatalf("%d answers to withdrawn questions reached the run", n)
	}
	r := call(t, http.MethodGet, base, "key-acme", "")
	its, _ := r.body["interrupts"].([]any)
	if len(its) != 1 || its[0].(map[string]any)["expiresAt"] != expires.Format(time.RFC3339) {
		t.Fatalf("GET run: %d %s, want the open question with its expiresAt", r.status, r.raw)
	}
}
