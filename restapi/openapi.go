package restapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
)

// openAPIDocument is the OpenAPI 3.1 description of the discovery document
// and the REST runs API. It is the one source: GET /openapi.json serves it,
// docs/openapi.json is a copy a test keeps identical, and the package's
// tests validate every response they receive against it.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPI returns the OpenAPI 3.1 description of the handler New returns,
// as served at GET /openapi.json but with the document's example server.
func OpenAPI() []byte { return slices.Clone(openAPIDocument) }

// openAPI serves GET /openapi.json: the document with servers naming this
// server's external base URL. Like the discovery document it needs no
// credential.
func (h *handler) openAPI(w http.ResponseWriter, r *http.Request) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		writeError(w, http.StatusInternalServerError, "internal_error", fmt.Sprintf("the OpenAPI document is invalid: %v", err))
		return
	}
	servers, _ := json.Marshal([]map[string]string{{"url": h.externalBase(r)}})
	doc["servers"] = servers
	writeJSON(w, http.StatusOK, doc)
}
