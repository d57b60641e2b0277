package restapi_test

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/restapi"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// The REST runs API embedded in a program of one's own, with API keys: a
// run service on a Temporal client, a catalog of the tools to serve, and
// the handler on every path the MCP mount does not take. The catalog here
// is a fixed list, so GET /workflows is answered without Temporal; a
// server of tools that workers publish uses catalog.NewLive on the same
// client instead. The client is lazy: it connects to Temporal on its first
// call, which a POST /runs would make.
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
	keys, err := auth.New([]auth.Key{{Key: "example-key", Tenant: "acme", Subject: "alice"}})
	if err != nil {
		log.Fatalln(err)
	}
	api, err := restapi.New(restapi.Options{
		Runs:         runs.New(c, zap.NewNop(), runs.Options{TaskQueue: "refunds"}),
		Authenticate: keys.Authenticate,
		Catalog:      tools,
	})
	if err != nil {
		log.Fatalln(err)
	}
	srv := httptest.NewServer(api) // http.ListenAndServe(addr, api) in a real server
	defer srv.Close()

	req, err := http.NewRequest(http.MethodGet, srv.URL+"/workflows", nil)
	if err != nil {
		log.Fatalln(err)
	}
	req.Header.Set("Authorization", "Bearer example-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatalln(err)
	}
	defer resp.Body.Close()
	var list struct {
		Workflows []struct {
			WorkflowID  string `json:"workflowId"`
			TaskSupport string `json:"taskSupport"`
		} `json:"workflows"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		log.Fatalln(err)
	}
	for _, w := range list.Workflows {
		fmt.Println(resp.StatusCode, w.WorkflowID, w.TaskSupport)
	}
	// Output:
	// 200 refund optional
}
