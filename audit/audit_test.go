package audit_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"

	"github.com/openwop/temporal-mcp/audit"
	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/testing/runstest"
	"github.com/openwop/temporal-mcp/signals"
)

// TestOpen: each sink, and the error of a file that cannot be opened.
// (internal/app/config reads the sink from OPENWOP_AUDIT_LOG.)
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "audit.jsonl")
	tests := []struct {
		value   string
		wantNil bool
		wantErr bool
	}{
		{value: "", wantErr: true},
		{value: "stderr"},
		{value: "stdout"},
		{value: "off", wantNil: true},
		{value: file},
		{value: filepath.Join(dir, "missing", "audit.jsonl"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			trail, err := audit.Open(tt.value)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Open(%q) = %v, want an error", tt.value, trail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (trail == nil) != tt.wantNil {
				t.Fatalf("trail = %v, want nil %v", trail, tt.wantNil)
			}
			if err := trail.Close(); err != nil && tt.value == file {
				t.Fatal(err)
			}
		})
	}
}

// TestFileSink: records are appended to the file as JSON lines, and a
// reopened file keeps what it held.
func TestFileSink(t *testing.T) {
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	for range 2 {
		trail, err := audit.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		trail.Write(audit.Record{Action: audit.ActionStart, Outcome: audit.OutcomeOK, RunID: "t/x"})
		if err := trail.Close(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("file holds %q, want two lines", b)
	}
	for _, l := range lines {
		var m map[string]string
		if err := json.Unmarshal([]byte(l), &m); err != nil || m["action"] != "start" || m["runId"] != "t/x" || m["time"] == "" {
			t.Errorf("line %q: %v %v", l, m, err)
		}
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, %v; want 0600", fi.Mode(), err)
	}
}

// TestNilTrail: no trail is no decoration.
func TestNilTrail(t *testing.T) {
	var trail *audit.Trail
	f := runstest.New()
	if trail.Backend(f) != f {
		t.Error("a nil trail decorates the backend")
	}
	trail.Write(audit.Record{Action: audit.ActionStart})
	if err := trail.Close(); err != nil {
		t.Error(err)
	}
}

// TestAuthenticatorReason: the reason of a refused credential; an
// authenticator's own error is recorded by its text.
func TestAuthenticatorReason(t *testing.T) {
	var buf bytes.Buffer
	trail := audit.New(zapcore.AddSync(&buf))
	keys, err := auth.New([]auth.Key{{Key: "k-secret", Tenant: "t", Subject: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	custom := errors.New("token expired")
	tests := []struct {
		name   string
		authn  auth.Authenticator
		header string
		want   string
		scope  string
	}{
		{"missing", keys.Authenticate, "", "missing-credential", ""},
		{"invalid", keys.Authenticate, "Bearer nope-secret", "invalid-credential", ""},
		{"other", func(*http.Request) (signals.Subject, error) { return signals.Subject{}, custom }, "Bearer x", "token expired", ""},
		{"insufficient scope", func(*http.Request) (signals.Subject, error) {
			return signals.Subject{}, auth.InsufficientScope("https://wop.example/.well-known/oauth-protected-resource/mcp", "mcp", "refunds:write")
		}, "Bearer x-secret", "insufficient-scope", "mcp refunds:write"},
		{"accepted", keys.Authenticate, "Bearer k-secret", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf.Reset()
			r := httptest.NewRequest("POST", "/mcp", nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			_, _ = trail.Authenticator(tt.authn)(r)
			if tt.want == "" {
				if buf.Len() != 0 {
					t.Fatalf("an accepted credential is audited: %s", buf.Bytes())
				}
				return
			}
			var m map[string]string
			if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
				t.Fatalf("%q: %v", buf.Bytes(), err)
			}
			if m["action"] != "authenticate" || m["outcome"] != "refused" || m["reason"] != tt.want || m["remote"] != r.RemoteAddr || m["scope"] != tt.scope {
				t.Errorf("record %v, want reason %q and scope %q", m, tt.want, tt.scope)
			}
			if bytes.Contains(buf.Bytes(), []byte("secret")) {
				t.Errorf("the record holds the credential: %s", buf.Bytes())
			}
		})
	}
}
