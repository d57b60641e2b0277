package mcpmount

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
)

// overloadNote carries a refusal by admission control from the tools/call
// handler to the HTTP layer, which answers it with status 503 and
// Retry-After.
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

// writeOverloaded writes the answer to a call refused by admission control,
// with status and a Retry-After header.
func writeOverloaded(w http.ResponseWriter, id json.RawMessage, rej *admission.Rejection, status int) {
	w.Header().Set("Retry-After", strconv.Itoa(rej.RetryAfterSeconds()))
	writeRPCError(w, rpcError{status: status, id: id, code: codeInternalError, message: rej.Error(), data: core.OverloadData(rej)})
}
