package restapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/answers"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// workflowIDGrammar is the OpenWOP grammar of workflowId and nodeId.
var workflowIDGrammar = regexp.MustCompile(`^[A-Za-z0-9._~:-]{1,128}$`)

// maxReasonLen caps a cancel reason.
const maxReasonLen = 256

// createRunRequest is the body of POST /runs.
type createRunRequest struct {
	WorkflowID string          `json:"workflowId"`
	Inputs     json.RawMessage `json:"inputs"`
	// PreRunInputs answers the tool's pre-run input requests by key (the
	// questions MCP would ask by elicitation before starting the run).
	PreRunInputs map[string]json.RawMessage `json:"preRunInputs"`
}

// createRunResponse is the 201 answer of POST /runs.
type createRunResponse struct {
	RunID     string         `json:"runId"`
	Status    signals.Status `json:"status"`
	EventsURL string         `json:"eventsUrl"`
	StatusURL string         `json:"statusUrl"`
	// CreatedAt is the run's creation time, as getRun and MCP report it.
	CreatedAt time.Time `json:"createdAt"`
}

// createRun serves POST /runs.
func (h *handler) createRun(w http.ResponseWriter, r *http.Request, caller signals.Subject) {
	var req createRunRequest
	if !readJSON(w, r, &req, false) {
		return
	}
	if req.WorkflowID == "" {
		writeError(w, http.StatusBadRequest, "validation_error", "workflowId is required")
		return
	}
	t, err := h.kit.Catalog().ForCall(r.Context(), req.WorkflowID)
	var unav *catalog.UnavailableError
	switch {
	case errors.As(err, &unav) && unav.Visible(caller.Tenant):
		writeError(w, http.StatusServiceUnavailable, "workflow_unavailable", unav.Error())
		return
	case errors.As(err, &unav), errors.Is(err, catalog.ErrUnknownTool):
		writeError(w, http.StatusNotFound, "workflow_not_found", fmt.Sprintf("no workflow %q", req.WorkflowID))
		return
	case err != nil:
		h.log.Error("read the tool catalog", zap.Error(err))
		writeError(w, http.StatusInternalServerError, "internal_error", "the tool catalog could not be read")
		return
	}
	t = t.ForArguments(req.Inputs) // during a ramp, the version the inputs fit
	spec := t.Spec()
	if !spec.VisibleTo(caller.Tenant) {
		writeError(w, http.StatusNotFound, "workflow_not_found", fmt.Sprintf("no workflow %q", req.WorkflowID))
		return
	}
	if !h.permitStart(w, caller, spec) {
		return
	}
	args, err := t.ValidateArguments(req.Inputs)
	if err != nil {
		writeError(w, http.StatusBadRequest, "validation_error", "inputs: "+catalog.Problem(err))
		return
	}
	preRun, err := validatePreRun(t, req.PreRunInputs)
	if err != nil {
		writeError(w, http.StatusBadRequest, "validation_error", err.Error())
		return
	}
	key, ok := idempotencyKey(r.Header)
	if !ok {
		writeError(w, http.StatusBadRequest, "validation_error", "Idempotency-Key must be 1 to 255 printable ASCII characters (a bare or a quoted string)")
		return
	}
	ticket, err := h.kit.Admission().Admit(caller.Tenant, admission.NeedStart)
	if err != nil {
		h.writeRejection(w, err)
		return
	}
	snap, err := h.kit.Runs().Start(r.Context(), runs.NewRun{
		Tool:         spec,
		Arguments:    args,
		Caller:       caller,
		Transport:    signals.TransportREST,
		PreRunInputs: preRun,
		// The version the inputs were checked against, when the catalog
		// chose one (a versioned tool).
		Version: t.Pinned(),
		// A retry with the key answers the run it started.
		IdempotencyKey: key,
	})
	ticket.Done()
	if errors.Is(err, runs.ErrKeyReused) {
		writeError(w, http.StatusUnprocessableEntity, "idempotency_key_reused", err.Error())
		return
	}
	if err != nil {
		h.writeRunsError(w, r, "start", err)
		return
	}
	status := h.externalBase(r) + "/runs/" + runid.Project(snap.RunID)
	w.Header().Set("Location", status)
	writeJSON(w, http.StatusCreated, createRunResponse{
		RunID:     snap.RunID,
		Status:    snap.Status,
		EventsURL: status + "/events/poll",
		StatusURL: status,
		CreatedAt: snap.CreatedAt,
	})
	h.kit.Runs().Release(snap.RunID) // the answer naming the run was written
}

