package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/contrib/envconfig"
)

// publicURL reads EnvPublicURL.
func (l *loader) publicURL() error {
	if v := l.get(EnvPublicURL); v != "" {
		u, err := parsePublicURL(v)
		if err != nil {
			return fmt.Errorf("%s=%q: %w", EnvPublicURL, v, err)
		}
		l.cfg.PublicURL = u
	}
	return nil
}

// allowedHosts reads EnvAllowedHosts.
func (l *loader) allowedHosts() error {
	for _, h := range splitList(l.get(EnvAllowedHosts)) {
		if err := checkHost(h); err != nil {
			return fmt.Errorf("%s: %q: %w", EnvAllowedHosts, h, err)
		}
		l.cfg.AllowedHosts = append(l.cfg.AllowedHosts, strings.ToLower(h))
	}
	return nil
}

// allowedOrigins reads EnvAllowedOrigins.
func (l *loader) allowedOrigins() error {
	for _, o := range splitList(l.get(EnvAllowedOrigins)) {
		norm, err := parseOrigin(o)
		if err != nil {
			return fmt.Errorf("%s: %q: %w", EnvAllowedOrigins, o, err)
		}
		l.cfg.AllowedOrigins = append(l.cfg.AllowedOrigins, norm)
	}
	return nil
}

// httpMaxConns reads EnvHTTPMaxConns.
func (l *loader) httpMaxConns() error {
	l.cfg.HTTPMaxConns = DefaultHTTPMaxConns
	if v := l.get(EnvHTTPMaxConns); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1_000_000 {
			return fmt.Errorf("%s: %q: want a number of connections from 1 to 1000000", EnvHTTPMaxConns, v)
		}
		l.cfg.HTTPMaxConns = n
	}
	return nil
}

// parsePublicURL checks an absolute http(s) URL without query or fragment
// and returns it without a trailing slash.
func parsePublicURL(v string) (string, error) {
	u, err := url.Parse(v)
	if err != nil {
		return "", fmt.Errorf("want an absolute http or https URL: %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("want an absolute http or https URL (e.g. https://wop.example.com)")
	case u.Host == "":
		return "", fmt.Errorf("the URL names no host")
	case u.User != nil, u.RawQuery != "", u.Fragment != "":
		return "", fmt.Errorf("want scheme://host[:port][/path] only: no user, query or fragment")
	}
	u.Host = strings.ToLower(u.Host)
	return strings.TrimRight(u.String(), "/"), nil
}

// checkHost checks a host or host:port (no scheme, no path).
func checkHost(h string) error {
	if strings.ContainsAny(h, "/@?# ") {
		return fmt.Errorf("want a host or host:port, without scheme or path")
	}
	host := h
	if hh, port, err := net.SplitHostPort(h); err == nil {
		if _, err := parsePort(port); err != nil {
			return err
		}
		host = hh
	}
	if host == "" {
		return fmt.Errorf("empty host")
	}
	return nil
}

// parseOrigin checks scheme://host[:port] and returns it lower case.
func parseOrigin(o string) (string, error) {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		strings.TrimSuffix(u.Path, "/") != "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("want an origin scheme://host[:port] (http or https, no path)")
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// parseTimeout parses a positive Go duration; "" is def.
func parseTimeout(v string, def time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q: want a positive duration such as 20s or 1m", v)
	}
	return d, nil
}

// splitList splits a comma-separated list, dropping empty entries.
func splitList(v string) []string {
	var out []string
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// temporalEnv is the environment handed to the SDK's envconfig, with the
// switches it reads (TEMPORAL_TLS, TEMPORAL_TLS_DISABLE_HOST_VERIFICATION)
// normalised to true/false: envconfig itself knows only true/false/1/0 and
// silently ignores anything else, such as the documented "on".
type temporalEnv struct {
	envconfig.EnvLookup
	switches map[string]string
}

// temporalFiles are the variables of the Temporal environment that name
// files; envconfig reports a missing one without the variable's name, or
// (the configuration file) not at all.
var temporalFiles = []string{EnvTemporalConfigFile, "TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_KEY_PATH",
	"TEMPORAL_TLS_SERVER_CA_CERT_PATH"}

// newTemporalEnv checks the files and the switches of env and normalises
// the switches.
func newTemporalEnv(env envconfig.EnvLookup) (temporalEnv, error) {
	for _, name := range temporalFiles {
		if v, ok := env.LookupEnv(name); ok && strings.TrimSpace(v) != "" {
			if _, err := os.Stat(v); err != nil {
				return temporalEnv{}, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	t := temporalEnv{EnvLookup: env, switches: map[string]string{}}
	for _, name := range []string{EnvTemporalTLS, EnvTemporalTLSNoVerify} {
		v, ok := env.LookupEnv(name)
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		on, err := parseSwitch(strings.TrimSpace(v))
		if err != nil {
			return temporalEnv{}, fmt.Errorf("%s: %w", name, err)
		}
		t.switches[name] = strconv.FormatBool(on)
	}
	return t, nil
}

// LookupEnv answers the normalised value of a switch.
func (t temporalEnv) LookupEnv(name string) (string, bool) {
	if v, ok := t.switches[name]; ok {
		return v, true
	}
	return t.EnvLookup.LookupEnv(name)
}
