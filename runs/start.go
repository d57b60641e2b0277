package runs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
	"github.com/openwop/temporal-mcp/telemetry"
)

// NewRun is the run an edge asks Service.Start (Backend.Start) to start:
// which tool, with what arguments, for whom and through which transport.
// It is not what the workflow receives: Start mints the run id and starts
// the workflow with a signals.StartRequest (the run contract's start
// argument) made from it, or with the arguments alone for a plain tool.
type NewRun struct {
	// Tool is the tool to run (from the catalog): its name, task queue,
	// workflow type and contract.
	Tool signals.ToolSpec
	// Arguments are the validated tool arguments (a JSON object).
	Arguments json.RawMessage
	// Caller starts the run and becomes its owner.
	Caller signals.Subject
	// Transport is signals.TransportMCP, signals.TransportREST or
	// signals.TransportNexus.
	Transport string
	// PreRunInputs are the answers to the tool's pre-run input requests.
	PreRunInputs map[string]json.RawMessage
	// Version, when set, is the Worker Deployment version the run starts
	// on whatever the deployment's routing says (catalog.Tool.Pinned: the
	// version whose spec the arguments were checked against). Its first workflow task goes to that version (a one-time
	// versioning override); after it the run follows the tool's own
	// versioning behaviour (pinned: it stays there).
	Version *signals.DeploymentVersion
	// IdempotencyKey, when set (ValidIdempotencyKey), makes the start
	// happen at most once per tenant, tool and key: a start with a key
	// used before answers the run it started (see launchOnce), or
	// ErrKeyReused when that run was asked for with other arguments.
	IdempotencyKey string
	// Launch, when set, starts the workflow in place of the service's
	// client, with the start options, workflow type and input Start built,
	// and returns the Temporal run id: a Nexus operation's handler starts
	// it with temporalnexus.ExecuteUntypedWorkflow, which attaches the
	// operation's completion callback (package nexusfront). It must leave
	// the options' ID and policies as they are.
	Launch func(ctx context.Context, opts client.StartWorkflowOptions, workflowType string, input any) (string, error)
}

// launcher starts the run id, its start options edited by edit (nil: as
// they are). A start refused because a workflow of that ID exists returns
// Temporal's *serviceerror.WorkflowExecutionAlreadyStarted.
type launcher func(id string, edit func(*client.StartWorkflowOptions)) error

// Search attribute keys, typed for the SDK.
var (
	saTenant    = temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrTenant)
	saTool      = temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrTool)
	saTransport = temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrTransport)
	saStatus    = temporal.NewSearchAttributeKeyKeyword(signals.SearchAttrStatus)
)

// startTimeout bounds the Temporal calls of Start, which run detached from
// the caller's cancellation so that a started run is never lost half-way.
const startTimeout = 30 * time.Second