// idempotencyKey reads the Idempotency-Key header of a createRun (the IETF
// httpapi draft's header: a structured-field string, quoted; a bare value
// is taken as it is). It reports false for a value that is no valid key;
// no header is the key "".
func idempotencyKey(h http.Header) (string, bool) {
	values := h.Values("Idempotency-Key")
	if len(values) == 0 {
		return "", true
	}
	key := values[0]
	if len(key) >= 2 && key[0] == '"' && key[len(key)-1] == '"' {
		key = key[1 : len(key)-1]
	}
	return key, len(values) == 1 && runs.ValidIdempotencyKey(key)
}

// validatePreRun checks the answers to a tool's pre-run input requests:
// every request must be answered, each answer valid against its schema, and
// no unknown key given.
func validatePreRun(t *catalog.Tool, answers map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	spec := t.Spec()
	asked := map[string]bool{}
	for _, in := range spec.PreRunInputs {
		asked[in.Key] = true
	}
	for key := range answers {
		if !asked[key] {
			return nil, fmt.Errorf("preRunInputs: workflow %q asks no input %q", spec.Name, key)
		}
	}
	if len(spec.PreRunInputs) == 0 {
		return nil, nil
	}
	out := make(map[string]json.RawMessage, len(spec.PreRunInputs))
	for _, in := range spec.PreRunInputs {
		a, ok := answers[in.Key]
		if !ok {
			return nil, fmt.Errorf("preRunInputs: %q is required (%s)", in.Key, in.Message)
		}
		var v any
		if json.Unmarshal(a, &v) == nil {
			if _, obj := v.(map[string]any); !obj && v != nil {
				return nil, fmt.Errorf("preRunInputs[%q]: must be a JSON object", in.Key)
			}
		}
		valid, err := t.ValidateInput(in.Key, a)
		if err != nil {
			return nil, fmt.Errorf("preRunInputs[%q]: %s", in.Key, catalog.Problem(err))
		}
		out[in.Key] = valid
	}
	return out, nil
}

// getRun serves GET /runs/{runId}.
func (h *handler) getRun(w http.ResponseWriter, r *http.Request, caller signals.Subject, id string) {
	snap, err := h.kit.Runs().Get(r.Context(), caller, id, runs.AllowStale())
	if err != nil {
		h.writeRunsError(w, r, "get", err)
		return
	}
	writeJSON(w, http.StatusOK, snapshotOf(snap))
}

