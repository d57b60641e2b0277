package runid

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id, err := New("acme", nil)
		if err != nil {
			t.Fatal(err)
		}
		if !Valid(id) {
			t.Fatalf("minted id %q does not match the grammar", id)
		}
		if strings.Contains(id, "~") {
			t.Fatalf("minted id %q contains '~'", id)
		}
		if _, opaque, _ := strings.Cut(id, "/"); len(opaque) != 24 {
			t.Fatalf("opaque segment %q is %d chars, want 24", opaque, len(opaque))
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name   string
		tenant string
		r      *bytes.Reader
	}{
		{"empty tenant", "", nil},
		{"slash in tenant", "a/b", nil},
		{"short randomness", "acme", bytes.NewReader([]byte{1, 2, 3})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.r != nil {
				_, err = New(tt.tenant, tt.r)
			} else {
				_, err = New(tt.tenant, nil)
			}
			if err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

func TestProject(t *testing.T) {
	tests := []struct{ in, want string }{
		{"acme/r-9f3cAbCdEfGhIjKlMnOp", "acme~2Fr-9f3cAbCdEfGhIjKlMnOp"},
		{"anon:local/abcdefghijklmnop", "anon~3Alocal~2Fabcdefghijklmnop"},
		{"a~b/c", "a~7Eb~2Fc"},
		{"plain.id_x-1", "plain.id_x-1"},
		{"é", "~C3~A9"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Project(tt.in); got != tt.want {
			t.Errorf("Project(%q) = %q, want %q", tt.in, got, tt.want)
		}
		back, err := Unproject(Project(tt.in))
		if err != nil || back != tt.in {
			t.Errorf("Unproject(Project(%q)) = %q, %v", tt.in, back, err)
		}
	}
}

func TestParse(t *testing.T) {
	const opaque = "AAAAAAAAAAAAAAAAAAAAAAAA"
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"acme~2F" + opaque, "acme/" + opaque, false},
		{"acme%2F" + opaque, "acme/" + opaque, false},
		{"acme%2f" + opaque, "acme/" + opaque, false},
		{"acme/" + opaque, "acme/" + opaque, false},
		{"anon~3Alocal~2F" + opaque, "anon:local/" + opaque, false},
		{"acme~2" + opaque, "", true},        // bad escape
		{"acme~ZZ" + opaque, "", true},       // bad escape
		{"acme~2Fshort", "", true},           // opaque too short
		{"acme" + opaque, "", true},          // no slash
		{"a~2Fb~2F" + opaque, "", true},      // two slashes
		{"acme~2F" + opaque + "~", "", true}, // trailing lone tilde
		{"", "", true},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if tt.wantErr {
			if err == nil {
				t.Errorf("Parse(%q) = %q, want error", tt.in, got)
			} else if !errors.Is(err, ErrMalformed) {
				t.Errorf("Parse(%q) error %v is not ErrMalformed", tt.in, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestTenant(t *testing.T) {
	if got := Tenant("acme/xyz"); got != "acme" {
		t.Fatalf("Tenant = %q", got)
	}
}

func FuzzProjection(f *testing.F) {
	for _, s := range []string{"acme/abcdefghijklmnop", "a~b", "%2F", "~2F", "é/ü", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := Project(s)
		for i := 0; i < len(p); i++ {
			if c := p[i]; !unreserved(c) && c != '~' {
				t.Fatalf("Project(%q) = %q holds byte %q", s, p, c)
			}
		}
		back, err := Unproject(p)
		if err != nil || back != s {
			t.Fatalf("round trip of %q: %q, %v", s, back, err)
		}
		// Decoding arbitrary input never panics, and a success re-projects
		// to a string that decodes to the same id.
		if id, err := Unproject(s); err == nil {
			if again, err := Unproject(Project(id)); err != nil || again != id {
				t.Fatalf("re-projection of %q: %q, %v", id, again, err)
			}
		}
	})
}

// grammar is the runId grammar as a regular expression, which Valid and
// ValidTenant check by hand.
var (
	grammar       = regexp.MustCompile(`^(anon:)?[A-Za-z0-9._~-]{1,128}/[A-Za-z0-9._~-]{16,128}$`)
	tenantGrammar = regexp.MustCompile(`^(anon:)?[A-Za-z0-9._~-]{1,128}$`)
)

func FuzzValidMatchesGrammar(f *testing.F) {
	long := strings.Repeat("a", 128)
	for _, s := range []string{"acme/AAAAAAAAAAAAAAAAAAAAAAAA", "anon:local/AAAAAAAAAAAAAAAA", "anon:/AAAAAAAAAAAAAAAA",
		"anon:anon:x/AAAAAAAAAAAAAAAA", long + "/" + long, long + "a/AAAAAAAAAAAAAAAA", "a/" + long + "a", "a/AAAAAAAAAAAAAAA",
		"a/b/AAAAAAAAAAAAAAAA", "a~b/AAAAAAAAAAAAAA~~", "é/AAAAAAAAAAAAAAAA", "", "/", "anon:", "acme", "ac me"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Valid(s), grammar.MatchString(s); got != want {
			t.Errorf("Valid(%q) = %v, the grammar says %v", s, got, want)
		}
		if got, want := ValidTenant(s), tenantGrammar.MatchString(s); got != want {
			t.Errorf("ValidTenant(%q) = %v, the grammar says %v", s, got, want)
		}
	})
}

func TestDerive(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	base, err := Derive("acme", secret, "refund", "key-1", "0")
	if err != nil || !Valid(base) || Tenant(base) != "acme" {
		t.Fatalf("Derive = %q, %v", base, err)
	}
	same, _ := Derive("acme", secret, "refund", "key-1", "0")
	if same != base {
		t.Fatalf("the same parts gave %q and %q", base, same)
	}
	for _, tc := range []struct {
		name   string
		tenant string
		secret []byte
		parts  []string
	}{
		{"another tenant", "globex", secret, []string{"refund", "key-1", "0"}},
		{"another secret", "acme", []byte("another secret of some length...."), []string{"refund", "key-1", "0"}},
		{"another tool", "acme", secret, []string{"refunds", "key-1", "0"}},
		{"another key", "acme", secret, []string{"refund", "key-2", "0"}},
		{"another generation", "acme", secret, []string{"refund", "key-1", "1"}},
		{"parts that concatenate alike", "acme", secret, []string{"refundkey-1", "", "0"}},
	} {
		id, err := Derive(tc.tenant, tc.secret, tc.parts...)
		if err != nil || !Valid(id) {
			t.Fatalf("%s: Derive = %q, %v", tc.name, id, err)
		}
		if _, opaque, _ := strings.Cut(id, "/"); strings.HasSuffix(base, "/"+opaque) {
			t.Errorf("%s: the same opaque segment as the base id", tc.name)
		}
	}
	if _, err := Derive("a/b", secret, "x"); err == nil {
		t.Error("an invalid tenant derived an id")
	}
	if _, err := Derive("acme", nil, "x"); err == nil {
		t.Error("an empty secret derived an id")
	}
}
