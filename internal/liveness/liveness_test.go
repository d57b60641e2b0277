package liveness_test

import (
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/internal/liveness"
)

// TestPolled: a poll counts while it is younger than the window (Window
// when none is given), and not at the window or after it.
func TestPolled(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		last   time.Time
		window time.Duration
		want   bool
	}{
		{"just now", now, 0, true},
		{"within Window", now.Add(-liveness.Window + time.Millisecond), 0, true},
		{"at Window", now.Add(-liveness.Window), 0, false},
		{"past Window", now.Add(-2 * liveness.Window), 0, false},
		{"never (zero time)", time.Time{}, 0, false},
		{"within a window given", now.Add(-4 * time.Second), 5 * time.Second, true},
		{"past a window given", now.Add(-5 * time.Second), 5 * time.Second, false},
		{"a clock behind the server's", now.Add(time.Second), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := liveness.Polled(tt.last, now, tt.window); got != tt.want {
				t.Fatalf("Polled(%v, now, %v) = %v, want %v", now.Sub(tt.last), tt.window, got, tt.want)
			}
		})
	}
}
