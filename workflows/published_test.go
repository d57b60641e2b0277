package workflows_test

import (
	"strings"
	"testing"

	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/converter"

	"github.com/openwop/temporal-mcp/signals"
)

// published reads the state the run published in its memo (describe).
func (s *server) published(id string) (signals.PublishedState, bool) {
	s.t.Helper()
	d, err := s.c.DescribeWorkflowExecution(ctx(s.t), id, "")
	if err != nil {
		s.t.Fatal(err)
	}
	p, ok := d.GetWorkflowExecutionInfo().GetMemo().GetFields()[signals.MemoState]
	if !ok {
		return signals.PublishedState{}, false
	}
	var st signals.PublishedState
	if err := converter.GetDefaultDataConverter().FromPayload(p, &st); err != nil {
		s.t.Fatal(err)
	}
	return st, true
}

// queryWorkflowMetadata is the SDK's built-in query the Temporal UI reads
// current details with (sdk internal.QueryTypeWorkflowMetadata, not
// exported by the client package in v1.50.0).
const queryWorkflowMetadata = "__temporal_workflow_metadata"

// currentDetails reads the run's current details as the Temporal UI does
// (the SDK's built-in metadata query).
func (s *server) currentDetails(id string) string {
	s.t.Helper()
	v, err := s.c.QueryWorkflow(ctx(s.t), id, "", queryWorkflowMetadata)
	if err != nil {
		s.t.Fatalf("metadata query: %v", err)
	}
	var md sdkpb.WorkflowMetadata
	if err := v.Get(&md); err != nil {
		s.t.Fatal(err)
	}
	return md.GetCurrentDetails()
}

func ids(in []signals.Interrupt) string {
	var out []string
	for _, i := range in {
		out = append(out, i.ID)
	}
	return strings.Join(out, ",")
}

// TestIntegrationPublishedState: a run keeps its status and open
// interrupts in its memo, where a describe call reads them without a
// worker, and its current details (the Temporal UI's "Current Details")
// name each open question, who may answer it and how; both follow the run
// as questions are answered.
func TestIntegrationPublishedState(t *testing.T) {
	s := newServer(t)
	id, run := s.start("multi_input", map[string]any{})
	snap := s.await(id, func(x signals.Snapshot) bool { return len(x.Interrupts) == 2 })
	st, ok := s.published(id)
	if !ok || st.Status != signals.StatusWaitingInput || st.OpenInterrupts != 2 || ids(st.Interrupts) != ids(snap.Interrupts) ||
		string(st.Interrupts[0].Schema) != string(snap.Interrupts[0].Schema) || st.LastSequence != snap.LastSequence {
		t.Fatalf("published while both questions are open = %+v (%t), want %+v", st, ok, snap)
	}
	details := s.currentDetails(id)
	for _, want := range []string{"`waiting-input`", "What is your name?", "What is your favourite colour?", snap.Interrupts[0].ID,
		"any subject of tenant `acme`", "tasks/update", "POST /runs/acme~2F"} {
		if !strings.Contains(details, want) {
			t.Errorf("current details while waiting lack %q:\n%s", want, details)
		}
	}

	// The name is answered: the colour stays open.
	s.resolve(id, signals.Resolution{InterruptID: snap.Interrupts[0].ID, Action: signals.ActionAccept,
		Content: []byte(`{"name":"Ada"}`), ResolvedBy: alice, RequestID: "r1"})
	snap = s.await(id, func(x signals.Snapshot) bool { return len(x.Interrupts) == 1 })
	if st, ok = s.published(id); !ok || st.Status != signals.StatusWaitingInput || st.OpenInterrupts != 1 || ids(st.Interrupts) != snap.Interrupts[0].ID {
		t.Fatalf("published after one answer = %+v, want %s open", st, snap.Interrupts[0].ID)
	}
	details = s.currentDetails(id)
	if strings.Contains(details, "What is your name?") || !strings.Contains(details, "What is your favourite colour?") {
		t.Errorf("current details after the name was answered:\n%s", details)
	}

	s.resolve(id, signals.Resolution{InterruptID: snap.Interrupts[0].ID, Action: signals.ActionAccept,
		Content: []byte(`{"color":"red"}`), ResolvedBy: alice, RequestID: "r2"})
	if err := run.Get(ctx(t), nil); err != nil {
		t.Fatal(err)
	}
	if st, ok = s.published(id); !ok || st.Status != signals.StatusCompleted || st.OpenInterrupts != 0 || len(st.Interrupts) != 0 {
		t.Fatalf("published after the end = %+v", st)
	}
	if details = s.currentDetails(id); !strings.Contains(details, "`completed`") || strings.Contains(details, "Waiting for") {
		t.Errorf("current details after the end:\n%s", details)
	}
	s.replay(id)
}
