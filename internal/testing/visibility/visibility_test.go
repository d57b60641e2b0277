package visibility_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/internal/testing/visibility"
)

func TestAwait(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name      string
		ctx       context.Context
		bound     time.Duration
		visibleAt int // the call from which check succeeds; 0: never
		wantCalls int // at least
		wantErr   error
		wantText  string
	}{
		{name: "visible at once", ctx: context.Background(), bound: time.Second, visibleAt: 1, wantCalls: 1},
		{name: "visible at the third check", ctx: context.Background(), bound: 10 * time.Second, visibleAt: 3, wantCalls: 3},
		{name: "never visible", ctx: context.Background(), bound: 200 * time.Millisecond, wantCalls: 2,
			wantErr: visibility.ErrNotVisible, wantText: "listed as running"},
		{name: "caller gone", ctx: cancelled, bound: time.Minute, wantCalls: 1,
			wantErr: context.Canceled, wantText: "listed as running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := visibility.Await(tt.ctx, tt.bound, func(context.Context) error {
				calls++
				if tt.visibleAt != 0 && calls >= tt.visibleAt {
					return nil
				}
				return fmt.Errorf("check %d: listed as running", calls)
			})
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Await = %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tt.wantText) {
				t.Fatalf("Await = %v, want the last state %q", err, tt.wantText)
			}
			if calls < tt.wantCalls || tt.visibleAt != 0 && calls != tt.visibleAt {
				t.Fatalf("check called %d times, want %d", calls, tt.wantCalls)
			}
		})
	}
}

func ExampleAwait() {
	listed := 0 // stands for a list call whose result catches up
	err := visibility.Await(context.Background(), visibility.Bound, func(ctx context.Context) error {
		if listed++; listed < 3 {
			return fmt.Errorf("%d of 3 runs listed as completed", listed)
		}
		return nil
	})
	fmt.Println(err)
	// Output: <nil>
}
