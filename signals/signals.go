package signals

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Names of the Temporal primitives a run answers to.
const (
	// QueryGetRun answers the run's current Snapshot. It is a read: it never
	// changes the run.
	QueryGetRun = "getRun"
	// QueryEvents answers an EventPage with the run's OpenWOP event log after
	// a given sequence number (argument: an EventsQuery).
	QueryEvents = "getRunEvents"
	// SignalResolveInterrupt carries a Resolution for one open interrupt.
	SignalResolveInterrupt = "resolveInterrupt"
	// SignalProgress carries a Progress the run records as its own (the
	// activities library sends it from an activity: see docs/contract.md).
	// A Progress without a step keeps the run's current step.
	SignalProgress = "reportProgress"
	// SignalCancelReason carries a CancelRequest. The mount sends it just
	// before it requests workflow cancellation, so the run can record why it
	// was cancelled. A cancellation without it records ReasonCallerRequested.
	SignalCancelReason = "cancelReason"
)

// Custom search attributes every run carries. They are registered on the
// namespace (Keyword type) and set when the run starts.
const (
	// SearchAttrTenant holds the run's tenant.
	SearchAttrTenant = "OpenWOPTenant"
	// SearchAttrTool holds the tool (OpenWOP workflowId) the run executes.
	SearchAttrTool = "OpenWOPTool"
	// SearchAttrTransport holds the transport that started the run.
	SearchAttrTransport = "OpenWOPTransport"
	// SearchAttrStatus holds the run's OpenWOP status; the run keeps it current.
	SearchAttrStatus = "OpenWOPStatus"
)

// SearchAttributes lists every custom search attribute name above. All are
// of the Keyword type.
var SearchAttributes = []string{SearchAttrTenant, SearchAttrTool, SearchAttrTransport, SearchAttrStatus}

// Memo keys every run is started with. Their values are JSON.
const (
	// MemoOwner holds the run's Owner.
	MemoOwner = "owner"
	// MemoTransport holds the transport that started the run.
	MemoTransport = "transport"
	// MemoContract holds the tool's Contract.
	MemoContract = "openwopContract"
	// MemoTraceParent holds the W3C traceparent of the request that
	// started the run, when it was traced (a run started untraced has
	// none). Later requests about the run link their spans to it.
	MemoTraceParent = "openwopTraceparent"
	// MemoState holds the run's PublishedState. An openwop run keeps it
	// current (the Go harness does from its first workflow task on), so
	// that a describe call answers the run's status and open interrupts
	// when no worker can answer the getRun query.
	MemoState = "openwopState"
	// MemoCreatedAt holds the run's creation time (a time.Time), the one
	// every projection of the run reports as its createdAt. The server
	// takes it just before the start call and passes the same value in
	// StartRequest.CreatedAt.
	MemoCreatedAt = "openwopCreatedAt"
	// MemoRunTimeout holds the tool's run timeout (a Duration) when it has
	// one, so that a run Temporal timed out reads a message naming it.
	MemoRunTimeout = "openwopRunTimeout"
	// MemoResultLimit holds the tool's result limit (a number of bytes)
	// when it sets one (ToolSpec.ResultLimit), so that a run read without
	// its snapshot (a plain workflow, a run closed outside the harness)
	// keeps it.
	MemoResultLimit = "openwopResultLimit"
	// MemoRequestDigest is the memo field of a run started with an
	// idempotency key: a digest of its arguments and pre-run answers,
	// which a start with the same key must match.
	MemoRequestDigest = "openwopRequestDigest"
)

// PublishedState is what a running openwop run keeps in its memo under
// MemoState: the part of its Snapshot that a reader needs to tell, without
// a worker, whether and how the run waits for input. The run upserts it
// whenever its status, its open interrupts or its cancel reason change.
type PublishedState struct {
	Status        Status `json:"status"`
	StatusMessage string `json:"statusMessage"`
	// Interrupts are the open interrupts, as in the Snapshot. They are left
	// out when their JSON exceeds MaxPublishedInterrupts bytes (the memo is
	// small by design); OpenInterrupts still counts them.
	Interrupts []Interrupt `json:"interrupts,omitempty"`
	// OpenInterrupts is the number of open interrupts.
	OpenInterrupts int `json:"openInterrupts"`
	// Progress is the Snapshot's.
	Progress     *Progress `json:"progress,omitempty"`
	CancelReason string    `json:"cancelReason,omitempty"`
	// CancelRequestedAt is the Snapshot's.
	CancelRequestedAt time.Time `json:"cancelRequestedAt,omitzero"`
	// UpdatedAt and LastSequence are the Snapshot's when the state was
	// published.
	UpdatedAt    time.Time `json:"updatedAt"`
	LastSequence int       `json:"lastSequence"`
}

