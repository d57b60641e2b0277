package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/activities"
	"github.com/openwop/temporal-mcp/telemetry"
)

// ActivityOptions configure Activities.
type ActivityOptions struct {
	// OutputDir, when set, is the directory PublishReport writes published
	// reports to (created if missing). When empty, published reports are
	// kept in memory (see Published).
	OutputDir string
	// HeartbeatInterval is how often a running activity heartbeats
	// (default 500ms). Keep it well below the HeartbeatTimeout the workflow
	// sets on the activity (the example tools set 3 s on Sleep).
	HeartbeatInterval time.Duration
	// SectionDelay is how long GenerateReport works on each section
	// (default 300ms).
	SectionDelay time.Duration
	// BookingDelay is how long BookExpense works on each of its stages
	// (default 500ms).
	BookingDelay time.Duration
}

// Activities are the activities of the tool workflows. Register a value with
// a worker (worker.RegisterActivity); the workflows refer to its methods.
type Activities struct {
	logger *zap.Logger
	opts   ActivityOptions

	mu        sync.Mutex
	published map[string]string   // report id -> body, when OutputDir is empty
	cancelled map[string][]string // run id -> activities that saw cancellation
}

// NewActivities returns Activities logging to logger.
func NewActivities(logger *zap.Logger, opts ActivityOptions) *Activities {
	if logger == nil {
		logger = zap.NewNop()
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = 500 * time.Millisecond
	}
	if opts.SectionDelay <= 0 {
		opts.SectionDelay = 300 * time.Millisecond
	}
	if opts.BookingDelay <= 0 {
		opts.BookingDelay = 500 * time.Millisecond
	}
	return &Activities{
		logger:    logger,
		opts:      opts,
		published: map[string]string{},
		cancelled: map[string][]string{},
	}
}

// Cancelled returns the names of the activities of run runID (the workflow
// ID) that stopped because their context was cancelled, in order.
func (a *Activities) Cancelled(runID string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.cancelled[runID]...)
}

// Published returns the body of a report PublishReport kept in memory.
func (a *Activities) Published(reportID string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	body, ok := a.published[reportID]
	return body, ok
}

// runFields are the log fields of the run the activity works for: the
// workflow ID is the runId, the workflow type the tool, and the trace is
// the activity's span when the worker is traced.
func runFields(ctx context.Context) []zap.Field {
	info := activity.GetInfo(ctx)
	return telemetry.RunFields(ctx, info.WorkflowExecution.ID, info.WorkflowType.Name)
}

// stopped records that the activity stopped on cancellation and returns err.
func (a *Activities) stopped(ctx context.Context, err error) error {
	info := activity.GetInfo(ctx)
	a.mu.Lock()
	a.cancelled[info.WorkflowExecution.ID] = append(a.cancelled[info.WorkflowExecution.ID], info.ActivityType.Name)
	a.mu.Unlock()
	a.logger.Info("activity cancelled", append(runFields(ctx),
		zap.String("activity", info.ActivityType.Name), zap.Error(err))...)
	return err
}

// work waits d while heartbeating progress(elapsed) every HeartbeatInterval
// (activities.Run). It returns ctx's error as soon as ctx is done.
func (a *Activities) work(ctx context.Context, d time.Duration, progress func(elapsed time.Duration) any) error {
	begin := time.Now()
	details := func() any { return progress(time.Since(begin)) }
	err := activities.Run(ctx, a.opts.HeartbeatInterval, details, func(ctx context.Context) error {
		done := time.NewTimer(d)
		defer done.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-done.C:
			return nil
		}
	})
	if err != nil {
		return a.stopped(ctx, err)
	}
	return nil
}

// SleepInput is the input of Sleep.
type SleepInput struct {
	// Millis is how long to sleep, in milliseconds.
	Millis int64 `json:"millis"`
}

// SleepResult is the result of Sleep.
type SleepResult struct {
	// SleptMillis is the total time slept, over all attempts.
	SleptMillis int64 `json:"sleptMillis"`
}

