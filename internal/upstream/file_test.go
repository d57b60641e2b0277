package upstream

import (
	"strings"
	"testing"
	"time"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestParseRefusesBadEntries(t *testing.T) {
	tests := []struct {
		name, file, want string
	}{
		{"not JSON", `{`, "upstreams file:"},
		{"unknown field", `{"upstreams":[{"name":"a","command":"x","comand":"y"}]}`, `unknown field "comand"`},
		{"no upstreams", `{"upstreams":[]}`, "no upstreams"},
		{"bad name", `{"upstreams":[{"name":"a b","command":"x"}]}`, `upstream 0 ("a b"): name:`},
		{"name twice", `{"upstreams":[{"name":"a","command":"x"},{"name":"a","command":"y"}]}`, `upstream 1 ("a"): name used twice`},
		{"no transport", `{"upstreams":[{"name":"a"}]}`, `upstream 0 ("a"): transport: give a command`},
		{"both transports", `{"upstreams":[{"name":"a","command":"x","url":"http://h/mcp"}]}`, "not both"},
		{"headers on stdio", `{"upstreams":[{"name":"a","command":"x","headerEnv":{"Authorization":"T"}}]}`, "headerEnv: only a url"},
		{"bad env name", `{"upstreams":[{"name":"a","command":"x","env":{"A=B":"c"}}]}`, `env: "A=B" is not`},
		{"args on http", `{"upstreams":[{"name":"a","url":"http://h/mcp","args":["-v"]}]}`, "args, env: only a command"},
		{"relative url", `{"upstreams":[{"name":"a","url":"/mcp"}]}`, `url "/mcp": want an absolute`},
		{"ftp url", `{"upstreams":[{"name":"a","url":"ftp://h/mcp"}]}`, "want an absolute http or https URL"},
		{"header variable unset", `{"upstreams":[{"name":"a","url":"http://h/mcp","headerEnv":{"Authorization":"NOPE"}}]}`, `header Authorization: environment variable "NOPE" is not set`},
		{"bad header name", `{"upstreams":[{"name":"a","url":"http://h/mcp","headerEnv":{"Bad Header":"TOKEN"}}]}`, `"Bad Header" is not an HTTP header name`},
		{"bad prefix", `{"upstreams":[{"name":"a","command":"x","prefix":"a/"}]}`, `prefix "a/"`},
		{"reserved prefix", `{"upstreams":[{"name":"a","command":"x","prefix":"openwop_x"}]}`, "reserved for the server's own tools"},
		{"reserved by name", `{"upstreams":[{"name":"openwop","command":"x"}]}`, "reserved"},
		{"tool twice", `{"upstreams":[{"name":"a","command":"x","tools":["t","t"]}]}`, `tools: "t" listed twice`},
		{"bad tool name", `{"upstreams":[{"name":"a","command":"x","tools":["t t"]}]}`, `tools: "t t" served as "a_t t"`},
		{"policy of an unlisted tool", `{"upstreams":[{"name":"a","command":"x","tools":["t"],"policy":{"u":{}}}]}`, `policy: tool "u" is not in tools`},
		{"bad duration", `{"upstreams":[{"name":"a","command":"x","policy":{"t":{"timeout":"soon"}}}]}`, "upstreams file:"},
		{"negative timeout", `{"upstreams":[{"name":"a","command":"x","policy":{"t":{"timeout":"-1s"}}}]}`, "must be positive"},
		{"heartbeat over timeout", `{"upstreams":[{"name":"a","command":"x","policy":{"t":{"timeout":"1s","heartbeat":"2s"}}}]}`, "heartbeat 2s is longer than the timeout 1s"},
		{"result limit too small", `{"upstreams":[{"name":"a","command":"x","policy":{"t":{"resultLimit":10}}}]}`, `policy: tool "t": result limit 10: want a number of bytes from 1000`},
		{"forwardCaller empty", `{"upstreams":[{"name":"a","url":"http://h/mcp","forwardCaller":{}}]}`, "forwardCaller: give tenantHeader, subjectHeader or meta"},
		{"forwardCaller unknown field", `{"upstreams":[{"name":"a","url":"http://h/mcp","forwardCaller":{"header":"X-T"}}]}`, `unknown field "header"`},
		{"forwardCaller header on stdio", `{"upstreams":[{"name":"a","command":"x","forwardCaller":{"tenantHeader":"X-Tenant"}}]}`, "forwardCaller: only a url (streamable HTTP) upstream sends headers"},
		{"forwardCaller bad header", `{"upstreams":[{"name":"a","url":"http://h/mcp","forwardCaller":{"subjectHeader":"X Subject"}}]}`, `forwardCaller: "X Subject" is not an HTTP header name`},
		{"forwardCaller transport header", `{"upstreams":[{"name":"a","url":"http://h/mcp","forwardCaller":{"tenantHeader":"mcp-session-id"}}]}`, "forwardCaller: header mcp-session-id is the transport's"},
		{"forwardCaller authorization", `{"upstreams":[{"name":"a","url":"http://h/mcp","forwardCaller":{"tenantHeader":"Authorization"}}]}`, "is the transport's"},
		{"forwardCaller header of headerEnv", `{"upstreams":[{"name":"a","url":"http://h/mcp","headerEnv":{"X-Tenant":"TOKEN"},"forwardCaller":{"tenantHeader":"x-tenant"}}]}`, "forwardCaller: header x-tenant is already sent with a value of headerEnv"},
		{"forwardCaller one header twice", `{"upstreams":[{"name":"a","url":"http://h/mcp","forwardCaller":{"tenantHeader":"X-Caller","subjectHeader":"x-caller"}}]}`, "tenantHeader and subjectHeader are both X-Caller"},
		{"forwardCaller bad meta", `{"upstreams":[{"name":"a","url":"http://h/mcp","forwardCaller":{"meta":"com.example/"}}]}`, `forwardCaller: meta "com.example/" is not a _meta key`},
		{"forwardCaller progressToken", `{"upstreams":[{"name":"a","command":"x","forwardCaller":{"meta":"progressToken"}}]}`, "is not a _meta key"},
		{"forwardCaller reserved meta", `{"upstreams":[{"name":"a","command":"x","forwardCaller":{"meta":"io.modelcontextprotocol/caller"}}]}`, "the prefix io.modelcontextprotocol/ is reserved for MCP"},
	}
	t.Run("every bad entry on one line", func(t *testing.T) {
		_, err := Parse([]byte(`{"upstreams":[{"name":"a"},{"name":"b","url":"/x"}]}`), env(nil))
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), `upstream 0 ("a")`) || !strings.Contains(err.Error(), `upstream 1 ("b")`) {
			t.Fatalf("Parse: error %q, want both entries named on one line", err)
		}
	})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.file), env(map[string]string{"TOKEN": "secret"}))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse: error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	f, err := Parse([]byte(`{"upstreams":[
		{"name":"local","command":"srv","args":["-v"],"env":{"MODE":"x"},"tools":["echo"],"policy":{"echo":{"timeout":"1m","retry":false,"resultLimit":20000}}},
		{"name":"remote","url":"https://h/mcp","headerEnv":{"Authorization":"TOKEN"},"prefix":""}
	]}`), env(map[string]string{"TOKEN": "Bearer s"}))
	if err != nil {
		t.Fatal(err)
	}
	local, remote := f.Upstreams[0], f.Upstreams[1]
	if got := local.ToolName("echo"); got != "local_echo" {
		t.Errorf("default prefix: %q, want local_echo", got)
	}
	if got := remote.ToolName("echo"); got != "echo" {
		t.Errorf("empty prefix: %q, want echo", got)
	}
	if got := remote.headers.Get("Authorization"); got != "Bearer s" {
		t.Errorf("header from the environment: %q", got)
	}
	p := local.policy("echo")
	if time.Duration(p.Timeout) != time.Minute || time.Duration(p.Heartbeat) != DefaultHeartbeat || p.Retry == nil || *p.Retry || p.ResultLimit != 20_000 {
		t.Errorf("policy of echo: %+v", p)
	}
	if d := local.policy("other"); time.Duration(d.Timeout) != DefaultTimeout || d.Retry != nil {
		t.Errorf("default policy: %+v", d)
	}
}

