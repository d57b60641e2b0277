package mcpmount

import (
	"context"
	"net/http"
	"sync"

	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/signals"
)

// ownership records the run a request started (or continues). Until the
// request's whole response is sent the request owns that run; after it,
// the run belongs to its task handle (RFC 0198 §G.12-13).
type ownership struct {
	// request is the HTTP request's context: it ends when the client goes
	// away, whatever the protocol version (the SDK ties handler contexts to
	// it only for 2026-07-28 requests).
	request context.Context

	mu     sync.Mutex
	caller signals.Subject
	runID  string
}

type ownershipKey struct{}

func withOwnership(ctx context.Context, o *ownership) context.Context {
	return context.WithValue(ctx, ownershipKey{}, o)
}

// ownershipFrom returns the request's ownership record, nil outside HTTP.
func ownershipFrom(ctx context.Context) *ownership {
	o, _ := ctx.Value(ownershipKey{}).(*ownership)
	return o
}

// own records that the request owns runID.
func (o *ownership) own(caller signals.Subject, runID string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.caller, o.runID = caller, runID
}

// bind returns a context that also ends when the owning HTTP request ends.
func (o *ownership) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(o.request, cancel)
	return ctx, func() { stop(); cancel() }
}

func (o *ownership) owned() (signals.Subject, string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.caller, o.runID
}

// trackingWriter observes the response: how much was written, whether a
// write failed, and whether the client was already gone when the last
// write was made.
type trackingWriter struct {
	http.ResponseWriter
	ctx context.Context

	mu       sync.Mutex
	n        int
	err      error
	lateLast bool
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lateLast = t.ctx.Err() != nil
	n, err := t.ResponseWriter.Write(b)
	t.n += n
	if err != nil && t.err == nil {
		t.err = err
	}
	return n, err
}

// Flush implements http.Flusher.
func (t *trackingWriter) Flush() {
	_ = http.NewResponseController(t.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// delivered reports whether a response was written in full while the client
// was still connected.
func (t *trackingWriter) delivered() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n > 0 && t.err == nil && !t.lateLast
}

// settle decides the fate of the run the request owned once the handler
// returned: a delivered response passes ownership to the task handle; an
// undelivered one cancels the run as cancelRun would, with reason
// mcp-request-cancelled. The cancellation runs detached from the request.
func (m *Mount) settle(r *http.Request, own *ownership, tw *trackingWriter) {
	caller, runID := own.owned()
	if runID == "" {
		return
	}
	flushErr := http.NewResponseController(tw.ResponseWriter).Flush()
	if tw.delivered() && flushErr == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), cancelTimeout)
	defer cancel()
	m.log.Info("response not delivered; cancelling the run the request owned", zap.String("runId", runID))
	if _, err := m.runs.Cancel(ctx, caller, runID, signals.ReasonMCPRequestCancelled); err != nil {
		m.log.Info("cancel of an undelivered request's run", zap.String("runId", runID), zap.Error(err))
	}
}
