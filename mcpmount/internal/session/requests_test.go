package session

import (
	"context"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/mcpmount/internal/ownership"
	"github.com/openwop/temporal-mcp/signals"
)

// sdkRequest is a request as the go-sdk hands it to a handler, with
// headers h.
func sdkRequest(h http.Header) mcp.Request {
	return &mcp.CallToolRequest{Extra: &mcp.RequestExtra{Header: h}}
}

// TestRequestsSeam: a handler finds a request's record by the key its
// adapter put in claimHeader, until the claim settles as delivered; an
// undelivered one stays findable for a late owner, whose run the claim
// then cancels. A key no adapter gave finds nothing.
func TestRequestsSeam(t *testing.T) {
	cancelled := make(chan string, 1)
	tr := ownership.NewTracker(func(_ context.Context, _ signals.Subject, runID string) error {
		cancelled <- runID
		return nil
	}, nil)
	var s requests
	for _, delivered := range []bool{true, false} {
		side := &requestSide{claim: tr.Open(context.Background()), taskField: true}
		h := http.Header{claimHeader: {s.add(side)}}
		if got := s.of(sdkRequest(h)); got != side {
			t.Fatalf("of = %p, want the record added %p", got, side)
		}
		side.claim.Settle(delivered)
		found := s.of(sdkRequest(h))
		if delivered {
			if found != nil {
				t.Fatal("the record of a delivered request is still found")
			}
			continue
		}
		if found != side {
			t.Fatal("the record of an undelivered request is not found by a late owner")
		}
		found.requestClaim().Own(signals.Subject{Tenant: "t"}, "t/late")
		if id := <-cancelled; id != "t/late" {
			t.Fatalf("cancelled %q, want t/late", id)
		}
	}
	for _, h := range []http.Header{{}, {claimHeader: {"forged"}}} {
		if side := s.of(sdkRequest(h)); side != nil || side.requestClaim() != nil {
			t.Fatalf("headers %v found a record", h)
		}
	}
	if s.of(&mcp.CallToolRequest{}) != nil {
		t.Fatal("a request without extra found a record")
	}
}
