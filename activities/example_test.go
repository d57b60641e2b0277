package activities_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/openwop/temporal-mcp/activities"
)

// upload stands for a piece of work that honours its context.
func upload(ctx context.Context, file string) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Millisecond):
		return nil
	}
}

// An activity that uploads files one by one. Run heartbeats every second
// with how many files are done, so a cancellation of the run stops the
// upload within about 80% of the activity's HeartbeatTimeout, and a retried
// attempt skips the files the previous one uploaded.
func ExampleRun() {
	uploadAll := func(ctx context.Context, files []string) error {
		var done atomic.Int64
		if last, ok := activities.LastProgress(ctx); ok {
			done.Store(last.Done)
		}
		progress := func() any {
			return activities.Progress{Done: done.Load(), Total: int64(len(files)), Step: "upload"}
		}
		return activities.Run(ctx, time.Second, progress, func(ctx context.Context) error {
			for _, f := range files[min(done.Load(), int64(len(files))):] {
				if err := upload(ctx, f); err != nil {
					return fmt.Errorf("upload %s: %w", f, err)
				}
				done.Add(1)
			}
			return nil
		})
	}
	// Register uploadAll with a worker: w.RegisterActivity(uploadAll).
	_ = uploadAll
}

// An activity that works in steps it can name records its progress after
// each of them; every call is a heartbeat.
func ExampleRecordProgress() {
	convert := func(ctx context.Context, pages int) error {
		for page := 1; page <= pages; page++ {
			if err := ctx.Err(); err != nil {
				return err // cancelled: an earlier heartbeat carried it
			}
			// ... convert the page ...
			activities.RecordProgress(ctx, activities.Progress{Done: int64(page), Total: int64(pages), Step: "convert"})
		}
		return nil
	}
	_ = convert
}
