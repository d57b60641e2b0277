package pgtest_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/internal/testing/pgtest"
)

// TestStartCrashRestart: a server starts on a fresh directory, accepts
// connections, comes back on the same port and data after a crash, and
// Close removes the directory it created.
func TestStartCrashRestart(t *testing.T) {
	if _, err := pgtest.Binaries(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := pgtest.Start(ctx, pgtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dial := func(when string) {
		t.Helper()
		c, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
		if err != nil {
			t.Fatalf("%s: dial %s: %v", when, s.Addr(), err)
		}
		c.Close()
	}
	dial("after Start")
	first := s.Pid()
	if err := s.Restart(ctx); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if s.Pid() == first || s.Pid() == 0 {
		t.Errorf("pid after Restart = %d, before %d", s.Pid(), first)
	}
	dial("after Restart")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(s.Dir())); !os.IsNotExist(err) {
		t.Errorf("temporary directory %s after Close: %v, want removed", filepath.Dir(s.Dir()), err)
	}
	if c, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Close", s.Addr())
	}
}
