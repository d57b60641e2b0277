package clientmatrix

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// goSDKClient drives the server with the go-sdk client at protocol
// version: publish_report approved through its elicitation handler (in
// 2026-07-28 an InputRequiredResult the client fulfils and retries, in the
// session era an elicitation/create request on the call's stream), a long
// delay, and invalid arguments read as an isError result.
func goSDKClient(t *testing.T, url, version string, delayMs int) {
	// The subtests run in parallel, after this function returns.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	var asked string
	c := mcp.NewClient(&mcp.Implementation{Name: "clientmatrix-go-sdk", Version: "0"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = req.Params.Message
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"action": "accept"}}, nil
		},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	text := func(r *mcp.CallToolResult) string {
		var b strings.Builder
		for _, c := range r.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}
	call := func(t *testing.T, name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("tools/call %s: %v", name, err)
		}
		return r
	}
	t.Run("delay", func(t *testing.T) {
		t.Parallel()
		r := call(t, "delay", map[string]any{"delayMs": delayMs})
		if want := fmt.Sprintf(`{"sleptMs":%d}`, delayMs); r.IsError || text(r) != want {
			t.Fatalf("delay: isError %v text %q, want %q", r.IsError, text(r), want)
		}
	})
	t.Run("approve", func(t *testing.T) {
		t.Parallel()
		r := call(t, "publish_report", map[string]any{"title": "Matrix", "topic": "go-sdk " + version})
		if r.IsError || !strings.Contains(text(r), "published at") || !strings.Contains(asked, "Publish the report") {
			t.Fatalf("publish_report: isError %v text %q (asked %q), want it published", r.IsError, text(r), asked)
		}
	})
	t.Run("badargs", func(t *testing.T) {
		t.Parallel()
		r := call(t, "delay", map[string]any{"delayMs": "soon"})
		if !r.IsError || !strings.Contains(text(r), "delayMs") {
			t.Fatalf("delay with delayMs \"soon\": isError %v text %q, want a tool-input error naming delayMs", r.IsError, text(r))
		}
	})
}
