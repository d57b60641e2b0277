package datadir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// File names in the data directory.
const (
	// LockFile is locked by the process that runs the server on the
	// directory's database; it holds that process's pid.
	LockFile = "openwop.lock"
	// InfoFile is the holder's Holder record, written once its server
	// answers and removed when it stops.
	InfoFile = "openwop-server.json"
)

// pollInterval is how often Claim and Watch look at the lock and InfoFile.
const pollInterval = 100 * time.Millisecond

// Holder describes the process that holds a data directory and the
// Temporal server it runs there.
type Holder struct {
	// PID is the holder's process id.
	PID int `json:"pid"`
	// TemporalAddress is the frontend host:port of its server ("" until
	// published).
	TemporalAddress string `json:"temporalAddress,omitempty"`
	// Namespace is the namespace its server registered.
	Namespace string `json:"namespace,omitempty"`
	// UIURL is its Web UI's URL ("" when it serves none).
	UIURL string `json:"temporalUI,omitempty"`
	// Since is when it published.
	Since time.Time `json:"since,omitzero"`
}

// HeldError reports that another process holds the data directory.
type HeldError struct {
	// Dir is the data directory (absolute).
	Dir string
	// Holder is what is known of the holder: its pid, and its server once
	// it published it.
	Holder Holder
}

func (e *HeldError) Error() string {
	s := fmt.Sprintf("data directory %s is in use by process %d", e.Dir, e.Holder.PID)
	if e.Holder.TemporalAddress != "" {
		s += fmt.Sprintf(" (Temporal at %s, namespace %s)", e.Holder.TemporalAddress, e.Holder.Namespace)
	} else {
		s += " (its Temporal server is not serving yet)"
	}
	return s
}

// Lock is a held data directory lock.
type Lock struct {
	dir string
	f   *os.File
}

// Dir is the locked directory (absolute).
func (l *Lock) Dir() string { return l.dir }

// TryLock creates dir if needed and locks it without waiting. When another
// process (or another Lock of this process) holds it, the error is a
// *HeldError naming the holder's pid, and its server when it published one.
// A successful TryLock removes a previous holder's InfoFile.
func TryLock(dir string) (*Lock, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("data directory %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	path := filepath.Join(abs, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("data directory lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &HeldError{Dir: abs, Holder: readHolder(abs)}
		}
		return nil, fmt.Errorf("data directory lock %s: %w", path, err)
	}
	l := &Lock{dir: abs, f: f}
	// The lock file names the holder from now on; a previous holder's
	// record is stale.
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		_ = l.Release()
		return nil, fmt.Errorf("data directory lock %s: write the pid: %w", path, err)
	}
	if err := os.Remove(filepath.Join(abs, InfoFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		_ = l.Release()
		return nil, fmt.Errorf("data directory: remove the stale %s: %w", InfoFile, err)
	}
	return l, nil
}

// Publish records h (its PID set to this process's) in InfoFile, atomically:
// a reader sees the whole record or none.
func (l *Lock) Publish(h Holder) error {
	h.PID = os.Getpid()
	if h.Since.IsZero() {
		h.Since = time.Now().UTC().Truncate(time.Second)
	}
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return fmt.Errorf("data directory: encode %s: %w", InfoFile, err)
	}
	tmp, err := os.CreateTemp(l.dir, InfoFile+".*")
	if err != nil {
		return fmt.Errorf("data directory: write %s: %w", InfoFile, err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(l.dir, InfoFile))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("data directory: write %s: %w", InfoFile, err)
	}
	return nil
}

// Release removes InfoFile and releases the lock. Call it once the server
// no longer has the database open.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := os.Remove(filepath.Join(l.dir, InfoFile))
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	// Closing the file releases the flock.
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	if err != nil {
		return fmt.Errorf("data directory %s: release: %w", l.dir, err)
	}
	return nil
}

// Claim locks dir, or, when another process holds it, waits until that
// holder has published its server and returns a *HeldError carrying it. If
// the holder goes away meanwhile, Claim takes the lock. When ctx ends first,
// the *HeldError names what is known (the pid).
func Claim(ctx context.Context, dir string) (*Lock, error) {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		l, err := TryLock(dir)
		var held *HeldError
		if !errors.As(err, &held) || held.Holder.TemporalAddress != "" {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, held
		case <-tick.C:
		}
	}
}

// Watch calls TryLock on dir until it succeeds (the holder went away) and
// returns the lock, or returns ctx's error when ctx ends first.
func Watch(ctx context.Context, dir string) (*Lock, error) {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		l, err := TryLock(dir)
		var held *HeldError
		if !errors.As(err, &held) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

// readHolder reads what the holder of the locked dir published: its pid
// from LockFile, and its server from InfoFile when that record is its own
// (a record left by an earlier holder, killed before it could remove it,
// names another pid and is ignored).
func readHolder(dir string) Holder {
	var h Holder
	b, err := os.ReadFile(filepath.Join(dir, LockFile))
	if err != nil {
		return h
	}
	if h.PID, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil || h.PID <= 0 {
		return Holder{} // being written
	}
	b, err = os.ReadFile(filepath.Join(dir, InfoFile))
	if err != nil {
		return h
	}
	var rec Holder
	if json.Unmarshal(b, &rec) != nil || rec.PID != h.PID {
		return h
	}
	return rec
}