// MaxPublishedInterrupts bounds the JSON size of PublishedState.Interrupts.
// Temporal terminates a run whose memo grows past its limit (2 MiB by
// default), and logs a warning for every memo over 2 KiB.
const MaxPublishedInterrupts = 16 << 10

// Published returns the PublishedState of s.
func (s Snapshot) Published() PublishedState {
	p := PublishedState{
		Status:            s.Status,
		StatusMessage:     s.StatusMessage,
		OpenInterrupts:    len(s.Interrupts),
		Progress:          s.Progress,
		CancelReason:      s.CancelReason,
		CancelRequestedAt: s.CancelRequestedAt,
		UpdatedAt:         s.UpdatedAt,
		LastSequence:      s.LastSequence,
	}
	if len(s.Interrupts) > 0 {
		if raw, err := json.Marshal(s.Interrupts); err == nil && len(raw) <= MaxPublishedInterrupts {
			p.Interrupts = s.Interrupts
		}
	}
	return p
}

// The tool catalog in Temporal (docs/catalog.md). A worker publishes the
// tools it serves by starting a workflow of type PublicationWorkflowType on
// PublicationTaskQueue, with the ID PublicationID(taskQueue, identity) and
// its Publication in the memo under MemoPublication. Nothing polls that
// task queue: the publication never executes, it is a durable record that
// visibility lists with its memo.
const (
	PublicationWorkflowType = "openwop.ToolPublication"
	PublicationTaskQueue    = "openwop-publications"
	MemoPublication         = "openwopPublication"
	publicationIDPrefix     = "openwop-publication/"
)

// A publication sets Temporal's search attribute NamespaceDivisionAttribute
// to PublicationDivision: a listing whose query does not name the
// attribute (the Temporal UI's and CLI's workflow lists) leaves out the
// workflows that set it, so the publications stay out of the operator's
// list of runs. The catalog lists them by naming it.
const (
	NamespaceDivisionAttribute = "TemporalNamespaceDivision"
	PublicationDivision        = "openwop-catalog"
)

// PublicationID is the workflow ID of the publication of the worker with
// the given identity on taskQueue.
func PublicationID(taskQueue, identity string) string {
	return publicationIDPrefix + taskQueue + "/" + identity
}

// Publication is what a worker publishes: the tools it serves on its task
// queue. Every tool's TaskQueue is TaskQueue.
type Publication struct {
	TaskQueue string `json:"taskQueue"`
	// Identity is the worker's identity, as its pollers report it; the
	// server judges the publication live while that identity polls.
	Identity    string     `json:"identity"`
	Tools       []ToolSpec `json:"tools"`
	PublishedAt time.Time  `json:"publishedAt"`
	// Version is the Worker Deployment version the worker serves, nil for
	// an unversioned worker (docs/catalog.md#versions).
	Version *DeploymentVersion `json:"version,omitempty"`
}

// DeploymentVersion names one version of a Temporal Worker Deployment:
// the workers of one build of one deployment. Temporal starts new runs of
// a deployment's task queues on its current version, and keeps a pinned
// run on the version that started it.
type DeploymentVersion struct {
	// DeploymentName is the name of the Worker Deployment.
	DeploymentName string `json:"deploymentName"`
	// BuildID identifies the build within the deployment.
	BuildID string `json:"buildId"`
}

// String is the version as Temporal writes it: "<deployment>.<build id>".
func (v DeploymentVersion) String() string { return v.DeploymentName + "." + v.BuildID }

// Transport names recorded in run.started.
const (
	TransportMCP  = "mcp"
	TransportREST = "rest"
	// TransportNexus is a run started as a Nexus operation (package
	// nexusfront).
	TransportNexus = "nexus"
)

// Registered run.cancelled reasons.
const (
	// ReasonCallerRequested is the reason of an explicit cancel (tasks/cancel,
	// REST cancel, an operator in the Temporal UI).
	ReasonCallerRequested = "caller-requested"
	// ReasonMCPRequestCancelled is the reason when the MCP request that owned
	// the run went away before its whole response was sent (RFC 0198 §G.12).
	ReasonMCPRequestCancelled = "mcp-request-cancelled"
	// ReasonElicitationCancelled is the reason when an elicitation answer
	// was "cancel".
	ReasonElicitationCancelled = "mcp-elicitation-cancelled"
	// ReasonStartFailed is the reason when the call that started the run
	// failed in a way that left its outcome unknown (a timeout, a lost
	// connection) and its caller was answered an error: the run exists but
	// nobody knows its id, so it is cancelled.
	ReasonStartFailed = "start-failed"
)

