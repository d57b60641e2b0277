package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/openwop/temporal-mcp/audit"
	"github.com/openwop/temporal-mcp/internal/testing/runstest"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// TestBackendOutcomes: the outcome and reason of each kind of answer the
// run service gives, one record each; reads that pass and lists leave
// none.
func TestBackendOutcomes(t *testing.T) {
	f := runstest.New()
	id, err := runid.New("acme", nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	f.Add(signals.Snapshot{RunID: id, Tool: "refund", Status: signals.StatusWaitingApproval, Owner: signals.Owner{Tenant: "acme"},
		CreatedAt: now, UpdatedAt: now, LastSequence: -1, Interrupts: []signals.Interrupt{
			{ID: id + "-i1", NodeID: "approve", Kind: signals.KindApproval, Approvers: []string{"urn:boss"}, RequestedAt: now}}})
	var buf bytes.Buffer
	b := audit.New(zapcore.AddSync(&buf)).Backend(f)
	ctx := context.Background()
	alice := signals.Subject{Issuer: "urn:openwop:api-key", SubjectID: "urn:alice", Tenant: "acme"}
	boss := signals.Subject{Issuer: "urn:openwop:api-key", SubjectID: "urn:boss", Tenant: "acme"}
	mallory := signals.Subject{Issuer: "urn:openwop:api-key", SubjectID: "urn:mallory", Tenant: "globex"}
	accept := signals.Resolution{InterruptID: id + "-i1", Action: signals.ActionAccept, Content: json.RawMessage(`{"why":"content-secret"}`)}
	tests := []struct {
		name string
		op   func()
		want map[string]string // nil: no record
	}{
		{"read", func() { _, _ = b.Get(ctx, alice, id) }, nil},
		{"list", func() { _, _ = b.List(ctx, mallory, runs.ListRequest{}) }, nil},
		{"read of another tenant", func() { _, _ = b.Get(ctx, mallory, id) },
			map[string]string{"action": "read", "outcome": "refused", "reason": "tenant-mismatch", "subject": "urn:mallory", "tenant": "globex"}},
		{"events of another tenant", func() { _, _, _ = b.Events(ctx, mallory, id, -1, 0) },
			map[string]string{"action": "read", "outcome": "refused", "reason": "tenant-mismatch"}},
		{"ineligible answer", func() { _, _ = b.Resolve(ctx, alice, id, accept) },
			map[string]string{"action": "answer", "outcome": "refused", "reason": "not-eligible", "subject": "urn:alice", "tool": "refund", "resolution": "accept"}},
		{"answer outside the question", func() {
			_, _ = b.Resolve(ctx, boss, id, signals.Resolution{InterruptID: id + "-i1", Action: signals.ActionAccept, Content: json.RawMessage(`{"action":"maybe"}`)})
		}, map[string]string{"action": "answer", "outcome": "refused", "reason": "invalid-answer", "subject": "urn:boss"}},
		{"answer", func() { _, _ = b.Resolve(ctx, boss, id, accept) },
			map[string]string{"action": "answer", "outcome": "ok", "subject": "urn:boss", "tool": "refund", "interruptId": id + "-i1"}},
		{"answer again", func() { _, _ = b.Resolve(ctx, boss, id, accept) },
			map[string]string{"action": "answer", "outcome": "failed", "reason": "already-resolved"}},
		{"cancel of another tenant", func() { _, _ = b.Cancel(ctx, mallory, id, "") },
			map[string]string{"action": "cancel", "outcome": "refused", "reason": "tenant-mismatch", "cancelReason": "caller-requested"}},
		{"cancel", func() { _, _ = b.Cancel(ctx, alice, id, signals.ReasonMCPRequestCancelled) },
			map[string]string{"action": "cancel", "outcome": "ok", "cancelReason": "mcp-request-cancelled", "runId": id}},
		{"start", func() {
			_, _ = b.Start(ctx, runs.NewRun{Tool: signals.ToolSpec{Name: "refund"}, Caller: alice, Transport: signals.TransportREST,
				Arguments: json.RawMessage(`{"amount":"argument-secret"}`)})
		}, map[string]string{"action": "start", "outcome": "ok", "tool": "refund", "transport": "rest", "issuer": "urn:openwop:api-key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf.Reset()
			tt.op()
			if tt.want == nil {
				if buf.Len() != 0 {
					t.Fatalf("recorded %s", buf.Bytes())
				}
				return
			}
			var got map[string]string
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatalf("want one JSON record, got %q: %v", buf.Bytes(), err)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q (record %v)", k, got[k], v, got)
				}
			}
			if bytes.Contains(buf.Bytes(), []byte("secret")) {
				t.Errorf("the record holds content: %s", buf.Bytes())
			}
		})
	}
}
