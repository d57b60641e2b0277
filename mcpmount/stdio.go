package mcpmount

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/signals"
)

// ServeStdio serves one MCP client over a newline-delimited message stream
// (stdin and stdout for a local client) as caller, until the input ends or
// ctx is done. The request-ownership rule holds as on HTTP: a call owns the
// run it starts or continues until its response is written; a
// notifications/cancelled naming the call, or the end of the input, cancels
// the runs the unanswered calls own (reason mcp-request-cancelled).
// ServeStdio returns once those cancellations are done. Nothing but MCP
// messages is written to out.
func (m *Mount) ServeStdio(ctx context.Context, caller signals.Subject, in io.ReadCloser, out io.WriteCloser) error {
	t := m.tracker.Transport(&mcp.IOTransport{Reader: in, Writer: out})
	err := m.server.Run(auth.WithSubject(ctx, caller), t)
	m.tracker.Wait()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serve MCP over stdio: %w", err)
	}
	return nil
}