// Status is an OpenWOP run status.
type Status string

// The OpenWOP run statuses.
const (
	StatusPending         Status = "pending"
	StatusRunning         Status = "running"
	StatusPaused          Status = "paused"
	StatusWaitingApproval Status = "waiting-approval"
	StatusWaitingInput    Status = "waiting-input"
	StatusWaitingExternal Status = "waiting-external"
	StatusCompleted       Status = "completed"
	StatusFailed          Status = "failed"
	StatusCancelling      Status = "cancelling"
	StatusCancelled       Status = "cancelled"
)

// Terminal reports whether s is one of completed, failed, cancelled.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// Waiting reports whether s is one of the waiting-* statuses.
func (s Status) Waiting() bool {
	return s == StatusWaitingApproval || s == StatusWaitingInput || s == StatusWaitingExternal
}

// Message is the content-free status message of a run in status s: it says
// nothing about the run's inputs, outputs or internals.
func (s Status) Message() string { return "the run is " + string(s) }

// MessageAt is the content-free status message of a run in status s that
// reported progress p: Message, and while the run is not terminal the
// step's declared name and its counts, e.g. "the run is running: step
// generate (2/3)"; a cancelled run keeps the step it was cancelled at,
// "the run is cancelled: step generate (2/3)". A step name that is not a
// valid step name (ValidStepName) is left out. It says nothing about the
// run's inputs, answers or outputs.
func (s Status) MessageAt(p *Progress) string {
	msg := s.Message()
	if p == nil || s.Terminal() && s != StatusCancelled {
		return msg
	}
	var counts string
	switch {
	case p.Total > 0:
		counts = fmt.Sprintf("(%d/%d)", p.Done, p.Total)
	case p.Done > 0:
		counts = fmt.Sprintf("(%d)", p.Done)
	}
	switch {
	case ValidStepName(p.Step) && counts != "":
		return msg + ": step " + p.Step + " " + counts
	case ValidStepName(p.Step):
		return msg + ": step " + p.Step
	case counts != "":
		return msg + " " + counts
	}
	return msg
}

// CurrentMessage is the status message of s as of now. A run that is
// cancelling has not closed, whatever its code does with the request: its
// message says that its cancellation was requested, how long ago when
// known, and that it has not closed yet, e.g. "cancellation requested 3m
// ago; the run has not closed yet: step copy (11/30)". Any other run's is
// its StatusMessage.
func (s Snapshot) CurrentMessage(now time.Time) string {
	if s.Status != StatusCancelling {
		return s.StatusMessage
	}
	msg := "cancellation requested"
	if !s.CancelRequestedAt.IsZero() {
		msg += " " + ago(now.Sub(s.CancelRequestedAt))
	}
	// What the message said after "the run is cancelling" (the step,
	// that the run is stalled) follows.
	rest, ok := strings.CutPrefix(s.StatusMessage, StatusCancelling.Message())
	if !ok {
		rest = ""
	}
	return msg + "; the run has not closed yet" + rest
}

// ago says how long d is, to the minute (to the hour past a day), so that
// a message that quotes it changes at most once a minute: "under a minute
// ago", "3m ago", "2h5m ago", "3d4h ago".
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "under a minute ago"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", d/time.Minute)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%dm ago", d/time.Hour, d%time.Hour/time.Minute)
	}
	return fmt.Sprintf("%dd%dh ago", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
}

// Progress is how far a run has got, as its workflow (or one of its
// activities) reports it: the current step's declared name and, when it
// counts, how much of it is done. It never holds tool content.
type Progress struct {
	// Step is the declared name of the step being worked on (a Step's
	// node id, an activity's own step name); empty for none.
	Step string `json:"step,omitempty"`
	// Done is the amount of the step's work done so far, in its own unit.
	Done int64 `json:"done"`
	// Total is the step's whole amount of work; zero when not known.
	Total int64 `json:"total,omitempty"`
}

// stepName is the grammar of the step names a status message names.
var stepName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ValidStepName reports whether name may appear in a status message: 1 to
// 64 letters, digits, '.', '_' or '-'. A declared name such as "generate"
// or "charge-card" is; free text, which could carry content, is not.
func ValidStepName(name string) bool { return stepName.MatchString(name) }

// Valid reports whether s is one of the OpenWOP statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusRunning, StatusPaused, StatusWaitingApproval, StatusWaitingInput,
		StatusWaitingExternal, StatusCompleted, StatusFailed, StatusCancelling, StatusCancelled:
		return true
	}
	return false
}

