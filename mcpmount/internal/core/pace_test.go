package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/signals"
)

// TestPacer: a task's poll interval is a tenth of how long its tool's
// runs took (a weighted mean of the ended runs seen, each once), within
// MinPollInterval and MaxPollInterval; the default for a tool never seen
// to end; four times longer while the task waits for its input. Runs that
// a human answered, and runs not ended, teach nothing.
func TestPacer(t *testing.T) {
	start := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	run := func(id string, took time.Duration, mutate ...func(*signals.Snapshot)) signals.Snapshot {
		s := signals.Snapshot{RunID: id, Tool: "t", Status: signals.StatusCompleted, CreatedAt: start, UpdatedAt: start.Add(took)}
		for _, m := range mutate {
			m(&s)
		}
		return s
	}
	answered := func(s *signals.Snapshot) { s.Resolved = []signals.Resolved{{}} }
	working := func(s *signals.Snapshot) { s.Status = signals.StatusRunning }
	for _, tc := range []struct {
		name    string
		seen    []signals.Snapshot
		waiting bool
		want    time.Duration
	}{
		{"never seen: the default", nil, false, 500 * time.Millisecond},
		{"never seen, waiting: four times the default", nil, true, 2 * time.Second},
		{"a 30 s run: 3 s", []signals.Snapshot{run("a", 30*time.Second)}, false, 3 * time.Second},
		{"a 30 s run, waiting: 12 s", []signals.Snapshot{run("a", 30*time.Second)}, true, 12 * time.Second},
		{"a 50 ms run: the minimum", []signals.Snapshot{run("a", 50*time.Millisecond)}, false, MinPollInterval},
		{"a 2 h run: the maximum", []signals.Snapshot{run("a", 2*time.Hour)}, false, MaxPollInterval},
		{"weighted: 10 s then 30 s", []signals.Snapshot{run("a", 10*time.Second), run("b", 30*time.Second)}, false, 1500 * time.Millisecond},
		{"a run seen twice counts once", []signals.Snapshot{run("a", 10*time.Second), run("b", 30*time.Second), run("b", 30*time.Second)}, false, 1500 * time.Millisecond},
		{"a run a human answered teaches nothing", []signals.Snapshot{run("a", 48*time.Hour, answered)}, false, 500 * time.Millisecond},
		{"a run not ended teaches nothing", []signals.Snapshot{run("a", time.Hour, working)}, false, 500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPacer(500 * time.Millisecond)
			for _, s := range tc.seen {
				p.Observe(s)
			}
			if got := p.Interval("t", tc.waiting); got != tc.want {
				t.Fatalf("Interval = %s, want %s", got, tc.want)
			}
			if got := p.Interval("other", false); got != 500*time.Millisecond {
				t.Fatalf("another tool's interval = %s, want the default", got)
			}
		})
	}
}

// TestPacerBounded: a Pacer remembers at most paceRuns run ids, and still
// counts each run it remembers once.
func TestPacerBounded(t *testing.T) {
	p := NewPacer(time.Second)
	start := time.Now()
	for i := range paceRuns + 10 {
		p.Observe(signals.Snapshot{RunID: fmt.Sprint(i), Tool: "t", Status: signals.StatusCompleted,
			CreatedAt: start, UpdatedAt: start.Add(10 * time.Second)})
	}
	if len(p.seen) != paceRuns || len(p.order) != paceRuns {
		t.Fatalf("remembered %d ids (%d in order), want %d", len(p.seen), len(p.order), paceRuns)
	}
	if got := p.Interval("t", false); got != time.Second {
		t.Fatalf("Interval = %s, want 1s", got)
	}
}
