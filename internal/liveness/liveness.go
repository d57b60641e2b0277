// Package liveness is the server's one rule for whether a worker still
// polls a task queue, judged from the last access Temporal reports of the
// queue's workflow pollers (DescribeTaskQueue). The catalog judges a
// worker that sends no heartbeats by it (catalog.DefaultLiveWindow is
// Window), and the run service whether any worker still serves the task
// queue of a run (docs/catalog.md#liveness, docs/operations.md).
//
// It is no part of the contract: a worker implements nothing for it, it
// only polls its task queue as every Temporal SDK does.
package liveness

import "time"

// Window is how recently a worker must have polled a task queue to count
// as live. Temporal refreshes a poller's last access when a long poll
// starts and when it ends, and an idle long poll lasts up to about 60 s,
// so a live worker's last access is never older than about 60 s; 90 s
// leaves a margin.
const Window = 90 * time.Second

// Polled reports whether a poller whose last access Temporal reports at
// last has polled within window of now (within Window when window is 0 or
// less).
func Polled(last, now time.Time, window time.Duration) bool {
	if window <= 0 {
		window = Window
	}
	return now.Sub(last) < window
}
