package tools_test

import (
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/examples/tools"
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

const testRunID = "acme/AbCdEfGhIjKlMnOpQrStUvWx"

var alice = signals.Subject{Issuer: "test", SubjectID: "alice", Tenant: "acme"}

// newEnv returns a test kit Env of the example tools: alice calls, the
// run's id is testRunID.
func newEnv(t *testing.T) *workflowstest.Env {
	t.Helper()
	acts := tools.NewActivities(nil, tools.ActivityOptions{HeartbeatInterval: 50 * time.Millisecond, SectionDelay: time.Millisecond,
		BookingDelay: 20 * time.Millisecond})
	reg, err := tools.DefaultRegistry(acts)
	if err != nil {
		t.Fatal(err)
	}
	env := workflowstest.New(reg)
	env.RunID, env.Caller = testRunID, alice
	return env
}
