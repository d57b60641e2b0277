package restapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/openwop/temporal-mcp/internal/testing/openapicheck"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// openAPIChecker is the checker of the embedded document, built once per
// test binary.
var openAPIChecker = sync.OnceValues(func() (*openapicheck.Checker, error) {
	return openapicheck.New(OpenAPI())
})

// CheckedTransport wraps next (http.DefaultTransport when nil) so that
// every response is validated against the OpenAPI document: status,
// content type, headers and body. The external test package uses it too.
func CheckedTransport(t testing.TB, next http.RoundTripper) http.RoundTripper {
	t.Helper()
	c, err := openAPIChecker()
	if err != nil {
		t.Fatalf("the OpenAPI document: %v", err)
	}
	return c.Transport(t, next)
}

// TestOpenAPIDocument: the document is valid OpenAPI 3.1 (the checker
// validates it against the meta-schema), docs/openapi.json is the same
// file, and GET /openapi.json serves it, with no credential, naming this
// server in servers, behind the request gate.
func TestOpenAPIDocument(t *testing.T) {
	if _, err := openAPIChecker(); err != nil {
		t.Fatal(err)
	}
	docs, err := os.ReadFile("../docs/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(docs, OpenAPI()) {
		t.Fatal("docs/openapi.json differs from restapi/openapi.json: copy restapi/openapi.json over it")
	}

	srv := newTestServer(t)
	r := call(t, http.MethodGet, srv.URL+"/openapi.json", "", "")
	if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET /openapi.json = %d %s", r.status, r.header)
	}
	var served, file map[string]any
	_ = json.Unmarshal(r.raw, &served)
	_ = json.Unmarshal(OpenAPI(), &file)
	servers, _ := served["servers"].([]any)
	if len(servers) != 1 || servers[0].(map[string]any)["url"] != srv.URL {
		t.Errorf("servers = %v, want [{url: %s}]", served["servers"], srv.URL)
	}
	delete(served, "servers")
	delete(file, "servers")
	a, _ := json.Marshal(served)
	b, _ := json.Marshal(file)
	if !bytes.Equal(a, b) {
		t.Error("the served document differs from the embedded one beyond servers")
	}
	if r := call(t, http.MethodGet, srv.URL+"/openapi.json", "", "", "Origin", "https://evil.example"); r.status != http.StatusForbidden {
		t.Errorf("GET /openapi.json from a foreign origin = %d, want 403", r.status)
	}
}

// TestOpenAPICheckerCatchesDrift: the same responses that pass against the
// document fail against a deliberately wrong copy of it (a snapshot field
// renamed, an error code pattern the server's codes miss, a status the
// operation does not list), so the checks the REST tests make are real.
func TestOpenAPICheckerCatchesDrift(t *testing.T) {
	srv := newTestServer(t)
	id := mustID(t, "acme")
	srv.runs.Add(approvalSnapshot(id))
	get := func() (*http.Request, response) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/runs/"+runid.Project(id), nil)
		return req, call(t, http.MethodGet, srv.URL+"/runs/"+runid.Project(id), "key-acme", "")
	}
	missing := func() (*http.Request, response) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/runs/acme~2Fnope", nil)
		return req, call(t, http.MethodGet, srv.URL+"/runs/acme~2Fnope", "key-acme", "")
	}
	tests := []struct {
		name     string
		old, new string
		exchange func() (*http.Request, response)
	}{
		{"snapshot field renamed", `"workflowId",
          "status",
          "owner"`, `"workflowId",
          "statusRenamed",
          "owner"`, get},
		{"error code pattern", `"pattern": "^[a-z][a-z_]*$"`, `"pattern": "^[A-Z]+$"`, missing},
		{"status not listed", `"404": {
            "$ref": "#/components/responses/NotFound"
          }
        }
      }
    },
    "/runs/{runId}/cancel"`, `"410": {
            "$ref": "#/components/responses/NotFound"
          }
        }
      }
    },
    "/runs/{runId}/cancel"`, missing},
	}
	good, err := openAPIChecker()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := string(OpenAPI())
			if strings.Count(doc, tt.old) != 1 {
				t.Fatalf("the document has %d copies of %q", strings.Count(doc, tt.old), tt.old)
			}
			bad, err := openapicheck.New([]byte(strings.Replace(doc, tt.old, tt.new, 1)))
			if err != nil {
				t.Fatal(err)
			}
			req, r := tt.exchange()
			if err := good.CheckResponse(req, r.status, r.header, r.raw); err != nil {
				t.Fatalf("against the document: %v", err)
			}
			if err := bad.CheckResponse(req, r.status, r.header, r.raw); err == nil {
				t.Fatalf("the wrong document accepted %d %s", r.status, r.raw)
			} else {
				t.Logf("rejected as expected: %v", err)
			}
		})
	}
}
