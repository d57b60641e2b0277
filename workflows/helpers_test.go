package workflows_test

import (
	"strings"

	"github.com/openwop/temporal-mcp/internal/testing/testsupport"
	"github.com/openwop/temporal-mcp/signals"
)

// Helpers shared by the harness tests (SDK test environment, harness_test.go)
// and the integration tests (embedded Temporal server, integration_test.go).

const tenant = "acme"

var (
	alice = signals.Subject{Issuer: "test", SubjectID: "alice", Tenant: tenant}
	bob   = signals.Subject{Issuer: "test", SubjectID: "bob", Tenant: tenant}
)

// noInput is the input of the test tools that take no arguments.
type noInput struct{}

// types lists the event types of a log; checkLog reports every envelope
// rule the event log of a run breaks (package testsupport).
var (
	types    = testsupport.EventTypes
	checkLog = testsupport.CheckEventLog
)

// count returns the number of events of type typ.
func count(evs []signals.Event, typ string) int {
	n := 0
	for _, e := range evs {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func equal(a, b []string) bool {
	return strings.Join(a, ",") == strings.Join(b, ",")
}
