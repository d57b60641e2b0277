package core

import (
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/admission"
)

// admit takes the admission slots a tools/call needs. A refusal is the
// JSON-RPC overload error (errOverloaded), which the call's response also
// learns (Response.Overloaded), so that a transport can answer it as an
// overload (HTTP status 503 and a Retry-After header).
func (m *Core) admit(response Response, tenant string, need admission.Need) (*admission.Ticket, error) {
	t, err := m.admission.Admit(tenant, need)
	if err == nil {
		return t, nil
	}
	var rej *admission.Rejection
	if !errors.As(err, &rej) {
		m.log.Error("admission", zap.Error(err))
		return nil, Internal()
	}
	if response != nil {
		response.Overloaded(rej)
	}
	return nil, errOverloaded(rej)
}

// errOverloaded is the answer to a call refused by admission control:
// -32603 (the call was not run; no code of the MCP-reserved range means
// overload) with a message that says to retry and data
// {"retryAfter": seconds, "reason": ...} (OverloadData).
func errOverloaded(rej *admission.Rejection) *jsonrpc.Error {
	data, _ := json.Marshal(OverloadData(rej))
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: rej.Error(), Data: data}
}

// OverloadData is the data of errOverloaded.
func OverloadData(rej *admission.Rejection) map[string]any {
	return map[string]any{"retryAfter": rej.RetryAfterSeconds(), "reason": rej.Reason}
}
