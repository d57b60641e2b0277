package keycheck_test

import (
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/internal/app/keycheck"
)

// TestFingerprint: the fingerprint of a key is stable, differs between
// keys and does not hold the key.
func TestFingerprint(t *testing.T) {
	a, b := []byte(strings.Repeat("a", 32)), []byte(strings.Repeat("b", 32))
	fa := keycheck.Fingerprint(a)
	if fa != keycheck.Fingerprint(a) || fa == keycheck.Fingerprint(b) || len(fa) != 16 {
		t.Fatalf("Fingerprint(a) = %q, Fingerprint(b) = %q: want 16 hex characters, stable, distinct", fa, keycheck.Fingerprint(b))
	}
	if strings.Contains(fa, "aaaa") || strings.Contains(fa, "6161") {
		t.Fatalf("Fingerprint(a) = %q holds the key", fa)
	}
}
