package httpgate_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/internal/httpgate"
)

// gateServer serves g.Check on addr ("" for a loopback address): 204 when
// the request passes, else the rejection's status and code.
func gateServer(t *testing.T, g *httpgate.Gate, addr string) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rej := g.Check(r); rej != nil {
			w.WriteHeader(rej.Status)
			_, _ = io.WriteString(w, rej.Code+": "+rej.Message)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	if addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("listen on %s: %v", addr, err)
		}
		srv.Listener.Close()
		srv.Listener = l
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// nonLoopbackIP returns an IPv4 address of this machine that is not a
// loopback one, or "".
func nonLoopbackIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

type gateCase struct {
	name         string
	method, host string
	hdr          map[string]string
	body         string
	want         int
}

func runGateCases(t *testing.T, srv *httptest.Server, cases []gateCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			method := c.method
			if method == "" {
				method = http.MethodGet
			}
			var body io.Reader
			if c.body != "" {
				body = strings.NewReader(c.body)
			}
			req, _ := http.NewRequest(method, srv.URL+"/x", body)
			for k, v := range c.hdr {
				req.Header.Set(k, v)
			}
			if c.host != "" {
				req.Host = c.host
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Fatalf("= %d %s, want %d", resp.StatusCode, b, c.want)
			}
		})
	}
}

// TestGateOnLoopback: the default gate of a local server.
func TestGateOnLoopback(t *testing.T) {
	srv := gateServer(t, httpgate.MustNew(httpgate.Options{}), "")
	runGateCases(t, srv, []gateCase{
		{name: "plain", want: 204},
		{name: "localhost host", host: "localhost:1234", want: 204},
		{name: "IPv6 loopback host", host: "[::1]:8080", want: 204},
		{name: "foreign host", host: "attacker.example", want: 403},
		{name: "empty host", host: " ", want: 403},
		{name: "loopback origin", hdr: map[string]string{"Origin": "http://127.0.0.1:9999"}, want: 204},
		{name: "foreign origin", hdr: map[string]string{"Origin": "https://evil.example"}, want: 403},
		{name: "null origin", hdr: map[string]string{"Origin": "null"}, want: 403},
		{name: "file origin", hdr: map[string]string{"Origin": "file://"}, want: 403},
		{name: "JSON body", method: "POST", body: "{}", hdr: map[string]string{"Content-Type": "application/json; charset=utf-8"}, want: 204},
		{name: "text body", method: "POST", body: "{}", hdr: map[string]string{"Content-Type": "text/plain"}, want: 415},
		{name: "body without type", method: "POST", body: "{}", hdr: map[string]string{"Content-Type": ""}, want: 415},
		{name: "JSON-like type", method: "POST", body: "{}", hdr: map[string]string{"Content-Type": "application/json-patch+json"}, want: 415},
		{name: "empty POST without type", method: "POST", want: 204},
		{name: "empty POST with a form type", method: "POST", hdr: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, want: 415},
		{name: "GET with a type", hdr: map[string]string{"Content-Type": "text/plain"}, want: 204},
	})
}

// TestGateOnAnotherAddress: on a non-loopback address any host passes
// while none is configured; once one is (an allowed host or the public
// URL's), only those do, and loopback origins are foreign there.
func TestGateOnAnotherAddress(t *testing.T) {
	ip := nonLoopbackIP()
	if ip == "" {
		t.Skip("no non-loopback IPv4 address")
	}
	open := gateServer(t, httpgate.MustNew(httpgate.Options{}), ip+":0")
	runGateCases(t, open, []gateCase{
		{name: "any host", host: "wop.example.com", want: 204},
		{name: "loopback origin", hdr: map[string]string{"Origin": "http://localhost:3000"}, want: 403},
	})
	strict := gateServer(t, httpgate.MustNew(httpgate.Options{PublicURL: "https://wop.example.com/base", AllowedHosts: []string{"proxy.internal:8080"}}), ip+":0")
	runGateCases(t, strict, []gateCase{
		{name: "public host", host: "wop.example.com", want: 204},
		{name: "allowed host:port", host: "proxy.internal:8080", want: 204},
		{name: "allowed host, other port", host: "proxy.internal:9090", want: 403},
		{name: "the address itself", want: 403},
		{name: "public origin", host: "wop.example.com", hdr: map[string]string{"Origin": "https://wop.example.com"}, want: 204},
	})
	if _, err := httpgate.New(httpgate.Options{PublicURL: "wop.example.com"}); err == nil {
		t.Fatal("New accepted a public URL without a scheme")
	}
}
