package runs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// Idempotent starts. A NewRun with an IdempotencyKey starts at most one
// run per tenant, tool and key. Its runId is derived, not minted: the
// HMAC of the tenant, the tool, the key and a generation under
// Options.RunIDSecret (runid.Derive), and Temporal's workflow ID policies
// (a running or closed workflow of that ID refuses the start) make the
// start happen at most once. A retry that meets the run answers it,
// unless it was started with other arguments (ErrKeyReused) or it was
// cancelled before any caller held it (reason mcp-request-cancelled or
// start-failed: no caller was promised it), in which case the next
// generation's id is tried. Workflow IDs are never reused, so what every
// reader holds of a closed run stays true. A key lasts as long as
// Temporal keeps the closed run: the namespace's retention period.

// maxGenerations bounds how many abandoned runs one key may leave before
// its starts are refused.
const maxGenerations = 16

// ErrKeyReused is returned by Start when the idempotency key was used
// for a run of the same tool with other arguments.
var ErrKeyReused = errors.New("idempotency key reused with other arguments")

// ValidIdempotencyKey reports whether key can be an idempotency key: 1 to
// 255 printable ASCII characters.
func ValidIdempotencyKey(key string) bool {
	if len(key) == 0 || len(key) > 255 {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

// requestDigest identifies what an idempotent start asked for: its
// arguments and pre-run answers, each re-encoded so that key order and
// spacing do not count.
func requestDigest(req NewRun) (string, error) {
	canon := func(raw json.RawMessage) (json.RawMessage, error) {
		if len(raw) == 0 {
			return json.RawMessage("{}"), nil
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		return json.Marshal(v)
	}
	args, err := canon(req.Arguments)
	if err != nil {
		return "", fmt.Errorf("arguments: %w", err)
	}
	inputs := make(map[string]json.RawMessage, len(req.PreRunInputs))
	for k, v := range req.PreRunInputs {
		if inputs[k], err = canon(v); err != nil {
			return "", fmt.Errorf("pre-run input %q: %w", k, err)
		}
	}
	b, err := json.Marshal(struct {
		Arguments json.RawMessage            `json:"a"`
		Inputs    map[string]json.RawMessage `json:"i"`
	}{args, inputs})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// launchOnce starts the run of an idempotent req, or finds the one an
// earlier start with its key made. It returns the run's id, and the run
// as it is when it existed already (nil when this call started it).
func (s *Service) launchOnce(ctx, sctx context.Context, req NewRun, start launcher) (string, *signals.Snapshot, error) {
	digest, err := requestDigest(req)
	if err != nil {
		return "", nil, fmt.Errorf("start run of tool %q: %w", req.Tool.Name, err)
	}
	for gen := range maxGenerations {
		id, err := runid.Derive(req.Caller.Tenant, s.runIDSecret, req.Tool.Name, req.IdempotencyKey, strconv.Itoa(gen))
		if err != nil {
			return "", nil, fmt.Errorf("start run of tool %q: %w", req.Tool.Name, err)
		}
		err = start(id, func(o *client.StartWorkflowOptions) { o.Memo[signals.MemoRequestDigest] = digest })
		var dup *serviceerror.WorkflowExecutionAlreadyStarted
		if !errors.As(err, &dup) {
			return id, nil, err
		}
		snap, abandoned, err := s.startedBefore(sctx, req, id, digest)
		if err != nil || !abandoned {
			return id, snap, err
		}
	}
	return "", nil, fmt.Errorf("start run of tool %q: idempotency key %q: %d runs of it were cancelled before any caller held them",
		req.Tool.Name, req.IdempotencyKey, maxGenerations)
}

// startedBefore reads the run id an earlier start with req's key made:
// it is answered unless its arguments differ (ErrKeyReused) or it was
// abandoned (cancelled before any caller held it).
func (s *Service) startedBefore(ctx context.Context, req NewRun, id, digest string) (*signals.Snapshot, bool, error) {
	desc, err := s.client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return nil, false, fmt.Errorf("start run of tool %q: read the run of idempotency key %q: %w", req.Tool.Name, req.IdempotencyKey, err)
	}
	var was string
	if p, ok := desc.GetWorkflowExecutionInfo().GetMemo().GetFields()[signals.MemoRequestDigest]; ok {
		_ = s.dc.FromPayload(p, &was)
	}
	if was != digest {
		return nil, false, fmt.Errorf("tool %q: idempotency key %q: %w", req.Tool.Name, req.IdempotencyKey, ErrKeyReused)
	}
	snap, err := s.Get(ctx, req.Caller, id)
	if err != nil {
		return nil, false, fmt.Errorf("start run of tool %q: read the run of idempotency key %q: %w", req.Tool.Name, req.IdempotencyKey, err)
	}
	abandoned := snap.Status == signals.StatusCancelled &&
		(snap.CancelReason == signals.ReasonMCPRequestCancelled || snap.CancelReason == signals.ReasonStartFailed)
	return &snap, abandoned, nil
}
