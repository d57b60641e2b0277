package mcpmount_test

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/mcpmount"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// A mount embedded in a program of one's own: a run service on a Temporal
// client, a catalog of the tools to serve, and the mount as the handler of
// /mcp. The catalog here is a fixed list, so tools/list is answered without
// Temporal; a server of tools that workers publish uses catalog.NewLive on
// the same client instead. The client is lazy: it connects to Temporal on
// its first call, which a tools/call would make.
func ExampleNew() {
	c, err := client.NewLazyClient(client.Options{HostPort: "localhost:7233"})
	if err != nil {
		log.Fatalln(err)
	}
	defer c.Close()
	tools, err := catalog.NewStatic(signals.ToolSpec{
		Name:        "refund",
		Description: "Refund an order after a human approves it.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"orderId":{"type":"string"}},"required":["orderId"]}`),
		TaskSupport: signals.TaskOptional,
		CanSuspend:  true,
	})
	if err != nil {
		log.Fatalln(err)
	}
	mount, err := mcpmount.New(mcpmount.Options{
		Runs:    runs.New(c, zap.NewNop(), runs.Options{TaskQueue: "refunds"}),
		Catalog: tools,
		// Authenticate: (*auth.Keys).Authenticate in production; nil
		// serves every caller as the anonymous development subject.
	})
	if err != nil {
		log.Fatalln(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mount)
	srv := httptest.NewServer(mux) // http.ListenAndServe(addr, mux) in a real server
	defer srv.Close()

	// A 2026-07-28 client's tools/list; it declares the Tasks extension.
	// Every client is offered openwop_run_list, which lists its runs; one
	// that does not declare the extension is offered the companion tools
	// too: openwop_run_status, _answer and _cancel.
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"` + mcpmount.ProtocolVersion + `",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"example","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
	if err != nil {
		log.Fatalln(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcpmount.ProtocolVersion)
	req.Header.Set("Mcp-Method", "tools/list")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatalln(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil {
		log.Fatalln(err)
	}
	for _, t := range answer.Result.Tools {
		fmt.Println(resp.StatusCode, t.Name)
	}
	// Output:
	// 200 refund
	// 200 openwop_run_list
}
