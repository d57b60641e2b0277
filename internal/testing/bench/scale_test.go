package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Targets of issue 21.
const (
	targetSaturated = 0.90                   // lifecycles/s at 200 paced clients / at 50
	targetP99       = 500 * time.Millisecond // tasks/get p99 at 200 paced clients
	targetPerGet    = 0.5                    // Temporal reads per tasks/get under fast polling
	pacedMin        = 100 * time.Millisecond // pause between two polls of a paced client
	pacedMax        = 200 * time.Millisecond
)

// recorder collects latencies from concurrent callers.
type recorder struct {
	mu sync.Mutex
	s  samples
}

func (r *recorder) add(d time.Duration) {
	r.mu.Lock()
	r.s = append(r.s, d)
	r.mu.Unlock()
}

func (r *recorder) samples() samples {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.s
}

// pacedLevel is what one level of paced clients measured.
type pacedLevel struct {
	rate       float64 // lifecycles/s
	p50, p99   time.Duration
	gets       int
	readsPerGt float64 // Temporal reads (query, describe, history) per tasks/get
}

// rowsPaced runs full lifecycles over the mount from 50 and then 200
// clients that pause 100–200 ms between two polls, as real clients poll,
// for d each, and shows that the rate holds past saturation (issue 21: at
// 200 clients at least 0.9 of the rate at 50, tasks/get p99 at most
// 500 ms) and what a tasks/get costs Temporal: the reads of the runs
// (queries, describes, history reads) less the one query per lifecycle that
// confirms its tasks/update, per tasks/get.
func rowsPaced(ctx context.Context, s *stack, t *table, d time.Duration) error {
	levels := map[int]pacedLevel{}
	for _, c := range []int{50, 200} {
		lv, err := s.paced(ctx, c, d)
		if err != nil {
			return err
		}
		levels[c] = lv
		t.add(fmt.Sprintf("paced clients (poll every 100–200 ms), C=%d: lifecycles/s", c), "", fmt.Sprintf("%.1f", lv.rate), "", "", "", "", "",
			"", "", fmt.Sprintf("tasks/get p50 %s ms, p99 %s ms (%d gets); %.2f Temporal reads per tasks/get", msf(lv.p50), msf(lv.p99), lv.gets, lv.readsPerGt))
	}
	low, high := levels[50], levels[200]
	r := high.rate / low.rate
	t.add("throughput past saturation: C=200 / C=50 (paced)", "C=50", fmt.Sprintf("%.1f", high.rate), fmt.Sprintf("%.1f", low.rate),
		fmt.Sprintf("%.2f×", r), "", "", "", fmt.Sprintf("≥ %.2f×", targetSaturated), verdict(r >= targetSaturated), "")
	t.add("tasks/get p99 at C=200 (paced)", "", msf(high.p99), "", "", "", "", "", fmt.Sprintf("≤ %s ms", msf(targetP99)),
		verdict(high.p99 <= targetP99), "")
	worst := max(low.readsPerGt, high.readsPerGt)
	t.add("Temporal reads per tasks/get under fast polling (paced)", "", fmt.Sprintf("%.2f", worst), "", "", "", "", "",
		fmt.Sprintf("≤ %.1f", targetPerGet), verdict(worst <= targetPerGet), fmt.Sprintf("C=50 %.2f, C=200 %.2f", low.readsPerGt, high.readsPerGt))
	return nil
}

// paced runs paced lifecycles from c clients for d.
func (s *stack) paced(ctx context.Context, c int, d time.Duration) (pacedLevel, error) {
	m := s.mcp()
	rec := &recorder{}
	m.gets.Store(rec)
	defer m.gets.Store(nil)
	var mu sync.Mutex
	var ids []string
	k, took, err := lifecycles(ctx, c, d, func(ctx context.Context) error {
		id, err := s.pacedLifecycle(ctx, m)
		mu.Lock()
		ids = append(ids, id)
		mu.Unlock()
		return err
	})
	if err != nil {
		return pacedLevel{}, err
	}
	got := rec.samples()
	reads := 0
	for _, id := range ids {
		for _, call := range s.callsAbout(id) {
			switch short(call) {
			case "Query", "Describe", "History":
				reads++
			}
		}
	}
	reads -= len(ids) // the query that confirms each tasks/update
	return pacedLevel{rate: float64(k) / took.Seconds(), p50: got.median(), p99: got.quantile(0.99), gets: len(got),
		readsPerGt: float64(max(reads, 0)) / float64(max(1, len(got)))}, nil
}

// pacedLifecycle is mountLifecycle with a pause of 100–200 ms before every
// poll.
func (s *stack) pacedLifecycle(ctx context.Context, m *mcpClient) (string, error) {
	pause := func() { time.Sleep(pacedMin + rand.N(pacedMax-pacedMin)) }
	task, err := m.callTool(approvalTool, map[string]any{})
	if err != nil {
		return "", err
	}
	id := runOf(task)
	for want := "input_required"; ; {
		pause()
		res, err := m.get(task)
		if err != nil {
			return id, err
		}
		switch {
		case res.Status == want && want == "completed":
			return id, nil
		case res.Status == want:
			if err := m.approve(task, inputKey(res)); err != nil {
				return id, err
			}
			want = "completed"
		case res.Status != "working" && res.Status != "input_required":
			return id, fmt.Errorf("task %s: %v", task, res.Status)
		}
		if ctx.Err() != nil {
			return id, ctx.Err()
		}
	}
}
