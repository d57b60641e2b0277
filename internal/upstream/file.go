package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/openwop/temporal-mcp/catalog"
	"github.com/openwop/temporal-mcp/signals"
)

// File is the file of upstreams (docs/upstreams.md).
type File struct {
	// Upstreams are the MCP servers to serve, at least one.
	Upstreams []Upstream `json:"upstreams"`
}

// Upstream is one MCP server behind the adapter: how to reach it (a stdio
// command or a streamable HTTP URL, exactly one), which of its tools to
// serve and under which names, and the policy of their calls.
type Upstream struct {
	// Name names the upstream in logs and errors; letters, digits, "_"
	// and "-", at most 64.
	Name string `json:"name"`
	// Command, Args and Env start a stdio server: the command runs with
	// Options.Environ (the worker's environment) plus Env.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// URL is the endpoint of a streamable HTTP server (http or https).
	URL string `json:"url,omitempty"`
	// HeaderEnv maps the name of an HTTP header sent to URL to the
	// environment variable that holds its value (secrets never sit in
	// the file). Each variable must be set.
	HeaderEnv map[string]string `json:"headerEnv,omitempty"`
	// Tools lists the tools to serve; empty serves every tool the
	// upstream lists.
	Tools []string `json:"tools,omitempty"`
	// Prefix starts the name each tool is served under; nil means Name
	// followed by "_", "" serves the upstream's names as they are.
	Prefix *string `json:"prefix,omitempty"`
	// Policy overrides the policy of calls of the named tools (the
	// upstream's names).
	Policy map[string]Policy `json:"policy,omitempty"`
	// ForwardCaller, when set, makes each tools/call carry the tenant and
	// the subject of the run's caller; nil: the upstream learns nothing
	// of the caller.
	ForwardCaller *ForwardCaller `json:"forwardCaller,omitempty"`

	// headers are HeaderEnv's values, read when the file is loaded.
	headers http.Header
}

// Policy is the policy of calls of one tool.
type Policy struct {
	// Timeout bounds one attempt of a call (default DefaultTimeout).
	Timeout Duration `json:"timeout,omitempty"`
	// Heartbeat is the heartbeat timeout of a call: an attempt whose
	// worker is gone fails after it (default DefaultHeartbeat).
	Heartbeat Duration `json:"heartbeat,omitempty"`
	// Retry says whether an interrupted call is made again; nil: only for
	// a tool that says it is safe (readOnlyHint or idempotentHint).
	Retry *bool `json:"retry,omitempty"`
	// ResultLimit is the tool's result limit in bytes
	// (workflows.WithResultLimit): from catalog.MinResultLimit to
	// catalog.MaxResultLimit; 0: the server's (OPENWOP_RESULT_LIMIT).
	ResultLimit int `json:"resultLimit,omitempty"`
}

// Defaults of Policy.
const (
	DefaultTimeout   = 10 * time.Minute
	DefaultHeartbeat = 30 * time.Second
)

// Duration is a time.Duration written as a Go duration string ("90s").
type Duration time.Duration

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"90s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// ToolName is the name the upstream's tool named name is served under.
func (u Upstream) ToolName(name string) string {
	if u.Prefix == nil {
		return u.Name + "_" + name
	}
	return *u.Prefix + name
}

// Load reads and checks the file of upstreams at path; lookupEnv reads
// the environment variables HeaderEnv names. An entry that breaks a rule
// is refused with the entry and the rule named.
func Load(path string, lookupEnv func(string) (string, bool)) (File, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return File{}, err
	}
	return Parse(raw, lookupEnv)
}

// Parse is Load of the file's contents.
func Parse(raw []byte, lookupEnv func(string) (string, bool)) (File, error) {
	var f File
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return File{}, fmt.Errorf("upstreams file: %w", err)
	}
	if len(f.Upstreams) == 0 {
		return File{}, errors.New("upstreams file: no upstreams")
	}
	var errs []error
	for i := range f.Upstreams {
		u := &f.Upstreams[i]
		if err := u.check(lookupEnv); err != nil {
			errs = append(errs, fmt.Errorf("upstream %d (%q): %w", i, u.Name, err))
		}
		for _, v := range f.Upstreams[:i] {
			if v.Name == u.Name {
				errs = append(errs, fmt.Errorf("upstream %d (%q): name used twice", i, u.Name))
			}
		}
	}
	if len(errs) > 0 {
		return File{}, fmt.Errorf("upstreams file: %w", joined(errs))
	}
	return f, nil
}

