package core

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/signals"
)

// progress sends notifications/progress for one blocking call whose
// request carried a progressToken: one at every change of the run's
// status, status message or event log (a node starting or ending), and one
// every keep-alive interval while nothing changes, so that a client whose
// timeout restarts on progress waits as long as the run does. The message
// is the run's status message, never tool content. progress and total
// follow the run's reported counts (progressScale), increasing with each
// notification. A nil *progress sends nothing.
type progress struct {
	ss    ProgressNotifier
	ctx   context.Context // the call's: notifications go on its stream
	token any

	mu      sync.Mutex
	scale   progressScale
	counts  *signals.Progress // the run's progress last observed
	message string
	state   string // the run state last reported
	stopped bool

	done chan struct{}
	wg   sync.WaitGroup
}

// ProgressNotifier sends a notifications/progress on the stream of the
// request it belongs to; each dialect provides its own (an SDK session, or
// the SSE response of a request the mount answers itself).
type ProgressNotifier interface {
	NotifyProgress(ctx context.Context, params *mcp.ProgressNotificationParams) error
}

// startProgress starts the heartbeat of c's progress notifications, or
// returns nil when c's request carried no progressToken.
func (m *Core) startProgress(ctx context.Context, c *blockingCall) *progress {
	if c.progressToken == nil || c.notify == nil {
		return nil
	}
	p := &progress{ss: c.notify, ctx: ctx, token: c.progressToken, done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(m.keepAlive)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
				p.mu.Lock()
				p.sendLocked()
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// observe reports the snapshot when the run changed since the last one.
func (p *progress) observe(s signals.Snapshot) {
	if p == nil {
		return
	}
	state := fmt.Sprintf("%s\x00%s\x00%d", s.Status, s.StatusMessage, s.LastSequence)
	p.mu.Lock()
	defer p.mu.Unlock()
	if state == p.state {
		return
	}
	p.state = state
	p.counts = s.Progress
	p.message = cmp.Or(s.CurrentMessage(time.Now()), s.Status.Message())
	p.sendLocked()
}

// sendLocked sends the next notification; p.mu is held, so notifications
// go out in the order of their progress values.
func (p *progress) sendLocked() {
	if p.stopped || p.state == "" {
		return // stopped, or nothing observed yet
	}
	value, total := p.scale.next(p.counts)
	// A failed send (the client left) changes nothing: the call notices
	// through its claim.
	_ = p.ss.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: value, Total: total, Message: p.message})
}

// stop ends the notifications before the call's response is written.
func (p *progress) stop() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	close(p.done)
	p.wg.Wait()
}

// progressScale turns the counts a run reports (signals.Progress: done of
// total in the current step) into the progress and total of MCP
// notifications, which must increase with every notification although a
// run's counts restart with each step and a keep-alive reports no new
// count. While a step counts, progress is its done plus an offset and
// total its total plus the same offset, so total − progress is always the
// step's remaining work; the offset is the least that keeps progress
// increasing, zero for the first counting step of a call whose earlier
// notifications stayed below its counts. A notification that reports no
// new count adds k/(k+1) (the k-th since the count) below the next count,
// or moves the offset up by one when the step is done (done = total), so
// that progress never passes total. While the run reports no counts,
// progress counts the notifications (1, 2, 3, ...) and total is left out.
type progressScale struct {
	sent   bool    // a notification was sent
	last   float64 // the progress last sent
	offset float64
	counts *signals.Progress // the counts of the current counting step; nil: none
	ticks  int               // notifications since counts changed
}

// next returns the progress and total (0: unknown) of the next
// notification, for the run's counts c (nil: none reported).
func (s *progressScale) next(c *signals.Progress) (progress, total float64) {
	switch {
	case c == nil || c.Done <= 0 && c.Total <= 0:
		// No counts: the next whole number.
		s.counts = nil
		progress = math.Floor(s.last) + 1
	case s.counts == nil || c.Step != s.counts.Step || c.Total != s.counts.Total || c.Done < s.counts.Done:
		// A step starts counting: the least offset that keeps progress
		// increasing.
		s.offset = 0
		if s.sent && float64(c.Done) <= s.last {
			s.offset = math.Floor(s.last) + 1 - float64(c.Done)
		}
		s.counts, s.ticks = copyProgress(c), 0
		progress = s.offset + float64(c.Done)
	case c.Done > s.counts.Done:
		s.counts, s.ticks = copyProgress(c), 0
		progress = s.offset + float64(c.Done)
	case c.Total > 0 && c.Done >= c.Total:
		// Done, and no room below total: the step's numbers move up.
		s.offset++
		progress = s.offset + float64(c.Done)
	default:
		s.ticks++
		progress = s.offset + float64(c.Done) + float64(s.ticks)/float64(s.ticks+1)
	}
	if s.counts != nil && s.counts.Total > 0 {
		// A run that reports more done than its total gets total = progress.
		total = max(s.offset+float64(s.counts.Total), progress)
	}
	s.sent, s.last = true, progress
	return progress, total
}

func copyProgress(p *signals.Progress) *signals.Progress {
	c := *p
	return &c
}
