package runid

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
)

// OpaqueBytes is the number of random bytes in a minted opaque segment
// (144 bits, 24 base64url characters).
const OpaqueBytes = 18

// The runId grammar is
//
//	^(anon:)?[A-Za-z0-9._~-]{1,128}/[A-Za-z0-9._~-]{16,128}$
//
// checked by hand (segment and ValidTenant): ids are checked on every
// request, where a regular expression costs more than the rest of the
// check.

// ErrMalformed is returned for an id that does not match the runId grammar
// or whose wire form cannot be decoded.
var ErrMalformed = errors.New("malformed run id")

// ValidTenant reports whether tenant can prefix a runId.
func ValidTenant(tenant string) bool {
	return segment(strings.TrimPrefix(tenant, "anon:"), 1, 128)
}

// segment reports whether s is from min to max characters of
// [A-Za-z0-9._~-].
func segment(s string, min, max int) bool {
	if len(s) < min || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !unreserved(c) && c != '~' {
			return false
		}
	}
	return true
}

// New mints a runId for tenant, reading randomness from r (crypto/rand.Reader
// when nil). The opaque segment is base64url without padding, so it never
// contains '~'.
func New(tenant string, r io.Reader) (string, error) {
	if !ValidTenant(tenant) {
		return "", fmt.Errorf("mint run id: invalid tenant %q", tenant)
	}
	if r == nil {
		r = rand.Reader
	}
	b := make([]byte, OpaqueBytes)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("mint run id: %w", err)
	}
	return tenant + "/" + base64.RawURLEncoding.EncodeToString(b), nil
}

// Derive returns the runId of tenant that secret and parts determine: the
// opaque segment is the first OpaqueBytes of HMAC-SHA256(secret, parts),
// each part length-prefixed, so it is as unguessable as a minted one to
// whoever lacks secret, and the same parts always give the same id.
func Derive(tenant string, secret []byte, parts ...string) (string, error) {
	if !ValidTenant(tenant) {
		return "", fmt.Errorf("derive run id: invalid tenant %q", tenant)
	}
	if len(secret) == 0 {
		return "", errors.New("derive run id: empty secret")
	}
	mac := hmac.New(sha256.New, secret)
	for _, p := range append([]string{tenant}, parts...) {
		fmt.Fprintf(mac, "%d:%s", len(p), p)
	}
	return tenant + "/" + base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:OpaqueBytes]), nil
}

// Valid reports whether id matches the runId grammar.
func Valid(id string) bool {
	tenant, opaque, ok := strings.Cut(id, "/")
	return ok && ValidTenant(tenant) && segment(opaque, 16, 128)
}

// Tenant returns the tenant segment of a valid runId.
func Tenant(id string) string {
	t, _, _ := strings.Cut(id, "/")
	return t
}

func unreserved(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-'
}

const upperHex = "0123456789ABCDEF"

// Project returns the wire form of an id: every byte outside
// [A-Za-z0-9._-] is written as '~' and two uppercase hex digits.
func Project(id string) string {
	var b strings.Builder
	b.Grow(len(id) + 8)
	for i := 0; i < len(id); i++ {
		c := id[i]
		if unreserved(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('~')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&0xF])
	}
	return b.String()
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// Unproject decodes a wire-form id, accepting both '~XX' and '%XX' escapes.
// A '~' or '%' not followed by two hex digits is an error. Unproject does
// not check the grammar; use Parse for that.
func Unproject(s string) (string, error) {
	if !strings.ContainsAny(s, "~%") {
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '~' && c != '%' {
			b = append(b, c)
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("%w: truncated escape at offset %d", ErrMalformed, i)
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return "", fmt.Errorf("%w: bad escape %q at offset %d", ErrMalformed, s[i:i+3], i)
		}
		b = append(b, hi<<4|lo)
		i += 2
	}
	return string(b), nil
}

// Parse decodes a wire-form id (or a raw one) and checks the grammar.
func Parse(s string) (string, error) {
	id, err := Unproject(s)
	if err != nil {
		return "", err
	}
	if !Valid(id) {
		return "", fmt.Errorf("%w: %q does not match the runId grammar", ErrMalformed, s)
	}
	return id, nil
}

// ResultURIPrefix begins the URI of the MCP resource that serves a run's
// result (ResultURI).
const ResultURIPrefix = "openwop://runs/"

// ResultURI is the URI of the MCP resource that serves part of the result
// of run id: "result", its text, or "structured", its structuredContent
// (openwop://runs/{the id's wire form}/{part}). The MCP mount serves it
// (resources/read, in pages); the REST API's run record links it.
func ResultURI(id, part string) string {
	return ResultURIPrefix + Project(id) + "/" + part
}
