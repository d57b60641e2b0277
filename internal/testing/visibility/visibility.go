package visibility

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// Bound is how long Await waits for an expected state to become visible.
// Measured lags are far below it (docs/rest-api.md#lists): it only has to
// cover a loaded CI machine.
const Bound = 30 * time.Second

// Interval is the pause between two checks.
const Interval = 50 * time.Millisecond

// ErrNotVisible is wrapped by Await's error when the bound passed before
// the expected state became visible.
var ErrNotVisible = errors.New("not visible")

// Await calls check until it returns nil, then returns nil. check returns
// an error describing what it saw while the expected state is not visible
// yet. Await returns an error wrapping ErrNotVisible and check's last
// error when bound passes first, or ctx's error when ctx ends. Each call
// of check gets a context bounded by what is left of bound.
func Await(ctx context.Context, bound time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	tick := time.NewTicker(Interval)
	defer tick.Stop()
	for {
		last := check(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%w within %s: %w", ErrNotVisible, bound, last)
			}
			return fmt.Errorf("wait for visibility: %w (last: %w)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// Require is Await in a test, with Bound: it fails t, naming what and
// check's last error, when the expected state does not become visible.
func Require(t testing.TB, what string, check func(context.Context) error) {
	t.Helper()
	if err := Await(context.Background(), Bound, check); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
