package mcpmount

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/admission"
)

// admit takes the admission slots a tools/call needs. A refusal is the
// JSON-RPC overload error (see errOverloaded); over HTTP the request's
// overloadNote also learns it, so that the response gets status 503 and a
// Retry-After header.
func (m *Mount) admit(exchange *httpCall, tenant string, need admission.Need) (*admission.Ticket, error) {
	t, err := m.admission.Admit(tenant, need)
	if err == nil {
		return t, nil
	}
	var rej *admission.Rejection
	if !errors.As(err, &rej) {
		m.log.Error("admission", zap.Error(err))
		return nil, errInternal()
	}
	if exchange != nil && exchange.overload != nil {
		exchange.overload.set(rej)
	}
	return nil, errOverloaded(rej)
}

// errOverloaded is the answer to a call refused by admission control:
// -32603 (the call was not run; no code of the MCP-reserved range means
// overload) with a message that says to retry and data
// {"retryAfter": seconds, "reason": ...}.
func errOverloaded(rej *admission.Rejection) *jsonrpc.Error {
	data, _ := json.Marshal(overloadData(rej))
	return &jsonrpc.Error{Code: codeInternalError, Message: rej.Error(), Data: data}
}

func overloadData(rej *admission.Rejection) map[string]any {
	return map[string]any{"retryAfter": rej.RetryAfterSeconds(), "reason": rej.Reason}
}

// overloadNote carries a refusal from the tools/call handler to the HTTP
// layer, which answers it with status 503 and Retry-After.
type overloadNote struct {
	mu  sync.Mutex
	rej *admission.Rejection
}

func (n *overloadNote) set(rej *admission.Rejection) {
	n.mu.Lock()
	n.rej = rej
	n.mu.Unlock()
}

func (n *overloadNote) get() *admission.Rejection {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rej
}

// retryAfter is the Retry-After header value of a refusal.
func retryAfter(rej *admission.Rejection) string { return strconv.Itoa(rej.RetryAfterSeconds()) }

// writeOverloaded writes the answer to a call refused by admission control,
// with status and a Retry-After header.
func writeOverloaded(w http.ResponseWriter, id json.RawMessage, rej *admission.Rejection, status int) {
	w.Header().Set("Retry-After", retryAfter(rej))
	writeRPCError(w, rpcError{status: status, id: id, code: codeInternalError, message: rej.Error(), data: overloadData(rej)})
}
