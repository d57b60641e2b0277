package oidctest

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// User is an account of the provider: its login, its subject (sub) and the
// claims its access tokens carry besides the registered ones (a tenant, a
// groups claim, ...).
type User struct {
	Username, Password string
	// Subject is the sub of its tokens.
	Subject string
	// Claims are added to its access tokens.
	Claims map[string]any
}

// Options configure a Provider.
type Options struct {
	// Audience is the resources the provider issues tokens for (RFC 8707).
	// An authorization request must name one of them in its resource
	// parameter (else invalid_target); the access tokens of the code it
	// returns have that resource, alone, as aud, and the token request
	// must name the same resource.
	Audience []string
	// Users are the accounts; Start adds none of its own.
	Users []User
	// ClientID and RedirectURIs are a pre-registered public (PKCE) client.
	// Other clients register themselves at the registration endpoint
	// (RFC 7591, see Register).
	ClientID     string
	RedirectURIs []string
	// Listener, when set, is the listener the provider serves on (to start
	// it on an address chosen before); default a new loopback one.
	Listener net.Listener
}

// Provider is a running OpenID provider: zitadel/oidc's op package over its
// example in-memory storage, with access tokens as signed JWTs (RFC 9068
// style) carrying the user's claims and scopes, keys that can be rotated,
// and a username/password login page.
type Provider struct {
	// Issuer is the provider's issuer URL (its base URL).
	Issuer string
	// ClientID is the pre-registered client's id.
	ClientID string

	srv   *httptest.Server
	store *store
}

// Start runs a provider until the test ends.
func Start(t testing.TB, opts Options) *Provider {
	t.Helper()
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// New runs a provider; Close stops it.
func New(opts Options) (*Provider, error) {
	ln := opts.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, err
		}
	}
	issuer := "http://" + ln.Addr().String()
	opts.ClientID = cmp.Or(opts.ClientID, "openwop-test-client")
	users := userStore{}
	for _, u := range opts.Users {
		users[u.Username] = u
	}
	clients := map[string]*storage.Client{opts.ClientID: storage.NativeClient(opts.ClientID, opts.RedirectURIs...)}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	st := &store{Storage: storage.NewStorageWithClients(users, clients), users: users, keys: []*signingKey{key},
		registered: map[string]op.Client{}, resources: map[string]string{}}
	provider, err := op.NewProvider(&op.Config{
		CryptoKey:                sha256.Sum256([]byte(issuer)),
		CodeMethodS256:           true,
		AuthMethodPost:           true,
		DefaultLogoutRedirectURI: "/",
		SupportedUILocales:       []language.Tag{language.English},
	}, st, op.StaticIssuer(issuer), op.WithAllowInsecure(), op.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return nil, fmt.Errorf("OpenID provider: %w", err)
	}
	mux := http.NewServeMux()
	login := &loginPage{store: st, callback: op.AuthCallbackURL(provider)}
	intercept := op.NewIssuerInterceptor(provider.IssuerFromRequest)
	mux.Handle("GET /login/username", http.HandlerFunc(login.form))
	mux.Handle("POST /login/username", intercept.HandlerFunc(login.submit))
	mux.Handle("GET "+oidc.DiscoveryEndpoint, intercept.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cfg := op.CreateDiscoveryConfig(r.Context(), provider, st)
		cfg.RegistrationEndpoint = issuer + registrationPath
		op.Discover(w, cfg)
	}))
	mux.Handle("POST "+registrationPath, http.HandlerFunc(st.register))
	mux.Handle("/", resourceIndicator(opts.Audience, st, provider))
	srv := httptest.NewUnstartedServer(mux)
	_ = srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	return &Provider{Issuer: issuer, ClientID: opts.ClientID, srv: srv, store: st}, nil
}

// Close stops the provider.
func (p *Provider) Close() { p.srv.Close() }

// resourceIndicator refuses an authorization or token request whose RFC
// 8707 resource parameter is missing or names a resource the provider
// does not issue tokens for, and an authorization request without an S256
// PKCE challenge (OAuth 2.1), and a code exchanged for another resource
// than the one its authorization request named (RFC 8707 2.2). It passes
// the resource on in the request's context, where the store binds it to
// the authorization request.
func resourceIndicator(audience []string, st *store, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authorize := r.URL.Path == "/authorize"
		if authorize || (r.URL.Path == "/oauth/token" && r.Method == http.MethodPost) {
			_ = r.ParseForm()
			res := r.Form.Get("resource")
			if !slices.Contains(audience, res) {
				oauthError(w, "invalid_target", fmt.Sprintf("unknown resource %q", res))
				return
			}
			if authorize && (r.Form.Get("code_challenge") == "" || r.Form.Get("code_challenge_method") != "S256") {
				oauthError(w, "invalid_request", "PKCE is required: code_challenge with code_challenge_method S256")
				return
			}
			if bound, ok := st.resourceOfCode(r.Context(), r.Form.Get("code")); !authorize && ok && bound != res {
				oauthError(w, "invalid_target", fmt.Sprintf("the code was issued for resource %q, not %q", bound, res))
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), resourceKey{}, res))
		}
		next.ServeHTTP(w, r)
	})
}

