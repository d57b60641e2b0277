package workflows_test

import (
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
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

// upsertsPerTask counts, for each workflow task of the run's history that
// completed, the status search attribute upserts (the SDK's own
// TemporalChangeVersion upsert is not one) and the memo upserts its
// commands made, and returns the status each status upsert set.
func (s *server) upsertsPerTask(id string) (status, memo []int, values []string) {
	s.t.Helper()
	it := s.c.GetWorkflowHistory(ctx(s.t), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	task := -1
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			s.t.Fatal(err)
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			task++
			status, memo = append(status, 0), append(memo, 0)
		case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			p, ok := ev.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()[signals.SearchAttrStatus]
			if !ok {
				continue
			}
			var v string
			if err := converter.GetDefaultDataConverter().FromPayload(p, &v); err != nil {
				s.t.Fatal(err)
			}
			status[task]++
			values = append(values, v)
		case enumspb.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
			memo[task]++
		}
	}
	return status, memo, values
}

// TestIntegrationOneUpsertPerTask: a run upserts its status search
// attribute and its published state at most once per workflow task, with
// the values the task ends with (each upsert is a history event and a
// visibility write), while what a describe call reads stays current.
func TestIntegrationOneUpsertPerTask(t *testing.T) {
	s := newServer(t)
	id, run := s.start("multi_input", map[string]any{})
	snap := s.await(id, func(x signals.Snapshot) bool { return len(x.Interrupts) == 2 })
	if st, ok := s.published(id); !ok || st.Status != signals.StatusWaitingInput || st.OpenInterrupts != 2 {
		t.Fatalf("published after the first task = %+v (%t)", st, ok)
	}
	if got := s.statusAttr(id); got != string(signals.StatusWaitingInput) {
		t.Fatalf("status attribute after the first task = %q", got)
	}
	for _, in := range snap.Interrupts {
		s.resolve(id, signals.Resolution{InterruptID: in.ID, Action: signals.ActionAccept,
			Content: []byte(`{"name":"Ada","color":"red"}`), ResolvedBy: alice, RequestID: in.ID})
		s.await(id, func(x signals.Snapshot) bool {
			for _, open := range x.Interrupts {
				if open.ID == in.ID {
					return false
				}
			}
			return true
		})
	}
	if err := run.Get(ctx(t), nil); err != nil {
		t.Fatal(err)
	}
	status, memo, values := s.upsertsPerTask(id)
	// The first task runs the tool until both questions are open: one
	// upsert of each, with the state it ends in (not running, then
	// waiting-input, then the memo again for the second question).
	if len(status) == 0 || status[0] != 1 || memo[0] != 1 || values[0] != string(signals.StatusWaitingInput) {
		t.Errorf("first workflow task: %v status upserts (%v), %v memo upserts; want 1 (waiting-input) and 1", status, values, memo)
	}
	for i := range status {
		if status[i] > 1 || memo[i] > 1 {
			t.Errorf("workflow task %d made %d status and %d memo upserts, want at most one of each (all tasks: %v, %v)", i+1, status[i], memo[i], status, memo)
		}
	}
	if last := values[len(values)-1]; last != string(signals.StatusCompleted) {
		t.Errorf("last status upsert = %q, want completed (all: %v)", last, values)
	}
	if st, ok := s.published(id); !ok || st.Status != signals.StatusCompleted {
		t.Errorf("published at the end = %+v", st)
	}
	s.replay(id)
}
