package httpgate

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Options configure a Gate. The zero value protects a local server: only
// loopback hosts and origins on loopback connections, no cross-site Origin.
type Options struct {
	// PublicURL is the configured external base URL of the server (e.g.
	// "https://wop.example.com"). Its host is an allowed host and its
	// origin an allowed origin. Empty: none.
	PublicURL string
	// AllowedHosts are further Host header values accepted: a host
	// ("wop.example.com", any port) or a host:port.
	AllowedHosts []string
	// AllowedOrigins are further Origin header values accepted
	// (scheme://host[:port]).
	AllowedOrigins []string
}

// Gate checks requests against its Options. It is safe for concurrent use.
type Gate struct {
	hosts   []string // lower case, as configured (host or host:port)
	origins []string // lower case, no trailing slash
}

// Rejection is a refused request: the HTTP status, a short snake_case code
// for REST answers and a message that says what was wrong.
type Rejection struct {
	// Status is 403 (Host, Origin) or 415 (media type).
	Status int
	// Code is "forbidden" or "unsupported_media_type".
	Code string
	// Message names the refused header and its value.
	Message string
}

// Error returns the message.
func (r *Rejection) Error() string { return r.Message }

// New builds a Gate. It fails on a public URL that is not an absolute
// http(s) URL.
func New(opts Options) (*Gate, error) {
	g := &Gate{}
	if opts.PublicURL != "" {
		u, err := url.Parse(opts.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("httpgate: public URL %q: want an absolute http or https URL", opts.PublicURL)
		}
		g.hosts = append(g.hosts, strings.ToLower(u.Host))
		g.origins = append(g.origins, strings.ToLower(u.Scheme+"://"+u.Host))
	}
	for _, h := range opts.AllowedHosts {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			g.hosts = append(g.hosts, h)
		}
	}
	for _, o := range opts.AllowedOrigins {
		if o = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(o), "/")); o != "" {
			g.origins = append(g.origins, o)
		}
	}
	return g, nil
}

// MustNew is New for options known to be valid (no public URL, or one a
// configuration loader checked); it panics otherwise.
func MustNew(opts Options) *Gate {
	g, err := New(opts)
	if err != nil {
		panic(err)
	}
	return g
}

// CheckHostOrigin checks the Host, then the Origin header. It returns nil
// when both are accepted.
func (g *Gate) CheckHostOrigin(r *http.Request) *Rejection {
	if !g.HostAllowed(r) {
		return &Rejection{Status: http.StatusForbidden, Code: "forbidden",
			Message: fmt.Sprintf("forbidden: invalid Host header %q (allowed hosts are configured with OPENWOP_PUBLIC_URL and OPENWOP_ALLOWED_HOSTS)", r.Host)}
	}
	if !g.OriginAllowed(r) {
		return &Rejection{Status: http.StatusForbidden, Code: "forbidden",
			Message: fmt.Sprintf("forbidden: invalid Origin header %q (allowed origins are configured with OPENWOP_PUBLIC_URL and OPENWOP_ALLOWED_ORIGINS)", r.Header.Get("Origin"))}
	}
	return nil
}

// CheckBody checks the media type of a request body: a request with a
// method that carries one (anything but GET, HEAD, OPTIONS) that has a
// body or declares a Content-Type must declare application/json. A body-less
// POST without Content-Type passes.
func (g *Gate) CheckBody(r *http.Request) *Rejection {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	hasBody := r.ContentLength != 0 || len(r.TransferEncoding) > 0
	if !hasBody && r.Header.Get("Content-Type") == "" {
		return nil
	}
	if !JSONContentType(r) {
		return UnsupportedMediaType(r)
	}
	return nil
}

// Check runs CheckHostOrigin, then CheckBody.
func (g *Gate) Check(r *http.Request) *Rejection {
	if rej := g.CheckHostOrigin(r); rej != nil {
		return rej
	}
	return g.CheckBody(r)
}

// UnsupportedMediaType is the 415 refusal of r's Content-Type.
func UnsupportedMediaType(r *http.Request) *Rejection {
	return &Rejection{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type",
		Message: fmt.Sprintf("unsupported Content-Type %q: the request body must be application/json", r.Header.Get("Content-Type"))}
}

// JSONContentType reports whether r declares the media type
// application/json (parameters such as charset allowed).
func JSONContentType(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// HostAllowed is the DNS-rebinding protection. A configured host (with any
// port, or the exact host:port) is accepted. Otherwise a request that
// arrived on a loopback address must name a loopback host, and a request on
// another address is accepted only when no host is configured.
func (g *Gate) HostAllowed(r *http.Request) bool {
	host := strings.ToLower(r.Host)
	if host == "" {
		return false
	}
	if slices.Contains(g.hosts, host) || slices.Contains(g.hosts, hostOnly(host)) {
		return true
	}
	if LocalRequest(r) {
		return LoopbackHost(hostOnly(host))
	}
	return len(g.hosts) == 0
}

// OriginAllowed accepts requests without Origin, configured origins, and
// loopback origins (any port) on a request that arrived on a loopback
// address. "null" and anything unparsable are refused.
func (g *Gate) OriginAllowed(r *http.Request) bool {
	origins := r.Header.Values("Origin")
	if len(origins) == 0 {
		return true
	}
	if len(origins) > 1 {
		return false
	}
	origin := strings.ToLower(strings.TrimSuffix(origins[0], "/"))
	if slices.Contains(g.origins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return LocalRequest(r) && LoopbackHost(u.Hostname())
}

// LocalRequest reports whether the request arrived on a loopback address.
func LocalRequest(r *http.Request) bool {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || addr == nil {
		return false
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		host = addr.String()
	}
	return LoopbackHost(host)
}

// LoopbackHost reports whether host (no port; brackets allowed) names the
// local machine: localhost or a loopback IP.
func LoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// IsTimeout reports whether err is a read that hit its deadline (a
// request body that did not arrive in time).
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
