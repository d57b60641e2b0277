// Package workflows is the library a tool author imports: it turns an
// ordinary Temporal workflow function into an MCP tool, and runs a worker
// that serves such tools and publishes them to the catalog in Temporal, so
// that the stock server lists and calls them without being rebuilt.
//
// A tool author writes a workflow function
//
//	func(ctx workflow.Context, in In) (Out, error)
//
// and wraps it with NewTool. The harness turns it into the workflow the run
// contract (package signals, docs/contract.md) describes: it decodes the tool
// arguments into In, keeps the run snapshot and the OpenWOP event log,
// answers the getRun and events queries, keeps the OpenWOPStatus search
// attribute current, publishes the run's status and open interrupts in its
// memo (signals.MemoState, read when no worker answers a query) and as
// current details for the Temporal UI (the open question, who may answer it
// and how), routes interrupt resolutions and ends the run with exactly one
// terminal event:
//
//   - completed when fn returns an output (an object becomes the run's
//     outputs as is, anything else {"result": value});
//   - failed when fn returns an error: Fail / FailAt give the code, and
//     ProtocolError marks a JSON-RPC error; any other error has code
//     tool_error;
//   - cancelled when the workflow is cancelled (reason from the
//     cancelReason signal, default caller-requested) or an interrupt is
//     answered with cancel (reason mcp-elicitation-cancelled).
//
// Inside a tool:
//
//   - Approve, AskInput, AskAs, AskInputs and WaitExternal raise interrupts
//     and wait for their resolution; Raise opens one without waiting, so
//     several can be open at once. Each interrupt is resolved at most once,
//     by an eligible resolver; other resolutions are ignored. Who answered
//     and when: Approve's Decision.By and At, AskInputFrom and AskAsFrom
//     (an Answered value), AskInputs' Answer.By and At. A question may
//     have a deadline (Timeout, ErrExpired) and is withdrawn when its ask's
//     context is cancelled: see "Questions with deadlines" below.
//   - AskAs derives its question's form from a struct, as NewTool derives
//     the tool's input schema, and the same SchemaOptions (WithRange,
//     WithLength, WithEnum, WithDefault, WithDescription) give both their
//     rules: the form the agent sees carries them, and an answer or
//     argument that breaks one is refused before the run sees it.
//   - WithRunTimeout bounds each run of the tool (its workflow execution
//     timeout): a run still open then fails with the code
//     workflow_timed_out.
//   - WithScopes makes the tool require OAuth scopes: a caller whose access
//     token lacks one does not see the tool and its calls are refused with
//     403 insufficient_scope naming them (API keys are not scoped). An
//     approver list may name an identity provider's group as
//     signals.GroupPrefix + "finance" besides subject ids.
//   - Step names a node of the event log (node.started, node.completed,
//     node.failed, node.cancelled).
//   - PreRunInput reads the answers the mount collected before the run
//     started (WithPreRunInput).
//   - Activities run with DefaultActivityOptions (10-minute attempts, no
//     heartbeat timeout, at most 5 attempts) unless the tool sets its own
//     with workflow.WithActivityOptions; see "Activities" below.
//
// Serving tools: NewRegistry collects tools and their activities, and
// Registry.Run registers them on a Temporal worker on the author's own task
// queue, publishes their specs to the catalog (package catalog) and runs
// until its context ends. A hand-built worker uses Registry.Register and
// catalog.Publish instead.
//
// Registry.Run is safe with its zero WorkerOptions and any client: it tells
// the catalog every catalog.WorkerHeartbeatInterval (3 s) that the worker
// is alive (catalog.Heartbeat), so a worker killed without warning (kill
// -9, a lost machine) has its tools leave tools/list, and calls of them
// refused as unavailable, within 15 s (docs/catalog.md#liveness). A clean
// stop (its context ends: Ctrl-C, SIGTERM) first withdraws the
// publication, so that from then on every call of its tools is refused
// (unless another worker serves them), keeps polling for
// catalog.StopGrace (1 s), so that a run a server started before it saw
// the withdrawal is served rather than left waiting, then lets the
// activities in flight finish (DefaultWorkerStopTimeout) before the worker
// stops. It logs the
// tools it published and withdrew (WorkerOptions.Logger; the log/slog
// default when nil).
//
// Versions: WorkerOptions.DeploymentName and BuildID make the worker one
// build of a Temporal Worker Deployment. Temporal starts new runs on the
// deployment's current version (an operator promotes a build), and each
// run of a tool stays on the build that started it (pinned, the default)
// or, with WithVersioningBehavior, moves to the current version at its
// next workflow task (auto-upgrade). docs/upgrades.md walks through a
// rollout.
//
// For example (the README's refund tool; examples/refund is a whole module):
//
//	type In struct {
//		OrderID string `json:"orderId" jsonschema:"the order to refund"`
//	}
//
//	func Refund(ctx workflow.Context, in In) (string, error) {
//		d, err := workflows.Approve(ctx, workflows.ApprovalRequest{Key: "refund", Title: "Refund " + in.OrderID + "?"})
//		if err != nil || !d.Approved {
//			return "not refunded", err
//		}
//		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
//		var id string
//		err = workflow.ExecuteActivity(ctx, IssueRefund, in.OrderID).Get(ctx, &id)
//		return "refunded as " + id, err
//	}
//
//	tools, err := workflows.NewRegistry([]workflows.Tool{
//		workflows.NewTool("refund", "Refund an order after approval.", Refund, workflows.Suspends()),
//	}, IssueRefund)
//	...
//	err = tools.Run(ctx, temporalClient, "refunds", workflows.WorkerOptions{})
//
// # Questions with deadlines, withdrawal and escalation
//
// A question with a Timeout (ApprovalRequest, InputRequest, QuestionSpec)
// ends by itself: a durable workflow timer (which the test kit skips
// ahead, in virtual time) withdraws it when the Timeout elapses, and the
// ask returns an error wrapping ErrExpired. The interrupt publishes its
// deadline (signals.Interrupt.ExpiresAt, expiresAt on the wire). A
// question is also withdrawn when the context of its ask is cancelled
// while the run goes on (the ask then returns the cancellation error),
// and by Pending.Withdraw. A withdrawn question leaves the open interrupts
// (inputRequests) at once, the run's status follows (running again, with
// its step's progress, when nothing else is open), the log gets
// interrupt.withdrawn, and an answer to it resolves nothing: tasks/update
// acknowledges and ignores it, REST refuses it 409 interrupt_expired or
// interrupt_withdrawn, the companion tool refuses it naming why. A run
// cancelled while a question is open ends at once, the question closed
// with it.
//
// Escalation, "ask A; after d ask B instead; the first answer wins", is a
// few lines (examples/tools approve_expense):
//
//	d, err := workflows.Approve(ctx, workflows.ApprovalRequest{Key: "manager", Title: title,
//		Approvers: []string{"group:managers"}, Timeout: in.Deadline})
//	if errors.Is(err, workflows.ErrExpired) {
//		d, err = workflows.Approve(ctx, workflows.ApprovalRequest{Key: "director", Title: title,
//			Approvers: []string{"group:directors"}})
//	}
//
// The manager's question is withdrawn at the deadline, so a manager's late
// approval cannot decide the run after the director was asked. An approval
// valid only within a window is the same primitive: an answer after
// Timeout does not count.
//
//	d, err := workflows.Approve(ctx, workflows.ApprovalRequest{Key: "go-live", Title: "Go live tonight?", Timeout: 2 * time.Hour})
//	if errors.Is(err, workflows.ErrExpired) { /* the window closed: not approved */ }
//
// # Activities: retries, idempotence, heartbeats
//
// An activity may run more than once: DefaultActivityOptions retries a
// failed attempt (at most 5 attempts, 1 s, 2 s, 4 s, then 8 s apart), an
// attempt that outlives its StartToCloseTimeout is retried, and so is one
// whose worker crashed, even after its side effect, once its timeout
// expires. Make every side effect idempotent: derive an idempotency key from
// activity.GetInfo(ctx), WorkflowExecution.ID (the run id) plus ActivityID,
// which are the same in every attempt, and give it to the system you call,
// or look for the earlier effect before acting. Return
// temporal.NewNonRetryableApplicationError for a failure a retry cannot
// fix; set RetryPolicy.MaximumAttempts to 1 only for an effect that can
// neither be repeated nor made idempotent.
//
// A run's cancellation reaches an activity only through its heartbeats: the
// answer to activity.RecordHeartbeat cancels the activity's context. An
// activity that runs more than a few seconds should heartbeat (package
// activities: activities.Run heartbeats while the work runs, and
// activities.Progress is the detail to record) and opt into a
// HeartbeatTimeout of a few heartbeat intervals:
//
//	opts := workflow.GetActivityOptions(ctx)
//	opts.HeartbeatTimeout = 5 * time.Second
//	ctx = workflow.WithActivityOptions(ctx, opts)
//
// What each timeout does, and the one rule that makes cancellation and
// progress keep their promises, is in package activities ("The one
// rule"): on a worker of Registry.Run, a cancellation reaches a
// heartbeating activity within about a second whatever its
// HeartbeatTimeout, and its progress is saved about once a second.
//
// # Changing a tool while its runs are in flight
//
// A run that waits days for an approval outlives releases of its tool and of
// this package. A worker with new code replays the run's history through it,
// and the code must emit the same commands (activities, timers, child
// workflows, search attribute upserts, in the same order) as far as the
// history goes, or the run fails with a nondeterminism error. Guard every
// change to the commands a tool emits with workflow.GetVersion:
//
//	if workflow.GetVersion(ctx, "audit-step", workflow.DefaultVersion, 1) == 1 {
//		// the new activity
//	}
//
// Changes to activity options (timeouts, retry policy), to activity code and
// to query answers emit no different commands and need no guard. Record
// histories of your tool's runs and replay them in your tests
// (worker.NewWorkflowReplayer with Registry.RegisterWorkflows); this
// module does so for its example tools and follows the same rule for the
// harness (docs/upgrades.md).
package workflows
