// Package runs is the one place that turns run operations (start, getRun,
// resolveInterruptByRun, cancelRun, listRuns, pollRunEvents) into Temporal
// client calls. The MCP mount and the REST API both use it; neither talks to
// Temporal directly, and nothing here knows about MCP or HTTP.
//
// Every method takes the caller's Subject. A run whose tenant segment is not
// the caller's tenant is refused with ErrTenantMismatch before any lookup, so
// the answer never depends on whether the run exists.
package runs

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/openwop/temporal-mcp/signals"
)

// Errors returned by Service methods. Callers map them to wire errors with
// errors.Is.
var (
	// ErrNotFound: no readable run with that id (unknown, purged, or an id
	// that does not match the runId grammar).
	ErrNotFound = errors.New("run not found")
	// ErrTenantMismatch: the id names another tenant's run (whether or not
	// it exists).
	ErrTenantMismatch = errors.New("run id belongs to another tenant")
	// ErrTerminal: the run is already completed, failed or cancelled.
	ErrTerminal = errors.New("run is terminal")
	// ErrNotEligible: the caller is not an eligible approver of the
	// interrupt.
	ErrNotEligible = errors.New("caller is not an eligible approver")
	// ErrNotOpen: the run has no open interrupt with that id (never issued).
	ErrNotOpen = errors.New("interrupt is not open")
	// ErrAlreadyResolved: the interrupt was resolved already, by an earlier
	// or a concurrent resolution.
	ErrAlreadyResolved = errors.New("interrupt already resolved")
	// ErrBadCursor: a List cursor that this service did not issue.
	ErrBadCursor = errors.New("invalid cursor")
	// ErrNotApplied: the resolution was recorded with the run (its signal
	// was accepted), but no worker answered to apply it: none serves the
	// run's task queue now. The run applies it, if it is still the first
	// eligible one, when a worker serves the queue again; sending it again
	// is harmless (a run applies one resolution per interrupt).
	ErrNotApplied = errors.New("resolution recorded; no worker serves the run to apply it yet")
)

// StartRequest asks Service.Start for a new run.
type StartRequest struct {
	// Tool is the tool to run (from the catalog): its name, task queue,
	// workflow type and contract.
	Tool signals.ToolSpec
	// Arguments are the validated tool arguments (a JSON object).
	Arguments json.RawMessage
	// Caller starts the run and becomes its owner.
	Caller signals.Subject
	// Transport is signals.TransportMCP or signals.TransportREST.
	Transport string
	// PreRunInputs are the answers to the tool's pre-run input requests.
	PreRunInputs map[string]json.RawMessage
}

// ListRequest filters and pages Service.List.
type ListRequest struct {
	// Tool, when set, keeps only runs of that tool (OpenWOP's workflowId
	// filter).
	Tool string
	// Status, when set, keeps only runs in that status.
	Status signals.Status
	// Limit is the page size (1..MaxPageSize; 0 means DefaultPageSize).
	Limit int
	// Cursor continues a previous page ("" for the first page).
	Cursor string
}

// ListPage is one page of Service.List, newest run first.
type ListPage struct {
	Runs       []signals.Snapshot
	NextCursor string
}

// Page sizes of Service.List.
const (
	DefaultPageSize = 50
	MaxPageSize     = 100
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
}
