package auth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/runid"
)

// Issuers recorded in the Subjects this package produces.
const (
	IssuerAPIKey = "urn:openwop:api-key"
	IssuerLocal  = "urn:openwop:local"
)

// Identity of the anonymous development caller.
const (
	AnonymousTenant  = "anon:local"
	AnonymousSubject = "urn:openwop:anonymous"
)

// Errors returned by Keys.Authenticate.
var (
	// ErrNoCredential: keys are configured and the request carries no
	// Bearer credential.
	ErrNoCredential = errors.New("missing bearer credential")
	// ErrInvalidCredential: the Bearer credential is not a configured key
	// (or the Authorization header is malformed).
	ErrInvalidCredential = errors.New("invalid bearer credential")
)

// Anonymous returns the Subject every caller gets when no keys are
// configured.
func Anonymous() signals.Subject {
	return signals.Subject{
		Issuer:    IssuerLocal,
		SubjectID: AnonymousSubject,
		Tenant:    AnonymousTenant,
		Kind:      "anonymous",
	}
}

// Authenticator resolves the caller of a request from its credentials
// (normally the Authorization: Bearer header), e.g. (*Keys).Authenticate.
// Any error is answered 401 unauthenticated; its text is shown to the
// caller, so it must not contain the credential.
type Authenticator func(r *http.Request) (signals.Subject, error)

// AnonymousAuthenticator authenticates every request as Anonymous():
// development mode, for a server that only local callers reach.
func AnonymousAuthenticator(*http.Request) (signals.Subject, error) { return Anonymous(), nil }

// Key binds one API key to a tenant and a subject id. It is also the element
// type of the JSON key file.
type Key struct {
	Key     string `json:"key"`
	Tenant  string `json:"tenant"`
	Subject string `json:"subject"`
}

func (k Key) validate() error {
	if k.Key == "" {
		return errors.New("empty key")
	}
	if strings.ContainsAny(k.Key, " \t\r\n,") {
		return errors.New("key contains whitespace or a comma")
	}
	if !runid.ValidTenant(k.Tenant) {
		return fmt.Errorf("invalid tenant %q (want [A-Za-z0-9._~-]{1,128}, optionally prefixed anon:)", k.Tenant)
	}
	if k.Subject == "" {
		return errors.New("empty subject")
	}
	return nil
}

func (k Key) subject() signals.Subject {
	return signals.Subject{
		Issuer:    IssuerAPIKey,
		SubjectID: k.Subject,
		Tenant:    k.Tenant,
		Kind:      "api-key",
	}
}

// Keys is an immutable set of API keys. The zero value and nil are the
// development mode: no keys, every caller is Anonymous.
type Keys struct {
	// bySum is keyed by the SHA-256 of the key, so a lookup does not compare
	// secrets byte by byte.
	bySum map[[sha256.Size]byte]signals.Subject
}

// New builds a key set. Keys must be unique.
func New(keys []Key) (*Keys, error) {
	ks := &Keys{bySum: make(map[[sha256.Size]byte]signals.Subject, len(keys))}
	for i, k := range keys {
		if err := k.validate(); err != nil {
			return nil, fmt.Errorf("api key %d: %w", i+1, err)
		}
		sum := sha256.Sum256([]byte(k.Key))
		if _, dup := ks.bySum[sum]; dup {
			return nil, fmt.Errorf("api key %d: duplicate key", i+1)
		}
		ks.bySum[sum] = k.subject()
	}
	return ks, nil
}

