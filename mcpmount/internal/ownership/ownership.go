package ownership

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/signals"
)

// CancelFunc cancels a run on behalf of the caller that owned it, with reason
// signals.ReasonMCPRequestCancelled. It must return nil or an error for a run
// that is already terminal; either is fine.
type CancelFunc func(ctx context.Context, caller signals.Subject, runID string) error

// cancelTimeout bounds one cancellation, which runs detached from the
// request that failed.
const cancelTimeout = 30 * time.Second

// Tracker holds the claims of the requests in flight.
type Tracker struct {
	cancel CancelFunc
	log    *zap.Logger
	// release, when set, learns of each owned run the tracker is done
	// with: released to its handle, or cancelled.
	release func(runID string)

	wg sync.WaitGroup // tracked handlers and cancellations in progress
}

// NewTracker returns a Tracker that cancels unreleased runs with cancel.
func NewTracker(cancel CancelFunc, logger *zap.Logger) *Tracker {
	if logger == nil {
		logger = zap.NewNop()
	}
	return &Tracker{cancel: cancel, log: logger}
}

// OnRelease sets a function told of each owned run the tracker is done
// with: its response was delivered, or it was cancelled (not after a
// cancellation that failed). Set it before the tracker is used.
func (t *Tracker) OnRelease(release func(runID string)) { t.release = release }

func (t *Tracker) released(runID string) {
	if t.release != nil {
		t.release(runID)
	}
}

// Claim records the runs one request owns.
type Claim struct {
	t      *Tracker
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	owned     []ownedRun
	settled   bool
	delivered bool // how it settled
	abandoned bool
	// answering is set once the request's handler hands its answer to
	// the transport (Answering).
	answering bool
	// afterSettle are the functions AfterSettle arranged for.
	afterSettle []func(delivered bool)
}

type ownedRun struct {
	caller signals.Subject
	runID  string
	fields []zap.Field // of the log lines about the run
}

// logFields are the fields of a log line about o: the ones Own was given,
// or the run id alone.
func (o ownedRun) logFields(extra ...zap.Field) []zap.Field {
	f := o.fields
	if len(f) == 0 {
		f = []zap.Field{zap.String("runId", o.runID)}
	}
	return append(f[:len(f):len(f)], extra...)
}

// Open opens a claim for a request whose transport context is request (it
// ends when the transport knows the client left). The caller must Settle
// the claim.
func (t *Tracker) Open(request context.Context) *Claim {
	ctx, cancel := context.WithCancel(request)
	return &Claim{t: t, ctx: ctx, cancel: cancel}
}

// Gone returns a channel closed when the request is known to be gone (the
// client disconnected or cancelled it) or the claim settled. A handler that
// waits on behalf of the request stops waiting then. A nil claim's channel
// is never closed.
func (c *Claim) Gone() <-chan struct{} {
	if c == nil {
		return nil
	}
	return c.ctx.Done()
}

// AfterGone arranges for f to run, in a goroutine of its own, once the
// request is gone (see Gone), and returns a function that stops that, as
// context.AfterFunc does: no goroutine waits meanwhile. A nil claim never
// calls f.
func (c *Claim) AfterGone(f func()) (stop func() bool) {
	if c == nil {
		return func() bool { return false }
	}
	return context.AfterFunc(c.ctx, f)
}

// AfterSettle arranges for f to be called once the claim settles, with
// whether it settled as delivered, in the goroutine that settles it (f
// must not block). A claim settled already calls f at once; a nil claim
// never calls it.
func (c *Claim) AfterSettle(f func(delivered bool)) {
	if c == nil {
		return
	}
	c.mu.Lock()
	if !c.settled {
		c.afterSettle = append(c.afterSettle, f)
		c.mu.Unlock()
		return
	}
	delivered := c.delivered
	c.mu.Unlock()
	f(delivered)
}

// Own records that the request owns runID, started or resumed for caller.
// If the claim was already settled as not delivered (the request went away
// while the run was being started), the run is cancelled at once; a nil
// claim owns nothing and does nothing. fields are those of every log line
// about the run (telemetry.RunFields); none: the run id alone.
func (c *Claim) Own(caller signals.Subject, runID string, fields ...zap.Field) {
	if c == nil {
		return
	}
	o := ownedRun{caller: caller, runID: runID, fields: fields}
	c.mu.Lock()
	if c.settled {
		c.mu.Unlock()
		c.t.log.Info("request ended before it could own its run; cancelling the run", o.logFields()...)
		c.t.cancelRuns([]ownedRun{o})
		return
	}
	c.owned = append(c.owned, o)
	c.mu.Unlock()
}

// Answering records that the request's handler has its answer and hands it
// to the transport now. Over HTTP the answer is then delivered when the
// client is still connected as the bytes written after this call are
// flushed to the connection, whatever happens after (the client may read
// its answer and hang up before the handler returns). A handler that never
// calls it is delivered when the client is still connected once it has
// returned. A nil claim does nothing.
func (c *Claim) Answering() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.answering = true
	c.mu.Unlock()
}

func (c *Claim) isAnswering() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answering
}

// Abandon records that the request's response will not reach its client
// whatever the transport reports: the client cancelled the request (a
// notifications/cancelled in an HTTP session, whose connection stays up),
// or its session ended before the response was written. The claim then
// settles as not delivered. A nil claim does nothing.
func (c *Claim) Abandon() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.abandoned = true
	c.mu.Unlock()
}

// Settle ends the claim. When delivered is false, or the claim was
// abandoned, every run the request owns is cancelled (in the background,
// detached from the request). A claim settles once; later calls do nothing.
func (c *Claim) Settle(delivered bool) {
	c.mu.Lock()
	if c.settled {
		c.mu.Unlock()
		return
	}
	if c.abandoned {
		delivered = false
	}
	c.settled, c.delivered = true, delivered
	c.cancel()
	owned, after := c.owned, c.afterSettle
	c.owned, c.afterSettle = nil, nil
	c.mu.Unlock()

	for _, f := range after {
		f(delivered)
	}
	if !delivered {
		// A handler still running may record a run later; Own then
		// cancels it.
		c.t.cancelRuns(owned)
		return
	}
	for _, o := range owned {
		c.t.log.Debug("response delivered; run released to its handle", o.logFields()...)
		c.t.released(o.runID)
	}
}

func (t *Tracker) cancelRuns(runs []ownedRun) {
	for _, o := range runs {
		t.wg.Add(1)
		go func(o ownedRun) {
			defer t.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
			defer cancel()
			t.log.Info("request owning the run went away before its response was sent; cancelling the run",
				o.logFields(zap.String("reason", signals.ReasonMCPRequestCancelled))...)
			if err := t.cancel(ctx, o.caller, o.runID); err != nil {
				t.log.Warn("cancel of an owned run failed", o.logFields(zap.Error(err))...)
				return
			}
			t.released(o.runID)
		}(o)
	}
}

// Track marks a handler that may record runs as in flight until done is
// called, so Wait also waits for it.
func (t *Tracker) Track() (done func()) {
	t.wg.Add(1)
	return t.wg.Done
}

// Wait blocks until the tracked handlers and the cancellations started so
// far have finished (used when a transport ends, so a process does not exit
// with an owned run left running).
func (t *Tracker) Wait() { t.wg.Wait() }