// Subject identifies a caller. It always comes from the authenticated
// request, never from arguments or _meta.
type Subject struct {
	Issuer    string `json:"issuer"`
	SubjectID string `json:"subjectId"`
	Tenant    string `json:"tenant"`
	Lane      string `json:"lane,omitempty"`
	Kind      string `json:"kind,omitempty"`
	KeyClass  string `json:"keyClass,omitempty"`
	// Groups are the caller's groups or roles as its identity provider
	// names them (an OAuth token's groups claim); an approvers entry
	// GroupPrefix+value names every subject of the group.
	Groups []string `json:"groups,omitempty"`
	// Scopes are the OAuth scopes the caller's token grants, when Scoped.
	// They are not recorded: they decide what one request may do.
	Scopes []string `json:"-"`
	// Scoped reports that the credential is limited to Scopes (an OAuth
	// token); an API key or the development caller is not, and may do
	// whatever its tenant may.
	Scoped bool `json:"-"`
}

// GroupPrefix starts an approvers entry that names a group (or role) of
// the identity provider instead of one subject: "group:finance".
const GroupPrefix = "group:"

// Principal is the URN-like name approvers lists use for the subject.
func (s Subject) Principal() string { return s.SubjectID }

// Same reports whether s and o are the same caller: issuer, subject id
// and tenant.
func (s Subject) Same(o Subject) bool {
	return s.Issuer == o.Issuer && s.SubjectID == o.SubjectID && s.Tenant == o.Tenant
}

// IsZero reports whether s names no caller.
func (s Subject) IsZero() bool { return s.Issuer == "" && s.SubjectID == "" && s.Tenant == "" }

// MissingScope returns the first of scopes the caller's credential does
// not grant, and false when it grants them all (always, when it is not
// Scoped).
func (s Subject) MissingScope(scopes []string) (string, bool) {
	if !s.Scoped {
		return "", false
	}
	for _, want := range scopes {
		if !slices.Contains(s.Scopes, want) {
			return want, true
		}
	}
	return "", false
}