// Start mints a runId in the caller's tenant and starts the tool's workflow
// with it as the workflow ID. It returns once the workflow exists, with a
// snapshot that reads pending (running for a plain workflow): an immediate
// Get resolves, because Temporal holds a getRun query until the run's first
// workflow task completed. With Options.WaitFirstTask it returns the answer
// of that first query instead (pending when StartQueryTimeout passed).
//
// With Options.EagerStart the start asks for Temporal's eager workflow
// start.
//
// With req.IdempotencyKey the run id is derived from the key, and a start
// with a key used before returns the run it started, as it is now, or
// ErrKeyReused (see launchOnce).
//
// Start does not stop when ctx is cancelled: once the start request is sent
// the caller must learn the run's id to own it, so the calls to Temporal use
// a context detached from ctx's cancellation. The caller must check that Tool
// names a registered tool.
//
// No run is left behind by a start that fails. The run id exists before the
// start call, so when that call fails (a timeout, an unavailable server, a
// lost connection: the run may have started all the same), Start describes
// the run: if it exists and ctx is not done (its caller can still be
// answered) Start returns it as started; otherwise Start cancels it with
// reason signals.ReasonStartFailed and returns the error. When Temporal
// cannot tell, or the start may still land, a background check goes on
// (bounded; see settleFailedStart) and cancels the run if it appears: a
// caller answered an error never has a run executing.
//
// With Options.Journal the run is recorded before the start call; the
// caller of a Start that succeeded must call Release once its answer was
// delivered (or the run cancelled).
func (s *Service) Start(ctx context.Context, req NewRun) (signals.Snapshot, error) {
	tool := req.Tool
	tool.TaskQueue = cmp.Or(tool.TaskQueue, s.opts.TaskQueue)
	tool.Contract = cmp.Or(tool.Contract, signals.ContractOpenWOP)
	owner := signals.Owner{Tenant: req.Caller.Tenant, Subject: req.Caller}
	// The run's creation time, taken once here and passed to the run (its
	// signals.StartRequest, its memo): every projection reports this value, where
	// Temporal's own start time is known only after a further read.
	now := time.Now().UTC()
	input, status, err := startInput(tool, req, owner, now)
	if err != nil {
		return signals.Snapshot{}, err
	}
	traceParent := telemetry.TraceParent(ctx)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), startTimeout)
	defer cancel()
	start := func(id string, edit func(*client.StartWorkflowOptions)) error {
		opts := s.startOptions(id, tool, req, owner, status)
		opts.Memo[signals.MemoCreatedAt] = now
		if tool.RunTimeout > 0 {
			opts.WorkflowExecutionTimeout = time.Duration(tool.RunTimeout)
			opts.Memo[signals.MemoRunTimeout] = tool.RunTimeout
		}
		if tool.ResultLimit > 0 {
			opts.Memo[signals.MemoResultLimit] = tool.ResultLimit
		}
		if traceParent != "" {
			opts.Memo[signals.MemoTraceParent] = traceParent
		}
		if edit != nil {
			edit(&opts)
		}
		return s.execute(ctx, sctx, req, tool, id, opts, input)
	}
	var id string
	if req.IdempotencyKey == "" {
		if id, err = runid.New(req.Caller.Tenant, s.rand); err == nil {
			err = start(id, nil)
		}
	} else {
		var existing *signals.Snapshot
		if id, existing, err = s.launchOnce(ctx, sctx, req, start); existing != nil {
			return *existing, err
		}
	}
	if err != nil {
		return signals.Snapshot{}, err
	}

	created := signals.Snapshot{
		RunID: id, Tool: tool.Name, Status: status, Owner: owner,
		Transport: req.Transport, CreatedAt: now, UpdatedAt: now,
		StatusMessage: status.Message(), LastSequence: -1, ResultLimit: tool.ResultLimit,
	}
	var facts runFacts
	if tool.Plain() {
		facts = factPlain
	}
	s.rd.known.update(id, func(e *memoEntry) {
		e.facts |= facts | factTraced
		e.tool, e.trace, e.target = tool.Name, traceParent, target{queue: tool.TaskQueue}
		e.timeout = tool.RunTimeout
		if tool.Plain() {
			e.started = &created
		}
	})
	if tool.Plain() {
		return created, nil
	}
	// A poll of the new run that Temporal is slow to answer reads it as
	// Start answered.
	s.rd.reads.seed(id, reading{snap: created})
	if !s.opts.WaitFirstTask {
		// The run exists: a getRun query sent now waits for its first
		// workflow task, so an immediate Get resolves.
		return created, nil
	}
	qctx, qcancel := context.WithTimeout(sctx, s.opts.StartQueryTimeout)
	defer qcancel()
	snap, err := s.rd.query(qctx, id)
	if err != nil {
		s.log.Warn("first getRun query of a new run failed; reporting it pending", append(telemetry.RunFields(ctx, id, tool.Name), zap.Error(err))...)
		return created, nil
	}
	return snap, nil
}

// execute starts the workflow of the run id: it records the run in the
// journal first, and settles a start call that failed (settleFailedStart).
// A start refused because a workflow of that ID exists returns Temporal's
// error as it is.
func (s *Service) execute(ctx, sctx context.Context, req NewRun, tool signals.ToolSpec, id string, opts client.StartWorkflowOptions, input any) error {
	if s.opts.Journal != nil {
		if err := s.opts.Journal.Begin(JournalEntry{RunID: id, Caller: req.Caller, Transport: req.Transport}); err != nil {
			return fmt.Errorf("start run of tool %q: %w", tool.Name, err)
		}
	}
	temporalRunID, err := s.launch(sctx, req, opts, tool.Type(), input)
	var dup *serviceerror.WorkflowExecutionAlreadyStarted
	switch {
	case err == nil:
		s.log.Info("run started", append(telemetry.RunFields(ctx, id, tool.Name),
			zap.String("taskQueue", tool.TaskQueue), zap.String("transport", req.Transport), zap.String("temporalRunId", temporalRunID))...)
		return nil
	case errors.As(err, &dup):
		// An idempotent start whose run exists (a minted id never does):
		// the caller reads that run, and holds it as this start's.
		return err
	}
	if serr := s.searchAttributesErr(sctx, err); serr != nil {
		s.Release(id) // refused: nothing started
		return fmt.Errorf("start run of tool %q: %w", tool.Name, serr)
	}
	// The start may have happened all the same (a timeout, a lost
	// connection): the run either reaches its caller or is cancelled.
	if !s.settleFailedStart(ctx, req.Caller, id, err) {
		return fmt.Errorf("start run of tool %q: %w", tool.Name, err)
	}
	return nil
}

// launch starts the workflow: with req.Launch when set, else with the
// service's client. It returns the Temporal run id.
func (s *Service) launch(ctx context.Context, req NewRun, opts client.StartWorkflowOptions, workflowType string, input any) (string, error) {
	if req.Launch != nil {
		return req.Launch(ctx, opts, workflowType, input)
	}
	run, err := s.client.ExecuteWorkflow(ctx, opts, workflowType, input)
	if err != nil {
		return "", err
	}
	return run.GetRunID(), nil
}

