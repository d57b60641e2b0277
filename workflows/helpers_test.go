package workflows_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/signals"
)

// Helpers shared by the harness tests (SDK test environment, harness_test.go)
// and the integration tests (embedded Temporal server, integration_test.go).

const tenant = "acme"

var (
	alice = signals.Subject{Issuer: "test", SubjectID: "alice", Tenant: tenant}
	bob   = signals.Subject{Issuer: "test", SubjectID: "bob", Tenant: tenant}
)

// noInput is the input of the test tools that take no arguments.
type noInput struct{}

// types lists the event types of a log.
func types(evs []signals.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// checkLog verifies the envelope rules of the event log of run runID:
// sequence 0-based and strictly increasing, ids, run id, schema version,
// timestamps, JSON payloads, exactly one terminal event and it is the last.
func checkLog(t *testing.T, runID string, evs []signals.Event) {
	t.Helper()
	terminal := 0
	for i, e := range evs {
		if e.Sequence != i {
			t.Errorf("event %d has sequence %d", i, e.Sequence)
		}
		if e.RunID != runID || e.EventID == "" || e.SchemaVersion != signals.EventLogSchemaVersion || e.Timestamp.IsZero() {
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

// count returns the number of events of type typ.
func count(evs []signals.Event, typ string) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func equal(a, b []string) bool {
	return strings.Join(a, ",") == strings.Join(b, ",")
}
