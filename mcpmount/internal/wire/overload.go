package wire

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/openwop/temporal-mcp/admission"
	"github.com/openwop/temporal-mcp/mcpmount/internal/core"
)

// WriteOverloaded writes the answer to a call refused by admission control,
// with status and a Retry-After header.
func WriteOverloaded(w http.ResponseWriter, id json.RawMessage, rej *admission.Rejection, status int) {
	w.Header().Set("Retry-After", strconv.Itoa(rej.RetryAfterSeconds()))
	WriteRefusal(w, Refusal{Status: status, ID: id, Code: CodeInternalError, Message: rej.Error(), Data: core.OverloadData(rej)})
}