// ParseKeys parses the OPENWOP_API_KEYS syntax: comma-separated
// "key=tenant:subject" entries. The tenant ends at the first ':' (after an
// optional "anon:" prefix); the subject is the rest and may contain ':'
// (e.g. a URN). Blank entries are skipped.
func ParseKeys(s string) ([]Key, error) {
	var out []Key
	for i, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		key, binding, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("api key entry %d: want key=tenant:subject", i+1)
		}
		prefix := ""
		if strings.HasPrefix(binding, "anon:") {
			prefix, binding = "anon:", strings.TrimPrefix(binding, "anon:")
		}
		tenant, subject, ok := strings.Cut(binding, ":")
		if !ok {
			return nil, fmt.Errorf("api key entry %d: want key=tenant:subject", i+1)
		}
		k := Key{Key: strings.TrimSpace(key), Tenant: prefix + tenant, Subject: subject}
		if err := k.validate(); err != nil {
			return nil, fmt.Errorf("api key entry %d: %w", i+1, err)
		}
		out = append(out, k)
	}
	return out, nil
}

// LoadFile reads a JSON array of Key objects.
func LoadFile(path string) ([]Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read api key file: %w", err)
	}
	var keys []Key
	if err := json.Unmarshal(b, &keys); err != nil {
		return nil, fmt.Errorf("parse api key file %s: %w", path, err)
	}
	return keys, nil
}

// Dev reports whether no keys are configured, so every caller is Anonymous.
func (k *Keys) Dev() bool { return k == nil || len(k.bySum) == 0 }

// Len is the number of configured keys.
func (k *Keys) Len() int {
	if k == nil {
		return 0
	}
	return len(k.bySum)
}

// Authenticate returns the Subject bound to the request's Bearer key. In
// development mode it returns Anonymous whatever the request carries.
func (k *Keys) Authenticate(r *http.Request) (signals.Subject, error) {
	if k.Dev() {
		return Anonymous(), nil
	}
	token, err := bearer(r)
	if err != nil {
		return signals.Subject{}, err
	}
	s, ok := k.lookup(token)
	if !ok {
		return signals.Subject{}, ErrInvalidCredential
	}
	return s, nil
}

// lookup returns the Subject of the key token.
func (k *Keys) lookup(token string) (signals.Subject, bool) {
	if k == nil {
		return signals.Subject{}, false
	}
	s, ok := k.bySum[sha256.Sum256([]byte(token))]
	return s, ok
}

// bearer returns the request's Bearer credential: ErrNoCredential without
// an Authorization header, ErrInvalidCredential when it is not a Bearer
// credential.
func bearer(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", ErrNoCredential
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", ErrInvalidCredential
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return "", ErrInvalidCredential
	}
	return token, nil
}

type subjectKey struct{}

// WithSubject returns a context carrying the authenticated Subject.
func WithSubject(ctx context.Context, s signals.Subject) context.Context {
	return context.WithValue(ctx, subjectKey{}, s)
}

// SubjectFrom returns the Subject stored by Middleware (or WithSubject).
func SubjectFrom(ctx context.Context) (signals.Subject, bool) {
	s, ok := ctx.Value(subjectKey{}).(signals.Subject)
	return s, ok
}

// DenyFunc writes the response to a request that failed authentication.
type DenyFunc func(w http.ResponseWriter, r *http.Request, err error)

// Unauthorized is the default DenyFunc: 401, a WWW-Authenticate challenge and
// a small JSON body {"error":{"code":"unauthenticated","message":...}}.
func Unauthorized(w http.ResponseWriter, _ *http.Request, err error) {
	Challenge(w, err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(Status(err))
	body, _ := json.Marshal(map[string]any{
		"error": map[string]string{"code": "unauthenticated", "message": err.Error()},
	})
	_, _ = w.Write(body)
}

// Middleware authenticates every request with k and stores the Subject in
// the request context (read it with SubjectFrom). A request that fails
// authentication is answered by deny (Unauthorized when nil) and does not
// reach next.
func Middleware(k *Keys, deny DenyFunc) func(http.Handler) http.Handler {
	if deny == nil {
		deny = Unauthorized
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s, err := k.Authenticate(r)
			if err != nil {
				deny(w, r, err)
				return
			}
			next.ServeHTTP(w, r.WithContext(WithSubject(r.Context(), s)))
		})
	}
}
