package workflowstest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
)

// Defaults of a new Env.
const (
	// DefaultTenant is the tenant of the default caller.
	DefaultTenant = "test"
	// DefaultAnswerTimeout is how long, in the environment's virtual time, a
	// question without an answer stays open before the Env gives up.
	DefaultAnswerTimeout = 24 * time.Hour
	// DefaultTestTimeout bounds, in real time, how long the environment
	// waits while the run makes no progress (testsuite's SetTestTimeout).
	DefaultTestTimeout = 30 * time.Second
)

// Env runs one call of a tool of a registry in the SDK's test
// environment. Set its fields before Call; make a new Env for every call.
type Env struct {
	// Caller is who calls the tool and, unless an Answer names someone
	// else, who answers its questions. New sets a subject "tester" of
	// DefaultTenant.
	Caller signals.Subject
	// RunID is the run's id (the workflow ID). Empty means an id in the
	// Caller's tenant.
	RunID string
	// Transport is the transport the run records as having started it
	// (signals.TransportMCP when empty).
	Transport string
	// AnswerTimeout is how long, in virtual time, a question stays open
	// without an answer before Call cancels the run and reports it (the
	// test environment would otherwise wait for an answer that never
	// comes). New sets DefaultAnswerTimeout; a tool's own timers that
	// fire sooner still run first.
	AnswerTimeout time.Duration
	// Logger receives the SDK's and the tool's log; nil writes only its
	// errors, to standard error (a failure inside the SDK's environment,
	// which may end the test binary, says why). It is read when the
	// environment is made (the first call of Temporal or Call).
	Logger log.Logger

	reg      *workflows.Registry
	env      *testsuite.TestWorkflowEnvironment
	answers  map[string]answerer
	asked    []*Question // in the order asked
	byID     map[string]*Question
	seen     []signals.Status
	last     signals.Snapshot // the run as last observed
	progress []signals.Progress
	started  bool
	runID    string // the run's id, once started
	problem  error

	mu         sync.Mutex                    // guards activities
	activities map[string]context.CancelFunc // of the running activities, by activity ID  // why Call fails after the run (an answer the Env could not give)
}

// errOneCall is the error of a second call on one Env.
var errOneCall = errors.New("workflowstest: an Env runs one call; make another with New")

// answerer gives the answer to a question; retry is set when it may be
// asked again after a refusal (AnswerFunc).
type answerer struct {
	f     func(Question) Answer
	retry bool
}

// New returns an Env that calls the tools of reg and runs their
// activities (those given to workflows.NewRegistry).
func New(reg *workflows.Registry) *Env {
	return &Env{
		Caller:        signals.Subject{Issuer: "workflowstest", SubjectID: "tester", Tenant: DefaultTenant},
		AnswerTimeout: DefaultAnswerTimeout,
		reg:           reg,
		answers:       map[string]answerer{},
		byID:          map[string]*Question{},
		activities:    map[string]context.CancelFunc{},
	}
}

// Temporal returns the SDK's test environment the call runs in: mock an
// activity with OnActivity, set the start time, add delayed callbacks.
// Do not execute a workflow on it (Call does), do not mock
// UpsertMemo or UpsertTypedSearchAttributes (the Env follows the run
// through them), and do not replace its worker options (SetWorkerOptions)
// or its activity-cancelled listener: they let activities report progress
// to the run and see their cancellation.
func (e *Env) Temporal() *testsuite.TestWorkflowEnvironment {
	if e.env != nil {
		return e.env
	}
	var s testsuite.WorkflowTestSuite
	logger := e.Logger
	if logger == nil {
		logger = log.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	}
	s.SetLogger(logger)
	e.env = s.NewTestWorkflowEnvironment()
	e.env.SetTestTimeout(DefaultTestTimeout)
	// Activities signal the run through the Env (ReportProgress).
	e.env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{&activitySignals{e: e}}})
	e.env.SetOnActivityCanceledListener(func(info *activity.Info) { e.activityCancelled(*info) })
	e.reg.Register(e.env)
	// Every change of the run's status or open questions is published
	// with one of these upserts: look at the run once the workflow task
	// that made it is done.
	follow := func(mock.Arguments) { e.env.RegisterDelayedCallback(e.observe, 0) }
	e.env.OnUpsertMemo(mock.Anything).Return(nil).Run(follow).Maybe()
	e.env.OnUpsertTypedSearchAttributes(mock.Anything).Return(nil).Run(follow).Maybe()
	return e.env
}

