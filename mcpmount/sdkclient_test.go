package mcpmount

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoSDKClient points the go-sdk client at the mount, both as a
// 2026-07-28 client (server/discover, per-request _meta) and as a
// session-dialect one (initialize 2025-11-25).
func TestGoSDKClient(t *testing.T) {
	s := newTestServer(t, nil)
	for _, version := range []string{ProtocolVersion, "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "sdk-test", Version: "0"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(tools.Tools) != 8 || tools.Tools[0].Name != "ask_first" || tools.Tools[4].Name != "openwop_run_status" {
				t.Fatalf("tools = %+v", tools.Tools)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "SDK"}})
			if err != nil {
				t.Fatal(err)
			}
			if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "Hello, SDK!" || res.IsError {
				t.Fatalf("result = %+v", res)
			}
			// Invalid arguments are a tool result with isError (SEP-1303).
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"seconds": "x"}})
			if err != nil {
				t.Fatalf("invalid arguments: %v, want a tool result with isError", err)
			}
			if tc, ok := res.Content[0].(*mcp.TextContent); !ok || !res.IsError || !strings.Contains(tc.Text, "seconds") {
				t.Fatalf("invalid arguments: result %+v, want isError naming seconds", res)
			}
		})
	}
}
