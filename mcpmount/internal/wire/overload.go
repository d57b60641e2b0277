package wire

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
)

// OverloadNote carries a refusal by admission control from the tools/call
// handler to the HTTP layer, which answers it with status 503 and
// Retry-After.
type OverloadNote struct {
	mu  sync.Mutex
	rej *admission.Rejection
}

// Set records the refusal.
func (n *OverloadNote) Set(rej *admission.Rejection) {
	n.mu.Lock()
	n.rej = rej
	n.mu.Unlock()
}

// Get returns the refusal recorded, nil when none (or n is nil).
func (n *OverloadNote) Get() *admission.Rejection {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rej
}

// WriteOverloaded writes the answer to a call refused by admission control,
// with status and a Retry-After header.
func WriteOverloaded(w http.ResponseWriter, id json.RawMessage, rej *admission.Rejection, status int) {
	w.Header().Set("Retry-After", strconv.Itoa(rej.RetryAfterSeconds()))
	WriteRefusal(w, Refusal{Status: status, ID: id, Code: CodeInternalError, Message: rej.Error(), Data: core.OverloadData(rej)})
}
