package requeststate

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Errors returned by Open. All of them mean "refuse the retry".
var (
	ErrMalformed = errors.New("requestState is malformed")
	ErrTampered  = errors.New("requestState failed verification")
	ErrExpired   = errors.New("requestState has expired")
	ErrForeign   = errors.New("requestState belongs to another request")
	ErrReplayed  = errors.New("requestState was already used")
)

// State is what a requestState carries.
type State struct {
	// Principal names the caller (tenant and subject).
	Principal string `json:"p"`
	// Tool is the tool name and ArgsDigest the digest of its arguments.
	Tool       string `json:"t"`
	ArgsDigest string `json:"a"`
	// RunID is the run the retry continues ("" before the run exists).
	RunID string `json:"r,omitempty"`
	// Keys are the inputRequests keys (interruptIds or pre-run keys) the
	// retry answers.
	Keys []string `json:"k"`
	// Round counts the input rounds of this call so far (1 for the first).
	Round int `json:"n"`
	// ExpiresAt is a Unix time in seconds.
	ExpiresAt int64  `json:"e"`
	Nonce     string `json:"x"`
}

// Codec seals and opens states. It is safe for concurrent use.
type Codec struct {
	key []byte
	ttl time.Duration
	now func() time.Time

	mu   sync.Mutex
	used map[string]int64 // nonce -> expiry (Unix seconds)
}

// NewCodec returns a Codec with the given HMAC key (at least 32 bytes),
// state lifetime and clock (time.Now when nil).
func NewCodec(key []byte, ttl time.Duration, now func() time.Time) (*Codec, error) {
	if len(key) < 32 {
		return nil, fmt.Errorf("requestState key must be at least 32 bytes, got %d", len(key))
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("requestState lifetime must be positive, got %v", ttl)
	}
	if now == nil {
		now = time.Now
	}
	return &Codec{key: bytes.Clone(key), ttl: ttl, now: now, used: map[string]int64{}}, nil
}

// Digest returns the canonical digest of tool arguments: key order and
// whitespace do not change it.
func Digest(args json.RawMessage) (string, error) {
	var v any
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("{}")
	}
	if err := json.Unmarshal(args, &v); err != nil {
		return "", fmt.Errorf("digest arguments: %w", err)
	}
	canon, err := json.Marshal(v) // map keys are sorted
	if err != nil {
		return "", fmt.Errorf("digest arguments: %w", err)
	}
	sum := sha256.Sum256(canon)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// Seal fills in ExpiresAt and Nonce and returns the sealed state.
func (c *Codec) Seal(s State) (string, error) {
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal requestState: %w", err)
	}
	s.Nonce = base64.RawURLEncoding.EncodeToString(nonce)
	s.ExpiresAt = c.now().Add(c.ttl).Unix()
	body, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("seal requestState: %w", err)
	}
	enc := base64.RawURLEncoding.EncodeToString(body)
	return enc + "." + c.sign(enc), nil
}

func (c *Codec) sign(enc string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte("openwop-mrtr-v1."))
	m.Write([]byte(enc))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Binding is what the retry must match.
type Binding struct {
	Principal  string
	Tool       string
	ArgsDigest string
}

// Open verifies a sealed state against the retry's binding, marks it used
// and returns it.
func (c *Codec) Open(token string, b Binding) (State, error) {
	enc, sig, ok := strings.Cut(token, ".")
	if !ok || enc == "" || sig == "" {
		return State{}, ErrMalformed
	}
	want := c.sign(enc)
	if !hmac.Equal([]byte(sig), []byte(want)) {
		return State{}, ErrTampered
	}
	body, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return State{}, ErrMalformed
	}
	var s State
	if err := json.Unmarshal(body, &s); err != nil {
		return State{}, ErrMalformed
	}
	now := c.now().Unix()
	if now >= s.ExpiresAt {
		return State{}, ErrExpired
	}
	if s.Principal != b.Principal || s.Tool != b.Tool || s.ArgsDigest != b.ArgsDigest {
		return State{}, ErrForeign
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for n, exp := range c.used {
		if now >= exp {
			delete(c.used, n)
		}
	}
	if _, dup := c.used[s.Nonce]; dup {
		return State{}, ErrReplayed
	}
	c.used[s.Nonce] = s.ExpiresAt
	return s, nil
}

// Release forgets that s was used, so that it can be opened once more. An
// edge calls it for a retry that changed nothing (its answers were refused
// before any was applied): the question is still open, and the client's
// corrected retry presents the same state.
func (c *Codec) Release(s State) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.used, s.Nonce)
}
