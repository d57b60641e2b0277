package tools_test

// A minimal copy of the harness of package workflows' tests: it runs the
// served registry (examples and fixtures) in the SDK's test environment.

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/signals"
)

const testRunID = "acme/AbCdEfGhIjKlMnOpQrStUvWx"

var alice = signals.Subject{Issuer: "test", SubjectID: "alice", Tenant: "acme"}

// harness runs one tool in the SDK's test environment.
type harness struct {
	t   *testing.T
	env *testsuite.TestWorkflowEnvironment
}

// newHarness registers tools.DefaultRegistry with its fixtures.
func newHarness(t *testing.T) *harness {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: testRunID})
	env.SetTestTimeout(30 * time.Second)
	acts := tools.NewActivities(nil, tools.ActivityOptions{HeartbeatInterval: 50 * time.Millisecond, SectionDelay: time.Millisecond})
	reg, err := tools.DefaultRegistry(acts, true)
	if err != nil {
		t.Fatal(err)
	}
	reg.Register(env)
	return &harness{t: t, env: env}
}

func (h *harness) run(tool string, args any, pre map[string]json.RawMessage) {
	h.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		h.t.Fatal(err)
	}
	h.env.ExecuteWorkflow(tool, signals.StartRequest{
		Arguments:    raw,
		Owner:        signals.Owner{Tenant: "acme", Subject: alice},
		Transport:    signals.TransportMCP,
		PreRunInputs: pre,
	})
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatal("workflow did not complete")
	}
}

// at runs f at virtual time d after the start.
func (h *harness) at(d time.Duration, f func()) { h.env.RegisterDelayedCallback(f, d) }

func (h *harness) snapshot() signals.Snapshot {
	h.t.Helper()
	v, err := h.env.QueryWorkflow(signals.QueryGetRun)
	if err != nil {
		h.t.Fatalf("query getRun: %v", err)
	}
	var s signals.Snapshot
	if err := v.Get(&s); err != nil {
		h.t.Fatal(err)
	}
	return s
}

func (h *harness) resolve(res signals.Resolution) {
	h.env.SignalWorkflow(signals.SignalResolveInterrupt, res)
}

// record returns the run record: the result of a completed run, or
// details[0] of the error of a failed or cancelled one.
func (h *harness) record() (signals.RunRecord, error) {
	h.t.Helper()
	var rec signals.RunRecord
	err := h.env.GetWorkflowError()
	if err == nil {
		if err := h.env.GetWorkflowResult(&rec); err != nil {
			h.t.Fatal(err)
		}
		return rec, nil
	}
	var app *temporal.ApplicationError
	var canceled *temporal.CanceledError
	switch {
	case errors.As(err, &app):
		if derr := app.Details(&rec); derr != nil {
			h.t.Fatalf("application error details: %v", derr)
		}
	case errors.As(err, &canceled):
		if derr := canceled.Details(&rec); derr != nil {
			h.t.Fatalf("canceled error details: %v", derr)
		}
	default:
		h.t.Fatalf("unexpected workflow error %T: %v", err, err)
	}
	return rec, err
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
