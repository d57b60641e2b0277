package datadir

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeyFile holds the server's generated secret: KeyLen hexadecimal
// characters and a newline, readable and writable by its owner only.
const KeyFile = "openwop-mrtr.key"

// KeyLen is the length of the key in KeyFile, in characters (32 random
// bytes, hex-encoded).
const KeyLen = 64

// Key returns the secret kept in dir's KeyFile, generating it first when
// the file does not exist (creating dir if needed). The key is the file's
// KeyLen characters themselves, so that a server given them as its key
// explicitly (OPENWOP_MRTR_KEY) keeps using the same one.
//
// The file is created once, atomically: it is written whole to a temporary
// file of mode 0600 and then linked into place, so a reader never sees it
// partly written, and of processes that race to create it one wins and all
// return its key. A KeyFile that group or others may read or write, that is
// not a regular file, or that holds anything but a key is an error naming
// the file; it is never replaced.
func Key(dir string) ([]byte, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("data directory %q: %w", dir, err)
	}
	path := filepath.Join(abs, KeyFile)
	key, err := readKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}
	if err := createKey(abs, path); err != nil {
		return nil, err
	}
	return readKey(path)
}

// readKey reads and checks the key file at path. A missing file is an
// error that matches fs.ErrNotExist.
func readKey(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("key file %s is not a regular file (%s)", path, info.Mode().Type())
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("key file %s has mode %04o: group or others may read or write it; make it the owner's only (chmod 600 %s)",
			path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, KeyLen+2))
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	key := strings.TrimSuffix(string(b), "\n")
	if _, herr := hex.DecodeString(key); herr != nil || len(key) != KeyLen {
		return nil, fmt.Errorf("key file %s is corrupt (want %d hexadecimal characters and a newline): restore it, or delete it to generate "+
			"a new key (requestStates, cursors and idempotency keys made under the old one then no longer hold)", path, KeyLen)
	}
	return []byte(key), nil
}

// createKey writes a new key to path unless a file is there already.
func createKey(dir, path string) error {
	raw := make([]byte, KeyLen/2)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("key file: generate a key: %w", err)
	}
	tmp, err := os.CreateTemp(dir, KeyFile+".*") // mode 0600
	if err != nil {
		return fmt.Errorf("key file: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	_, err = tmp.WriteString(hex.EncodeToString(raw) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("key file %s: write: %w", tmp.Name(), err)
	}
	// Link, unlike rename, never replaces a file another process created
	// meanwhile: the first link wins.
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("key file %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err == nil {
		err = d.Sync()
		_ = d.Close()
	}
	if err != nil {
		return fmt.Errorf("key file %s: sync the directory: %w", path, err)
	}
	return nil
}