// resourceKey is the context key of a request's resource parameter.
type resourceKey struct{}

// oauthError writes an OAuth error response (RFC 6749 5.2, RFC 7591
// 3.2.2): 400 with the error code and its description.
func oauthError(w http.ResponseWriter, code, description string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": description})
}

// signingKey is an RSA key of the provider.
type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func newKey() (*signingKey, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return &signingKey{id: rand.Text()[:12], key: k}, nil
}

func (k *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *signingKey) Algorithm() jose.SignatureAlgorithm          { return jose.RS256 }
func (k *signingKey) ID() string                                  { return k.id }
func (k *signingKey) Use() string                                 { return "sig" }

// Key is the private key when signing, the public key when published:
// op calls SigningKey's Key to sign and KeySet's to publish.
func (k *signingKey) Key() any { return k.key }

// publicKey is the published form of a signingKey.
type publicKey struct{ *signingKey }

func (k publicKey) Key() any { return &k.key.PublicKey }

// store is the example storage with the provider's keys, its users' claims
// in access tokens, JWT access tokens for the resource each authorization
// request named, and dynamically registered clients.
type store struct {
	*storage.Storage
	users userStore

	mu         sync.Mutex
	keys       []*signingKey        // published; the last one signs
	registered map[string]op.Client // by client id (RFC 7591)
	resources  map[string]string    // resource by authorization request id
}

// SigningKey is the newest key.
func (s *store) SigningKey(context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[len(s.keys)-1], nil
}

// SignatureAlgorithms is RS256.
func (s *store) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

// KeySet publishes every key.
func (s *store) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]op.Key, len(s.keys))
	for i, k := range s.keys {
		out[i] = publicKey{k}
	}
	return out, nil
}

// GetClientByClientID finds pre-registered and registered clients, whose
// access tokens are JWTs and which may ask for any scope.
func (s *store) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	c, ok := s.registered[id]
	s.mu.Unlock()
	if !ok {
		var err error
		if c, err = s.Storage.GetClientByClientID(ctx, id); err != nil {
			return nil, err
		}
	}
	return jwtClient{c}, nil
}

// CreateAuthRequest stores the authorization request and binds it to the
// resource it named (put in ctx by resourceIndicator).
func (s *store) CreateAuthRequest(ctx context.Context, req *oidc.AuthRequest, userID string) (op.AuthRequest, error) {
	res, _ := ctx.Value(resourceKey{}).(string)
	if res == "" {
		return nil, oidc.ErrInvalidRequest().WithDescription("the resource parameter is missing")
	}
	r, err := s.Storage.CreateAuthRequest(ctx, req, userID)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.resources[r.GetID()] = res
	s.mu.Unlock()
	return r, nil
}

// resourceOfCode is the resource the authorization request of a code
// named, if the code is known.
func (s *store) resourceOfCode(ctx context.Context, code string) (string, bool) {
	if code == "" {
		return "", false
	}
	r, err := s.Storage.AuthRequestByCode(ctx, code)
	if err != nil {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	res, ok := s.resources[r.GetID()]
	return res, ok
}

// AuthRequestByCode returns the request a code was issued for, with the
// resource it named as its audience; the token request must name the same
// resource (RFC 8707 2.2).
func (s *store) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	r, err := s.Storage.AuthRequestByCode(ctx, code)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	res := s.resources[r.GetID()]
	s.mu.Unlock()
	if asked, _ := ctx.Value(resourceKey{}).(string); asked != res {
		return nil, oidc.ErrInvalidGrant().WithDescription("the code was issued for resource %q, not %q", res, asked)
	}
	return audienced{AuthRequest: r, audience: []string{res}}, nil
}

// GetPrivateClaimsFromScopes puts the granted scopes and the user's claims
// in its access tokens.
func (s *store) GetPrivateClaimsFromScopes(_ context.Context, userID, _ string, scopes []string) (map[string]any, error) {
	claims := map[string]any{}
	if u := s.users.GetUserByID(userID); u != nil {
		for k, v := range s.users[u.Username].Claims {
			claims[k] = v
		}
	}
	if len(scopes) > 0 {
		claims["scope"] = strings.Join(scopes, " ")
	}
	return claims, nil
}

// jwtClient is a client whose access tokens are JWTs and which may ask
// for any scope.
type jwtClient struct{ op.Client }

