// Package warm pins the project's dependencies in go.mod until the commands
// import them. Delete it once cmd/server and the tests import every module.
package warm

import (
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "go.temporal.io/sdk/client"
	_ "go.temporal.io/sdk/contrib/envconfig"
	_ "go.temporal.io/sdk/worker"
	_ "go.temporal.io/server/schema/sqlite"
	_ "go.temporal.io/server/temporal"
	_ "go.temporal.io/server/temporaltest"
	_ "go.uber.org/zap"
	_ "go.uber.org/zap/exp/zapslog"
)

import _ "github.com/temporalio/ui-server/v2/server"