// startInput is the workflow input of a run of tool and the status the run
// starts in: a signals.StartRequest (pending, created its creation time)
// for a tool of the run contract, the arguments object itself (running)
// for a plain one.
func startInput(tool signals.ToolSpec, req NewRun, owner signals.Owner, created time.Time) (any, signals.Status, error) {
	args := req.Arguments
	if len(args) == 0 {
		args = []byte("{}")
	}
	if !tool.Plain() {
		return signals.StartRequest{
			Tool:         tool.Name,
			Arguments:    args,
			Owner:        owner,
			Transport:    req.Transport,
			PreRunInputs: req.PreRunInputs,
			CreatedAt:    created,
			ResultLimit:  tool.ResultLimit,
		}, signals.StatusPending, nil
	}
	// The arguments object itself; a workflow that does not follow the
	// run contract never updates the status attribute.
	var obj map[string]any
	if err := json.Unmarshal(args, &obj); err != nil {
		return nil, "", fmt.Errorf("start run of tool %q: arguments: %w", tool.Name, err)
	}
	return obj, signals.StatusRunning, nil
}

// startOptions are the start options of the run id of tool: its task
// queue, the id policies that make a start happen at most once, what the
// Temporal UI shows, the memo and the search attributes (status the
// status it starts in).
func (s *Service) startOptions(id string, tool signals.ToolSpec, req NewRun, owner signals.Owner, status signals.Status) client.StartWorkflowOptions {
	opts := client.StartWorkflowOptions{
		ID:        id,
		TaskQueue: tool.TaskQueue,
		// With no worker of the task queue on this client, the SDK
		// starts the run as usual.
		EnableEagerStart:                         s.opts.EagerStart,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy:                 enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		// What the Temporal UI shows on the workflow's page.
		StaticSummary: staticSummary(tool.Name, req.Caller, req.Transport),
		StaticDetails: staticDetails(id, tool, req.Caller, req.Transport),
		Memo: map[string]any{
			signals.MemoOwner:     owner,
			signals.MemoTransport: req.Transport,
			signals.MemoContract:  tool.Contract,
		},
		TypedSearchAttributes: temporal.NewSearchAttributes(
			saTenant.ValueSet(req.Caller.Tenant),
			saTool.ValueSet(tool.Name),
			saTransport.ValueSet(req.Transport),
			saStatus.ValueSet(string(status)),
		),
	}
	if v := req.Version; v != nil {
		opts.VersioningOverride = &client.OneTimeVersioningOverride{
			TargetVersion: worker.WorkerDeploymentVersion{DeploymentName: v.DeploymentName, BuildID: v.BuildID},
		}
	}
	return opts
}

// maxSummary bounds the run's static summary: Temporal keeps it to 400
// bytes for standalone activities and Nexus operations, and may for
// workflows.
const maxSummary = 400

// staticSummary is the one line the Temporal UI shows for a run
// (StartWorkflowOptions.StaticSummary): tool, subject, tenant, transport.
func staticSummary(tool string, caller signals.Subject, transport string) string {
	s := fmt.Sprintf("%s for %s (tenant %s) via %s", tool, subjectName(caller), caller.Tenant, transport)
	if len(s) <= maxSummary {
		return s
	}
	cut := maxSummary - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// staticDetails is the Markdown the Temporal UI shows under the summary
// (StartWorkflowOptions.StaticDetails): who started which tool how, and
// where the run's state is read.
func staticDetails(id string, tool signals.ToolSpec, caller signals.Subject, transport string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Tool:** `%s` (task queue `%s`, contract `%s`)\n\n", tool.Name, tool.TaskQueue, tool.Contract)
	fmt.Fprintf(&b, "**Tenant:** `%s`\n\n", caller.Tenant)
	fmt.Fprintf(&b, "**Started by:** `%s`", subjectName(caller))
	if caller.Issuer != "" {
		fmt.Fprintf(&b, " (issuer `%s`", caller.Issuer)
		if caller.Kind != "" {
			fmt.Fprintf(&b, ", kind `%s`", caller.Kind)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, "\n\n**Transport:** `%s`\n\n", transport)
	if tool.Plain() {
		return b.String()
	}
	fmt.Fprintf(&b, "The run's state: query `%s`; MCP `tasks/get` on task `%s`; REST `GET /runs/%s`. "+
		"Current Details show the open question, who may answer it and how.\n", signals.QueryGetRun, id, runid.Project(id))
	return b.String()
}

// subjectName names a caller.
func subjectName(s signals.Subject) string {
	if s.SubjectID != "" {
		return s.SubjectID
	}
	return "an anonymous caller"
}
