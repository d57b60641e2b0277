package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/workflows"
)

// ForwardCaller says how an upstream's calls carry the caller of the run
// (an entry's forwardCaller, docs/upstreams.md): the tenant and the
// subject the adapter authenticated. Give at least one field.
type ForwardCaller struct {
	// TenantHeader and SubjectHeader name the HTTP headers of the
	// tools/call request that carry the tenant and the subject (a url
	// upstream only).
	TenantHeader  string `json:"tenantHeader,omitempty"`
	SubjectHeader string `json:"subjectHeader,omitempty"`
	// Meta is the key of the tools/call's _meta whose value is
	// {"tenant": ..., "subject": ...}.
	Meta string `json:"meta,omitempty"`
}

// Caller is the caller of a run, as an upstream that opted in is told.
type Caller struct {
	Tenant  string `json:"tenant"`
	Subject string `json:"subject"`
}

var (
	// metaKey is a _meta key as MCP defines it: an optional prefix of
	// dot-separated labels and "/", then a name.
	metaKey = regexp.MustCompile(`^(?:([A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*)/)?[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$`)
	// transportHeaders are the headers the MCP transport sets itself.
	transportHeaders = []string{"Accept", "Authorization", "Content-Length", "Content-Type", "Host", "Last-Event-Id"}
)

// check applies the rules of forwardCaller to the entry u.
func (f *ForwardCaller) check(u *Upstream) error {
	if f == nil {
		return nil
	}
	if f.TenantHeader == "" && f.SubjectHeader == "" && f.Meta == "" {
		return errors.New("forwardCaller: give tenantHeader, subjectHeader or meta")
	}
	for _, h := range []string{f.TenantHeader, f.SubjectHeader} {
		if h == "" {
			continue
		}
		canonical := http.CanonicalHeaderKey(h)
		switch {
		case u.Command != "":
			return errors.New("forwardCaller: only a url (streamable HTTP) upstream sends headers; give meta")
		case !headerName.MatchString(h):
			return fmt.Errorf("forwardCaller: %q is not an HTTP header name", h)
		case strings.HasPrefix(canonical, "Mcp-") || containsFold(transportHeaders, canonical):
			return fmt.Errorf("forwardCaller: header %s is the transport's", h)
		case u.headers.Get(h) != "":
			return fmt.Errorf("forwardCaller: header %s is already sent with a value of headerEnv", h)
		}
	}
	if f.TenantHeader != "" && strings.EqualFold(f.TenantHeader, f.SubjectHeader) {
		return fmt.Errorf("forwardCaller: tenantHeader and subjectHeader are both %s", f.TenantHeader)
	}
	if f.Meta != "" {
		m := metaKey.FindStringSubmatch(f.Meta)
		if m == nil || f.Meta == "progressToken" {
			return fmt.Errorf("forwardCaller: meta %q is not a _meta key (an optional prefix such as \"com.example/\", then a name)", f.Meta)
		}
		if labels := strings.Split(m[1], "."); len(labels) > 1 && (strings.EqualFold(labels[1], "modelcontextprotocol") || strings.EqualFold(labels[1], "mcp")) {
			return fmt.Errorf("forwardCaller: meta %q: the prefix %s/ is reserved for MCP", f.Meta, m[1])
		}
	}
	return nil
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}

// callerOf is the caller of the run of ctx when u forwards it, nil
// otherwise (the activity's input then names no caller).
func callerOf(ctx workflow.Context, u Upstream) *Caller {
	if u.ForwardCaller == nil {
		return nil
	}
	owner, ok := workflows.Owner(ctx)
	if !ok {
		return nil
	}
	return &Caller{Tenant: owner.Tenant, Subject: owner.Subject.SubjectID}
}

// callerKey is the context key of the caller whose call a request
// carries (headerTransport).
type callerKey struct{}

// forward makes the tools/call of params, sent with the returned context,
// carry the caller as f says.
func forward(ctx context.Context, f *ForwardCaller, caller *Caller, params *mcp.CallToolParams) context.Context {
	if f == nil || caller == nil {
		return ctx
	}
	if f.Meta != "" {
		if params.Meta == nil {
			params.Meta = mcp.Meta{}
		}
		params.Meta[f.Meta] = map[string]string{"tenant": caller.Tenant, "subject": caller.Subject}
	}
	return context.WithValue(ctx, callerKey{}, caller)
}

// headerTransport adds the upstream's headers to each request, and the
// headers of the caller to the requests of a call that forwards it.
type headerTransport struct {
	headers http.Header
	caller  *ForwardCaller
	next    http.RoundTripper
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, vs := range t.headers {
		req.Header[k] = vs
	}
	if caller, ok := req.Context().Value(callerKey{}).(*Caller); ok && t.caller != nil {
		if t.caller.TenantHeader != "" {
			req.Header.Set(t.caller.TenantHeader, headerValue(caller.Tenant))
		}
		if t.caller.SubjectHeader != "" {
			req.Header.Set(t.caller.SubjectHeader, headerValue(caller.Subject))
		}
	}
	return t.next.RoundTrip(req)
}

// headerValue is v as a header value: as it is when it is printable
// ASCII without surrounding spaces, percent-encoded otherwise.
func headerValue(v string) string {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return url.PathEscape(v)
		}
	}
	if strings.TrimSpace(v) != v {
		return url.PathEscape(v)
	}
	return v
}
