package runs

import (
	"cmp"
	"context"
	"crypto/rand"
	"io"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// Service is the Backend on Temporal: it performs run operations with a
// Temporal client. It is safe for concurrent use.
type Service struct {
	client client.Client
	// limit is client when Options.MaxTemporalCalls bounds its calls
	// (nil: unbounded).
	limit *limitedClient
	log   *zap.Logger
	opts  Options
	dc    converter.DataConverter
	rand  io.Reader
	// runIDSecret derives the runIds of idempotent starts
	// (Options.RunIDSecret).
	runIDSecret []byte
	// rd reads runs: the getRun query, describe, close events, and the
	// machinery that shares and reuses those reads.
	rd *reader
}

// reader reads runs for the operations of a Service and owns what makes
// reading cheap: the memo of runs known, the worker liveness of task
// queues, the cache of recent readings and the shared watches of Await.
// An operation asks it for a run; it never changes a run.
type reader struct {
	client client.Client
	// limit is client when Options.MaxTemporalCalls bounds its calls
	// (nil: unbounded).
	limit *limitedClient
	log   *zap.Logger
	opts  Options
	decoder
	// known remembers the runs this process started or read lately (see
	// runMemo): reading a plain one skips the getRun query it cannot
	// answer, and cancelling one skips the describe call.
	known *runMemo
	// workers watches whether workers serve the task queues of runs.
	workers *workers
	// reads shares and reuses the reads of Get (Options.ReadWindow).
	reads *readCache
	// watches shares the followers of Await with PublishedOnly.
	watches watches
}

// Defaults of Options, also the defaults of the stock server and worker.
const (
	// DefaultTaskQueue is the task queue of the stock tools.
	DefaultTaskQueue = "openwop-tools"
	// DefaultNamespace is the Temporal namespace runs live in.
	DefaultNamespace = "default"
)

// Options configure a Service.
type Options struct {
	// TaskQueue is where runs of a tool whose spec names no task queue
	// start.
	TaskQueue string
	// Namespace is the Temporal namespace (for visibility queries).
	Namespace string
	// StartQueryTimeout bounds how long Start waits for the first answer of
	// the new run's getRun query (with WaitFirstTask) before it reports the
	// run as pending.
	StartQueryTimeout time.Duration
	// WaitFirstTask makes Start wait for the new run's first getRun answer
	// (its first workflow task) before it returns. By default Start returns
	// once the run exists: a Get right after it still resolves, because
	// Temporal holds the query until that task completed.
	WaitFirstTask bool
	// EagerStart makes Start ask for Temporal's eager workflow start: where
	// this process runs a worker of the tool's task queue on the same
	// client object (the stock server's in-process worker), the run's first
	// workflow task comes back in the start response and that worker runs
	// it at once, instead of after a trip through the server's task queues.
	// History then records the client's identity, not the worker's, as
	// the one that started that first task.
	EagerStart bool
	// Journal, when set, records each run from before its start call
	// until its caller took it over (Service.Release) or it was cancelled,
	// so that after a crash Service.Recover cancels the runs no caller
	// learned of. Nil: none (a crash between a start and its answer can
	// leave a run no caller knows).
	Journal Journal
	// QueryPatience bounds how long a read (Get, and the reads of
	// Resolve, Cancel and Events) waits for the getRun query of a running
	// run. A run whose worker does not answer in time is read from what it
	// published in Temporal (signals.MemoState: status and open
	// interrupts) by a describe call, and its task queue is marked
	// unserved: later reads of its runs skip the query until a worker
	// polls the queue again (see Service.UnservedQueues). 0 means
	// DefaultQueryPatience; negative, as long as the caller's context
	// allows.
	QueryPatience time.Duration
	// CursorKey is the HMAC key that seals List cursors, so that only
	// cursors this service issued reach Temporal. Nil: a random key per
	// process (cursors then do not survive a restart or work across
	// replicas; give replicas one key).
	CursorKey []byte
	// RunIDSecret is the HMAC key the runIds of idempotent starts
	// (NewRun.IdempotencyKey) are derived with. Nil: a random key per
	// service, so that a key does not outlive the process nor work across
	// replicas; give replicas one secret.
	RunIDSecret []byte
	// ReadWindow is how long Get reuses a read of a working run: the
	// concurrent and rapid Gets of one run within it share one Temporal
	// read. A read of a run waiting for an answer is reused four windows,
	// a read that took longer than the window as long as it took (at most
	// 4 s: when Temporal is slow, polls ask less of it), and a terminal
	// run's (which never changes) until the bounded cache evicts it. This
	// process's own Resolve and Cancel of a run drop what is held, so its
	// own changes are seen at once; a change made through another process
	// shows within the window. A poll (Get with AllowStale) whose read has not answered within a
	// fifth of the window is answered with the last reading held (at most
	// 30 s old; AllowStaleWithin bounds it further) while the read goes on. Concurrent Gets share one read
	// whatever the window. 0 means DefaultReadWindow; negative, no reuse.
	ReadWindow time.Duration
	// MaxTemporalCalls bounds the Temporal calls the service makes at once
	// (starts, signals, queries, describes, cancels, history reads that do
	// not long-poll); more wait for a slot in this process, the calls on
	// runs that exist before the starts of new runs (a start at least
	// every fourth slot while both wait). Past
	// saturation, more concurrent calls make Temporal slower at each and
	// lower its throughput; the bound keeps it at the rate it serves best.
	// Long polls (blocking calls following their runs, listeners) hold no
	// slot. 0 means DefaultMaxTemporalCalls; negative, no bound.
	MaxTemporalCalls int
}

// New returns a Service that uses c. Zero Options fields get defaults:
// DefaultTaskQueue, DefaultNamespace, a 5 s start query timeout.
func New(c client.Client, logger *zap.Logger, opts Options) *Service {
	opts.TaskQueue = cmp.Or(opts.TaskQueue, DefaultTaskQueue)
	opts.Namespace = cmp.Or(opts.Namespace, DefaultNamespace)
	if opts.StartQueryTimeout <= 0 {
		opts.StartQueryTimeout = 5 * time.Second
	}
	opts.QueryPatience = cmp.Or(opts.QueryPatience, DefaultQueryPatience)
	opts.ReadWindow = cmp.Or(opts.ReadWindow, DefaultReadWindow)
	opts.MaxTemporalCalls = cmp.Or(opts.MaxTemporalCalls, DefaultMaxTemporalCalls)
	limit := limitCalls(c, opts.MaxTemporalCalls)
	if limit != nil {
		c = limit
	}
	if logger == nil {
		logger = zap.NewNop()
	}
	dc := converter.GetDefaultDataConverter()
	secret := opts.RunIDSecret
	if len(secret) == 0 {
		secret = make([]byte, 32)
		_, _ = io.ReadFull(rand.Reader, secret) // crypto/rand never fails
	}
	return &Service{client: c, limit: limit, log: logger, opts: opts, dc: dc, rand: rand.Reader, runIDSecret: secret,
		rd: &reader{client: c, limit: limit, log: logger, opts: opts, decoder: decoder{dc},
			known: newRunMemo(runsRemembered), workers: newWorkers(c, logger), reads: newReadCache(opts.ReadWindow)}}
}

// UnservedQueues returns the task queues that no worker serves now, and
// the versions of pinned runs whose queue no worker of that build polls
// (whatever other builds poll it), sorted: those whose runs did not
// answer a getRun query in time and that no worker has polled for 5 s (see
// Options.QueryPatience), and those no worker has polled for 90 s. It
// checks the queues in also and every queue or version it checked or found
// unserved before (at most 1024), but a version no open run is pinned to
// any more. Each outage is logged once at WARN,
// naming the build and deployment of a version, and at INFO when a worker
// polls again.
func (s *Service) UnservedQueues(ctx context.Context, also ...string) ([]Unserved, error) {
	return s.rd.workers.unservedQueues(ctx, also...)
}

// authorize checks the id's grammar and tenant segment before any lookup.
func authorize(caller signals.Subject, id string) error {
	if !runid.Valid(id) {
		return ErrNotFound
	}
	if runid.Tenant(id) != caller.Tenant {
		return ErrTenantMismatch
	}
	return nil
}
