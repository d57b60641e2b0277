package ownership

import (
	"context"
	"errors"
	"net/http"
)

// HTTP wraps an MCP streamable-HTTP handler. Each request gets a claim; once
// next has returned, what it wrote and did not flush is flushed to the
// connection and the claim is settled: delivered when the client was still
// connected each time bytes were handed to the connection (at the last
// flush, the SDK's own after each event of a stream or the one after next)
// and no write failed, not delivered otherwise.
//
// The client may read the last event of a stream and hang up before next
// returns (a fetch that stops reading at the answer closes the connection):
// that is a delivered response, so the client's presence is checked when
// bytes are flushed, not when next returns. TCP leaves a residual window:
// bytes the kernel accepted may still never reach a client that vanished
// at that instant.
func (t *Tracker) HTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		claim := t.Open(r.Context())
		r.Header.Del(ClaimHeader)
		r.Header.Set(ClaimHeader, claim.Key())
		rw := &recordingWriter{ResponseWriter: w, ctx: r.Context()}
		delivered := false
		defer func() { claim.Settle(delivered) }()
		next.ServeHTTP(rw, r)
		if rw.unflushed || !rw.flushed {
			rw.Flush()
		}
		delivered = !rw.gone && rw.err == nil
	})
}

// recordingWriter remembers the first write error and whether the client
// was gone at the last flush. It forwards Flush and Unwrap so
// http.ResponseController (and the SDK's SSE flushing) reach the real
// writer.
type recordingWriter struct {
	http.ResponseWriter
	ctx       context.Context // the request's: done once the client is gone
	err       error
	unflushed bool // bytes were written since the last flush
	flushed   bool // Flush was called at least once
	gone      bool // the client was gone at the last flush
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	if n > 0 {
		w.unflushed = true
	}
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

func (w *recordingWriter) Flush() {
	w.gone = w.ctx.Err() != nil
	w.flushed, w.unflushed = true, false
	if err := http.NewResponseController(w.ResponseWriter).Flush(); err != nil && w.err == nil &&
		!errors.Is(err, http.ErrNotSupported) {
		w.err = err
	}
}

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
