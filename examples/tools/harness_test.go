package tools_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

const testRunID = "acme/AbCdEfGhIjKlMnOpQrStUvWx"

var alice = signals.Subject{Issuer: "test", SubjectID: "alice", Tenant: "acme"}

// newEnv returns a test kit Env of the served registry (examples and
// fixtures): alice calls, the run's id is testRunID.
func newEnv(t *testing.T) *workflowstest.Env {
	t.Helper()
	acts := tools.NewActivities(nil, tools.ActivityOptions{HeartbeatInterval: 50 * time.Millisecond, SectionDelay: time.Millisecond})
	reg, err := tools.DefaultRegistry(acts, true)
	if err != nil {
		t.Fatal(err)
	}
	env := workflowstest.New(reg)
	env.RunID, env.Caller = testRunID, alice
	return env
}

// types lists the event types of a log.
func types(evs []signals.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// checkLog verifies the envelope rules: sequence 0-based and strictly
// increasing, ids, run id, schema version, exactly one terminal event and it
// is the last.
func checkLog(t *testing.T, evs []signals.Event) {
	t.Helper()
	terminal := 0
	for i, e := range evs {
		if e.Sequence != i {
			t.Errorf("event %d has sequence %d", i, e.Sequence)
		}
		if e.RunID != testRunID || e.EventID == "" || e.SchemaVersion != signals.EventLogSchemaVersion || e.Timestamp.IsZero() {
			t.Errorf("event %d envelope incomplete: %+v", i, e)
		}
		if !json.Valid(e.Payload) {
			t.Errorf("event %d payload is not JSON: %s", i, e.Payload)
		}
		if signals.TerminalEvent(e.Type) {
			terminal++
			if i != len(evs)-1 {
				t.Errorf("terminal event %s at %d is not last (%v)", e.Type, i, types(evs))
			}
		}
	}
	if terminal != 1 {
		t.Errorf("%d terminal events in %v, want exactly 1", terminal, types(evs))
	}
}