// forwardCaller: a stdio upstream takes meta; an HTTP one headers too.
func TestParseForwardCaller(t *testing.T) {
	f, err := Parse([]byte(`{"upstreams":[
		{"name":"local","command":"srv","forwardCaller":{"meta":"com.example/caller"}},
		{"name":"remote","url":"https://h/mcp","forwardCaller":{"tenantHeader":"X-Tenant","subjectHeader":"X-Subject","meta":"caller"}},
		{"name":"quiet","url":"https://h/mcp"}
	]}`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []*ForwardCaller{{Meta: "com.example/caller"}, {TenantHeader: "X-Tenant", SubjectHeader: "X-Subject", Meta: "caller"}, nil}
	for i, u := range f.Upstreams {
		if got := u.ForwardCaller; (got == nil) != (want[i] == nil) || got != nil && *got != *want[i] {
			t.Errorf("upstream %s: forwardCaller %+v, want %+v", u.Name, got, want[i])
		}
	}
}

func TestHeaderValue(t *testing.T) {
	for v, want := range map[string]string{"acme": "acme", "alice@example.com": "alice@example.com", "a b": "a b",
		"zoë": "zo%C3%AB", " padded": "%20padded", "a\nb": "a%0Ab"} {
		if got := headerValue(v); got != want {
			t.Errorf("headerValue(%q) = %q, want %q", v, got, want)
		}
	}
}
