package requeststate

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

func TestDigestIsCanonical(t *testing.T) {
	a, err := Digest([]byte(`{"b":1, "a":{"y":2,"x":[1,2]}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Digest([]byte(`{"a":{"x":[1,2],"y":2},"b":1}`))
	c, _ := Digest([]byte(`{"a":{"x":[2,1],"y":2},"b":1}`))
	if a != b {
		t.Fatal("key order changed the digest")
	}
	if a == c {
		t.Fatal("different arguments share a digest")
	}
	if _, err := Digest([]byte(`{`)); err == nil {
		t.Fatal("malformed JSON must not digest")
	}
}

func TestOpen(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	c, err := NewCodec(testKey, time.Minute, clock)
	if err != nil {
		t.Fatal(err)
	}
	bind := Binding{Principal: "acme|alice", Tool: "confirm_delete", ArgsDigest: "d1"}
	seal := func() string {
		tok, err := c.Seal(State{Principal: bind.Principal, Tool: bind.Tool, ArgsDigest: bind.ArgsDigest,
			RunID: "acme/AAAAAAAAAAAAAAAAAAAAAAAA", Keys: []string{"acme/AAAAAAAAAAAAAAAAAAAAAAAA-i1"}, Round: 1})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	other, _ := NewCodec([]byte("another key that is long enough!!"), time.Minute, clock)
	otherTok, _ := other.Seal(State{Principal: bind.Principal, Tool: bind.Tool, ArgsDigest: bind.ArgsDigest})

	tests := []struct {
		name  string
		token func() string
		bind  Binding
		wait  time.Duration
		want  error
	}{
		{"valid", seal, bind, 0, nil},
		{"malformed", func() string { return "not-a-state" }, bind, 0, ErrMalformed},
		{"tampered body", func() string {
			tok := seal()
			return "e30" + tok[3:] // replace the start of the body
		}, bind, 0, ErrTampered},
		{"tampered signature", func() string { return seal() + "A" }, bind, 0, ErrTampered},
		{"other server key", func() string { return otherTok }, bind, 0, ErrTampered},
		{"expired", seal, bind, 2 * time.Minute, ErrExpired},
		{"other principal", seal, Binding{"acme|mallory", bind.Tool, bind.ArgsDigest}, 0, ErrForeign},
		{"other tool", seal, Binding{bind.Principal, "greet", bind.ArgsDigest}, 0, ErrForeign},
		{"other arguments", seal, Binding{bind.Principal, bind.Tool, "d2"}, 0, ErrForeign},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := tt.token()
			saved := now
			now = now.Add(tt.wait)
			defer func() { now = saved }()
			s, err := c.Open(tok, tt.bind)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Open = %v, want %v", err, tt.want)
			}
			if err == nil && (s.RunID == "" || len(s.Keys) != 1 || s.Round != 1) {
				t.Fatalf("opened state lost fields: %+v", s)
			}
		})
	}
}

func TestOpenIsSingleUse(t *testing.T) {
	c, _ := NewCodec(testKey, time.Minute, nil)
	b := Binding{Principal: "p", Tool: "t", ArgsDigest: "d"}
	tok, _ := c.Seal(State{Principal: "p", Tool: "t", ArgsDigest: "d"})
	if _, err := c.Open(tok, b); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Open(tok, b); !errors.Is(err, ErrReplayed) {
		t.Fatalf("second Open = %v, want ErrReplayed", err)
	}
}

// TestRelease: a released state opens once more, and is then used again.
func TestRelease(t *testing.T) {
	c, _ := NewCodec(testKey, time.Minute, nil)
	b := Binding{Principal: "p", Tool: "t", ArgsDigest: "d"}
	tok, _ := c.Seal(State{Principal: "p", Tool: "t", ArgsDigest: "d"})
	s, err := c.Open(tok, b)
	if err != nil {
		t.Fatal(err)
	}
	c.Release(s)
	if _, err := c.Open(tok, b); err != nil {
		t.Fatalf("Open after Release = %v", err)
	}
	if _, err := c.Open(tok, b); !errors.Is(err, ErrReplayed) {
		t.Fatalf("Open after the second use = %v, want ErrReplayed", err)
	}
}

func TestNewCodecRejectsShortKey(t *testing.T) {
	if _, err := NewCodec([]byte("short"), time.Minute, nil); err == nil || !strings.Contains(err.Error(), "32 bytes") {
		t.Fatalf("err = %v", err)
	}
}
