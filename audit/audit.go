package audit

import (
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/openwop/temporal-mcp/signals"
)

// Sinks of Open besides a file path.
const (
	SinkStderr = "stderr"
	SinkStdout = "stdout"
	SinkOff    = "off"
)

// DefaultSink is the sink of a program that is given none
// (internal/app/config: OPENWOP_AUDIT_LOG unset).
const DefaultSink = SinkStderr

// Action is what a record is about.
type Action string

// The audited actions.
const (
	// ActionStart is a run start (tools/call, POST /runs).
	ActionStart Action = "start"
	// ActionAnswer is the resolution of an interrupt (an answer, an
	// approval or a decline).
	ActionAnswer Action = "answer"
	// ActionCancel is a cancellation request.
	ActionCancel Action = "cancel"
	// ActionRead is a read of a run (getRun, its events, a wait for it).
	// Only its refusals are recorded.
	ActionRead Action = "read"
	// ActionAuthenticate is the authentication of a request. Only its
	// refusals are recorded.
	ActionAuthenticate Action = "authenticate"
)

// Outcome is how an action went.
type Outcome string

// The outcomes of a record.
const (
	// OutcomeOK: the action was done.
	OutcomeOK Outcome = "ok"
	// OutcomeRecorded: an answer was recorded with the run, but no worker
	// applied it yet (runs.ErrNotApplied).
	OutcomeRecorded Outcome = "recorded"
	// OutcomeRefused: the action was refused on authorization grounds;
	// Reason says which.
	OutcomeRefused Outcome = "refused"
	// OutcomeFailed: the action was not done for another reason (the run
	// is terminal, the interrupt is not open, an internal error); Reason
	// says which.
	OutcomeFailed Outcome = "failed"
)

// Record is one audit record. Its JSON line holds the time and the fields
// that are set; Subject contributes the tenant, issuer and subject (the
// subject id), never anything else of the request.
type Record struct {
	Action  Action
	Outcome Outcome
	// Reason says why an action was refused or failed: a short code
	// ("tenant-mismatch", "not-eligible", "terminal", ...) or the
	// refusal's message, which never holds the credential.
	Reason string
	// RunID and Tool name the run, when known.
	RunID string
	Tool  string
	// Subject is the acting caller (zero when its credential was refused).
	Subject signals.Subject
	// InterruptID and Resolution (accept, decline, cancel) describe an
	// answer; its content is never recorded.
	InterruptID string
	Resolution  signals.Action
	// CancelReason is a cancellation's registered reason.
	CancelReason string
	// Transport is the transport that started a run (mcp, rest, nexus).
	Transport string
	// Remote is the network address a refused request came from.
	Remote string
	// Scope names the scopes a refusal for want of scope
	// (ReasonInsufficientScope) found missing: the ones the request
	// needs, space-separated as in the challenge.
	Scope string
}

// ReasonInsufficientScope is the reason of a request refused because the
// caller's token does not grant a scope it needs: one every request needs
// (OPENWOP_OAUTH_REQUIRED_SCOPES) or one of the tool it calls
// (signals.ToolSpec.Scopes). The record's Scope names them.
const ReasonInsufficientScope = "insufficient-scope"

// ScopeRefusal is the record of a run start refused because the caller's
// token lacks scopes the tool needs: action start, outcome refused, reason
// insufficient-scope, the tool, the transport the call came on and the
// scopes it needs.
func ScopeRefusal(caller signals.Subject, tool, transport string, scopes []string) Record {
	return Record{Action: ActionStart, Outcome: OutcomeRefused, Reason: ReasonInsufficientScope, Tool: tool,
		Subject: caller, Transport: transport, Scope: strings.Join(scopes, " ")}
}

// Trail writes audit records. A nil *Trail writes nothing.
type Trail struct {
	log   *zap.Logger
	close func() error
}

// New returns a Trail that writes JSON lines to w.
func New(w zapcore.WriteSyncer) *Trail {
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{
		TimeKey:    "time",
		EncodeTime: func(t time.Time, e zapcore.PrimitiveArrayEncoder) { e.AppendString(t.UTC().Format(time.RFC3339Nano)) },
	})
	return &Trail{log: zap.New(zapcore.NewCore(enc, w, zapcore.DebugLevel)), close: func() error { return nil }}
}

// Open returns the Trail of sink: "stderr", "stdout", "off" (nil: no
// trail) or the path of a file, opened for appending (created with mode
// 0600 when missing).
func Open(sink string) (*Trail, error) {
	switch sink {
	case SinkOff:
		return nil, nil
	case SinkStderr:
		return New(zapcore.Lock(os.Stderr)), nil
	case SinkStdout:
		return New(zapcore.Lock(os.Stdout)), nil
	case "":
		return nil, fmt.Errorf("empty sink: want %s, %s, %s or a file path", SinkStderr, SinkStdout, SinkOff)
	}
	f, err := os.OpenFile(sink, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open audit log: %w", err)
	}
	t := New(zapcore.Lock(f))
	t.close = f.Close
	return t, nil
}

// Close flushes the trail and closes its file, if it has one.
func (t *Trail) Close() error {
	if t == nil {
		return nil
	}
	_ = t.log.Sync() // stderr and stdout cannot always sync
	return t.close()
}

// ScopeRefused writes the record of a use of a tool refused for want of
// its scopes (ScopeRefusal); it is an auth.ScopeRefused, which the
// assembly gives both edges.
func (t *Trail) ScopeRefused(caller signals.Subject, transport, tool string, scopes []string) {
	t.Write(ScopeRefusal(caller, tool, transport, scopes))
}

// Write writes one record, stamped with the current time.
func (t *Trail) Write(r Record) {
	if t == nil {
		return
	}
	fields := make([]zap.Field, 0, 12)
	fields = append(fields, zap.String("action", string(r.Action)), zap.String("outcome", string(r.Outcome)))
	add := func(key, v string) {
		if v != "" {
			fields = append(fields, zap.String(key, v))
		}
	}
	add("reason", r.Reason)
	add("runId", r.RunID)
	add("tool", r.Tool)
	add("tenant", r.Subject.Tenant)
	add("issuer", r.Subject.Issuer)
	add("subject", r.Subject.SubjectID)
	add("interruptId", r.InterruptID)
	add("resolution", string(r.Resolution))
	add("cancelReason", r.CancelReason)
	add("transport", r.Transport)
	add("remote", r.Remote)
	add("scope", r.Scope)
	t.log.Info("", fields...)
}
