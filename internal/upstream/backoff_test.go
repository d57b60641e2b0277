package upstream

import (
	"testing"
	"time"
)

// The wait before each attempt doubles from lo up to hi, drawn between its
// half and itself.
func TestBackoff(t *testing.T) {
	lo, hi := time.Second, 10*time.Second
	for _, tc := range []struct {
		failures  int
		least, at time.Duration
	}{{0, lo, lo}, {1, lo, 2 * lo}, {2, 2 * lo, 4 * lo}, {3, 4 * lo, 8 * lo}, {4, hi / 2, hi}, {40, hi / 2, hi}} {
		for range 100 {
			if d := backoff(tc.failures, lo, hi); d < tc.least || d > tc.at {
				t.Fatalf("backoff(%d) = %s, want within [%s, %s]", tc.failures, d, tc.least, tc.at)
			}
		}
	}
}
