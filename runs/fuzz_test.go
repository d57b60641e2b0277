package runs

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/signals"
)

// fuzzCursorKey is the cursor key of the fuzz targets' service.
var fuzzCursorKey = []byte("fuzz cursor key, 32 bytes long..")

// FuzzOpenCursor opens arbitrary list cursors (tasks/list, REST listRuns)
// for a tenant and filters: no panic, every refusal wraps ErrBadCursor,
// and a cursor that opens is one this service sealed for that tenant and
// those filters (sealing its page token again gives the same bytes), which
// another tenant cannot open.
func FuzzOpenCursor(f *testing.F) {
	s := &Service{opts: Options{CursorKey: fuzzCursorKey}}
	token := []byte(`{"CloseTime":"2026-01-01T00:00:00Z","RunID":"r1"}`)
	req := ListRequest{Tool: "greet", Status: signals.StatusCompleted}
	f.Add("acme", "greet", "completed", s.sealCursor("acme", req, token))
	f.Add("acme", "", "", s.sealCursor("acme", ListRequest{}, token))
	f.Add("acme", "", "", "garbage")
	f.Add("acme", "", "", "!!!")
	f.Add("acme", "", "", base64.RawURLEncoding.EncodeToString([]byte("short")))
	f.Add("acme", "", "", base64.StdEncoding.EncodeToString(token))
	f.Add("acme", "", "", strings.Repeat("A", maxCursorLen+1))
	f.Fuzz(func(t *testing.T, tenant, tool, status, cursor string) {
		req := ListRequest{Tool: tool, Status: signals.Status(status), Cursor: cursor}
		got, err := s.openCursor(tenant, req, cursor)
		if err != nil {
			if !errors.Is(err, ErrBadCursor) {
				t.Fatalf("openCursor = %v, want an ErrBadCursor", err)
			}
			if len(err.Error()) > 512 {
				t.Fatalf("refusal of %d bytes: %.80s...", len(err.Error()), err)
			}
			return
		}
		raw, _ := base64.RawURLEncoding.DecodeString(cursor)
		again, _ := base64.RawURLEncoding.DecodeString(s.sealCursor(tenant, req, got))
		if !bytes.Equal(raw, again) {
			t.Fatalf("opened a cursor this service did not seal: %q", cursor)
		}
		if _, err := s.openCursor(tenant+"x", req, cursor); !errors.Is(err, ErrBadCursor) {
			t.Fatalf("another tenant opened the cursor: %v", err)
		}
		// A cursor sealed for its token opens to it again.
		if back, err := s.openCursor(tenant, req, s.sealCursor(tenant, req, got)); err != nil || !bytes.Equal(back, got) {
			t.Fatalf("seal/open round trip: %q, %v", back, err)
		}
	})
}
