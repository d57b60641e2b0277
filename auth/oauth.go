package auth

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/signals"
)

// Defaults of OAuthOptions.
const (
	// DefaultClockSkew is the tolerance of exp and nbf.
	DefaultClockSkew = 30 * time.Second
	// DefaultKeyRefresh is the shortest time between two fetches of one
	// issuer's JWKS: a token naming a key not in the cache fetches the key
	// set again at most this often.
	DefaultKeyRefresh = 10 * time.Second
	// DefaultDiscoveryRetry is the longest wait between two attempts to
	// fetch the metadata of an issuer that could not be reached.
	DefaultDiscoveryRetry = 30 * time.Second
)

// OAuthOptions configure an OAuth 2.1 resource server (NewOAuth).
type OAuthOptions struct {
	// Issuers are the accepted authorization servers, by their issuer
	// identifier (the exact iss of their tokens). Their metadata is
	// fetched by RFC 8414 or OpenID Connect discovery.
	Issuers []string
	// Resource is the canonical URL of the protected resource (the MCP
	// endpoint, <public base>/mcp): tokens must name it in aud.
	Resource string
	// TenantClaim names the claim that holds the caller's tenant. A token
	// without it, or with a value outside the tenant grammar, is refused.
	// A name is looked up as a top-level claim first, then as a
	// dot-separated path ("realm_access.tenant").
	TenantClaim string
	// GroupsClaim, when set, names the claim with the caller's groups or
	// roles (an array of strings, or one space-separated string): approvers
	// lists name them as "group:<value>".
	GroupsClaim string
	// RequiredScopes are the scopes every request needs.
	RequiredScopes []string
	// ClockSkew is the tolerance of exp and nbf (DefaultClockSkew when
	// zero).
	ClockSkew time.Duration
	// KeyRefresh is the shortest time between two JWKS fetches of one
	// issuer (DefaultKeyRefresh when zero; negative: no limit).
	KeyRefresh time.Duration
	// DiscoveryRetry is the longest wait between two attempts to fetch an
	// unreachable issuer's metadata (DefaultDiscoveryRetry when zero).
	DiscoveryRetry time.Duration
	// HTTPClient fetches metadata and keys (http.DefaultClient when nil).
	HTTPClient *http.Client
	// Logger logs the issuers' discovery (nop when nil). No token is ever
	// logged.
	Logger *zap.Logger
}

// OAuth is an OAuth 2.1 resource server: it validates the JWT access tokens
// of the configured issuers (signature against the issuer's JWKS, iss, aud,
// exp and nbf, with github.com/coreos/go-oidc/v3 and go-jose), maps them to
// Subjects, and serves the RFC 9728 metadata that tells a client where to
// log in. Build it with NewOAuth.
type OAuth struct {
	opts    OAuthOptions
	issuers map[string]*issuer
	cancel  context.CancelFunc
	done    sync.WaitGroup
}

// issuer is one configured authorization server: its verifier once its
// metadata was fetched.
type issuer struct {
	id string
	mu sync.Mutex
	// verifier is nil until discovery succeeded.
	verifier *oidc.IDTokenVerifier
	// lastErr is the last discovery failure (nil once discovered).
	lastErr error
	ready   chan struct{}
}

// NewOAuth checks opts and starts fetching the issuers' metadata in the
// background: an issuer that cannot be reached is retried (its tokens are
// refused until then, never accepted unchecked) and reported by
// Unreachable. Close stops the retries.
func NewOAuth(opts OAuthOptions) (*OAuth, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	opts.ClockSkew = cmp.Or(opts.ClockSkew, DefaultClockSkew)
	opts.KeyRefresh = cmp.Or(opts.KeyRefresh, DefaultKeyRefresh)
	if opts.DiscoveryRetry <= 0 {
		opts.DiscoveryRetry = DefaultDiscoveryRetry
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &OAuth{opts: opts, issuers: map[string]*issuer{}, cancel: cancel}
	for _, id := range opts.Issuers {
		is := &issuer{id: id, ready: make(chan struct{}), lastErr: errors.New("metadata not fetched yet")}
		o.issuers[id] = is
		o.done.Add(1)
		go func() {
			defer o.done.Done()
			o.discover(ctx, is)
		}()
	}
	return o, nil
}

// check reports the first invalid option.
func (opts OAuthOptions) check() error {
	if len(opts.Issuers) == 0 {
		return errors.New("no issuer")
	}
	for _, is := range opts.Issuers {
		if err := CheckIssuerURL(is); err != nil {
			return fmt.Errorf("issuer %q: %w", is, err)
		}
	}
	if u, err := url.Parse(opts.Resource); err != nil || !u.IsAbs() || u.Host == "" {
		return fmt.Errorf("resource %q is not an absolute URL", opts.Resource)
	}
	if opts.TenantClaim == "" {
		return errors.New("no tenant claim")
	}
	for _, s := range opts.RequiredScopes {
		if !ValidScope(s) {
			return fmt.Errorf("scope %q is not a valid scope token", s)
		}
	}
	return nil
}

// CheckIssuerURL reports whether s can be an issuer identifier: an
// absolute https URL without query or fragment (http only on a loopback
// host, for development).
func CheckIssuerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if !u.IsAbs() || u.Host == "" {
		return errors.New("not an absolute URL")
	}
	if u.RawQuery != "" || u.Fragment != "" || strings.Contains(s, "#") {
		return errors.New("an issuer has no query or fragment")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if h := u.Hostname(); h != "localhost" && !strings.HasPrefix(h, "127.") && h != "::1" {
			return errors.New("http only on a loopback host; use https")
		}
	default:
		return fmt.Errorf("scheme %q: want https", u.Scheme)
	}
	return nil
}

