package runs

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

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

// List answers listRuns from Temporal visibility: the caller's tenant's
// runs, filtered by tool and status, newest first in visibility's order:
// open runs first (latest started first), then closed runs (latest closed
// first). SQL visibility cannot order by anything else. Each entry is a summary
// snapshot built from visibility data (no query per run).
func (s *Service) List(ctx context.Context, caller signals.Subject, req ListRequest) (ListPage, error) {
	if !runid.ValidTenant(caller.Tenant) {
		return ListPage{}, fmt.Errorf("list runs: invalid tenant %q", caller.Tenant)
	}
	limit := req.Limit
	switch {
	case limit == 0:
		limit = DefaultPageSize
	case limit < 0 || limit > MaxPageSize:
		return ListPage{}, fmt.Errorf("list runs: limit %d is outside 1..%d", limit, MaxPageSize)
	}
	var token []byte
	if req.Cursor != "" {
		var err error
		if token, err = s.openCursor(caller.Tenant, req, req.Cursor); err != nil {
			return ListPage{}, fmt.Errorf("list runs: %w", err)
		}
	}
	q := []string{fmt.Sprintf("%s = '%s'", signals.SearchAttrTenant, caller.Tenant)}
	if req.Tool != "" {
		if strings.ContainsAny(req.Tool, `'"\`) {
			return ListPage{}, fmt.Errorf("list runs: invalid workflowId %q", req.Tool)
		}
		q = append(q, fmt.Sprintf("%s = '%s'", signals.SearchAttrTool, req.Tool))
	}
	if req.Status != "" {
		if !req.Status.Valid() {
			return ListPage{}, fmt.Errorf("list runs: unknown status %q", req.Status)
		}
		q = append(q, fmt.Sprintf("%s = '%s'", signals.SearchAttrStatus, req.Status))
	}
	resp, err := s.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace:     s.opts.Namespace,
		PageSize:      int32(limit),
		NextPageToken: token,
		Query:         strings.Join(q, " AND "),
	})
	if err != nil {
		if serr := s.searchAttributesErr(ctx, err); serr != nil {
			return ListPage{}, fmt.Errorf("list runs: %w", serr)
		}
		var inv *serviceerror.InvalidArgument
		if len(token) > 0 && errors.As(err, &inv) {
			return ListPage{}, fmt.Errorf("list runs: %w: %v", ErrBadCursor, err)
		}
		return ListPage{}, fmt.Errorf("list runs: %w", err)
	}
	page := ListPage{Runs: make([]signals.Snapshot, 0, len(resp.GetExecutions()))}
	for _, info := range resp.GetExecutions() {
		page.Runs = append(page.Runs, s.rd.fromInfo(info))
	}
	if len(resp.GetNextPageToken()) > 0 {
		page.NextCursor = s.sealCursor(caller.Tenant, req, resp.GetNextPageToken())
	}
	return page, nil
}

// A List cursor is sealed: base64url(tag || token), where token is
// Temporal's visibility page token and tag the first cursorTagLen bytes of
// HMAC-SHA256(key, tenant, filters, token). Only a cursor this service
// issued for the same tenant and filters opens, so a malformed or forged
// one is refused with ErrBadCursor before Temporal is asked (Temporal
// answers a bad page token slowly, after retries, and logs errors).
const (
	cursorTagLen = 16
	// maxCursorLen bounds a cursor's text; Temporal's page tokens are far
	// shorter.
	maxCursorLen = 8 << 10
)

// processCursorKey is the cursor key of services given no
// Options.CursorKey: random, once per process.
var processCursorKey = sync.OnceValue(func() []byte {
	k := make([]byte, 32)
	rand.Read(k) // crypto/rand.Read never fails
	return k
})

func (s *Service) cursorKey() []byte {
	if len(s.opts.CursorKey) > 0 {
		return s.opts.CursorKey
	}
	return processCursorKey()
}

// cursorTag authenticates token for the tenant and the filters of req.
func (s *Service) cursorTag(tenant string, req ListRequest, token []byte) []byte {
	mac := hmac.New(sha256.New, s.cursorKey())
	for _, part := range []string{"openwop list cursor v1", tenant, req.Tool, string(req.Status)} {
		fmt.Fprintf(mac, "%d:%s", len(part), part)
	}
	mac.Write(token)
	return mac.Sum(nil)[:cursorTagLen]
}

// sealCursor turns Temporal's page token into the cursor handed out.
func (s *Service) sealCursor(tenant string, req ListRequest, token []byte) string {
	return base64.RawURLEncoding.EncodeToString(append(s.cursorTag(tenant, req, token), token...))
}

// openCursor returns the page token of a cursor sealCursor issued for the
// same tenant and filters, or an error wrapping ErrBadCursor that says
// what is wrong with it.
func (s *Service) openCursor(tenant string, req ListRequest, cursor string) ([]byte, error) {
	if len(cursor) > maxCursorLen {
		return nil, fmt.Errorf("%w: the cursor is %d characters long, more than any this server issues", ErrBadCursor, len(cursor))
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return nil, fmt.Errorf("%w: the cursor is not unpadded base64url: %v", ErrBadCursor, err)
	}
	if len(raw) <= cursorTagLen {
		return nil, fmt.Errorf("%w: the cursor is too short to be one this server issued", ErrBadCursor)
	}
	tag, token := raw[:cursorTagLen], raw[cursorTagLen:]
	if !hmac.Equal(tag, s.cursorTag(tenant, req, token)) {
		return nil, fmt.Errorf("%w: the cursor was not issued by this server for this tenant and these filters", ErrBadCursor)
	}
	return token, nil
}
