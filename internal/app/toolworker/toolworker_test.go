package toolworker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/internal/app/config"
)

type envMap map[string]string

func (e envMap) Environ() []string {
	var out []string
	for k, v := range e {
		out = append(out, k+"="+v)
	}
	return out
}

func (e envMap) LookupEnv(k string) (string, bool) { v, ok := e[k]; return v, ok }

// upstreamsFile writes a file of one upstream at url, serving tools
// (nil: all), and returns its path.
func upstreamsFile(t *testing.T, url string, tools ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "upstreams.json")
	entry, _ := json.Marshal(map[string]any{"name": "fake", "url": url, "tools": tools})
	if err := os.WriteFile(path, fmt.Appendf(nil, `{"upstreams":[%s]}`, entry), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The registry's tool set holds the upstream's tools when the file is set
// and the process runs a worker; it connects to nothing otherwise. An
// upstream that cannot be reached serves nothing (yet); one that does not
// serve a tool of the file stops the start.
func TestRegistryServesUpstreams(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ping", Description: "Answers pong."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer srv.Close()
	tests := []struct {
		name   string
		env    envMap
		listed bool
		err    string
	}{
		{"worker", envMap{config.EnvUpstreamsFile: upstreamsFile(t, srv.URL)}, true, ""},
		{"no in-process worker", envMap{config.EnvUpstreamsFile: upstreamsFile(t, srv.URL), config.EnvWorker: "off"}, false, ""},
		{"no file", envMap{}, false, ""},
		{"unreachable", envMap{config.EnvUpstreamsFile: upstreamsFile(t, "http://127.0.0.1:1/mcp")}, false, ""},
		{"tool not served", envMap{config.EnvUpstreamsFile: upstreamsFile(t, srv.URL, "nope")}, false, config.EnvUpstreamsFile},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.env[config.EnvDataDir] = t.TempDir()
			cfg, err := config.LoadConfig(tc.env)
			if err != nil {
				t.Fatal(err)
			}
			reg, closeUpstreams, err := Registry(context.Background(), cfg, zap.NewNop())
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Registry: error %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = closeUpstreams() }()
			var names []string
			if set := reg.ToolSet(); set != nil {
				for _, tool := range set.Tools() {
					names = append(names, tool.Spec().Name)
				}
			}
			if ok := slices.Contains(names, "fake_ping"); ok != tc.listed {
				t.Fatalf("the registry's tool set holds %v, want fake_ping: %v", names, tc.listed)
			}
			if _, ok := reg.Lookup("publish_report"); !ok {
				t.Fatal("registry lacks the example tools")
			}
		})
	}
}
