package clientmatrix

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/internal/testing/oidctest"
	"github.com/openwop/temporal-mcp/internal/testing/testsupport"
)

// oauthOutcome is what oauth.mjs printed besides the outcome: the
// transport's HTTP exchanges, the authorization URL's parameters, the
// registered client and the access token's claims.
type oauthOutcome struct {
	outcome
	Wire []struct {
		Method string `json:"method"`
		URL    string `json:"url"`
		Status int    `json:"status"`
	} `json:"wire"`
	Authorization map[string]string `json:"authorization"`
	Client        string            `json:"client"`
	Token         map[string]any    `json:"token"`
}

// TestClientMatrixOAuth runs the TypeScript SDK v1 client's OAuth support
// (an OAuthClientProvider as authProvider, testdata/oauth.mjs) against
// cmd/server configured as an OAuth resource server (OPENWOP_OAUTH_*)
// for the real OpenID provider of internal/testing/oidctest: the client
// gets 401, discovers the metadata, registers, logs alice in with the
// authorization code flow, PKCE and the resource indicator (the script
// follows the authorization URL and fills the login form with fetch), then
// lists tools and calls publish_report (its question answered by
// elicitation) or runs slow_compute as a task and cancels it. Like
// TestClientMatrix it runs only when OPENWOP_CLIENTS=1.
func TestClientMatrixOAuth(t *testing.T) {
	if os.Getenv(envClients) != "1" {
		t.Skip("set " + envClients + "=1 to run the client matrix (needs npm; installs the pinned clients)")
	}
	clients := installClients(t)
	port := testsupport.MustFreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	resource := base + "/mcp"
	p := oidctest.Start(t, oidctest.Options{Audience: []string{resource}, Users: []oidctest.User{{
		Username: "alice", Password: "alice-pw", Subject: "alice-1", Claims: map[string]any{"tenant": "acme", "groups": []string{"finance"}},
	}}})
	startServerAt(t, port, "OPENWOP_PUBLIC_URL="+base, "OPENWOP_OAUTH_ISSUERS="+p.Issuer, "OPENWOP_OAUTH_TENANT_CLAIM=tenant",
		"OPENWOP_OAUTH_GROUPS_CLAIM=groups", "OPENWOP_OAUTH_REQUIRED_SCOPES=mcp")
	for _, tc := range []struct {
		which, status string
		want          []string
	}{
		{"approve", "completed", []string{"published at", "approved by"}},
		{"task-cancel", "cancelled", nil},
	} {
		t.Run("sdk-v1/"+tc.which, func(t *testing.T) {
			t.Parallel()
			o := runOAuthScript(t, clients, resource, tc.which)
			o.want(t, tc.status, false, tc.want...)
			checkOAuthWire(t, o, base, p.Issuer)
			for k, want := range map[string]string{"client_id": o.Client, "response_type": "code", "code_challenge_method": "S256",
				"resource": resource, "scope": "mcp"} {
				if o.Authorization[k] != want {
					t.Errorf("authorization URL %s = %q, want %q", k, o.Authorization[k], want)
				}
			}
			if o.Client == "" || o.Authorization["code_challenge"] == "" {
				t.Errorf("no registered client or PKCE challenge: client %q, authorization %v", o.Client, o.Authorization)
			}
			if o.Token["aud"] != resource && fmt.Sprint(o.Token["aud"]) != "["+resource+"]" || o.Token["tenant"] != "acme" ||
				o.Token["sub"] != "alice-1" || o.Token["iss"] != p.Issuer || o.Token["scope"] != "mcp" {
				t.Errorf("access token claims %v", o.Token)
			}
		})
	}
}

// runOAuthScript runs oauth.mjs for the case with alice's login.
func runOAuthScript(t *testing.T, clients, url, which string) oauthOutcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(clients, "node_modules", "node", "bin", "node"), "oauth.mjs", url, which)
	cmd.Dir = clients
	cmd.Env = append(os.Environ(), "CLIENTMATRIX_OAUTH_USER=alice", "CLIENTMATRIX_OAUTH_PASSWORD=alice-pw")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || t.Failed() {
		t.Logf("oauth.mjs %s: %v; stderr:\n%s", which, err, stderr.Bytes())
	}
	base := decodeOutcome(t, out, err)
	line := bytes.TrimSpace(out)
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	var o oauthOutcome
	if err := json.Unmarshal(line, &o); err != nil {
		t.Fatalf("oauth.mjs output %s: %v", line, err)
	}
	o.outcome = base
	return o
}

// checkOAuthWire checks the order of the login's HTTP exchanges: the 401,
// the resource metadata, the provider's metadata, the registration, the
// token request, and an MCP request that passes.
func checkOAuthWire(t *testing.T, o oauthOutcome, base, issuer string) {
	t.Helper()
	var log strings.Builder
	for _, w := range o.Wire {
		fmt.Fprintf(&log, "\n  %s %s -> %d", w.Method, w.URL, w.Status)
	}
	at := -1
	for _, want := range []struct {
		method, url string
		status      int
	}{
		{"POST", base + "/mcp", 401},
		{"GET", base + "/.well-known/oauth-protected-resource/mcp", 200},
		{"GET", issuer + "/.well-known/openid-configuration", 200},
		{"POST", issuer + "/register", 201},
		{"POST", issuer + "/oauth/token", 200},
		{"POST", base + "/mcp", 200},
	} {
		found := false
		for i := at + 1; i < len(o.Wire); i++ {
			if w := o.Wire[i]; w.Method == want.method && w.URL == want.url && w.Status == want.status {
				at, found = i, true
				break
			}
		}
		if !found {
			t.Fatalf("%s %s -> %d did not follow step %d of the login:%s", want.method, want.url, want.status, at, log.String())
		}
	}
}