// listRunsResponse answers GET /runs.
type listRunsResponse struct {
	Runs       []runSnapshot `json:"runs"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

// listRuns serves GET /runs?workflowId=&status=&limit=&cursor=.
func (h *handler) listRuns(w http.ResponseWriter, r *http.Request, caller signals.Subject) {
	q := r.URL.Query()
	req := runs.ListRequest{
		Tool:   q.Get("workflowId"),
		Status: signals.Status(q.Get("status")),
		Cursor: q.Get("cursor"),
	}
	if req.Tool != "" && !workflowIDGrammar.MatchString(req.Tool) {
		writeError(w, http.StatusBadRequest, "validation_error", fmt.Sprintf("workflowId %q is not a valid workflow id", req.Tool))
		return
	}
	if req.Status != "" && !req.Status.Valid() {
		writeError(w, http.StatusBadRequest, "validation_error", fmt.Sprintf("status %q is not a run status", req.Status))
		return
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > runs.MaxPageSize {
			writeError(w, http.StatusBadRequest, "validation_error",
				fmt.Sprintf("limit %q must be an integer from 1 to %d", s, runs.MaxPageSize))
			return
		}
		req.Limit = n
	}
	page, err := h.kit.Runs().List(r.Context(), caller, req)
	if err != nil {
		h.writeRunsError(w, r, "list", err)
		return
	}
	out := listRunsResponse{Runs: make([]runSnapshot, 0, len(page.Runs)), NextCursor: page.NextCursor}
	for _, s := range page.Runs {
		out.Runs = append(out.Runs, snapshotOf(s))
	}
	writeJSON(w, http.StatusOK, out)
}

// cancelRunRequest is the (optional) body of POST /runs/{runId}/cancel.
type cancelRunRequest struct {
	Reason string `json:"reason"`
}

// cancelRunResponse answers POST /runs/{runId}/cancel.
type cancelRunResponse struct {
	RunID  string         `json:"runId"`
	Status signals.Status `json:"status"`
}

// cancelRun serves POST /runs/{runId}/cancel.
func (h *handler) cancelRun(w http.ResponseWriter, r *http.Request, caller signals.Subject, id string) {
	var req cancelRunRequest
	if !readJSON(w, r, &req, true) {
		return
	}
	if len(req.Reason) > maxReasonLen {
		writeError(w, http.StatusBadRequest, "validation_error", fmt.Sprintf("reason is longer than %d bytes", maxReasonLen))
		return
	}
	req.Reason = cmp.Or(req.Reason, signals.ReasonCallerRequested)
	snap, err := h.kit.Runs().Cancel(r.Context(), caller, id, req.Reason)
	if err != nil {
		h.writeRunsError(w, r, "cancel", err)
		return
	}
	status := signals.StatusCancelling
	if snap.Status == signals.StatusCancelled {
		status = signals.StatusCancelled
	}
	writeJSON(w, http.StatusOK, cancelRunResponse{RunID: id, Status: status})
}

// pollEventsResponse answers GET /runs/{runId}/events/poll.
type pollEventsResponse struct {
	RunID        string          `json:"runId"`
	Events       []signals.Event `json:"events"`
	LastSequence int             `json:"lastSequence"`
	Status       signals.Status  `json:"status"`
	IsTerminal   bool            `json:"isTerminal"`
}

// pollEvents serves GET /runs/{runId}/events/poll?afterSequence=&timeout=.
// It answers at once when events after afterSequence exist or the run is
// terminal, and otherwise waits up to timeout seconds for one.
func (h *handler) pollEvents(w http.ResponseWriter, r *http.Request, caller signals.Subject, id string) {
	q := r.URL.Query()
	after := -1
	if s := q.Get("afterSequence"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < -1 {
			writeError(w, http.StatusBadRequest, "validation_error",
				fmt.Sprintf("afterSequence %q must be an integer >= -1", s))
			return
		}
		after = n
	}
	var wait time.Duration
	if s := q.Get("timeout"); s != "" {
		// Compare seconds with seconds: multiplying first could overflow.
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 || n > int64(MaxPollTimeout/time.Second) {
			writeError(w, http.StatusBadRequest, "validation_error",
				fmt.Sprintf("timeout %q must be an integer number of seconds from 0 to %d", s, int(MaxPollTimeout/time.Second)))
			return
		}
		wait = time.Duration(n) * time.Second
	}
	page, snap, err := h.kit.Runs().Events(r.Context(), caller, id, after, wait)
	if err != nil && wait > 0 && r.Context().Err() == nil && !knownRunsError(err) {
		// The wait can end in a transport error (a Temporal long poll
		// whose deadline fired server-side first): answer what the log
		// holds now, which a real failure will fail again.
		h.log.Debug("long poll ended in an error; reading the log without waiting", zap.String("runId", id), zap.Error(err))
		page, snap, err = h.kit.Runs().Events(r.Context(), caller, id, after, 0)
	}
	if err != nil {
		h.writeRunsError(w, r, "events", err)
		return
	}
	events := page.Events
	if events == nil {
		events = []signals.Event{}
	}
	writeJSON(w, http.StatusOK, pollEventsResponse{
		RunID:        snap.RunID,
		Events:       events,
		LastSequence: page.LastSequence,
		Status:       snap.Status,
		IsTerminal:   snap.Status.Terminal(),
	})
}

// resolveRequest is the body of POST /runs/{runId}/interrupts/{nodeId}.
type resolveRequest struct {
	ResumeValue json.RawMessage `json:"resumeValue"`
	// InterruptID, when set, is the interrupt the answer is for: one the
	// node raised earlier and the run already resolved (the node asked
	// again since) is refused 409, not applied to the open one.
	InterruptID string `json:"interruptId,omitempty"`
}

// resolveResponse answers a resolution that was applied.
type resolveResponse struct {
	RunID       string         `json:"runId"`
	NodeID      string         `json:"nodeId"`
	InterruptID string         `json:"interruptId"`
	Status      signals.Status `json:"status"`
}

// resolveInterrupt serves POST /runs/{runId}/interrupts/{nodeId}: it
// resolves the open interrupt raised at that node. Of concurrent
// resolutions exactly one is applied; the others answer 409
// interrupt_already_resolved.
func (h *handler) resolveInterrupt(w http.ResponseWriter, r *http.Request, caller signals.Subject, id string) {
	nodeID := r.PathValue("nodeId")
	if !workflowIDGrammar.MatchString(nodeID) {
		writeError(w, http.StatusBadRequest, "validation_error", fmt.Sprintf("nodeId %q is not a valid node id", nodeID))
		return
	}
	var req resolveRequest
	if !readJSON(w, r, &req, false) {
		return
	}
	// A reading with no question at the node may predate it: the run is
	// read anew (runs.AskingAt).
	snap, err := h.kit.Runs().Get(r.Context(), caller, id, runs.AskingAt(nodeID))
	if err != nil {
		h.writeRunsError(w, r, "get", err)
		return
	}
	if wd, gone := snap.WithdrawnAs(req.InterruptID); gone && req.InterruptID != "" {
		// An answer to a question the run no longer waits for.
		h.writeRunsError(w, r, "resolve", runs.WithdrawalError(wd.Reason))
		return
	}
	var open *signals.Interrupt
	if !snap.Status.Terminal() {
		for i := range snap.Interrupts {
			if snap.Interrupts[i].NodeID == nodeID {
				open = &snap.Interrupts[i]
				break
			}
		}
	}
	if open == nil {
		h.writeNoOpenInterrupt(w, r, caller, id, nodeID, snap.Status.Terminal())
		return
	}
	if req.InterruptID != "" && req.InterruptID != open.ID {
		h.writeOtherInterrupt(w, snap, nodeID, req.InterruptID, open.ID)
		return
	}
	res, err := resolutionOf(*open, req.ResumeValue)
	if !open.Eligible(caller) {
		// Who may answer comes before what the answer says, as on every
		// path. The run service refuses it against the reading, signalling
		// nothing, and records the refusal (the audit trail).
		_, rerr := h.kit.Runs().Resolve(r.Context(), caller, id, res, runs.Held(snap))
		h.writeRunsError(w, r, "resolve", cmp.Or(rerr, runs.ErrNotEligible))
		return
	}
	if err == nil {
		// Runs checks it too before it signals; checked here, a refused
		// answer costs no call.
		err = answers.Check(*open, res)
	}
	if ae := (*answers.Error)(nil); errors.As(err, &ae) {
		err = errors.New(ae.Problem)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "validation_error", "resumeValue: "+err.Error())
		return
	}
	res.ResolvedBy = caller
	res.RequestID, err = newRequestID()
	if err != nil {
		h.writeRunsError(w, r, "resolve", err)
		return
	}
	after, err := h.kit.Runs().Resolve(r.Context(), caller, id, res)
	if errors.Is(err, runs.ErrTerminal) {
		// The run ended between the read and the resolution, possibly
		// because a concurrent resolution of this interrupt completed it:
		// that one won, and this one is the loser of the race.
		h.writeNoOpenInterrupt(w, r, caller, id, nodeID, true)
		return
	}
	if err != nil {
		h.writeRunsError(w, r, "resolve", err)
		return
	}
	writeJSON(w, http.StatusOK, resolveResponse{
		RunID:       id,
		NodeID:      nodeID,
		InterruptID: open.ID,
		Status:      after.Status,
	})
}

// writeOtherInterrupt answers a resolution naming the interrupt asked, when
// the one open at the node is another (open): 409
// interrupt_already_resolved when the run resolved asked, else 404.
func (h *handler) writeOtherInterrupt(w http.ResponseWriter, snap signals.Snapshot, nodeID, asked, open string) {
	if _, done := snap.ResolvedBy(asked); done {
		writeError(w, http.StatusConflict, "interrupt_already_resolved",
			fmt.Sprintf("the interrupt %s was already resolved; the node %s asks again as %s", asked, nodeID, open))
		return
	}
	writeError(w, http.StatusNotFound, "interrupt_not_found",
		fmt.Sprintf("the run has no interrupt %s at node %s (open there: %s)", asked, nodeID, open))
}

// writeNoOpenInterrupt answers a resolution for a node with no open
// interrupt: 409 interrupt_already_resolved when the node's interrupt was
// resolved, 409 interrupt_expired or interrupt_withdrawn when the run
// withdrew it, 409 run_terminal when the run ended otherwise, else 404.
func (h *handler) writeNoOpenInterrupt(w http.ResponseWriter, r *http.Request, caller signals.Subject, runID, nodeID string, terminal bool) {
	closed, reason, err := h.nodeClosed(r, caller, runID, nodeID)
	if err != nil {
		h.writeRunsError(w, r, "events", err)
		return
	}
	switch {
	case closed == signals.EventInterruptResolved:
		writeError(w, http.StatusConflict, "interrupt_already_resolved", "the interrupt at node "+nodeID+" was already resolved")
	case closed == signals.EventInterruptWithdrawn:
		h.writeRunsError(w, r, "resolve", runs.WithdrawalError(reason))
	case terminal:
		writeError(w, http.StatusConflict, "run_terminal", "the run is already terminal")
	default:
		writeError(w, http.StatusNotFound, "interrupt_not_found", "the run has no open interrupt at node "+nodeID)
	}
}

// nodeClosed returns how the last interrupt of the node that closed while
// the run went on closed, from the run's log: its event type
// (interrupt.resolved or interrupt.withdrawn, with the withdrawal's
// reason), or "" when none did. A resolution anywhere in the log counts
// before a later withdrawal at the node. Reading the log appends nothing.
func (h *handler) nodeClosed(r *http.Request, caller signals.Subject, runID, nodeID string) (typ, reason string, err error) {
	after := -1
	for range 1000 {
		page, _, err := h.kit.Runs().Events(r.Context(), caller, runID, after, 0)
		if err != nil {
			return "", "", err
		}
		for _, e := range page.Events {
			switch {
			case eventNode(e) != nodeID:
			case e.Type == signals.EventInterruptResolved:
				return e.Type, "", nil
			case e.Type == signals.EventInterruptWithdrawn:
				var p struct {
					Reason string `json:"reason"`
				}
				_ = json.Unmarshal(e.Payload, &p)
				typ, reason = e.Type, p.Reason
			}
		}
		if len(page.Events) == 0 {
			return typ, reason, nil
		}
		after = page.Events[len(page.Events)-1].Sequence
		if after >= page.LastSequence {
			return typ, reason, nil
		}
	}
	return typ, reason, nil
}

// eventNode is the node an event belongs to: the envelope's nodeId, else
// the payload's.
func eventNode(e signals.Event) string {
	if e.NodeID != "" {
		return e.NodeID
	}
	var p struct {
		NodeID string `json:"nodeId"`
	}
	_ = json.Unmarshal(e.Payload, &p)
	return p.NodeID
}

// resolutionOf turns a resumeValue into a Resolution of the interrupt,
// which Runs then checks against the question (answers.Check). An
// approval (or any interrupt that asks an action) takes exactly
// {"action": <one of its actions>}; "reject" takes the decline path. Other
// interrupts take an object, or {"declined": true}.
func resolutionOf(i signals.Interrupt, value json.RawMessage) (signals.Resolution, error) {
	res := signals.Resolution{InterruptID: i.ID}
	value = bytes.TrimSpace(value)
	if len(value) == 0 || string(value) == "null" {
		return res, fmt.Errorf("is required")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(value, &obj); err != nil || obj == nil {
		return res, fmt.Errorf("must be a JSON object")
	}
	if i.AsksAction() {
		offered := i.OfferedActions()
		var action string
		rawAction, ok := obj["action"]
		if !ok || len(obj) != 1 || json.Unmarshal(rawAction, &action) != nil {
			sort.Strings(offered)
			return res, fmt.Errorf(`an approval takes exactly {"action": %q}`, strings.Join(offered, "|"))
		}
		res.Action = signals.ActionAccept
		if action == "reject" && slices.Contains(offered, action) {
			res.Action = signals.ActionDecline
		}
		res.Content = value
		return res, nil
	}
	if d, ok := obj["declined"]; ok && len(obj) == 1 && string(bytes.TrimSpace(d)) == "true" {
		res.Action = signals.ActionDecline
		return res, nil
	}
	res.Action = signals.ActionAccept
	res.Content = value
	return res, nil
}
