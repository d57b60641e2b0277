package runs

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/signals"
)

// JournalEntry is a run whose start began and whose caller has not taken
// it over yet (see Journal).
type JournalEntry struct {
	// RunID is the run's id.
	RunID string `json:"runId"`
	// Caller is who started it.
	Caller signals.Subject `json:"caller"`
	// Transport is signals.TransportMCP or signals.TransportREST.
	Transport string `json:"transport"`
}

// Journal records the runs whose start began and whose caller has not
// taken them over yet (its response not delivered), so that a process
// that restarts after a crash (kill -9) cancels the runs its earlier life
// left with no caller knowing their ids (Service.Recover). Service.Start
// calls Begin before the start call; the caller calls Service.Release once
// its response was delivered or the run cancelled.
type Journal interface {
	// Begin records entry before its start call. An error stops the
	// start.
	Begin(entry JournalEntry) error
	// End records that the run reached its caller or was cancelled.
	End(runID string)
	// Pending returns the entries begun and not ended.
	Pending() []JournalEntry
}

// FileJournal is a Journal in an append-only file: one JSON line per
// Begin and End. It survives the crash of its process (the lines are in
// the file as soon as they are written, without fsync), not that of the
// machine. The file is rewritten with only the pending entries when it
// grows. One process at a time may use a file. It is safe for concurrent
// use.
type FileJournal struct {
	path string

	mu      sync.Mutex
	f       *os.File
	pending map[string]JournalEntry
	lines   int
}

// journalLine is one line of a FileJournal.
type journalLine struct {
	Begin *JournalEntry `json:"begin,omitempty"`
	End   string        `json:"end,omitempty"`
}

// OpenFileJournal opens (or creates) the journal at path and reads the
// entries an earlier process left pending.
func OpenFileJournal(path string) (*FileJournal, error) {
	j := &FileJournal{path: path, pending: map[string]JournalEntry{}}
	if f, err := os.Open(path); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var l journalLine
			if json.Unmarshal(sc.Bytes(), &l) != nil {
				continue // a line cut by a crash
			}
			switch {
			case l.Begin != nil:
				j.pending[l.Begin.RunID] = *l.Begin
			case l.End != "":
				delete(j.pending, l.End)
			}
		}
		f.Close()
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("run journal: %w", err)
	}
	if err := j.rewrite(); err != nil {
		return nil, err
	}
	return j, nil
}

// rewrite replaces the file with the pending entries (with j.mu held or
// before j is shared).
func (j *FileJournal) rewrite() error {
	tmp := j.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("run journal: %w", err)
	}
	w := bufio.NewWriter(f)
	for _, e := range j.pending {
		b, _ := json.Marshal(journalLine{Begin: &e})
		_, _ = w.Write(append(b, '\n'))
	}
	if err := errors.Join(w.Flush(), f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("run journal: %w", err)
	}
	if err := os.Rename(tmp, j.path); err != nil {
		return fmt.Errorf("run journal: %w", err)
	}
	if j.f != nil {
		j.f.Close()
	}
	if j.f, err = os.OpenFile(j.path, os.O_APPEND|os.O_WRONLY, 0o600); err != nil {
		return fmt.Errorf("run journal: %w", err)
	}
	j.lines = len(j.pending)
	if d, err := os.Open(filepath.Dir(j.path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

func (j *FileJournal) append(l journalLine) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("run journal: %w", err)
	}
	j.lines++
	if j.lines > 4*len(j.pending)+10000 {
		return j.rewrite()
	}
	return nil
}

// Begin implements Journal.
func (j *FileJournal) Begin(e JournalEntry) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.pending[e.RunID] = e
	return j.append(journalLine{Begin: &e})
}

// End implements Journal.
func (j *FileJournal) End(runID string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, ok := j.pending[runID]; !ok {
		return
	}
	delete(j.pending, runID)
	_ = j.append(journalLine{End: runID})
}

// Pending implements Journal.
func (j *FileJournal) Pending() []JournalEntry {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]JournalEntry, 0, len(j.pending))
	for _, e := range j.pending {
		out = append(out, e)
	}
	return out
}

// Close closes the file.
func (j *FileJournal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.f.Close()
}

// Release records that the caller of a run Start returned has taken it
// over (its response was delivered) or that the run was cancelled: with a
// Journal (Options.Journal) the run is no longer pending. It does nothing
// without one.
func (s *Service) Release(runID string) {
	if s.opts.Journal != nil {
		s.opts.Journal.End(runID)
	}
}

// Recover cancels the runs an earlier life of this process left pending
// in its Journal (started, never handed to their callers: the process
// died first), with reason signals.ReasonMCPRequestCancelled for an MCP
// run (the request that owned it went away) and signals.ReasonStartFailed
// otherwise. It returns once each was cancelled (or found closed or
// missing) or ctx ended; runs it could not settle stay pending for the
// next call. Call it once at start-up, before serving.
func (s *Service) Recover(ctx context.Context) error {
	if s.opts.Journal == nil {
		return nil
	}
	var errs []error
	for _, e := range s.opts.Journal.Pending() {
		reason := signals.ReasonStartFailed
		if e.Transport == signals.TransportMCP {
			reason = signals.ReasonMCPRequestCancelled
		}
		_, err := s.Cancel(ctx, e.Caller, e.RunID, reason)
		switch {
		case err == nil:
			s.log.Warn("run left without an owner by an earlier process cancelled", zap.String("runId", e.RunID),
				zap.String("reason", reason))
		case errors.Is(err, ErrNotFound), errors.Is(err, ErrTerminal):
		default:
			errs = append(errs, fmt.Errorf("cancel run %s: %w", e.RunID, err))
			continue
		}
		s.opts.Journal.End(e.RunID)
	}
	return errors.Join(errs...)
}
