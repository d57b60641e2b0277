package core

import (
	"math"
	"testing"

	"github.com/openwop/temporal-mcp/signals"
)

// TestProgressScale: the progress and total of a blocking call's
// notifications follow the counts its run reports (done/total while a step
// counts, the least offset when an earlier notification was higher) and
// increase with every notification: keep-alives without a new count,
// steps that restart their counts, a step that is done, no counts.
func TestProgressScale(t *testing.T) {
	counts := func(step string, done, total int64) *signals.Progress {
		return &signals.Progress{Step: step, Done: done, Total: total}
	}
	type note struct{ progress, total float64 }
	for _, tt := range []struct {
		name string
		in   []*signals.Progress
		want []note
	}{
		{"no counts", []*signals.Progress{nil, nil, {Step: "a"}},
			[]note{{1, 0}, {2, 0}, {3, 0}}},
		{"counts from the start are the run's", []*signals.Progress{counts("a", 0, 3), counts("a", 1, 3), counts("a", 3, 3)},
			[]note{{0, 3}, {1, 3}, {3, 3}}},
		{"keep-alives stay below the next count", []*signals.Progress{counts("a", 1, 4), counts("a", 1, 4), counts("a", 1, 4), counts("a", 2, 4)},
			[]note{{1, 4}, {1.5, 4}, {1 + 2.0/3, 4}, {2, 4}}},
		{"a step that is done moves up, never past total", []*signals.Progress{counts("a", 2, 2), counts("a", 2, 2), counts("a", 2, 2)},
			[]note{{2, 2}, {3, 3}, {4, 4}}},
		{"counts below the last sent take the least offset", []*signals.Progress{nil, nil, counts("a", 5, 10), counts("a", 1, 10)},
			[]note{{1, 0}, {2, 0}, {5, 10}, {6, 15}}},
		{"a new step restarts its counts above the last", []*signals.Progress{counts("a", 3, 3), counts("b", 0, 2), counts("b", 1, 2), nil},
			[]note{{3, 3}, {4, 6}, {5, 6}, {6, 0}}},
		{"unknown total", []*signals.Progress{counts("a", 2, 0), counts("a", 2, 0), counts("a", 7, 0)},
			[]note{{2, 0}, {2.5, 0}, {7, 0}}},
		{"more done than total", []*signals.Progress{counts("a", 5, 3)},
			[]note{{5, 5}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s progressScale
			last := -1.0
			for i, c := range tt.in {
				p, total := s.next(c)
				if w := tt.want[i]; math.Abs(p-w.progress) > 1e-9 || total != w.total {
					t.Fatalf("notification %d for %+v = %v/%v, want %v", i, c, p, total, tt.want[i])
				}
				if p <= last || total != 0 && p > total {
					t.Fatalf("notification %d: progress %v after %v, total %v", i, p, last, total)
				}
				last = p
			}
		})
	}
}