// joined is errs as one error on one line (the commands' refusals are
// one line each).
func joined(errs []error) error {
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}

var (
	upstreamName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	prefixChars  = regexp.MustCompile(`^[A-Za-z0-9._-]*$`)
	envName      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	headerName   = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// check applies the rules of one entry and reads its headers' values.
func (u *Upstream) check(lookupEnv func(string) (string, bool)) error {
	if !upstreamName.MatchString(u.Name) {
		return errors.New("name: want 1 to 64 letters, digits, \"_\" or \"-\"")
	}
	if err := u.checkTransport(lookupEnv); err != nil {
		return err
	}
	if u.Prefix != nil && !prefixChars.MatchString(*u.Prefix) {
		return fmt.Errorf("prefix %q: only letters, digits, \".\", \"_\" and \"-\" may make a tool name", *u.Prefix)
	}
	if p := u.ToolName(""); strings.HasPrefix(p, signals.ReservedToolPrefix) {
		return fmt.Errorf("prefix %q: %q is reserved for the server's own tools", p, signals.ReservedToolPrefix)
	}
	for i, name := range u.Tools {
		if !catalog.ValidName(u.ToolName(name)) {
			return fmt.Errorf("tools: %q served as %q is not a valid tool name", name, u.ToolName(name))
		}
		if slices.Contains(u.Tools[:i], name) {
			return fmt.Errorf("tools: %q listed twice", name)
		}
	}
	if err := u.checkPolicy(); err != nil {
		return err
	}
	return u.ForwardCaller.check(u)
}

// checkTransport checks the command or the URL and its headers.
func (u *Upstream) checkTransport(lookupEnv func(string) (string, bool)) error {
	switch {
	case u.Command == "" && u.URL == "":
		return errors.New("transport: give a command (stdio) or a url (streamable HTTP)")
	case u.Command != "" && u.URL != "":
		return errors.New("transport: give a command (stdio) or a url (streamable HTTP), not both")
	case u.Command != "":
		if len(u.HeaderEnv) > 0 {
			return errors.New("headerEnv: only a url (streamable HTTP) upstream sends headers")
		}
		for k := range u.Env {
			if !envName.MatchString(k) {
				return fmt.Errorf("env: %q is not an environment variable name", k)
			}
		}
		return nil
	}
	if len(u.Args) > 0 || len(u.Env) > 0 {
		return errors.New("args, env: only a command (stdio) upstream takes them")
	}
	if loc, err := url.Parse(u.URL); err != nil || (loc.Scheme != "http" && loc.Scheme != "https") || loc.Host == "" {
		return fmt.Errorf("url %q: want an absolute http or https URL", u.URL)
	}
	u.headers = http.Header{}
	for h, env := range u.HeaderEnv {
		if !headerName.MatchString(h) {
			return fmt.Errorf("headerEnv: %q is not an HTTP header name", h)
		}
		v, ok := lookupEnv(env)
		if !envName.MatchString(env) || !ok || v == "" {
			return fmt.Errorf("headerEnv: header %s: environment variable %q is not set", h, env)
		}
		u.headers.Set(h, v)
	}
	return nil
}

// checkPolicy checks the per-tool overrides.
func (u *Upstream) checkPolicy() error {
	for name, p := range u.Policy {
		if len(u.Tools) > 0 && !slices.Contains(u.Tools, name) {
			return fmt.Errorf("policy: tool %q is not in tools", name)
		}
		if p.Timeout < 0 || p.Heartbeat < 0 {
			return fmt.Errorf("policy: tool %q: timeout and heartbeat must be positive", name)
		}
		if err := catalog.CheckResultLimit(p.ResultLimit); err != nil {
			return fmt.Errorf("policy: tool %q: %w", name, err)
		}
		if p.Timeout > 0 && p.Heartbeat > p.Timeout {
			return fmt.Errorf("policy: tool %q: heartbeat %s is longer than the timeout %s", name,
				time.Duration(p.Heartbeat), time.Duration(p.Timeout))
		}
	}
	return nil
}

// policy is the policy of the tool named name, defaults applied.
func (u Upstream) policy(name string) Policy {
	p := u.Policy[name]
	if p.Timeout == 0 {
		p.Timeout = Duration(DefaultTimeout)
	}
	if p.Heartbeat == 0 {
		p.Heartbeat = Duration(min(DefaultHeartbeat, time.Duration(p.Timeout)))
	}
	return p
}
