package audit_test

import (
	"log"

	"github.com/openwop/temporal-mcp/audit"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/mcpmount"
	"github.com/openwop/temporal-mcp/restapi"
	"github.com/openwop/temporal-mcp/runs"
)

// A server audits its run service and its authentication once, and
// hands the audited ones to both edges (as internal/app does).
func Example() {
	trail, err := audit.Open(audit.SinkStderr) // or a file path
	if err != nil {
		log.Fatal(err)
	}
	defer trail.Close()
	keys, err := auth.New([]auth.Key{{Key: "key-acme", Tenant: "acme", Subject: "urn:user:alice"}})
	if err != nil {
		log.Fatal(err)
	}
	var svc runs.Backend // runs.New(temporalClient, logger, runs.Options{...})
	backend := trail.Backend(svc)
	authenticate := trail.Authenticator(keys.Authenticate)
	_ = mcpmount.Options{Runs: backend, Authenticate: authenticate}
	_ = restapi.Options{Runs: backend, Authenticate: authenticate}
}