// Call calls tool with args (any value that encodes to the arguments
// object) and runs the call to its end. Like the server, it first checks
// the arguments against the tool's input schema and asks the tool's
// pre-run inputs (each answered with Answer under its key), and starts no
// run when one is refused: it then returns a nil Result and the error.
// Otherwise the Result is the run's; the error is non-nil when the Env
// could not give an answer (a question no Answer was registered for, an
// answer refused), and the run was then cancelled. A run that is still
// open when the environment gives up (it waits for something that never
// comes, or its tool ignores its cancellation) has no Result: the error
// names the run, says that it is still open and what it waits for (its
// status, its open questions, where its workflow is blocked). Call never
// returns a nil Result with a nil error.
func (e *Env) Call(tool string, args any) (*Result, error) {
	if e.started {
		return nil, errOneCall
	}
	spec, ok := e.reg.Lookup(tool)
	if !ok {
		return nil, fmt.Errorf("workflowstest: the registry has no tool %q", tool)
	}
	ct, err := catalog.Compile(spec)
	if err != nil {
		return nil, fmt.Errorf("workflowstest: %w", err)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("workflowstest: encode the arguments of %s: %w", tool, err)
	}
	if raw, err = ct.ValidateArguments(raw); err != nil {
		return nil, err
	}
	pre, err := e.askBeforeRun(ct, spec)
	if err != nil {
		return nil, err
	}
	return e.Start(tool, signals.StartRequest{Arguments: raw, PreRunInputs: pre})
}

// Start runs tool's workflow with req as it is, without the checks and
// questions Call makes first: for tests of what a run does with a start
// the server would not make (arguments that do not decode, a pre-run
// input missing). An empty req.Tool is tool, an empty req.Owner the
// Caller's, an empty req.Transport the Env's. Otherwise it is Call.
func (e *Env) Start(tool string, req signals.StartRequest) (*Result, error) {
	if e.started {
		return nil, errOneCall
	}
	e.started = true
	runID := cmp.Or(e.RunID, e.Caller.Tenant+"/workflowstest-run-1")
	req.Tool = cmp.Or(req.Tool, tool)
	if req.Owner.Tenant == "" && req.Owner.Subject.IsZero() {
		req.Owner = signals.Owner{Tenant: e.Caller.Tenant, Subject: e.Caller}
	}
	req.Transport = cmp.Or(req.Transport, e.Transport, signals.TransportMCP)
	// The SDK computes the binary's checksum (it reads the whole test
	// binary) once per process, at the first activity, inside the
	// workflow's coroutine, where its deadlock detector allows 1 s: on a
	// loaded machine that fails the run. Compute it here first.
	_ = (&workflow.Info{}).GetBinaryChecksum()
	e.runID = runID
	if err := e.execute(tool, req); err != nil {
		return nil, err
	}
	res, err := e.result(tool)
	if err != nil {
		return nil, err
	}
	return res, e.problem
}

// execute runs the call's workflow to its end. A run the environment
// gives up on while it is still open (the SDK's test timeout passed in
// real time while an activity ran: the activity never returns) is an error
// that says so, what the run waits for and where it is blocked, rather
// than the SDK's panic. (A run that waits in virtual time for something
// that never comes ends at the environment's run timeout: see result.)
func (e *Env) execute(tool string, req signals.StartRequest) (err error) {
	env := e.Temporal()
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: e.runID})
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		msg, ok := p.(string)
		if !ok || !strings.HasPrefix(msg, "test timeout") {
			panic(p)
		}
		_, stack, _ := strings.Cut(msg, "workflow stack: ")
		err = e.stillOpen(tool, "the environment's test timeout passed in real time with the run blocked", stack)
	}()
	env.ExecuteWorkflow(tool, req)
	if !env.IsWorkflowCompleted() {
		return e.stillOpen(tool, "the environment stopped", "")
	}
	return nil
}

// stillOpen is the error of a run the environment gave up on while it was
// still open: which run, why the environment gave up, the run's last
// status and its open questions, and (when known) where the tool waits.
func (e *Env) stillOpen(tool, why, stack string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "workflowstest: run %s of %s is still open: %s; ", e.runID, tool, why)
	st := signals.StatusPending
	if n := len(e.seen); n > 0 {
		st = e.seen[n-1]
	}
	fmt.Fprintf(&b, "its status is %s", st)
	if st == signals.StatusCancelling {
		b.WriteString(" (its cancellation was requested and the tool has not returned: it must return once its context is cancelled)")
	}
	var open []string
	for _, it := range e.last.Interrupts {
		open = append(open, fmt.Sprintf("%q (%s)", it.Key, it.Message()))
	}
	if len(open) == 0 {
		b.WriteString("; no question is open")
	} else {
		fmt.Fprintf(&b, "; open questions: %s", strings.Join(open, ", "))
	}
	if e.problem != nil {
		fmt.Fprintf(&b, "; before that: %v", e.problem)
	}
	if stack = strings.TrimSpace(stack); stack != "" {
		fmt.Fprintf(&b, "; where its workflow waits:\n%s", stack)
	}
	return errors.New(b.String())
}

