package testsupport

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// FreePort returns a TCP port on 127.0.0.1 that was free when it was asked
// for. It is picked below the kernel's range of ephemeral ports
// (/proc/sys/net/ipv4/ip_local_port_range), so that no outgoing connection
// (a Temporal client's, a test's HTTP client's) can take it before the
// caller listens on it, as one took the kernel's own pick; where that
// range leaves no room, it is the port of a listener it opened and closed.
// Another process may still take it first, far less often.
func FreePort() (int, error) {
	if low := ephemeralLow(); low > minPickedPort+1000 {
		for range 64 {
			port := minPickedPort + rand.IntN(low-minPickedPort)
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err == nil {
				l.Close()
				return port, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// minPickedPort is the lowest port FreePort picks: above the well-known
// and most registered services' ports.
const minPickedPort = 20000

// ephemeralLow is the first port of the kernel's ephemeral range (0 when
// it cannot be read).
func ephemeralLow() int {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0
	}
	low, _ := strconv.Atoi(f[0])
	return low
}

// MustFreePort is FreePort for a test: it fails tb when no port is free.
func MustFreePort(tb testing.TB) int {
	tb.Helper()
	port, err := FreePort()
	if err != nil {
		tb.Fatal(err)
	}
	return port
}

// RunOf returns the run id (the workflow ID) an MCP task id names, and
// fails tb when taskID is not one.
func RunOf(tb testing.TB, taskID string) string {
	tb.Helper()
	id, err := runid.Parse(taskID)
	if err != nil {
		tb.Fatalf("task id %q: %v", taskID, err)
	}
	return id
}

// EventTypes lists the types of the events of a log, in order.
func EventTypes(evs []signals.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// CheckEventLog reports to tb every envelope rule the event log of run
// runID breaks: sequences 0-based and strictly increasing, event ids, the
// run id, the schema version, timestamps, JSON payloads, and exactly one
// terminal event, the last.
func CheckEventLog(tb testing.TB, runID string, evs []signals.Event) {
	tb.Helper()
	terminal := 0
	for i, e := range evs {
		if e.Sequence != i {
			tb.Errorf("event %d has sequence %d", i, e.Sequence)
		}
		if e.RunID != runID || e.EventID == "" || e.SchemaVersion != signals.EventLogSchemaVersion || e.Timestamp.IsZero() {
			tb.Errorf("event %d envelope incomplete: %+v", i, e)
		}
		if !json.Valid(e.Payload) {
			tb.Errorf("event %d payload is not JSON: %s", i, e.Payload)
		}
		if signals.TerminalEvent(e.Type) {
			terminal++
			if i != len(evs)-1 {
				tb.Errorf("terminal event %s at %d is not last (%v)", e.Type, i, EventTypes(evs))
			}
		}
	}
	if terminal != 1 {
		tb.Errorf("%d terminal events in %v, want exactly 1", terminal, EventTypes(evs))
	}
}
