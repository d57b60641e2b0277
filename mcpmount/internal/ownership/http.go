package ownership

import (
	"context"
	"errors"
	"net/http"
)

// HTTP wraps an MCP streamable-HTTP handler. Each request gets a claim,
// which next is called with; once next has returned, what it wrote and did not flush is flushed to the
// connection and the claim is settled: delivered when no write failed and
// the client was still connected as the answer was handed to the
// connection, not delivered otherwise.
//
// The answer is what next writes after its handler called
// Claim.Answering; the client's presence is checked at the first flush of
// it (the SDK flushes each event of a stream), since a client may read the
// answer's event and hang up before next returns (a fetch that stops
// reading at its answer closes the connection), which must not undo the
// delivery. When the handler never called Answering, the check is made
// once next has returned. TCP leaves a residual window: bytes the kernel
// accepted may still never reach a client that vanished at that instant.
func (t *Tracker) HTTP(next func(w http.ResponseWriter, r *http.Request, claim *Claim)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		claim := t.Open(r.Context())
		rw := &recordingWriter{ResponseWriter: w, ctx: r.Context(), claim: claim}
		delivered := false
		defer func() { claim.Settle(delivered) }()
		next(rw, r, claim)
		if !rw.answerFlushed {
			rw.gone = r.Context().Err() != nil
			rw.flush()
		}
		delivered = !rw.gone && rw.err == nil
	})
}

// recordingWriter remembers the first write error and whether the client
// was still connected as the answer was flushed. It forwards Flush and
// Unwrap so http.ResponseController (and the SDK's SSE flushing) reach the
// real writer.
type recordingWriter struct {
	http.ResponseWriter
	ctx   context.Context // the request's: done once the client is gone
	claim *Claim
	err   error
	// answerWritten: bytes were written after the handler called
	// Answering; answerFlushed: they were flushed, and gone says whether
	// the client was gone by then.
	answerWritten, answerFlushed, gone bool
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	if !w.answerWritten && w.claim.isAnswering() {
		w.answerWritten = true
	}
	n, err := w.ResponseWriter.Write(p)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}

func (w *recordingWriter) Flush() {
	if w.answerWritten && !w.answerFlushed {
		w.answerFlushed = true
		w.gone = w.ctx.Err() != nil
	}
	w.flush()
}

func (w *recordingWriter) flush() {
	if err := http.NewResponseController(w.ResponseWriter).Flush(); err != nil && w.err == nil &&
		!errors.Is(err, http.ErrNotSupported) {
		w.err = err
	}
}

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