// ValidScope reports whether s is an RFC 6749 scope token
// (signals.ValidScope).
func ValidScope(s string) bool { return signals.ValidScope(s) }

// Close stops the discovery retries.
func (o *OAuth) Close() {
	o.cancel()
	o.done.Wait()
}

// discover fetches the issuer's metadata until it succeeds or ctx ends,
// waiting longer after each failure (at most DiscoveryRetry).
func (o *OAuth) discover(ctx context.Context, is *issuer) {
	wait := 250 * time.Millisecond
	for {
		v, err := o.verifier(ctx, is.id)
		is.mu.Lock()
		is.verifier, is.lastErr = v, err
		is.mu.Unlock()
		if err == nil {
			close(is.ready)
			o.opts.Logger.Info("OAuth issuer ready", zap.String("issuer", is.id))
			return
		}
		o.opts.Logger.Warn("OAuth issuer unreachable: its tokens are refused until its metadata is fetched; retrying",
			zap.String("issuer", is.id), zap.Duration("retry_in", wait), zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, o.opts.DiscoveryRetry)
	}
}

// signingAlgs are the algorithms a token may be signed with: asymmetric
// ones only (never none, never an HMAC, whose key would be public).
var signingAlgs = []string{
	oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512,
	oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA,
}

// verifier fetches the issuer's metadata and returns the verifier of its
// tokens.
func (o *OAuth) verifier(ctx context.Context, id string) (*oidc.IDTokenVerifier, error) {
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	asm, err := sdkauth.GetAuthServerMetadata(fctx, id, o.opts.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("authorization server metadata: %w", err)
	}
	if asm == nil {
		return nil, errors.New("no authorization server metadata (RFC 8414 or OpenID Connect discovery)")
	}
	if asm.Issuer != id {
		return nil, fmt.Errorf("the metadata names the issuer %q, not %q", asm.Issuer, id)
	}
	if asm.JWKSURI == "" {
		return nil, errors.New("the metadata names no jwks_uri")
	}
	client := &http.Client{Transport: newKeyCache(o.opts.HTTPClient, o.opts.KeyRefresh), Timeout: 10 * time.Second}
	keys := oidc.NewRemoteKeySet(oidc.ClientContext(context.Background(), client), asm.JWKSURI)
	skew := o.opts.ClockSkew
	return oidc.NewVerifier(id, keys, &oidc.Config{
		// The audience must contain the resource.
		ClientID:             o.opts.Resource,
		SupportedSigningAlgs: signingAlgs,
		// exp is checked against a clock set back by the skew; nbf (whose
		// go-oidc leeway is 5 minutes) again in claimsOf.
		Now: func() time.Time { return time.Now().Add(-skew) },
	}), nil
}

// Unreachable names the issuers whose metadata could not be fetched yet,
// with the last error of each ("" for none): /healthz reports them.
func (o *OAuth) Unreachable() map[string]string {
	out := map[string]string{}
	for id, is := range o.issuers {
		is.mu.Lock()
		if is.verifier == nil && is.lastErr != nil {
			out[id] = is.lastErr.Error()
		}
		is.mu.Unlock()
	}
	return out
}

// Ready returns a channel closed once the issuer's metadata was fetched
// (nil for an issuer that is not configured).
func (o *OAuth) Ready(issuerID string) <-chan struct{} {
	if is := o.issuers[issuerID]; is != nil {
		return is.ready
	}
	return nil
}

// MetadataURL is the URL of the resource's RFC 9728 metadata.
func (o *OAuth) MetadataURL() string {
	u, _ := url.Parse(o.opts.Resource)
	path := u.Path
	u.Path = MetadataPath + path
	u.RawQuery, u.Fragment = "", ""
	return u.String()
}

