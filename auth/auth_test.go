package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/openwop/temporal-mcp/signals"
)

func TestParseKeys(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Key
		wantErr bool
	}{
		{name: "empty", in: "", want: nil},
		{name: "two tenants", in: "k1=tenantA:alice, k2=tenantB:urn:x:bob",
			want: []Key{{"k1", "tenantA", "alice"}, {"k2", "tenantB", "urn:x:bob"}}},
		{name: "anon tenant", in: "k=anon:dev:me", want: []Key{{"k", "anon:dev", "me"}}},
		{name: "blank entries skipped", in: ",k=t:s,,", want: []Key{{"k", "t", "s"}}},
		{name: "no equals", in: "k1tenant:s", wantErr: true},
		{name: "no subject", in: "k1=tenant", wantErr: true},
		{name: "empty subject", in: "k1=tenant:", wantErr: true},
		{name: "bad tenant", in: "k1=ten/ant:s", wantErr: true},
		{name: "empty key", in: "=t:s", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseKeys(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("key %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestNewRejectsDuplicates(t *testing.T) {
	if _, err := New([]Key{{"k", "a", "s"}, {"k", "b", "s"}}); err == nil {
		t.Fatal("duplicate key accepted")
	}
}

func TestNoKeysIsDev(t *testing.T) {
	k, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !k.Dev() {
		t.Fatal("no keys should be dev mode")
	}
	s, err := k.Authenticate(httptest.NewRequest("POST", "/", nil))
	if err != nil || !reflect.DeepEqual(s, Anonymous()) {
		t.Fatalf("dev subject %+v, err %v", s, err)
	}
	var nilKeys *Keys
	if s, err := nilKeys.Authenticate(httptest.NewRequest("POST", "/", nil)); err != nil || s.Tenant != AnonymousTenant {
		t.Fatalf("nil keys subject %+v, err %v", s, err)
	}
}

func TestAuthenticate(t *testing.T) {
	k, err := New([]Key{{"secret-a", "tenantA", "alice"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		header  string
		wantErr error
	}{
		{"valid", "Bearer secret-a", nil},
		{"scheme case-insensitive", "bearer secret-a", nil},
		{"missing", "", ErrNoCredential},
		{"wrong key", "Bearer nope", ErrInvalidCredential},
		{"basic scheme", "Basic secret-a", ErrInvalidCredential},
		{"empty token", "Bearer ", ErrInvalidCredential},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/", nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			s, err := k.Authenticate(r)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil && (s.Tenant != "tenantA" || s.SubjectID != "alice" || s.Issuer != IssuerAPIKey) {
				t.Fatalf("subject = %+v", s)
			}
		})
	}
}

func TestMiddleware(t *testing.T) {
	k, err := New([]Key{{"secret-a", "tenantA", "alice"}})
	if err != nil {
		t.Fatal(err)
	}
	var seen signals.Subject
	h := Middleware(k, nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, _ = SubjectFrom(r.Context())
	}))

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/", nil))
	if rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") == "" {
		t.Fatalf("no credential: status %d, challenge %q", rec.Code, rec.Header().Get("WWW-Authenticate"))
	}

	rec = httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/", nil)
	r.Header.Set("Authorization", "Bearer secret-a")
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK || seen.SubjectID != "alice" {
		t.Fatalf("valid credential: status %d, subject %+v", rec.Code, seen)
	}
}
