package bench

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// samples are the latencies of one side of a row.
type samples []time.Duration

func (s samples) quantile(q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := slices.Clone(s)
	slices.Sort(c)
	// Nearest rank.
	i := int(q*float64(len(c))+0.999999) - 1
	i = max(0, min(i, len(c)-1))
	return c[i]
}

func (s samples) median() time.Duration { return s.quantile(0.5) }
func (s samples) p90() time.Duration    { return s.quantile(0.9) }

// side is one side of a row: the timed operation and an untimed settle
// that runs right after it (nil: none), so that the background work one
// side leaves (a workflow task, a close) does not land in the other side's
// timing.
type side struct {
	op, settle func(i int) error
}

// interleave runs mount and raw n times each, alternating which goes
// first, and returns their latencies. prepare and settle, when set, run
// untimed before and after each pair.
func interleave(n int, prepare, mount, raw, settle func(i int) error) (m, r samples, err error) {
	return interleaveSides(n, prepare, side{op: mount}, side{op: raw}, settle)
}

// interleaveSides is interleave with a settle per side.
func interleaveSides(n int, prepare func(i int) error, mount, raw side, settle func(i int) error) (m, r samples, err error) {
	out, err := interleaveAll(n, prepare, []side{mount, raw}, settle)
	return out[0], out[1], err
}

// interleaveAll runs each of sides n times, rotating which goes first (for
// two sides: alternating), and returns their latencies in the order of
// sides. prepare and settle, when set, run untimed before and after each
// round.
func interleaveAll(n int, prepare func(i int) error, sides []side, settle func(i int) error) ([]samples, error) {
	out := make([]samples, len(sides))
	for i := 0; i < n; i++ {
		if prepare != nil {
			if err := prepare(i); err != nil {
				return out, err
			}
		}
		for k := range sides {
			j := (i + k) % len(sides)
			start := time.Now()
			if err := sides[j].op(i); err != nil {
				return out, err
			}
			out[j] = append(out[j], time.Since(start))
			if sides[j].settle != nil {
				if err := sides[j].settle(i); err != nil {
					return out, err
				}
			}
		}
		if settle != nil {
			if err := settle(i); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

func msf(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) }

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// verdict is PASS when ok.
func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// table collects the rows printed at the end.
type table struct {
	rows [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// latency adds a latency row: medians, p90s and their ratios, checked
// against target (median ratio ≤ target).
func (t *table) latency(name, rawName string, m, r samples, target float64, calls string) {
	rm := ratio(m.median(), r.median())
	goal, v := fmt.Sprintf("≤ %.2f×", target), verdict(rm <= target)
	if target == 0 {
		goal, v = "(no target)", ""
	}
	t.add(name, rawName,
		msf(m.median()), msf(r.median()), fmt.Sprintf("%.2f×", rm),
		msf(m.p90()), msf(r.p90()), fmt.Sprintf("%.2f×", ratio(m.p90(), r.p90())),
		goal, v, calls)
}

func (t *table) print(w io.Writer) {
	header := []string{"operation (mount)", "raw SDK", "mount ms", "raw ms", "ratio", "mount p90", "raw p90", "p90 ratio", "target", "", "Temporal calls (mount | raw)"}
	fmt.Fprintln(w, "| "+strings.Join(header, " | ")+" |")
	seps := make([]string, len(header))
	for i := range seps {
		seps[i] = "---"
	}
	fmt.Fprintln(w, "|"+strings.Join(seps, "|")+"|")
	for _, r := range t.rows {
		for len(r) < len(header) {
			r = append(r, "")
		}
		fmt.Fprintln(w, "| "+strings.Join(r, " | ")+" |")
	}
}

// envInt reads a positive integer from the environment, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}
