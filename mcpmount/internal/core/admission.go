package core

import (
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/admission"
)

// admit takes the admission slots a tools/call needs. A refusal is an
// *Overloaded.
func (m *Core) admit(tenant string, need admission.Need) (*admission.Ticket, error) {
	t, err := m.admission.Admit(tenant, need)
	if err == nil {
		return t, nil
	}
	var rej *admission.Rejection
	if !errors.As(err, &rej) {
		m.log.Error("admission", zap.Error(err))
		return nil, Internal()
	}
	data, _ := json.Marshal(OverloadData(rej))
	return nil, &Overloaded{Rejection: rej,
		rpc: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: rej.Error(), Data: data}}
}

// Overloaded is the core's error for a call that admission control
// refused: the call was not run. It wraps its JSON-RPC form, -32603 (no
// code of the MCP-reserved range means overload) with a message that says
// to retry and data {"retryAfter": seconds, "reason": ...} (OverloadData),
// which errors.As finds; a transport that can also answers it as an
// overload (HTTP status 503 and a Retry-After header).
type Overloaded struct {
	// Rejection is admission control's refusal.
	Rejection *admission.Rejection
	rpc       *jsonrpc.Error
}

func (e *Overloaded) Error() string { return e.Rejection.Error() }

// Unwrap returns the JSON-RPC form of the error.
func (e *Overloaded) Unwrap() error { return e.rpc }

// OverloadData is the data of the JSON-RPC form of an Overloaded.
func OverloadData(rej *admission.Rejection) map[string]any {
	return map[string]any{"retryAfter": rej.RetryAfterSeconds(), "reason": rej.Reason}
}
