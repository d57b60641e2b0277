package devtemporal

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	"github.com/temporalio/ui-server/v2/server/server_options"
)

// uiServer is the Temporal Web UI (github.com/temporalio/ui-server, the same
// server the Temporal CLI embeds) with its assets compiled in.
type uiServer struct {
	server  *uiserver.Server
	address string
}

// startUI serves the Web UI on ip:port for the frontend at temporalAddress
// and returns once it accepts connections.
func startUI(ctx context.Context, ip string, port int, temporalAddress, namespace string) (*uiServer, error) {
	address := net.JoinHostPort(ip, strconv.Itoa(port))
	// The UI server exits the process when it cannot bind, so check first.
	l, err := net.Listen("tcp", address)
	if err != nil {
		return nil, fmt.Errorf("devtemporal: Web UI address %s: %w", address, err)
	}
	_ = l.Close()

	cfg := &uiconfig.Config{
		TemporalGRPCAddress: temporalAddress,
		Host:                ip,
		Port:                port,
		EnableUI:            true,
		DefaultNamespace:    namespace,
		HideLogs:            true,
		DisableNewsFetch:    true,
		// Plain HTTP on localhost: the CSRF cookie must not require TLS.
		CORS: uiconfig.CORS{CookieInsecure: true},
	}
	srv := uiserver.NewServer(server_options.WithConfigProvider(cfg))
	go func() { _ = srv.Start() }()

	for {
		c, err := net.DialTimeout("tcp", address, time.Second)
		if err == nil {
			_ = c.Close()
			return &uiServer{server: srv, address: address}, nil
		}
		select {
		case <-ctx.Done():
			srv.Stop()
			return nil, fmt.Errorf("devtemporal: Web UI did not start on %s: %w", address, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (u *uiServer) stop() { u.server.Stop() }
