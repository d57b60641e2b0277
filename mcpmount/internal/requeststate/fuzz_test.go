package requeststate

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"
	"unicode/utf8"
)

// fuzzNow is the clock of the fuzz targets: fixed, so that a seed sealed
// when the corpus was built opens the same way at every run.
func fuzzNow() time.Time { return time.Unix(1_800_000_000, 0) }

// fuzzBinding is the binding the fuzz targets open states with.
var fuzzBinding = Binding{Principal: "acme|alice", Tool: "confirm_delete", ArgsDigest: "d1"}

// refusals are the errors Open may return.
var refusals = []error{ErrMalformed, ErrTampered, ErrExpired, ErrForeign, ErrReplayed}

// checkOpened checks what one Open of tok returned: a refusal among
// refusals, or a state bound to b that has not expired and that a second
// Open refuses as replayed.
func checkOpened(t *testing.T, c *Codec, tok string, b Binding, s State, err error) {
	t.Helper()
	if err != nil {
		for _, r := range refusals {
			if errors.Is(err, r) {
				return
			}
		}
		t.Fatalf("Open = %v, not one of the documented errors", err)
	}
	if s.Principal != b.Principal || s.Tool != b.Tool || s.ArgsDigest != b.ArgsDigest {
		t.Fatalf("opened %+v, which is not bound to %+v", s, b)
	}
	if s.ExpiresAt <= fuzzNow().Unix() {
		t.Fatalf("opened a state that expired at %d", s.ExpiresAt)
	}
	if _, err := c.Open(tok, b); !errors.Is(err, ErrReplayed) {
		t.Fatalf("second Open = %v, want ErrReplayed", err)
	}
}

// FuzzOpen opens arbitrary requestState tokens, as a retry may carry
// them: no panic, only the documented errors, and a state that opens is
// bound to the retry and opens once.
func FuzzOpen(f *testing.F) {
	c, err := NewCodec(testKey, time.Minute, fuzzNow)
	if err != nil {
		f.Fatal(err)
	}
	valid, err := c.Seal(State{Principal: fuzzBinding.Principal, Tool: fuzzBinding.Tool, ArgsDigest: fuzzBinding.ArgsDigest,
		RunID: "acme/AAAAAAAAAAAAAAAAAAAAAAAA", Keys: []string{"acme/AAAAAAAAAAAAAAAAAAAAAAAA-i1"}, Round: 1})
	if err != nil {
		f.Fatal(err)
	}
	for _, tok := range []string{valid, "not-a-state", "e30" + valid[3:], valid + "A", "garbage", ".", "a.", ".b", "e30.x"} {
		f.Add(tok)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := NewCodec(testKey, time.Minute, fuzzNow)
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.Open(tok, fuzzBinding)
		checkOpened(t, c, tok, fuzzBinding, s, err)
	})
}

// FuzzOpenSigned opens tokens whose body is arbitrary bytes signed with
// the server's key: what Open decodes once the signature holds (a state
// sealed by an older or newer version of the server). No panic, only the
// documented errors, and what opens is bound to the retry.
func FuzzOpenSigned(f *testing.F) {
	for _, body := range []string{
		`{"p":"acme|alice","t":"confirm_delete","a":"d1","r":"acme/AAAAAAAAAAAAAAAAAAAAAAAA","k":["i1"],"n":1,"e":1800000030,"x":"nonce"}`,
		`{"p":"acme|alice","t":"confirm_delete","a":"d1","k":null,"n":-1,"e":1e300,"x":""}`,
		`{"p":"acme|alice","t":"confirm_delete","a":"d1","e":1799999999}`,
		`{"p":"acme|mallory","t":"confirm_delete","a":"d1","e":1800000030}`,
		`{}`, `[]`, `null`, `"x"`, ``, `{"e":"soon"}`,
	} {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		c, err := NewCodec(testKey, time.Minute, fuzzNow)
		if err != nil {
			t.Fatal(err)
		}
		enc := base64.RawURLEncoding.EncodeToString(body)
		tok := enc + "." + c.sign(enc)
		s, err := c.Open(tok, fuzzBinding)
		if len(body) == 0 && !errors.Is(err, ErrMalformed) {
			t.Fatalf("Open of an empty body = %v, want ErrMalformed", err)
		}
		checkOpened(t, c, tok, fuzzBinding, s, err)
	})
}

// FuzzSealOpen seals states with arbitrary fields and opens them: the
// round trip keeps every field.
func FuzzSealOpen(f *testing.F) {
	f.Add("acme|alice", "confirm_delete", "d1", "acme/AAAAAAAAAAAAAAAAAAAAAAAA", "acme/AAAAAAAAAAAAAAAAAAAAAAAA-i1", 1)
	f.Add("", "", "", "", "", 0)
	f.Add("a\x00\xff", "\u2028", "\"", "<&>", "é", -7)
	f.Fuzz(func(t *testing.T, principal, tool, digest, runID, key string, round int) {
		c, err := NewCodec(testKey, time.Minute, fuzzNow)
		if err != nil {
			t.Fatal(err)
		}
		in := State{Principal: principal, Tool: tool, ArgsDigest: digest, RunID: runID, Keys: []string{key}, Round: round}
		tok, err := c.Seal(in)
		if err != nil {
			t.Fatal(err)
		}
		b := Binding{Principal: principal, Tool: tool, ArgsDigest: digest}
		out, err := c.Open(tok, b)
		if err != nil {
			// Strings that are not valid UTF-8 come back changed (JSON
			// replaces the bytes), so they may not bind: refused, never
			// opened for another binding.
			if !errors.Is(err, ErrForeign) {
				t.Fatalf("Open of a sealed state = %v", err)
			}
			return
		}
		exact := utf8.ValidString(runID) && utf8.ValidString(key)
		if exact && (out.RunID != runID || len(out.Keys) != 1 || out.Keys[0] != key) || out.Round != round {
			t.Fatalf("round trip changed the state: %+v -> %+v", in, out)
		}
		checkOpened(t, c, tok, b, out, nil)
	})
}
