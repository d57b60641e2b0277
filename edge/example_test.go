package edge_test

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
	"github.com/openwop/temporal-mcp/edge"
	"github.com/openwop/temporal-mcp/mcpmount"
	"github.com/openwop/temporal-mcp/restapi"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals"
)

// Both edges on one Kit: the MCP mount at /mcp and the REST API on every
// other path share one run service, one catalog, one authenticator, one
// request gate and one MRTR round cap, which the discovery document
// advertises and the mount enforces. The client is lazy: it connects to
// Temporal on its first call, which no request here makes.
func ExampleNew() {
	c, err := client.NewLazyClient(client.Options{HostPort: "localhost:7233"})
	if err != nil {
		log.Fatalln(err)
	}
	defer c.Close()
	tools, err := catalog.NewStatic(signals.ToolSpec{
		Name:        "refund",
		Description: "Refund an order after a human approves it.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"orderId":{"type":"string"}}}`),
		TaskSupport: signals.TaskOptional,
	})
	if err != nil {
		log.Fatalln(err)
	}
	kit, err := edge.New(edge.Options{
		Runs:          runs.New(c, zap.NewNop(), runs.Options{TaskQueue: "refunds"}),
		Catalog:       tools,
		Authenticate:  auth.AnonymousAuthenticator, // (*auth.Keys).Authenticate in production
		MRTRMaxRounds: 4,
	})
	if err != nil {
		log.Fatalln(err)
	}
	mount, err := mcpmount.New(mcpmount.Options{Kit: kit})
	if err != nil {
		log.Fatalln(err)
	}
	api, err := restapi.New(restapi.Options{Kit: kit})
	if err != nil {
		log.Fatalln(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mount)
	mux.Handle("/", api)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	req, err := http.NewRequest(http.MethodGet, srv.URL+"/.well-known/openwop", nil)
	if err != nil {
		log.Fatalln(err)
	}
	req.Header.Set(restapi.VersionHeader, "2.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatalln(err)
	}
	defer resp.Body.Close()
	var doc struct {
		MCP struct {
			MRTR struct {
				MaxRounds int `json:"maxRounds"`
			} `json:"mrtr"`
		} `json:"mcp"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		log.Fatalln(err)
	}
	fmt.Println(resp.StatusCode, doc.MCP.MRTR.MaxRounds)
	// Output:
	// 200 4
}
