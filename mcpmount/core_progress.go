package mcpmount

import (
	"context"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/signals"
)

// progress sends notifications/progress for one blocking call whose
// request carried a progressToken: one at every change of the run's
// status, status message or event log (a node starting or ending), and one
// every keep-alive interval while nothing changes, so that a client whose
// timeout restarts on progress waits as long as the run does. The message
// is the run's status message, never tool content; progress counts the
// notifications, so it increases with each. A nil *progress sends nothing.
type progress struct {
	ss    progressNotifier
	ctx   context.Context // the call's: notifications go on its stream
	token any

	mu      sync.Mutex
	n       float64
	message string
	state   string // the run state last reported
	stopped bool

	done chan struct{}
	wg   sync.WaitGroup
}

// progressNotifier sends a notifications/progress on the stream of the
// request it belongs to; each dialect provides its own (an SDK session, or
// the SSE response of a request the mount answers itself).
type progressNotifier interface {
	NotifyProgress(ctx context.Context, params *mcp.ProgressNotificationParams) error
}

// startProgress starts the heartbeat of c's progress notifications, or
// returns nil when c's request carried no progressToken.
func (m *Mount) startProgress(ctx context.Context, c *blockingCall) *progress {
	if c.progressToken == nil || c.notify == nil {
		return nil
	}
	p := &progress{ss: c.notify, ctx: ctx, token: c.progressToken, done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		every(m.keepAlive, p.done, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.sendLocked()
		})
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
	p.message = s.StatusMessage
	if p.message == "" {
		p.message = s.Status.Message()
	}
	p.sendLocked()
}

// sendLocked sends the next notification; p.mu is held, so notifications
// go out in the order of their progress values.
func (p *progress) sendLocked() {
	if p.stopped || p.state == "" {
		return // stopped, or nothing observed yet
	}
	p.n++
	// A failed send (the client left) changes nothing: the call notices
	// through its claim.
	_ = p.ss.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: p.n, Message: p.message})
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
