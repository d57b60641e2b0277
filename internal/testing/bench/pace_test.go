package bench

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The long-run row: what a poll interval derived from a tool's runs spares
// Temporal.
const (
	// longTool is a tool no other row calls: the derived interval follows
	// the tool's recent runs, and the short-call row runs delay for 5 ms.
	longTool     = "slow_compute"
	longSeconds  = 30                     // how long each run of the row takes
	fixedPoll    = 500 * time.Millisecond // the poll interval every task had before it was derived
	targetPaceup = 0.5                    // Temporal reads per run, derived interval / fixed
)

// rowPaceLong measures what the derived poll interval (a tenth of how long
// the tool's runs take) spares Temporal for a 30 s tool: once the mount
// has seen one of its runs end, a Tasks client follows a 30 s run polling
// as each task's pollIntervalMs says, while another client follows a run
// of the same length polling every 500 ms, as every client did when the
// interval was fixed. The figures are the Temporal reads a tasks/get makes
// (the getRun query, a describe) about each run, and the tasks/get each
// client sent; both runs go on at once. The last column also lists every
// call made about each run: its history reads follow the run itself, not
// the polls, and are alike on both sides.
func rowPaceLong(_ context.Context, s *stack, t *table, _ int) error {
	m := s.mcp()
	if _, _, err := followLong(m, 0); err != nil { // the mount learns the tool's length
		return err
	}
	type followed struct {
		id   string
		gets int
		err  error
	}
	follow := func(every time.Duration) <-chan followed {
		ch := make(chan followed, 1)
		go func() {
			id, gets, err := followLong(m, every)
			ch <- followed{id, gets, err}
		}()
		return ch
	}
	derivedCh, fixedCh := follow(0), follow(fixedPoll)
	derived, fixed := <-derivedCh, <-fixedCh
	if derived.err != nil || fixed.err != nil {
		return fmt.Errorf("long-run row: %w", errors.Join(derived.err, fixed.err))
	}
	rd, rf := readsAbout(s, derived.id), readsAbout(s, fixed.id)
	verdict := "ok"
	if float64(rd) > targetPaceup*float64(rf) {
		verdict = "MISS"
	}
	t.add("Temporal reads of tasks/get per 30 s run, derived poll interval", "fixed 500 ms", fmt.Sprint(rd), fmt.Sprint(rf),
		fmt.Sprintf("%.2f×", float64(rd)/float64(max(rf, 1))), "", "", fmt.Sprintf("≤ %.2f×", targetPaceup), verdict, "",
		fmt.Sprintf("%d against %d tasks/get; %s | %s", derived.gets, fixed.gets,
			perLifecycle(s.callsAbout(derived.id), 1), perLifecycle(s.callsAbout(fixed.id), 1)))
	return nil
}

// followLong calls the long tool as a Tasks client and polls its task to
// the end: every pollIntervalMs, or every every when it is set. It returns
// the run and how many tasks/get it sent.
func followLong(m *mcpClient, every time.Duration) (string, int, error) {
	task, err := m.callTool(longTool, map[string]any{"seconds": longSeconds})
	if err != nil {
		return "", 0, err
	}
	gets := 0
	for res := (taskResult{Status: "working"}); res.Status != "completed"; {
		pause := time.Duration(res.PollIntervalMs) * time.Millisecond
		if every > 0 || pause <= 0 {
			pause = max(every, fixedPoll/5)
		}
		time.Sleep(pause)
		if res, err = m.get(task); err != nil {
			return runOf(task), gets, err
		}
		gets++
		if res.Status != "working" && res.Status != "completed" {
			return runOf(task), gets, fmt.Errorf("task %s read %s", task, res.Status)
		}
	}
	return runOf(task), gets, nil
}

// readsAbout counts the reads of a run's state made about run id: getRun
// queries and describes.
func readsAbout(s *stack, id string) int {
	n := 0
	for _, call := range s.callsAbout(id) {
		switch short(call) {
		case "Query", "Describe":
			n++
		}
	}
	return n
}
