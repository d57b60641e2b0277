package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// replica answers its name, and hands out a session id to a request that
// asks for one (as initialize does).
func replica(t *testing.T, name string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-New-Session") != "" {
			w.Header().Set("Mcp-Session-Id", "session-of-"+name)
		}
		_, _ = io.WriteString(w, name)
	}))
	t.Cleanup(s.Close)
	return s
}

func get(t *testing.T, url string, header ...string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("{}"))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestHTTPBalancer: requests without a session alternate between the
// replicas; a session-era session stays on the replica that created it;
// a replica that refuses connections is skipped.
func TestHTTPBalancer(t *testing.T) {
	a, b := replica(t, "a"), replica(t, "b")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	lb, err := newHTTPBalancer([]string{a.URL, b.URL, dead})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()

	seen := map[string]int{}
	for range 6 {
		seen[get(t, lb.url())]++
	}
	if seen["a"]+seen["b"] != 6 || seen["a"] < 2 || seen["b"] < 2 {
		t.Errorf("six stateless requests went to %v, want both live replicas used (the dead one skipped)", seen)
	}
	owner := get(t, lb.url(), "X-New-Session", "1")
	for range 4 {
		if got := get(t, lb.url(), "Mcp-Session-Id", "session-of-"+owner); got != owner {
			t.Fatalf("a request of %s's session went to %s", owner, got)
		}
	}
}
