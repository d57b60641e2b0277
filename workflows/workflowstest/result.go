package workflowstest

import (
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/openwop/temporal-mcp/signals"
)

// Result is what a call left: the run's final state, its event log, and
// what an agent saw of it.
type Result struct {
	// Snapshot is the run's final snapshot: status, outputs, the MCP
	// result (Snapshot.Result), the error of a failed run, the applied
	// answers.
	Snapshot signals.Snapshot
	// Events is the run's whole event log (run.started to its terminal
	// event).
	Events []signals.Event
	// Questions are the questions the tool asked, in the order asked, the
	// pre-run inputs first.
	Questions []Question
	// Statuses are the statuses the run published, in order: the status
	// each workflow task that changed it ended with, as an agent following
	// the task sees them change.
	Statuses []signals.Status
	// Progress is the progress the run reported (workflows.Step,
	// workflows.ReportProgress, activities.ReportProgress), each distinct
	// value once, in the order first seen: what each workflow task that
	// changed it ended with, as an agent following the task sees it
	// (several reports of the workflow in one workflow task show as the
	// last), and each report of an activity as it makes it (so a report in
	// the workflow task that ends the run is kept).
	Progress []signals.Progress
	// Err is the workflow's error as the SDK reports it: nil for a
	// completed run, a *temporal.ApplicationError (its type the error
	// code, never retried) for a failed one, a *temporal.CanceledError
	// for a cancelled one. Both carry the run record as their details.
	Err error
}

// result reads the run record the finished run of tool left. A run the
// environment closed at its run timeout (ten years of virtual time unless
// the tool sets one: the run waited for something that never came, or
// ignored its cancellation) left none, and is reported as still open.
func (e *Env) result(tool string) (*Result, error) {
	var rec signals.RunRecord
	werr := e.env.GetWorkflowError()
	err := werr
	var app *temporal.ApplicationError
	var canceled *temporal.CanceledError
	var timeout *temporal.TimeoutError
	switch {
	case err == nil:
		err = e.env.GetWorkflowResult(&rec)
	case errors.As(err, &app):
		err = app.Details(&rec)
	case errors.As(err, &canceled):
		err = canceled.Details(&rec)
	case errors.As(err, &timeout):
		return nil, e.stillOpen(tool, "the environment's run timeout passed, and nothing else was left to run", "")
	}
	if err != nil {
		return nil, fmt.Errorf("workflowstest: the run left no run record: %w", err)
	}
	res := &Result{Snapshot: rec.Snapshot, Events: rec.Events, Statuses: e.seen, Progress: e.progress, Err: werr}
	if n := len(res.Statuses); n == 0 || res.Statuses[n-1] != rec.Snapshot.Status {
		res.Statuses = append(res.Statuses, rec.Snapshot.Status)
	}
	for _, q := range e.asked {
		res.Questions = append(res.Questions, *q)
	}
	return res, nil
}

// Status is the run's final status: completed, failed or cancelled.
func (r *Result) Status() signals.Status { return r.Snapshot.Status }

// Output decodes the output of a completed run (the MCP result's
// structuredContent) into v. The run of a tool whose output is not an
// object has the output {"result": value}. For a failed or cancelled run
// it returns an error saying so (the code and message of a failure).
func (r *Result) Output(v any) error {
	s := r.Snapshot
	switch s.Status {
	case signals.StatusCompleted:
	case signals.StatusFailed:
		if s.Error != nil {
			return fmt.Errorf("the run failed: %s: %s", s.Error.Code, s.Error.Message)
		}
		return errors.New("the run failed")
	case signals.StatusCancelled:
		return fmt.Errorf("the run was cancelled (%s)", s.CancelReason)
	default:
		return fmt.Errorf("the run ended %s", s.Status)
	}
	raw := s.Outputs
	if s.Result != nil && len(s.Result.StructuredContent) > 0 {
		raw = s.Result.StructuredContent
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("decode the output %s: %w", raw, err)
	}
	return nil
}

// Question returns the question the tool asked with key key.
func (r *Result) Question(key string) (Question, bool) {
	for _, q := range r.Questions {
		if q.Key == key {
			return q, true
		}
	}
	return Question{}, false
}

// EventTypes lists the types of the run's events, in order.
func (r *Result) EventTypes() []string {
	out := make([]string, len(r.Events))
	for i, ev := range r.Events {
		out[i] = ev.Type
	}
	return out
}
