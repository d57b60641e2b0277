package ownership

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/signals"
)

// recorder is a CancelFunc that records the runs it was asked to cancel.
type recorder struct {
	mu   sync.Mutex
	runs []string
	done chan string
}

func newRecorder() *recorder { return &recorder{done: make(chan string, 16)} }

func (r *recorder) cancel(_ context.Context, _ signals.Subject, runID string) error {
	r.mu.Lock()
	r.runs = append(r.runs, runID)
	r.mu.Unlock()
	r.done <- runID
	return nil
}

func (r *recorder) cancelled() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.runs...)
}

// ownAndAnswer is an MCP-like handler: it owns run "t/run", waits for
// release (or the client going away), then writes a response.
func ownAndAnswer(started chan<- struct{}, release <-chan struct{}) func(http.ResponseWriter, *http.Request, *Claim) {
	return func(w http.ResponseWriter, r *http.Request, claim *Claim) {
		// net/http notices a client leaving only once the body is consumed,
		// as the MCP handler does first.
		_, _ = io.ReadAll(r.Body)
		claim.Own(signals.Subject{Tenant: "t"}, "t/run")
		close(started)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}
}

func rawPost(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`
	_, err = io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\nContent-Length: "+
		strconv.Itoa(len(body))+"\r\n\r\n"+body)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

func TestHTTPDisconnectBeforeResponseCancels(t *testing.T) {
	rec := newRecorder()
	tr := NewTracker(rec.cancel, nil)
	started, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(tr.HTTP(ownAndAnswer(started, release)))
	defer srv.Close()

	conn := rawPost(t, srv.Listener.Addr().String())
	<-started
	conn.Close() // the client leaves before any response byte
	select {
	case id := <-rec.done:
		if id != "t/run" {
			t.Fatalf("cancelled %q", id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the owned run was not cancelled after the client disconnected")
	}
	close(release)
}

func TestHTTPDeliveredResponseReleases(t *testing.T) {
	rec := newRecorder()
	tr := NewTracker(rec.cancel, nil)
	started, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(tr.HTTP(ownAndAnswer(started, release)))
	defer srv.Close()

	conn := rawPost(t, srv.Listener.Addr().String())
	<-started
	close(release)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	conn.Close() // after the whole response: must not touch the run
	time.Sleep(200 * time.Millisecond)
	tr.Wait()
	if got := rec.cancelled(); len(got) != 0 {
		t.Fatalf("runs cancelled after a delivered response: %v", got)
	}
}

// TestHTTPClientLeavesAfterLastEvent: a client that reads the answer's
// event of a stream and hangs up while the handler is still returning (a
// fetch that stops reading at the answer) got its response: the run it
// owned is not cancelled. One that leaves before the event is written
// still cancels it.
func TestHTTPClientLeavesAfterLastEvent(t *testing.T) {
	for _, tc := range []struct {
		name       string
		leaveFirst bool // the client leaves before the answer is written
		noAnswer   bool // the handler then returns without one
		cancelled  bool
	}{
		{name: "left after the answer"},
		{name: "left before the answer", leaveFirst: true, cancelled: true},
		{name: "left mid-stream, no answer", leaveFirst: true, noAnswer: true, cancelled: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			tr := NewTracker(rec.cancel, nil)
			started, answer := make(chan struct{}), make(chan struct{})
			srv := httptest.NewServer(tr.HTTP(func(w http.ResponseWriter, r *http.Request, claim *Claim) {
				_, _ = io.ReadAll(r.Body)
				claim.Own(signals.Subject{Tenant: "t"}, "t/run")
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				http.NewResponseController(w).Flush()
				close(started)
				<-answer
				if tc.noAnswer {
					return
				}
				claim.Answering()
				_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
				http.NewResponseController(w).Flush()
				// The SDK's handler returns some time after its last
				// event: the client is gone by then.
				<-r.Context().Done()
			}))
			defer srv.Close()

			conn := rawPost(t, srv.Listener.Addr().String())
			<-started
			if tc.leaveFirst {
				conn.Close()
				time.Sleep(100 * time.Millisecond) // the server notices
				close(answer)
			} else {
				close(answer)
				br := bufio.NewReader(conn)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatal(err)
				}
				body := bufio.NewReader(resp.Body)
				for line := ""; !strings.HasPrefix(line, "data:"); {
					if line, err = body.ReadString('\n'); err != nil {
						t.Fatal(err)
					}
				}
				conn.Close()
			}
			select {
			case id := <-rec.done:
				if !tc.cancelled {
					t.Fatalf("run %q cancelled after its answer was delivered", id)
				}
			case <-time.After(2 * time.Second):
				if tc.cancelled {
					t.Fatal("the owned run was not cancelled after the client left before its answer")
				}
			}
		})
	}
}

func TestOwnAfterSettleCancels(t *testing.T) {
	rec := newRecorder()
	tr := NewTracker(rec.cancel, nil)
	c := tr.Open(context.Background())
	c.Settle(false)
	select {
	case <-c.Gone():
	default:
		t.Fatal("a settled claim's Gone channel is open")
	}
	c.Own(signals.Subject{Tenant: "t"}, "t/late")
	tr.Wait()
	if got := rec.cancelled(); len(got) != 1 || got[0] != "t/late" {
		t.Fatalf("cancelled = %v, want [t/late]", got)
	}
}

// TestAfterGone: AfterGone calls its function once the request is gone,
// not when stopped first, and never for a nil claim.
func TestAfterGone(t *testing.T) {
	for _, tc := range []struct {
		name     string
		nilClaim bool
		stop     bool // stop before the claim settles
		want     bool // the function is called
	}{
		{name: "settled", want: true},
		{name: "stopped first", stop: true},
		{name: "nil claim", nilClaim: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(newRecorder().cancel, nil)
			c := tr.Open(context.Background())
			if tc.nilClaim {
				c = nil
			}
			called := make(chan struct{})
			stop := c.AfterGone(func() { close(called) })
			if tc.stop && !stop() {
				t.Fatal("stop = false before the claim settled")
			}
			if c != nil {
				c.Settle(false)
			}
			select {
			case <-called:
				if !tc.want {
					t.Fatal("the function ran")
				}
			case <-time.After(200 * time.Millisecond):
				if tc.want {
					t.Fatal("the function did not run once the claim settled")
				}
			}
		})
	}
}

func TestNilClaimOwnsNothing(t *testing.T) {
	var c *Claim
	c.Own(signals.Subject{}, "x") // must not panic
	c.AfterSettle(func(bool) { t.Error("a nil claim settled") })
}

// TestHTTPClaimPerRequest: each request through HTTP gets a claim of its
// own, settled once the handler returned.
func TestHTTPClaimPerRequest(t *testing.T) {
	tr := NewTracker(newRecorder().cancel, nil)
	var seen []*Claim
	h := tr.HTTP(func(w http.ResponseWriter, r *http.Request, claim *Claim) { seen = append(seen, claim) })
	for range 2 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/mcp", nil))
	}
	if len(seen) != 2 || seen[0] == nil || seen[0] == seen[1] {
		t.Fatalf("claims handed = %v, want two distinct ones", seen)
	}
	for _, c := range seen {
		select {
		case <-c.Gone():
		default:
			t.Fatal("a claim is not settled once its handler returned")
		}
	}
}

// TestAbandonedClaimCancels: a claim abandoned by its handler (the client
// cancelled the request on a connection that stays up) settles as not
// delivered even when the transport delivered bytes.
func TestAbandonedClaimCancels(t *testing.T) {
	rec := newRecorder()
	tr := NewTracker(rec.cancel, nil)
	c := tr.Open(context.Background())
	c.Own(signals.Subject{Tenant: "t"}, "t/run")
	c.Abandon()
	c.Settle(true)
	tr.Wait()
	if got := rec.cancelled(); len(got) != 1 || got[0] != "t/run" {
		t.Fatalf("cancelled = %v, want [t/run]", got)
	}
	var nilClaim *Claim
	nilClaim.Abandon() // must not panic
}

// TestReleaseAfterSettle: a delivered claim releases its runs, an
// undelivered one releases them once they were cancelled, and a failed
// cancellation releases nothing (the run stays for a later recovery).
func TestReleaseAfterSettle(t *testing.T) {
	for _, tc := range []struct {
		name      string
		delivered bool
		cancelErr error
		want      []string
	}{
		{"delivered", true, nil, []string{"t/a", "t/b"}},
		{"not delivered, cancelled", false, nil, []string{"t/a", "t/b"}},
		{"not delivered, cancel failed", false, io.ErrUnexpectedEOF, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(func(context.Context, signals.Subject, string) error { return tc.cancelErr }, nil)
			var mu sync.Mutex
			var released []string
			tr.OnRelease(func(id string) {
				mu.Lock()
				released = append(released, id)
				mu.Unlock()
			})
			c := tr.Open(context.Background())
			c.Own(signals.Subject{Tenant: "t"}, "t/a")
			c.Own(signals.Subject{Tenant: "t"}, "t/b")
			c.Settle(tc.delivered)
			tr.Wait()
			mu.Lock()
			defer mu.Unlock()
			slices.Sort(released)
			if !slices.Equal(released, tc.want) {
				t.Fatalf("released %v, want %v", released, tc.want)
			}
		})
	}
}

// TestAfterSettle: AfterSettle's functions learn how the claim settled,
// once, whether arranged before or after it settled.
func TestAfterSettle(t *testing.T) {
	for _, tc := range []struct {
		name               string
		delivered, abandon bool
		want               bool
	}{
		{name: "delivered", delivered: true, want: true},
		{name: "not delivered"},
		{name: "abandoned", delivered: true, abandon: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewTracker(newRecorder().cancel, nil).Open(context.Background())
			var got []bool
			c.AfterSettle(func(d bool) { got = append(got, d) })
			if tc.abandon {
				c.Abandon()
			}
			c.Settle(tc.delivered)
			c.Settle(!tc.delivered) // settles once
			c.AfterSettle(func(d bool) { got = append(got, d) })
			if !slices.Equal(got, []bool{tc.want, tc.want}) {
				t.Fatalf("learnt %v, want %t twice", got, tc.want)
			}
		})
	}
}
