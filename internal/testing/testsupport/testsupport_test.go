package testsupport_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/internal/testing/testsupport"
	"github.com/openwop/temporal-mcp/signals"
)

func TestFreePort(t *testing.T) {
	if port := testsupport.MustFreePort(t); port <= 0 || port > 65535 {
		t.Errorf("port %d", port)
	}
}

func TestRunOf(t *testing.T) {
	const run = "acme/AbCdEfGhIjKlMnOpQrStUvWx"
	if got := testsupport.RunOf(t, run); got != run {
		t.Errorf("RunOf(%q) = %q", run, got)
	}
}

func TestCheckEventLog(t *testing.T) {
	const run = "acme/AbCdEfGhIjKlMnOpQrStUvWx"
	event := func(seq int, typ string) signals.Event {
		return signals.Event{Sequence: seq, Type: typ, RunID: run, EventID: "e", SchemaVersion: signals.EventLogSchemaVersion,
			Timestamp: time.Unix(1, 0), Payload: json.RawMessage(`{}`)}
	}
	evs := []signals.Event{event(0, signals.EventRunStarted), event(1, signals.EventRunCompleted)}
	testsupport.CheckEventLog(t, run, evs)
	if got := testsupport.EventTypes(evs); !slices.Equal(got, []string{signals.EventRunStarted, signals.EventRunCompleted}) {
		t.Errorf("EventTypes = %v", got)
	}
}
