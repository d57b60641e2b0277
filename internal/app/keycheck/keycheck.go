package keycheck

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/openwop/temporal-mcp/signals"
)

// WorkflowID is the well-known workflow whose memo holds the latest
// replica's Record. No worker runs it: it stays open, holding the memo,
// until the next replica with another key replaces it.
const WorkflowID = "openwop-mrtr-key"

const (
	workflowType = "openwop.MRTRKeyFingerprint"
	taskQueue    = "openwop-mrtr-key"
	memoRecord   = "openwopMRTRKey"
	// fingerprintText is what the fingerprint is the HMAC of.
	fingerprintText = "openwop MRTR key fingerprint"
)

// Record is what a replica publishes of its key.
type Record struct {
	// Fingerprint is Fingerprint of the replica's key.
	Fingerprint string `json:"fingerprint"`
	// Identity names the replica (as the caller of Check gave it).
	Identity string `json:"identity"`
	// PublishedAt is when the replica published it.
	PublishedAt time.Time `json:"publishedAt"`
}

// MismatchError is Check's error when the replica before this one
// published another fingerprint.
type MismatchError struct {
	// Mine is this replica's record, Theirs the one it replaced.
	Mine, Theirs Record
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("this replica's MRTR key (fingerprint %s) is not the key of replica %s, which started on this Temporal namespace at %s "+
		"(fingerprint %s): requestStates, list cursors and idempotency keys issued by one are refused or start the work again on the other; "+
		"set OPENWOP_MRTR_KEY to the same value on every replica (ignore this once after changing the key on purpose)",
		e.Mine.Fingerprint, e.Theirs.Identity, e.Theirs.PublishedAt.Format(time.RFC3339), e.Theirs.Fingerprint)
}

// Fingerprint is the fingerprint of key that replicas compare: the first
// 8 bytes, hex-encoded, of HMAC-SHA256 under key of a fixed string. It
// tells keys apart without revealing them.
func Fingerprint(key []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(fingerprintText))
	return hex.EncodeToString(mac.Sum(nil)[:8])
}

// Check compares the fingerprint of key with the one the previous replica
// published in c's namespace and publishes this replica's (identity names
// it) when they differ or none was there. It returns a *MismatchError when
// they differ, after publishing; other errors are Temporal's, wrapped.
func Check(ctx context.Context, c client.Client, key []byte, identity string) error {
	if len(key) == 0 {
		return errors.New("key check: no key")
	}
	mine := Record{Fingerprint: Fingerprint(key), Identity: identity, PublishedAt: time.Now().UTC()}
	theirs, found, err := latest(ctx, c)
	if err != nil {
		return err
	}
	if found && theirs.Fingerprint == mine.Fingerprint {
		return nil
	}
	if err := publish(ctx, c, mine); err != nil {
		return err
	}
	if found {
		return &MismatchError{Mine: mine, Theirs: theirs}
	}
	return nil
}

// latest reads the record in WorkflowID's memo, if any.
func latest(ctx context.Context, c client.Client) (Record, bool, error) {
	desc, err := c.DescribeWorkflowExecution(ctx, WorkflowID, "")
	var nf *serviceerror.NotFound
	switch {
	case errors.As(err, &nf):
		return Record{}, false, nil
	case err != nil:
		return Record{}, false, fmt.Errorf("key check: read the published key fingerprint: %w", err)
	}
	field, ok := desc.GetWorkflowExecutionInfo().GetMemo().GetFields()[memoRecord]
	var r Record
	if !ok || converter.GetDefaultDataConverter().FromPayload(field, &r) != nil || r.Fingerprint == "" {
		return Record{}, false, nil
	}
	return r, true, nil
}

// publish replaces WorkflowID with one holding r.
func publish(ctx context.Context, c client.Client, r Record) error {
	opts := client.StartWorkflowOptions{
		ID:                       WorkflowID,
		TaskQueue:                taskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		Memo:                     map[string]any{memoRecord: r},
		StaticSummary:            fmt.Sprintf("MRTR key fingerprint %s of server %s", r.Fingerprint, r.Identity),
		// Out of the operator's list of runs, as tool publications are.
		TypedSearchAttributes: temporal.NewSearchAttributes(saDivision.ValueSet(signals.PublicationDivision)),
	}
	_, err := c.ExecuteWorkflow(ctx, opts, workflowType)
	var invalid *serviceerror.InvalidArgument
	if errors.As(err, &invalid) && strings.Contains(invalid.Error(), signals.NamespaceDivisionAttribute) {
		opts.TypedSearchAttributes = temporal.SearchAttributes{}
		_, err = c.ExecuteWorkflow(ctx, opts, workflowType)
	}
	if err != nil {
		return fmt.Errorf("key check: publish the key fingerprint: %w", err)
	}
	return nil
}

// saDivision is Temporal's namespace division search attribute.
var saDivision = temporal.NewSearchAttributeKeyKeyword(signals.NamespaceDivisionAttribute)