// At runs f at virtual time d after the run starts (d after the current
// virtual time when called while the run goes on): to look at the run
// while it waits (Snapshot, Events) or to cancel it.
func (e *Env) At(d time.Duration, f func()) { e.Temporal().RegisterDelayedCallback(f, d) }

// Snapshot returns the run's current snapshot (the getRun query). Call it
// while the run goes on: from an AnswerFunc or an At function.
func (e *Env) Snapshot() (signals.Snapshot, error) {
	var s signals.Snapshot
	v, err := e.Temporal().QueryWorkflow(signals.QueryGetRun)
	if err != nil {
		return s, fmt.Errorf("workflowstest: query %s: %w", signals.QueryGetRun, err)
	}
	if err := v.Get(&s); err != nil {
		return s, fmt.Errorf("workflowstest: decode the snapshot: %w", err)
	}
	return s, nil
}

// Events returns the run's event log after sequence number after (-1 for
// all of it), while the run goes on.
func (e *Env) Events(after int) ([]signals.Event, error) {
	var p signals.EventPage
	v, err := e.Temporal().QueryWorkflow(signals.QueryEvents, signals.EventsQuery{AfterSequence: after})
	if err != nil {
		return nil, fmt.Errorf("workflowstest: query %s: %w", signals.QueryEvents, err)
	}
	if err := v.Get(&p); err != nil {
		return nil, fmt.Errorf("workflowstest: decode the events: %w", err)
	}
	return p.Events, nil
}

// Cancel cancels the run as tasks/cancel or a REST cancel does, recording
// reason (signals.ReasonCallerRequested when empty) and the Caller.
func (e *Env) Cancel(reason string) {
	env := e.Temporal()
	reason = cmp.Or(reason, signals.ReasonCallerRequested)
	env.SignalWorkflow(signals.SignalCancelReason, signals.CancelRequest{Reason: reason, CancelledBy: e.Caller})
	env.CancelWorkflow()
}

// Resolve sends res to the run as it is, unchecked and unrecorded: what a
// client racing another, or one that is not allowed to answer, would get
// to the run. Tests of the harness itself use it; a tool's tests use
// Answer.
func (e *Env) Resolve(res signals.Resolution) {
	e.Temporal().SignalWorkflow(signals.SignalResolveInterrupt, res)
}

// observe looks at the run after a change: it records the status and the
// progress, shows every new question and answers the open ones.
func (e *Env) observe() {
	if e.env.IsWorkflowCompleted() {
		return
	}
	snap, err := e.Snapshot()
	if err != nil {
		return // not started yet, or ending
	}
	e.last = snap
	if n := len(e.seen); n == 0 || e.seen[n-1] != snap.Status {
		e.seen = append(e.seen, snap.Status)
	}
	if p := snap.Progress; p != nil {
		e.noteProgress(*p)
	}
	for _, it := range snap.Interrupts {
		q, known := e.byID[it.ID]
		if !known {
			q = questionOf(it)
			e.asked = append(e.asked, q)
			e.byID[it.ID] = q
			e.env.RegisterDelayedCallback(func() { e.giveUp(q) }, e.AnswerTimeout)
		}
		if q.Answer == nil && !q.failed {
			e.answer(q, it, snap)
		}
	}
}

// giveUp cancels the run when q is still unanswered after AnswerTimeout.
func (e *Env) giveUp(q *Question) {
	if q.Answer != nil || q.failed || e.env.IsWorkflowCompleted() {
		return
	}
	snap, err := e.Snapshot()
	if err != nil {
		return
	}
	if _, open := snap.Interrupt(q.ID); !open {
		return // the tool stopped waiting for it
	}
	q.failed = true
	e.fail(fmt.Errorf("workflowstest: question %q (%s) was not answered within %v: register an answer with Env.Answer(%q, ...)",
		q.Key, q.Message, e.AnswerTimeout, q.Key))
}

// fail records why Call fails and ends the run.
func (e *Env) fail(err error) {
	e.problem = errors.Join(e.problem, err)
	e.Cancel("")
}