// Metadata is the resource's RFC 9728 metadata; scopes are the scopes its
// tools need, advertised with the required ones.
func (o *OAuth) Metadata(scopes []string) *oauthex.ProtectedResourceMetadata {
	all := append(slices.Clone(o.opts.RequiredScopes), scopes...)
	slices.Sort(all)
	return &oauthex.ProtectedResourceMetadata{
		Resource:               o.opts.Resource,
		AuthorizationServers:   slices.Clone(o.opts.Issuers),
		ScopesSupported:        slices.Compact(all),
		BearerMethodsSupported: []string{"header"},
	}
}

// MetadataHandler serves the metadata (GET, with CORS for browser-based
// clients) at both MetadataPath + ResourcePath and MetadataPath (the root
// form); scopes, when set, returns the tools' scopes at each request.
func (o *OAuth) MetadataHandler(scopes func() []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var extra []string
		if scopes != nil {
			extra = scopes()
		}
		sdkauth.ProtectedResourceMetadataHandler(o.Metadata(extra)).ServeHTTP(w, r)
	})
}

// InsufficientScope is the 403 refusal of a request that needs scopes,
// such as a tool's (signals.ToolSpec.Scopes), that the caller's token does
// not grant: its challenge names the scopes every request needs followed
// by those, which is what a client's step-up authorization must ask for,
// and the metadata URL, as the refusal of a token without the required
// scopes does. A nil o names the scopes alone, without metadata.
func (o *OAuth) InsufficientScope(scopes ...string) *Refusal {
	if o == nil {
		return InsufficientScope("", scopes...)
	}
	all := slices.Clone(o.opts.RequiredScopes)
	for _, s := range scopes {
		if !slices.Contains(all, s) {
			all = append(all, s)
		}
	}
	return InsufficientScope(o.MetadataURL(), all...)
}

// ScopeRefused learns of each use of a tool refused for want of the
// tool's scopes: the caller, the transport it came on (signals.Transport*),
// the tool and the scopes it needs. Both edges call the one hook the
// assembly gives them (audit.Trail.ScopeRefused writes the audit record).
type ScopeRefused func(caller signals.Subject, transport, tool string, scopes []string)

// ToolRefusal is the refusal of caller's use of a tool that needs scopes
// (signals.ToolSpec.Scopes) when the caller's token lacks one of them, nil
// when it grants them all or the caller is not scoped (an API key):
// InsufficientScope(scopes...), with a reason naming the tool as kind and
// name ("the tool refund", "the workflow refund").
func (o *OAuth) ToolRefusal(caller signals.Subject, kind, name string, scopes []string) *Refusal {
	if _, missing := caller.MissingScope(scopes); !missing {
		return nil
	}
	r := o.InsufficientScope(scopes...)
	r.Reason = fmt.Sprintf("insufficient scope: the %s %s needs the scope %s", kind, name, strings.Join(r.Scopes, " "))
	return r
}

// refusal is a 401 refusal with the challenge of this resource server; a
// non-nil cause makes it invalid_token (a token was presented).
func (o *OAuth) refusal(reason string, cause error) *Refusal {
	r := &Refusal{Status: http.StatusUnauthorized, Scopes: o.opts.RequiredScopes, Metadata: o.MetadataURL(), Reason: reason, err: cause}
	if cause != nil && !errors.Is(cause, ErrNoCredential) {
		r.Code = CodeInvalidToken
	}
	return r
}

// Authenticator returns the Authenticator of a server that takes both API
// keys (keys; nil or empty for none) and the issuers' tokens: a Bearer
// credential that is one of the keys is that key's caller; any other is
// validated as an access token. Requests without a credential, or with
// one that is neither, are refused with the challenge that names the
// metadata; a token without the required scopes gets 403
// insufficient_scope.
func (o *OAuth) Authenticator(keys *Keys) Authenticator {
	return func(r *http.Request) (signals.Subject, error) {
		token, err := bearer(r)
		if err != nil {
			if errors.Is(err, ErrNoCredential) {
				return signals.Subject{}, o.refusal("a Bearer access token is required", err)
			}
			return signals.Subject{}, o.refusal("malformed Authorization header: want Bearer <token>", err)
		}
		if !keys.Dev() {
			if s, ok := keys.lookup(token); ok {
				return s, nil
			}
		}
		s, err := o.Verify(r.Context(), token)
		if err != nil {
			return signals.Subject{}, err
		}
		if _, ok := s.MissingScope(o.opts.RequiredScopes); ok {
			return signals.Subject{}, InsufficientScope(o.MetadataURL(), o.opts.RequiredScopes...)
		}
		return s, nil
	}
}
