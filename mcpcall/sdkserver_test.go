package mcpcall_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/mcpcall"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

// stdioEnv makes the test binary a go-sdk MCP server on stdin/stdout
// (TestMain).
const stdioEnv = "MCPCALL_TEST_SERVE_STDIO"

// sdkServer is a go-sdk server without Tasks: "echo" answers its text.
func sdkServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "sdk", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			N int `json:"n"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("echo %d", in.N)}}}, nil, nil
		})
	return s
}

func TestMain(m *testing.M) {
	if os.Getenv(stdioEnv) == "1" {
		if err := sdkServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "sdk server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A server without Tasks, over stdio or session-era HTTP, is called in
// one blocking activity through the go-sdk client, and listed.
func TestCallToolWithoutTasks(t *testing.T) {
	sessions := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdkServer() }, nil))
	t.Cleanup(sessions.Close)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for name, server := range map[string]mcpcall.Server{
		"stdio":        {Command: exe, Env: []string{stdioEnv + "=1"}},
		"session HTTP": {URL: sessions.URL},
	} {
		t.Run(name, func(t *testing.T) {
			acts, err := mcpcall.NewActivities(map[string]mcpcall.Server{"fake": server})
			if err != nil {
				t.Fatal(err)
			}
			reg, err := workflows.NewRegistry([]workflows.Tool{
				workflows.NewTool("agent", "Calls.", agent), workflows.NewTool("lister", "Lists.", lister)}, acts)
			if err != nil {
				t.Fatal(err)
			}
			res, err := workflowstest.New(reg).Call("agent", agentIn{Tool: "echo"})
			if err != nil {
				t.Fatal(err)
			}
			var out agentOut
			if err := res.Output(&out); err != nil || res.Status() != signals.StatusCompleted || out.Text != "echo 1" {
				t.Fatalf("agent %s saw %+v (%v), want echo 1", res.Status(), out, err)
			}
			res, err = workflowstest.New(reg).Call("lister", struct{}{})
			if err != nil {
				t.Fatal(err)
			}
			var tools struct{ Result []string }
			if err := res.Output(&tools); err != nil || len(tools.Result) != 1 || tools.Result[0] != "echo" {
				t.Fatalf("tools %v (%v), want echo", tools.Result, err)
			}
		})
	}
}