// Sleep sleeps in.Millis milliseconds while heartbeating the time slept, and
// stops at once when cancelled. A retried attempt resumes from the last
// heartbeat instead of sleeping the whole time again.
func (a *Activities) Sleep(ctx context.Context, in SleepInput) (SleepResult, error) {
	if in.Millis < 0 {
		return SleepResult{}, fmt.Errorf("sleep: negative duration %dms", in.Millis)
	}
	var already int64
	if activity.HasHeartbeatDetails(ctx) {
		if err := activity.GetHeartbeatDetails(ctx, &already); err != nil {
			already = 0
		}
	}
	remaining := time.Duration(in.Millis-already) * time.Millisecond
	if remaining < 0 {
		remaining = 0
	}
	err := a.work(ctx, remaining, func(elapsed time.Duration) any {
		return already + elapsed.Milliseconds()
	})
	if err != nil {
		return SleepResult{}, err
	}
	return SleepResult{SleptMillis: in.Millis}, nil
}

// ReportRequest is the input of GenerateReport.
type ReportRequest struct {
	Title    string `json:"title"`
	Topic    string `json:"topic"`
	Sections int    `json:"sections"`
}

// Report is a generated, not yet published report.
type Report struct {
	// ID identifies the report; it is derived from the run and the title, so
	// a retried generation yields the same id.
	ID       string `json:"id"`
	Title    string `json:"title"`
	Topic    string `json:"topic"`
	Sections int    `json:"sections"`
	// Body is the report text (Markdown).
	Body string `json:"body"`
}

// Summary is a one-line description of the report.
func (r Report) Summary() string {
	return fmt.Sprintf("%q: %d section(s) on %s, %d characters", r.Title, r.Sections, r.Topic, len(r.Body))
}

// GenerateReport writes a report of req.Sections sections on req.Topic,
// heartbeating after each section.
func (a *Activities) GenerateReport(ctx context.Context, req ReportRequest) (Report, error) {
	if strings.TrimSpace(req.Title) == "" {
		return Report{}, errors.New("generate report: empty title")
	}
	if req.Sections <= 0 {
		req.Sections = 1
	}
	info := activity.GetInfo(ctx)
	sum := sha256.Sum256([]byte(info.WorkflowExecution.ID + "\x00" + req.Title))
	rep := Report{ID: "rpt-" + hex.EncodeToString(sum[:8]), Title: req.Title, Topic: req.Topic, Sections: req.Sections}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\nA report on %s.\n", req.Title, req.Topic)
	for i := 1; i <= req.Sections; i++ {
		err := a.work(ctx, a.opts.SectionDelay, func(time.Duration) any { return i })
		if err != nil {
			return Report{}, err
		}
		fmt.Fprintf(&b, "\n## Section %d\n\nFindings %d on %s.\n", i, i, req.Topic)
	}
	rep.Body = b.String()
	a.logger.Info("report generated", append(runFields(ctx), zap.String("reportId", rep.ID))...)
	return rep, nil
}

// Publication says where a report was published.
type Publication struct {
	ReportID string `json:"reportId"`
	// Location is the file path, or "memory://<id>" when kept in memory.
	Location string `json:"location"`
}

// PublishReport publishes rep: it writes it to OutputDir/<id>.md, or keeps it
// in memory when no OutputDir is configured. Publishing again overwrites the
// same report, so a retry is harmless.
func (a *Activities) PublishReport(ctx context.Context, rep Report) (Publication, error) {
	if rep.ID == "" || strings.ContainsAny(rep.ID, `/\`) || rep.ID == "." || rep.ID == ".." {
		return Publication{}, fmt.Errorf("publish report: invalid report id %q", rep.ID)
	}
	if err := ctx.Err(); err != nil {
		return Publication{}, a.stopped(ctx, err)
	}
	activity.RecordHeartbeat(ctx, rep.ID)
	if a.opts.OutputDir == "" {
		a.mu.Lock()
		a.published[rep.ID] = rep.Body
		a.mu.Unlock()
		return Publication{ReportID: rep.ID, Location: "memory://" + rep.ID}, nil
	}
	if err := os.MkdirAll(a.opts.OutputDir, 0o755); err != nil {
		return Publication{}, fmt.Errorf("publish report: %w", err)
	}
	path := filepath.Join(a.opts.OutputDir, rep.ID+".md")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(rep.Body), 0o644); err != nil {
		return Publication{}, fmt.Errorf("publish report: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return Publication{}, fmt.Errorf("publish report: %w", err)
	}
	a.logger.Info("report published", zap.String("reportId", rep.ID), zap.String("path", path))
	return Publication{ReportID: rep.ID, Location: path}, nil
}
