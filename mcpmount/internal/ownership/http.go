package ownership

import (
	"errors"
	"net/http"
)

// HTTP wraps an MCP streamable-HTTP handler. Each request gets a claim; once
// next has returned, the response is flushed to the connection and the claim
// is settled: delivered when the client was still connected when the last
// byte was handed to the connection and no write failed, not delivered
// otherwise.
//
// TCP leaves a residual window: bytes the kernel accepted may still never
// reach a client that vanished at that instant.
func (t *Tracker) HTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		claim := t.Open(r.Context())
		r.Header.Del(ClaimHeader)
		r.Header.Set(ClaimHeader, claim.Key())
		rw := &recordingWriter{ResponseWriter: w}
		delivered := false
		defer func() { claim.Settle(delivered) }()
		next.ServeHTTP(rw, r)
		// The client must still be connected when the last byte is handed
		// over, by the flush below. It is not checked again after the
		// flush: the client may read the whole response and hang up at
		// once, which must not undo the delivery.
		if r.Context().Err() != nil || rw.err != nil {
			return
		}
		if err := http.NewResponseController(w).Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return
		}
		delivered = true
	})
}

// recordingWriter remembers the first write error. It forwards Flush and
// Unwrap so http.ResponseController (and the SDK's SSE flushing) reach the
// real writer.
type recordingWriter struct {
	http.ResponseWriter
	err error
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

func (w *recordingWriter) Flush() {
	if err := http.NewResponseController(w.ResponseWriter).Flush(); err != nil && w.err == nil &&
		!errors.Is(err, http.ErrNotSupported) {
		w.err = err
	}
}

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