// ValidScope reports whether s is an OAuth scope token as RFC 6749 §3.3
// defines it: one or more printable ASCII characters (%x21-7E) other than
// the double quote and the backslash, so no space either.
func ValidScope(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// Owner is the tenant and subject that started a run.
type Owner struct {
	Tenant  string  `json:"tenant"`
	Subject Subject `json:"subject"`
}

// InterruptKind is the kind of an OpenWOP interrupt.
type InterruptKind string

// The interrupt kinds the harness raises.
const (
	KindApproval      InterruptKind = "approval"
	KindClarification InterruptKind = "clarification"
	KindExternalEvent InterruptKind = "external-event"
	KindCustom        InterruptKind = "custom"
)

// Interrupt is an open request for human (or external) input.
type Interrupt struct {
	// ID is host-minted and tenant-bound (runId/"i-"+key based), unique over
	// the run's life. MCP keys inputRequests by it.
	ID string `json:"interruptId"`
	// NodeID names the step of the workflow that is suspended.
	NodeID string        `json:"nodeId"`
	Kind   InterruptKind `json:"kind"`
	// Key is the deterministic re-entry key given by the workflow.
	Key string `json:"key"`
	// Title is the short prompt shown to the human.
	Title string `json:"title"`
	// Description is optional longer text.
	Description string `json:"description,omitempty"`
	// Actions are the approval actions offered (accept, reject, ...).
	Actions []string `json:"actions,omitempty"`
	// Schema is a JSON Schema (type object) of the content the resolver
	// must supply on accept. Nil for approvals, which answer with an action.
	Schema json.RawMessage `json:"schema,omitempty"`
	// Approvers, when non-empty, lists the principals eligible to resolve the
	// interrupt. Empty means any subject of the run's tenant.
	Approvers []string `json:"approversList,omitempty"`
	// RequestedAt is when the interrupt was raised.
	RequestedAt time.Time `json:"requestedAt"`
	// ExpiresAt, when set, is when the interrupt expires: the run then
	// withdraws it (Withdrawn, reason WithdrawnExpired), and an answer
	// after it resolves nothing. Nil when the question has no deadline.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// Eligible reports whether subject may resolve the interrupt.
func (i Interrupt) Eligible(s Subject) bool {
	if len(i.Approvers) == 0 {
		return true
	}
	for _, a := range i.Approvers {
		if a == s.Principal() {
			return true
		}
		if g, ok := strings.CutPrefix(a, GroupPrefix); ok && slices.Contains(s.Groups, g) {
			return true
		}
	}
	return false
}

// Action is how a resolver answered an interrupt (MCP ElicitResult.action).
type Action string

// Resolution actions.
const (
	ActionAccept  Action = "accept"
	ActionDecline Action = "decline"
	ActionCancel  Action = "cancel"
)

// Resolution answers one interrupt. It is the payload of
// SignalResolveInterrupt.
type Resolution struct {
	InterruptID string          `json:"interruptId"`
	Action      Action          `json:"action"`
	Content     json.RawMessage `json:"content,omitempty"`
	ResolvedBy  Subject         `json:"resolvedBy"`
	// RequestID is a unique id chosen by the sender, so it can tell by a
	// following query whether its resolution was the one applied.
	RequestID string `json:"requestId"`
}

// MaxInputBytes bounds the JSON a caller sends into a run: a run's
// arguments, each pre-run input's answer and the content of each
// Resolution. A run's input travels as one Temporal payload, which a
// Temporal server refuses above 2 MB by default; input past this bound is
// refused before it reaches the run, with an error that says so.
const MaxInputBytes = 1 << 20

// Resolved records an applied resolution in the snapshot.
type Resolved struct {
	Resolution
	ResolvedAt time.Time `json:"resolvedAt"`
}

// Why an interrupt was withdrawn (Withdrawn.Reason).
const (
	// WithdrawnExpired: its deadline (Interrupt.ExpiresAt) passed before
	// an answer was applied.
	WithdrawnExpired = "expired"
	// WithdrawnByRun: the run stopped waiting for it (the context of the
	// question was cancelled, or the tool withdrew it).
	WithdrawnByRun = "withdrawn"
)

// Withdrawn records in the snapshot an interrupt the run closed without
// an answer while it went on: it left the open interrupts, and an answer
// to it resolves nothing.
type Withdrawn struct {
	InterruptID string `json:"interruptId"`
	// Reason is WithdrawnExpired or WithdrawnByRun.
	Reason      string    `json:"reason"`
	WithdrawnAt time.Time `json:"withdrawnAt"`
}

// CancelRequest is the payload of SignalCancelReason.
type CancelRequest struct {
	Reason      string  `json:"reason"`
	CancelledBy Subject `json:"cancelledBy,omitempty"`
}

// Content is one MCP content block of a tool result: a text block (Type
// "text", what runs produce), or a resource_link to a resource the server
// serves (URI, Name, MimeType, Size), which the MCP mount adds to a result
// too large to answer inline.
type Content struct {
	Type string `json:"type"`
	Text string `json:"text"`
	// URI, Name, MimeType and Size describe a resource_link block.
	URI      string `json:"uri,omitempty"`
	Name     string `json:"name,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Size     int64  `json:"size,omitempty"`
}

// MarshalJSON writes the block's fields of its type: a text block always
// carries its text, a resource_link none. It escapes no HTML: the
// encoder that calls it does, if it was asked to.
func (c Content) MarshalJSON() ([]byte, error) {
	type plain Content
	var v any = plain(c)
	if c.Type != "text" && c.Text == "" {
		v = struct {
			plain
			Text string `json:"text,omitempty"`
		}{plain: plain(c)}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// ToolResult is the result a run produced, in the shape MCP's CallToolResult
// uses. IsError is set when the run failed.
type ToolResult struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError"`
}

// RunError describes why a run failed.
type RunError struct {
	// Code is the OpenWOP error code (e.g. conformance_test_failure).
	Code    string `json:"code"`
	Message string `json:"message"`
	// RPCCode, when non-zero, marks a JSON-RPC error raised for the call
	// itself (MCP task status "failed") rather than a tool failure (MCP
	// task status "completed" with isError).
	RPCCode int `json:"rpcCode,omitempty"`
}

// Snapshot is the state of a run as getRun answers it.
type Snapshot struct {
	RunID string `json:"runId"`
	// Tool is the name of the run's tool (on the wire, OpenWOP's
	// workflowId).
	Tool      string    `json:"workflowId"`
	Status    Status    `json:"status"`
	Owner     Owner     `json:"owner"`
	Transport string    `json:"transport"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// StatusMessage is content-free about the run's internals.
	StatusMessage string `json:"statusMessage"`
	// Interrupts holds every open interrupt, in the order raised.
	Interrupts []Interrupt `json:"interrupts,omitempty"`
	// Resolved holds the resolutions applied so far, in order.
	Resolved []Resolved `json:"resolved,omitempty"`
	// Withdrawn holds the interrupts withdrawn without an answer (expired,
	// or withdrawn by the run), in order.
	Withdrawn []Withdrawn `json:"withdrawn,omitempty"`
	// Outputs is the run's output object once completed.
	Outputs json.RawMessage `json:"outputs,omitempty"`
	// Result is set once the run is terminal (completed or failed).
	Result *ToolResult `json:"result,omitempty"`
	Error  *RunError   `json:"error,omitempty"`
	// CancelReason is set once the run is cancelling or cancelled.
	CancelReason string `json:"cancelReason,omitempty"`
	// CancelRequestedAt is when the run's cancellation was requested, once
	// it is cancelling (zero when not known).
	CancelRequestedAt time.Time `json:"cancelRequestedAt,omitzero"`
	// Progress is what the run last reported of its progress, while it is
	// not terminal; nil when it reported none.
	Progress *Progress `json:"progress,omitempty"`
	// LastSequence is the sequence number of the last event in the log, -1
	// when the log is empty.
	LastSequence int `json:"lastSequence"`
	// ResultLimit is the result limit of the run's tool as the run was
	// started with it (StartRequest.ResultLimit), zero when the tool set
	// none: then the server's limit applies.
	ResultLimit int `json:"resultLimit,omitempty"`
}

// CurrentNodeID is the node of the first open interrupt, or "".
func (s Snapshot) CurrentNodeID() string {
	if len(s.Interrupts) == 0 {
		return ""
	}
	return s.Interrupts[0].NodeID
}

// Interrupt returns the open interrupt with the given id.
func (s Snapshot) Interrupt(id string) (Interrupt, bool) {
	for _, i := range s.Interrupts {
		if i.ID == id {
			return i, true
		}
	}
	return Interrupt{}, false
}

// ResolvedBy returns the applied resolution of the interrupt with the given
// id.
func (s Snapshot) ResolvedBy(id string) (Resolved, bool) {
	for _, r := range s.Resolved {
		if r.InterruptID == id {
			return r, true
		}
	}
	return Resolved{}, false
}

// WithdrawnAs returns the record of the withdrawn interrupt with the
// given id.
func (s Snapshot) WithdrawnAs(id string) (Withdrawn, bool) {
	for _, w := range s.Withdrawn {
		if w.InterruptID == id {
			return w, true
		}
	}
	return Withdrawn{}, false
}

// EventLogSchemaVersion is the version of the event envelope and payloads.
const EventLogSchemaVersion = 1

// Event types of the OpenWOP run event log.
const (
	EventRunStarted         = "run.started"
	EventNodeStarted        = "node.started"
	EventNodeCompleted      = "node.completed"
	EventNodeFailed         = "node.failed"
	EventNodeCancelled      = "node.cancelled"
	EventNodeSuspended      = "node.suspended"
	EventInterruptRequested = "interrupt.requested"
	EventInterruptResolved  = "interrupt.resolved"
	// EventInterruptWithdrawn: the run closed an open interrupt without
	// an answer (payload reason: WithdrawnExpired or WithdrawnByRun).
	EventInterruptWithdrawn = "interrupt.withdrawn"
	EventRunCompleted       = "run.completed"
	EventRunFailed          = "run.failed"
	EventRunCancelled       = "run.cancelled"
)

// TerminalEvent reports whether an event type ends the run.
func TerminalEvent(typ string) bool {
	return typ == EventRunCompleted || typ == EventRunFailed || typ == EventRunCancelled
}

// Event is one entry of the OpenWOP run event log.
type Event struct {
	EventID       string          `json:"eventId"`
	RunID         string          `json:"runId"`
	Type          string          `json:"type"`
	Payload       json.RawMessage `json:"payload"`
	Timestamp     time.Time       `json:"timestamp"`
	Sequence      int             `json:"sequence"`
	SchemaVersion int             `json:"schemaVersion"`
	NodeID        string          `json:"nodeId,omitempty"`
}

// EventsQuery is the argument of QueryEvents.
type EventsQuery struct {
	// AfterSequence selects events whose sequence is greater; -1 for all.
	AfterSequence int `json:"afterSequence"`
	// Limit caps the number of events returned; 0 means no cap.
	Limit int `json:"limit,omitempty"`
}

// EventPage answers QueryEvents.
type EventPage struct {
	Events       []Event `json:"events"`
	LastSequence int     `json:"lastSequence"`
}

// StartRequest is the single argument every ContractOpenWOP tool workflow
// is started with.
type StartRequest struct {
	// Tool is the tool's name (the OpenWOP workflowId); empty means the
	// workflow type.
	Tool string `json:"tool,omitempty"`
	// Arguments are the tool arguments, already validated against the
	// tool's input schema.
	Arguments json.RawMessage `json:"arguments"`
	Owner     Owner           `json:"owner"`
	Transport string          `json:"transport"`
	// PreRunInputs holds the answers to the tool's pre-run input requests,
	// keyed by the request key.
	PreRunInputs map[string]json.RawMessage `json:"preRunInputs,omitempty"`
	// CreatedAt is the run's creation time as the server reports it
	// everywhere (also in the memo, MemoCreatedAt). The run's snapshots
	// carry it as their createdAt; it is zero from a server that predates
	// it (then the workflow's start time stands in).
	CreatedAt time.Time `json:"createdAt,omitzero"`
	// ResultLimit is the tool's result limit (ToolSpec.ResultLimit) when
	// it sets one, zero otherwise: the run's snapshots carry it as their
	// resultLimit, unchanged.
	ResultLimit int `json:"resultLimit,omitempty"`
}

// RunRecord is what a tool workflow leaves in its close event: its final
// snapshot and its whole event log. A terminal run is read from it without
// a worker replaying the history.
type RunRecord struct {
	Snapshot Snapshot `json:"snapshot"`
	Events   []Event  `json:"events"`
}

// TaskSupport says whether a tool may or must run as an MCP task.
type TaskSupport string

// Task support levels.
const (
	TaskForbidden TaskSupport = "forbidden"
	TaskOptional  TaskSupport = "optional"
	TaskRequired  TaskSupport = "required"
)

// PreRunInput is a question a tool asks before its run starts (pre-run
// elicitation; ToolSpec.PreRunInputs): the server asks it, and passes the
// answer to the run in StartRequest.PreRunInputs under Key. A question a
// run asks while it runs is an Interrupt.
type PreRunInput struct {
	Key     string          `json:"key"`
	Message string          `json:"message"`
	Schema  json.RawMessage `json:"schema"`
}

// Contract says what a tool's workflow implements, and so how the server
// starts and reads its runs.
type Contract string

// The run contracts.
const (
	// ContractOpenWOP is the full run contract (docs/contract.md): the
	// workflow takes a StartRequest, answers QueryGetRun and QueryEvents,
	// takes SignalResolveInterrupt and SignalCancelReason, and ends with a
	// RunRecord. The harness in package workflows implements it.
	ContractOpenWOP Contract = "openwop"
	// ContractPlain is any workflow: it takes the tool arguments object as
	// its only input and returns any JSON value. The server projects its
	// runs from what Temporal knows (status, result, failure).
	ContractPlain Contract = "plain"
)

// Valid reports whether c is a known contract ("" counts as openwop).
func (c Contract) Valid() bool { return c == "" || c == ContractOpenWOP || c == ContractPlain }

// ReservedToolPrefix starts the names of the tools the server itself
// offers beside the catalog's (the MCP mount's companion tools, which
// follow runs for clients that cannot): no published tool may use it.
const ReservedToolPrefix = "openwop_"

// ToolSpec describes a tool to the mount: everything tools/list and
// tools/call need, with no reference to the workflow code.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	TaskSupport TaskSupport     `json:"taskSupport"`
	// CanSuspend is set when the run may raise interrupts.
	CanSuspend bool `json:"canSuspend"`
	// PreRunInputs are asked (MRTR) before the run is started.
	PreRunInputs []PreRunInput `json:"preRunInputs,omitempty"`
	// Tenants, when non-empty, limits the tool to these tenants.
	Tenants []string `json:"tenants,omitempty"`
	// Scopes are the OAuth scopes a caller's token must grant to see and
	// call the tool (Subject.MissingScope); API keys need none.
	Scopes []string `json:"scopes,omitempty"`
	// TaskQueue is the task queue the tool's runs start on.
	TaskQueue string `json:"taskQueue,omitempty"`
	// WorkflowType is the Temporal workflow type of the tool's runs; empty
	// means the tool's name.
	WorkflowType string `json:"workflowType,omitempty"`
	// Contract is what the workflow implements; empty means
	// ContractOpenWOP.
	Contract Contract `json:"contract,omitempty"`
	// OutputSchema, when set, is the JSON Schema (type object) of the
	// structuredContent of the tool's completed results: the run's
	// outputs object. A completed result that does not match it is
	// answered as a tool error (docs/catalog.md).
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Annotations are hints about the tool's behaviour for clients; nil
	// for none.
	Annotations *ToolAnnotations `json:"annotations,omitempty"`
	// RunTimeout, when positive, bounds a run of the tool: the server
	// starts it with this workflow execution timeout, and a run still
	// open when it expires fails (code workflow_timed_out). Zero: no
	// bound. In JSON a Go duration string ("90s", "2h").
	RunTimeout Duration `json:"runTimeout,omitempty"`
	// InlineWait is how long a call that may take a task (an MCP client
	// that declared the Tasks extension) waits for its run before it is
	// answered with the task: a run that ends within it is answered with
	// its result, as a blocking call is. Nil: the server's default (the
	// MCP mount's Options.InlineWait); zero: the task at once. In JSON a
	// Go duration string ("2s"; "0s" for none).
	InlineWait *Duration `json:"inlineWait,omitempty"`
	// HandoffAfter bounds how long a call that took no task (an MCP
	// client that did not declare the Tasks extension) waits for its run
	// before it is answered with a handoff: the run's status and what to
	// call next, the run going on. Zero: the server's bound (the MCP
	// mount's Options.MaxBlockingWait). In JSON a Go duration string
	// ("30s").
	HandoffAfter Duration `json:"handoffAfter,omitempty"`
	// ResultLimit is the size, in bytes of text, over which a run's
	// result is answered with its head inline and a resource_link to the
	// whole, which resources/read serves in pages of this size. Zero: the
	// server's limit (the MCP mount's Options.ResultLimit). The server
	// records it with each run at start (StartRequest.ResultLimit,
	// MemoResultLimit), so a run keeps the limit of the tool version that
	// started it.
	ResultLimit int `json:"resultLimit,omitempty"`
}

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string, such as "90s" or "1h30m".
type Duration time.Duration

// String formats d as time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string ("90s", "2h"); null leaves d
// unchanged.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"90s\" or \"2h\", not %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// ToolAnnotations are a tool's behaviour hints, as MCP's tools/list
// carries them. They are hints for a client deciding, say, whether to ask
// its user before a call, never guarantees the server enforces. An unset
// hint means what MCP says it means: not read-only, destructive, not
// idempotent, open-world.
type ToolAnnotations struct {
	// Title is a human-readable name of the tool.
	Title string `json:"title,omitempty"`
	// ReadOnlyHint: the tool changes nothing outside the run.
	ReadOnlyHint bool `json:"readOnlyHint,omitempty"`
	// DestructiveHint, for a tool that is not read-only: whether it may
	// destroy or overwrite something (nil: it may).
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	// IdempotentHint, for a tool that is not read-only: calling it again
	// with the same arguments has no further effect.
	IdempotentHint bool `json:"idempotentHint,omitempty"`
	// OpenWorldHint: whether the tool reaches an open world of entities
	// (the web, other people's systems) rather than a closed one (nil: it
	// does).
	OpenWorldHint *bool `json:"openWorldHint,omitempty"`
}

// Clone returns a copy of t that shares no slice or pointer with it.
func (t ToolSpec) Clone() ToolSpec {
	t.InputSchema = slices.Clone(t.InputSchema)
	t.PreRunInputs = slices.Clone(t.PreRunInputs)
	t.Tenants = slices.Clone(t.Tenants)
	t.Scopes = slices.Clone(t.Scopes)
	t.OutputSchema = slices.Clone(t.OutputSchema)
	t.InlineWait = clonePtr(t.InlineWait)
	if t.Annotations != nil {
		a := *t.Annotations
		a.DestructiveHint = clonePtr(a.DestructiveHint)
		a.OpenWorldHint = clonePtr(a.OpenWorldHint)
		t.Annotations = &a
	}
	return t
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// Type is the Temporal workflow type of the tool's runs.
func (t ToolSpec) Type() string {
	if t.WorkflowType != "" {
		return t.WorkflowType
	}
	return t.Name
}

// Plain reports whether the tool's workflow follows ContractPlain.
func (t ToolSpec) Plain() bool { return t.Contract == ContractPlain }

// OfferedTo reports whether the tool is offered to the caller s: its
// tenant may see the tool (VisibleTo) and its credential grants every
// scope the tool needs (Subject.MissingScope). tools/list shows a caller
// only the tools offered to it.
func (t ToolSpec) OfferedTo(s Subject) bool {
	if !t.VisibleTo(s.Tenant) {
		return false
	}
	_, missing := s.MissingScope(t.Scopes)
	return !missing
}

// VisibleTo reports whether the tool is offered to the tenant.
func (t ToolSpec) VisibleTo(tenant string) bool {
	if len(t.Tenants) == 0 {
		return true
	}
	for _, x := range t.Tenants {
		if x == tenant {
			return true
		}
	}
	return false
}
