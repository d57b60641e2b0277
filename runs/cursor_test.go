package runs_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// listClient is a Temporal client whose ListWorkflow records the page
// tokens it is asked for and answers an empty page with nextToken. Any other
// method panics (the embedded interface is nil): List must call nothing
// else.
type listClient struct {
	client.Client
	nextToken []byte

	mu     sync.Mutex
	tokens [][]byte
}

func (c *listClient) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tokens = append(c.tokens, req.GetNextPageToken())
	if len(req.GetNextPageToken()) > 0 && !bytes.Equal(req.GetNextPageToken(), c.nextToken) {
		return nil, serviceerror.NewInvalidArgument("bad page token")
	}
	return &workflowservice.ListWorkflowExecutionsResponse{NextPageToken: c.nextToken}, nil
}

func (c *listClient) calls() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.tokens...)
}

func cursorCaller(tenant string) signals.Subject {
	return signals.Subject{Issuer: "test", Tenant: tenant, SubjectID: "urn:test:" + tenant}
}

// TestListCursorRoundTrip: the cursor List hands out carries Temporal's
// page token back to Temporal unchanged, and only for the same tenant and
// filters.
func TestListCursorRoundTrip(t *testing.T) {
	token := []byte(`{"CloseTime":"2026-01-01T00:00:00Z","RunID":"r1"}`)
	c := &listClient{nextToken: token}
	s := runs.New(c, nil, runs.Options{})
	ctx := context.Background()
	req := runs.ListRequest{Tool: "delay", Status: signals.StatusCompleted, Limit: 2}

	page, err := s.List(ctx, cursorCaller("acme"), req)
	if err != nil {
		t.Fatalf("first page: %v", err)
	}
	if page.NextCursor == "" || page.NextCursor == base64.RawURLEncoding.EncodeToString(token) {
		t.Fatalf("NextCursor = %q, want a sealed cursor", page.NextCursor)
	}
	req.Cursor = page.NextCursor
	if _, err := s.List(ctx, cursorCaller("acme"), req); err != nil {
		t.Fatalf("next page: %v", err)
	}
	calls := c.calls()
	if len(calls) != 2 || len(calls[0]) != 0 || !bytes.Equal(calls[1], token) {
		t.Fatalf("page tokens sent to Temporal = %q, want none then %q", calls, token)
	}

	// The same cursor for another tenant or other filters never reaches
	// Temporal.
	misuses := []struct {
		name   string
		tenant string
		mutate func(*runs.ListRequest)
	}{
		{"another tenant", "globex", func(*runs.ListRequest) {}},
		{"another workflowId", "acme", func(r *runs.ListRequest) { r.Tool = "greet" }},
		{"another status", "acme", func(r *runs.ListRequest) { r.Status = signals.StatusRunning }},
	}
	for _, m := range misuses {
		t.Run(m.name, func(t *testing.T) {
			r := req
			m.mutate(&r)
			if _, err := s.List(ctx, cursorCaller(m.tenant), r); !errors.Is(err, runs.ErrBadCursor) {
				t.Fatalf("List = %v, want ErrBadCursor", err)
			}
		})
	}
	if n := len(c.calls()); n != 2 {
		t.Fatalf("Temporal was asked %d times, want 2 (misused cursors refused before)", n)
	}
}

// TestListBadCursorNeverReachesTemporal: malformed, forged and oversized
// cursors are refused at once with ErrBadCursor and an error that says
// what is wrong, without a call to Temporal.
func TestListBadCursorNeverReachesTemporal(t *testing.T) {
	token := []byte("page-2")
	c := &listClient{nextToken: token}
	s := runs.New(c, nil, runs.Options{})
	other := runs.New(c, nil, runs.Options{CursorKey: []byte("another key of at least thirty-two bytes")})
	ctx := context.Background()
	foreign, err := other.List(ctx, cursorCaller("acme"), runs.ListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	before := len(c.calls())

	tests := []struct {
		name, cursor, want string
	}{
		{"garbage", "garbage", "issued"},
		{"not base64url", "!!not*base64", "base64url"},
		{"padded", "YWJjZA==", "base64url"},
		{"Temporal's raw token", base64.RawURLEncoding.EncodeToString(token), "issued"},
		{"too short", "YWJj", "too short"},
		{"another key", foreign.NextCursor, "issued"},
		{"tampered", tamper(foreign.NextCursor), "issued"},
		{"oversized", strings.Repeat("A", 9000), "characters long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := s.List(ctx, cursorCaller("acme"), runs.ListRequest{Cursor: tt.cursor})
			if !errors.Is(err, runs.ErrBadCursor) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("List = %v, want ErrBadCursor saying %q", err, tt.want)
			}
			if d := time.Since(start); d > 100*time.Millisecond {
				t.Fatalf("refusing the cursor took %v", d)
			}
		})
	}
	if n := len(c.calls()); n != before {
		t.Fatalf("Temporal was asked %d times for bad cursors, want 0", n-before)
	}
}

// tamper flips a bit of the cursor's last byte (the page token's).
func tamper(cursor string) string {
	raw, _ := base64.RawURLEncoding.DecodeString(cursor)
	raw[len(raw)-1] ^= 1
	return base64.RawURLEncoding.EncodeToString(raw)
}