func (jwtClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
func (jwtClient) IsScopeAllowed(string) bool          { return true }

// audienced is an authorization request whose tokens are for its resource.
type audienced struct {
	op.AuthRequest
	audience []string
}

func (a audienced) GetAudience() []string { return a.audience }

// userStore is the users by username, as the example storage reads them.
type userStore map[string]User

func (u userStore) GetUserByID(id string) *storage.User {
	for _, x := range u {
		if x.Subject == id {
			return u.user(x)
		}
	}
	return nil
}

func (u userStore) GetUserByUsername(name string) *storage.User {
	if x, ok := u[name]; ok {
		return u.user(x)
	}
	return nil
}

// ExampleClientID is the client the example storage's service keys belong
// to (none here).
func (u userStore) ExampleClientID() string { return "" }

func (u userStore) user(x User) *storage.User {
	return &storage.User{ID: x.Subject, Username: x.Username, Password: x.Password, FirstName: x.Username,
		Email: x.Username + "@example.test", EmailVerified: true, PreferredLanguage: language.English}
}

// loginPage is the provider's username/password form.
type loginPage struct {
	store    *store
	callback func(context.Context, string) string
}

var loginForm = template.Must(template.New("login").Parse(`<!DOCTYPE html>
<html><body><h1>Sign in</h1>{{if .Error}}<p class="error">{{.Error}}</p>{{end}}
<form method="POST" action="/login/username">
<input type="hidden" name="id" value="{{.ID}}">
<label>Username <input name="username"></label>
<label>Password <input name="password" type="password"></label>
<button type="submit">Sign in</button>
</form></body></html>`))

func (l *loginPage) form(w http.ResponseWriter, r *http.Request) {
	_ = loginForm.Execute(w, struct{ ID, Error string }{r.URL.Query().Get("authRequestID"), ""})
}

func (l *loginPage) submit(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	id := r.FormValue("id")
	if err := l.store.CheckUsernamePassword(r.FormValue("username"), r.FormValue("password"), id); err != nil {
		w.WriteHeader(http.StatusUnauthorized)
		_ = loginForm.Execute(w, struct{ ID, Error string }{id, err.Error()})
		return
	}
	http.Redirect(w, r, l.callback(r.Context(), id), http.StatusFound)
}

// Login signs in as username on the login page an authorization URL leads
// to, as a person in a browser would, and returns the redirect to the
// client: its code and state.
func (p *Provider) Login(ctx context.Context, authURL, username, password string) (*url.URL, error) {
	var final *url.URL
	client := &http.Client{CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Host != p.srv.Listener.Addr().String() {
			final = req.URL
			return http.ErrUseLastResponse
		}
		return nil
	}, Timeout: 10 * time.Second}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/login/username" {
		return nil, fmt.Errorf("the authorization request did not lead to the login page: %s %s", resp.Status, resp.Request.URL)
	}
	form := url.Values{"id": {resp.Request.URL.Query().Get("authRequestID")}, "username": {username}, "password": {password}}
	req, err = http.NewRequestWithContext(ctx, http.MethodPost, p.Issuer+"/login/username", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp, err = client.Do(req); err != nil {
		return nil, err
	}
	_ = resp.Body.Close()
	if final == nil {
		return nil, fmt.Errorf("the login did not redirect to the client: %s", resp.Status)
	}
	if e := final.Query().Get("error"); e != "" {
		return nil, errors.New("authorization error: " + e + ": " + final.Query().Get("error_description"))
	}
	return final, nil
}

// RotateKey publishes a new key and signs with it from now on (the old
// ones stay published).
func (p *Provider) RotateKey() error {
	k, err := newKey()
	if err != nil {
		return err
	}
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.keys = append(p.store.keys, k)
	return nil
}

// Sign returns a JWT of claims signed with the provider's current key, as
// its own tokens are: for tokens a test shapes itself (expired, for
// another audience, ...).
func (p *Provider) Sign(claims map[string]any) (string, error) {
	k, _ := p.store.SigningKey(context.Background())
	return sign(k.(*signingKey), claims)
}

// SignUnpublished returns a JWT of claims signed with a key the provider
// never published (its kid is new too).
func (p *Provider) SignUnpublished(claims map[string]any) (string, error) {
	k, err := newKey()
	if err != nil {
		return "", err
	}
	return sign(k, claims)
}

// Claims are the registered claims of a token of this provider for sub
// and aud, valid for ttl from now: a base for Sign.
func (p *Provider) Claims(sub string, aud []string, ttl time.Duration) map[string]any {
	now := time.Now()
	return map[string]any{"iss": p.Issuer, "sub": sub, "aud": aud, "iat": now.Unix(), "nbf": now.Unix(),
		"exp": now.Add(ttl).Unix(), "jti": rand.Text(), "client_id": p.ClientID}
}

func sign(k *signingKey, claims map[string]any) (string, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k.key, KeyID: k.id}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}
