package restapi

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/internal/httpgate"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/answers"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// errorBody is the body of every error answer.
type errorBody struct {
	Error wireError `json:"error"`
}

// wireError is a code and a human-readable message.
type wireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// runSnapshot is the OpenWOP RunSnapshot as getRun and listRuns answer it.
type runSnapshot struct {
	RunID                 string          `json:"runId"`
	WorkflowID            string          `json:"workflowId"`
	Status                signals.Status  `json:"status"`
	Owner                 signals.Owner   `json:"owner"`
	EventLogSchemaVersion int             `json:"eventLogSchemaVersion"`
	CurrentNodeID         string          `json:"currentNodeId,omitempty"`
	Error                 *wireError      `json:"error,omitempty"`
	Outputs               json.RawMessage `json:"outputs,omitempty"`
	Interrupts            []openInterrupt `json:"interrupts,omitempty"`
	// ResultResource is the URI of the MCP resource that serves the
	// result's text whole, in pages (runid.ResultURI), once the run ended
	// with a result: what an MCP client whose result was too large to
	// answer inline reads.
	ResultResource string    `json:"resultResource,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
}

// openInterrupt describes an open interrupt, so a REST client knows which
// node to resolve and with what.
type openInterrupt struct {
	InterruptID string                `json:"interruptId"`
	NodeID      string                `json:"nodeId"`
	Kind        signals.InterruptKind `json:"kind"`
	Title       string                `json:"title,omitempty"`
	Description string                `json:"description,omitempty"`
	Actions     []string              `json:"actions,omitempty"`
	Schema      json.RawMessage       `json:"resumeSchema,omitempty"`
	Approvers   []string              `json:"approversList,omitempty"`
	RequestedAt time.Time             `json:"requestedAt"`
	// ExpiresAt is the question's deadline, when it has one.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// snapshotOf converts a run snapshot to its wire form.
func snapshotOf(s signals.Snapshot) runSnapshot {
	out := runSnapshot{
		RunID:                 s.RunID,
		WorkflowID:            s.Tool,
		Status:                s.Status,
		Owner:                 s.Owner,
		EventLogSchemaVersion: signals.EventLogSchemaVersion,
		CreatedAt:             s.CreatedAt,
		UpdatedAt:             s.UpdatedAt,
	}
	if s.Status.Waiting() || s.Status == signals.StatusPaused {
		out.CurrentNodeID = s.CurrentNodeID()
	}
	if s.Status == signals.StatusFailed && s.Error != nil {
		out.Error = &wireError{Code: s.Error.Code, Message: s.Error.Message}
	}
	if s.Status == signals.StatusCompleted {
		out.Outputs = s.Outputs
	}
	if s.Status.Terminal() && (s.Error == nil || s.Error.RPCCode == 0) {
		out.ResultResource = runid.ResultURI(s.RunID, "result")
	}
	if !s.Status.Terminal() {
		for _, i := range s.Interrupts {
			out.Interrupts = append(out.Interrupts, openInterrupt{
				InterruptID: i.ID,
				NodeID:      i.NodeID,
				Kind:        i.Kind,
				Title:       i.Title,
				Description: i.Description,
				Actions:     i.Actions,
				Schema:      i.Schema,
				Approvers:   i.Approvers,
				RequestedAt: i.RequestedAt,
				ExpiresAt:   i.ExpiresAt,
			})
		}
	}
	return out
}

// writeJSON answers v with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal_error", "cannot encode the response")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeError answers an error body.
func writeError(w http.ResponseWriter, status int, code, message string) {
	b, _ := json.Marshal(errorBody{Error: wireError{Code: code, Message: message}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeRunsError maps an error of the run service (the runs.Err* values)
// to its wire answer. Errors the service does not name are logged and
// answered 500 without detail.
func (h *handler) writeRunsError(w http.ResponseWriter, r *http.Request, op string, err error) {
	var answer *answers.Error
	switch {
	case errors.As(err, &answer):
		writeError(w, http.StatusBadRequest, "validation_error", "resumeValue: "+answer.Problem)
	case errors.Is(err, runs.ErrTenantMismatch):
		writeError(w, http.StatusForbidden, "id_tenant_mismatch", "the run id belongs to another tenant")
	case errors.Is(err, runs.ErrNotFound):
		writeError(w, http.StatusNotFound, "run_not_found", "no such run")
	case errors.Is(err, runs.ErrTerminal):
		writeError(w, http.StatusConflict, "run_terminal", "the run is already terminal")
	case errors.Is(err, runs.ErrNotEligible):
		writeError(w, http.StatusForbidden, "forbidden", "the caller is not an eligible approver of this interrupt")
	case errors.Is(err, runs.ErrAlreadyResolved):
		writeError(w, http.StatusConflict, "interrupt_already_resolved", "the interrupt was already resolved")
	case errors.Is(err, runs.ErrBadCursor):
		writeError(w, http.StatusBadRequest, "validation_error", cursorProblem(err))
	case errors.Is(err, runs.ErrExpired):
		writeError(w, http.StatusConflict, "interrupt_expired",
			"the interrupt expired before an answer was applied: the run no longer waits for it")
	case errors.Is(err, runs.ErrWithdrawn):
		writeError(w, http.StatusConflict, "interrupt_withdrawn",
			"the run withdrew the interrupt: it no longer waits for it")
	case errors.Is(err, runs.ErrNotOpen):
		writeError(w, http.StatusNotFound, "interrupt_not_found", "the run has no such open interrupt")
	case errors.Is(err, runs.ErrNotApplied):
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, "worker_unavailable",
			"the resolution was recorded, but no worker serves the run to apply it now; it is applied when one does "+
				"(sending it again is harmless)")
	case errors.Is(err, runs.ErrSearchAttributesMissing):
		h.log.Error("runs operation failed", zap.String("op", op), zap.String("path", r.URL.Path), zap.Error(err))
		writeError(w, http.StatusServiceUnavailable, "search_attributes_missing", err.Error())
	case errors.Is(err, r.Context().Err()) && r.Context().Err() != nil:
		// The client went away; nobody reads the answer.
		writeError(w, http.StatusServiceUnavailable, "request_cancelled", "the request was cancelled")
	default:
		h.log.Error("runs operation failed", zap.String("op", op), zap.String("path", r.URL.Path), zap.Error(err))
		writeError(w, http.StatusInternalServerError, "internal_error", "the operation failed; see the server log")
	}
}

// cursorProblem says what is wrong with a cursor the service refused.
func cursorProblem(err error) string {
	msg := err.Error()
	prefix := runs.ErrBadCursor.Error() + ": "
	if i := strings.Index(msg, prefix); i >= 0 {
		return "invalid cursor: " + msg[i+len(prefix):]
	}
	return "invalid cursor: it is not one this server issued"
}

// knownRunsError reports whether err is one of the runs.Err* outcomes.
func knownRunsError(err error) bool {
	for _, known := range []error{runs.ErrNotFound, runs.ErrTenantMismatch, runs.ErrTerminal, runs.ErrNotEligible,
		runs.ErrNotOpen, runs.ErrAlreadyResolved, runs.ErrBadCursor, runs.ErrNotApplied} {
		if errors.Is(err, known) {
			return true
		}
	}
	return false
}

// pathRunID decodes the {runId} path segment. Both tenant%2Fopaque (decoded
// by ServeMux) and the projected tenant~2Fopaque are accepted. A malformed
// escape answers 400 validation_error and returns false. Grammar checks are
// left to the service, which answers a foreign tenant segment 403 before
// anything else.
func pathRunID(w http.ResponseWriter, r *http.Request) (string, bool) {
	raw := r.PathValue("runId")
	id, err := runid.Unproject(raw)
	if err != nil {
		writeError(w, http.StatusBadRequest, "validation_error", fmt.Sprintf("runId %q: %v", raw, err))
		return "", false
	}
	return id, true
}

// readJSON decodes a JSON request body into v. An empty body leaves v
// unchanged when allowEmpty is set. On error it answers 400 and returns
// false.
func readJSON(w http.ResponseWriter, r *http.Request, v any, allowEmpty bool) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "validation_error",
				fmt.Sprintf("request body exceeds %d bytes", maxBodyBytes))
			return false
		}
		if httpgate.IsTimeout(err) {
			writeError(w, http.StatusRequestTimeout, "request_timeout", "the request body did not arrive in time")
			return false
		}
		writeError(w, http.StatusBadRequest, "validation_error", "cannot read the request body: "+err.Error())
		return false
	}
	if len(body) == 0 || isBlank(body) {
		if allowEmpty {
			return true
		}
		writeError(w, http.StatusBadRequest, "validation_error", "a JSON object body is required")
		return false
	}
	if err := json.Unmarshal(body, v); err != nil {
		writeError(w, http.StatusBadRequest, "validation_error", "invalid JSON body: "+err.Error())
		return false
	}
	return true
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// newRequestID returns a random id for a Resolution, so the service can tell
// whether this request's resolution was the one applied.
func newRequestID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("request id: %w", err)
	}
	return "rest-" + hex.EncodeToString(b), nil
}

// writeRejection answers a call admission control refused: 503 overloaded
// with a Retry-After header (any other error of Admit is a 500).
func (h *handler) writeRejection(w http.ResponseWriter, err error) {
	var rej *admission.Rejection
	if !errors.As(err, &rej) {
		h.log.Error("admission", zap.Error(err))
		writeError(w, http.StatusInternalServerError, "internal_error", "internal error")
		return
	}
	w.Header().Set("Retry-After", strconv.Itoa(rej.RetryAfterSeconds()))
	writeError(w, http.StatusServiceUnavailable, "overloaded", rej.Error())
}
