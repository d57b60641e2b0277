package runs

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/signals"
)

// Bounds of the checks after a failed start call.
const (
	// settleTimeout bounds the describe calls Start makes, before it
	// answers, to learn whether a failed start call left a run behind.
	settleTimeout = 10 * time.Second
	// lateStartWindow is how long after a failed start call the run may
	// still appear (a start the server was still processing when the call
	// gave up): the background check describes the run again after it.
	lateStartWindow = startTimeout
	// reconcileTimeout bounds the background check that goes on while
	// Temporal cannot say whether the run exists.
	reconcileTimeout = 5 * time.Minute
	// settleBackoffMax caps the pause between two describe attempts.
	settleBackoffMax = 2 * time.Second
)

// settleFailedStart decides what becomes of the run id when the start
// call failed. It reports true when the run exists and the caller can
// still be answered (ctx is not done): Start then answers it as started,
// so its caller owns it. Otherwise it returns false, and the run, if it
// exists now or appears later, is cancelled with reason
// signals.ReasonStartFailed: before Start returns when Temporal answers,
// in the background (for at most lateStartWindow + reconcileTimeout) when
// it cannot tell yet or when a start in progress may still land.
func (s *Service) settleFailedStart(ctx context.Context, caller signals.Subject, id string, startErr error) bool {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	exists, err := s.runExists(dctx, id)
	switch {
	case err != nil:
		s.log.Warn("the start call failed and Temporal cannot tell whether the run exists; "+
			"cancelling it in the background if it does", zap.String("runId", id), zap.NamedError("startError", startErr), zap.Error(err))
		s.reconcileStart(caller, id, 0)
		return false
	case !exists:
		s.log.Debug("the start call failed and the run does not exist", zap.String("runId", id), zap.Error(startErr))
		s.reconcileStart(caller, id, lateStartWindow)
		return false
	case ctx.Err() == nil:
		s.log.Warn("the start call failed but the run exists; answering it as started",
			zap.String("runId", id), zap.Error(startErr))
		return true
	}
	s.log.Warn("the start call failed, the run exists and its caller is gone; cancelling the run",
		zap.String("runId", id), zap.String("reason", signals.ReasonStartFailed), zap.Error(startErr))
	if err := s.cancelFailedStart(dctx, caller, id); err != nil {
		s.log.Warn("cancel of a run whose start failed; retrying in the background", zap.String("runId", id), zap.Error(err))
		s.reconcileStart(caller, id, 0)
		return false
	}
	s.Release(id)
	return false
}

// runExists describes the run until Temporal answers or ctx ends: true
// when the workflow exists (open or closed), false when it does not.
func (s *Service) runExists(ctx context.Context, id string) (bool, error) {
	pause := 100 * time.Millisecond
	for {
		_, err := s.client.DescribeWorkflowExecution(ctx, id, "")
		switch {
		case err == nil:
			return true, nil
		case missing(err):
			return false, nil
		}
		if !sleep(ctx, pause) {
			return false, errors.Join(err, ctx.Err())
		}
		pause = min(2*pause, settleBackoffMax)
	}
}

// cancelFailedStart cancels the run of a failed start with reason
// signals.ReasonStartFailed. A run that is already closed, or that does
// not exist, needs nothing.
func (s *Service) cancelFailedStart(ctx context.Context, caller signals.Subject, id string) error {
	snap, err := s.Cancel(ctx, caller, id, signals.ReasonStartFailed)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil
	case errors.Is(err, ErrTerminal):
		if snap.Status != signals.StatusCancelled {
			s.log.Warn("a run whose start call failed had already ended", zap.String("runId", id),
				zap.String("status", string(snap.Status)))
		}
		return nil
	}
	return err
}

// reconcileStart checks, in the background after delay, whether the run
// of a failed start exists, and cancels it if it does, retrying while
// Temporal does not answer (for at most reconcileTimeout).
func (s *Service) reconcileStart(caller signals.Subject, id string, delay time.Duration) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), delay+reconcileTimeout)
		defer cancel()
		if !sleep(ctx, delay) {
			return
		}
		pause := 200 * time.Millisecond
		for {
			exists, err := s.runExists(ctx, id)
			if err == nil && !exists {
				s.Release(id)
				return
			}
			if err == nil {
				if err = s.cancelFailedStart(ctx, caller, id); err == nil {
					s.log.Info("run of a failed start cancelled", zap.String("runId", id),
						zap.String("reason", signals.ReasonStartFailed))
					s.Release(id)
					return
				}
			}
			if !sleep(ctx, pause) {
				s.log.Error("gave up cancelling the run of a failed start: it may run with no caller knowing its id "+
					"(with a Journal, the next Recover cancels it)",
					zap.String("runId", id), zap.Error(err))
				return
			}
			pause = min(2*pause, settleBackoffMax)
		}
	}()
}

// sleep waits d, or until ctx ends (then it returns false).
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
