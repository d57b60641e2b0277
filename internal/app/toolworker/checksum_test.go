package toolworker

import (
	"regexp"
	"testing"
)

func TestBinaryChecksum(t *testing.T) {
	a, b := BinaryChecksum(), BinaryChecksum()
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(a) {
		t.Fatalf("BinaryChecksum() = %q, want 32 hexadecimal digits", a)
	}
	if a != b {
		t.Fatalf("BinaryChecksum() = %q then %q: want one identity per executable", a, b)
	}
}
